"""The `gbdesk` command: no arguments opens the desktop app; subcommands run headless.

Contract: `--json` prints exactly one JSON value on stdout; progress goes to stderr.
User errors (missing file, not a GGUF, unknown probe, bad CSV …) exit with status 2
and one line on stderr; engine failures exit with 1; Ctrl-C exits with 130 and
leaves the run resumable.

The package: `parser` builds the argument parser (one function per group of commands);
one module per group holds its `cmd_*` functions (`catalogue`: probes, card, items,
models; `runs`: run, runs, resume; `results`: metrics, compare, export; `audit`;
`verify`; `imports`: import, import-labels; `labels`: label, sample, review, code,
agreement); `commands` maps each name to its function; `_main` dispatches and turns
errors into exit statuses; `_args` holds the argument types, `_common` the database,
output and progress helpers the commands share.
"""

from gbdesk.cli._common import MODEL_CHARS
from gbdesk.cli._main import main
from gbdesk.cli.commands import COMMANDS
from gbdesk.cli.parser import STUDY_COMMANDS, CommandKit, build_parser

__all__ = ["COMMANDS", "MODEL_CHARS", "STUDY_COMMANDS", "CommandKit", "build_parser", "main"]
