"""The `gbdesk` command: no arguments opens the desktop app; subcommands run headless.

Contract: `--json` prints exactly one JSON value on stdout; progress goes to stderr.
User errors (missing file, not a GGUF, unknown probe, bad CSV …) exit with status 2
and one line on stderr; engine failures exit with 1; Ctrl-C exits with 130 and
leaves the run resumable.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from gbdesk import __version__
from gbdesk.support.errors import EngineError, UserError
from gbdesk.support.format import duration, fmt
from gbdesk.support.guards import INT64_DIGITS, INT64_MAX, in_int64, one_line
from gbdesk.support.limits import LIMITS, SEED_RANGE


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see: {self.prog} --help)")


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="PATH",
        help="database file (default: gbdesk.sqlite in the per-user data folder, or "
        "$GBDESK_DB). Its folder must exist; only commands that write (run, import, audit, "
        "label, models --add …) create a new file there",
    )


def _presets() -> dict[str, tuple[str, str, str]]:
    from gbdesk.engine.endpoints import ENDPOINT_PRESETS

    return ENDPOINT_PRESETS


def _json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON value on stdout")


def _shown(text: str) -> str:
    """An argument quoted for a message, cut to one short line."""
    return repr(text if len(text) <= 24 else text[:20] + "…")


def _whole(text: str) -> int:
    """A whole number SQLite can store (-2^63 … 2^63 − 1); int() of a 5,000-digit text
    would raise, a 20-digit one would overflow SQLite's INTEGER."""
    body = text.strip(" \t")
    digits = body.removeprefix("-").removeprefix("+")
    if not (digits.isascii() and digits.isdigit()) or len(digits.lstrip("0")) > INT64_DIGITS:
        raise argparse.ArgumentTypeError(f"not a whole number (at most 19 digits): {_shown(text)}")
    value = -int(digits) if body.startswith("-") else int(digits)
    if not in_int64(value):
        raise argparse.ArgumentTypeError(
            f"must be between -2^63 and 2^63 - 1 (SQLite's whole numbers): {_shown(text)}"
        )
    return value


def _positive_int(text: str, maximum: int = INT64_MAX) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {_shown(text)}")
    if value > maximum:
        raise argparse.ArgumentTypeError(f"must be at most {maximum:,}: {_shown(text)}")
    return value


def _bounded(name: str):
    """A positive whole number up to `LIMITS[name]`."""

    def parse(text: str) -> int:
        return _positive_int(text, LIMITS[name])

    parse.__name__ = name  # argparse names the type in its messages
    return parse


def _batch_size(text: str) -> int:
    """`--batch`: "auto" (0) or a positive whole number up to the limit."""
    if text.strip().lower() == "auto":
        return 0
    return _positive_int(text, LIMITS["batch_size"])


def _seed(text: str) -> int:
    value = _whole(text)
    if not SEED_RANGE[0] <= value <= SEED_RANGE[1]:
        raise argparse.ArgumentTypeError(f"must be between -2^63 and 2^63 - 1: {_shown(text)}")
    return value


def _draw_seed(text: str) -> int:
    """The seed of a resampling or a draw: 0 … 2^63 − 1 (numpy takes no negative seed)."""
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^63 - 1: {_shown(text)}")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {_shown(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number: {_shown(text)}")
    return value


def _temperature(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0: {_shown(text)}")
    return value


def _top_p(text: str) -> float:
    value = _finite(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]: {_shown(text)}")
    return value


def _text(text: str) -> str:
    """Text that can be stored: not bytes the terminal could not decode (Python passes
    them on as lone surrogates, which SQLite refuses)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("not UTF-8 text (check the terminal's encoding)") from None
    return text


def _run_id(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a run or attempt id: {_shown(text)}")
    return value


def _name(text: str) -> str:
    """Who labelled, coded or validated: not blank, on one line (it is stored with each
    label and shown in reports)."""
    name = _text(text).strip()
    if not name:
        raise argparse.ArgumentTypeError("must name someone (it is empty)")
    if name != one_line(name):
        raise argparse.ArgumentTypeError(
            f"must be one line without control characters: {_shown(name)}"
        )
    return name


def _label_mode(text: str) -> str:
    """auto, reviewed, ppi, consensus or rater:NAME."""
    if text in ("auto", "reviewed", "ppi", "consensus"):
        return text
    if text.startswith("rater:") and text[len("rater:") :].strip():
        return _text(text)
    raise argparse.ArgumentTypeError(
        f"must be auto, reviewed, ppi, consensus or rater:NAME: {_shown(text)}"
    )


def _share(text: str) -> float:
    value = _finite(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1: {_shown(text)}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gbdesk",
        description="Audit a local language model for gender bias, alone and combined with "
        "other identities. Without arguments, opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"gbdesk {__version__}")
    parser.add_argument(
        "--db",
        dest="app_db",
        metavar="PATH",
        help="without a command: open the desktop app on this database",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("probes", help="list the probes (of every installed study)")
    p.add_argument("--markdown", action="store_true", help="print the README's probe table instead")
    _json_arg(p)

    p = sub.add_parser("card", help="show a probe's card (what it measures, data, limits)")
    p.add_argument("probe")
    _json_arg(p)

    p = sub.add_parser("items", help="list a probe's items and prompts")
    p.add_argument("--probe", required=True)
    p.add_argument("--template", type=_text, help="template text or preset name")
    p.add_argument(
        "--limit",
        type=_bounded("limit"),
        help="N items: the first N, or — for a probe whose metrics compare groups of items — "
        "a seeded subset keeping every group (the run says which)",
    )
    p.add_argument("--sample", type=_bounded("sample"), help="a seeded random sample of K items")
    _json_arg(p)

    p = sub.add_parser(
        "models", help="list the bundled default model, registered GGUF files and endpoints"
    )
    p.add_argument(
        "--add",
        metavar="PATH",
        action="append",
        help="register a GGUF file, or an endpoint URL#MODEL (e.g. ollama#llama3.1:8b), whose "
        "capabilities are then checked",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("run", help="run a probe on a model")
    p.add_argument("--probe", required=True)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--model", help="GGUF path or 'default' (bundled SmolLM2; the default)")
    which.add_argument(
        "--endpoint",
        metavar="URL",
        help="an OpenAI-compatible server instead of a GGUF file, e.g. http://host:8000/v1 "
        "(vLLM, llama-cpp-python's server), or a local one by name: "
        + ", ".join(f"{name} = {url} ({title})" for name, (title, url, _) in _presets().items())
        + "; perplexity probes need log-probabilities of prompt tokens, which only vLLM and "
        "llama-cpp-python's server give",
    )
    p.add_argument(
        "--endpoint-model",
        dest="endpoint_model",
        type=_text,
        metavar="NAME",
        help="model name at --endpoint",
    )
    p.add_argument(
        "--concurrency",
        type=_bounded("concurrency"),
        help="requests in flight at once (--endpoint only; default 1)",
    )
    p.add_argument(
        "--api-key-env",
        dest="api_key_env",
        metavar="VAR",
        help="environment variable holding the endpoint's API key (default: GBDESK_API_KEY, "
        "then the OS keyring); the key is never stored",
    )
    p.add_argument("--attempts", type=_bounded("attempts"), help="samples per prompt")
    p.add_argument(
        "--limit",
        type=_bounded("limit"),
        help="N items: the first N, or — for a probe whose metrics compare groups of items — "
        "a seeded subset keeping every group (the run says which)",
    )
    p.add_argument("--sample", type=_bounded("sample"), help="a seeded random sample of K items")
    p.add_argument(
        "--seed", type=_seed, default=0, help="run seed (per-attempt seeds derive from it)"
    )
    p.add_argument("--temperature", type=_temperature)
    p.add_argument("--top-p", type=_top_p, dest="top_p")
    p.add_argument("--max-tokens", type=_bounded("max_tokens"), dest="max_tokens")
    p.add_argument("--template", type=_text, help="template text or preset name")
    p.add_argument(
        "--prompt-mode",
        choices=("auto", "chat", "completion"),
        default="auto",
        help="chat template or completion frame (auto: chat if the GGUF has one)",
    )
    p.add_argument(
        "--batch",
        type=_batch_size,
        default=0,
        dest="batch_size",
        metavar="N|auto",
        help="local models: continuous batching with N sequences at once (default auto: "
        "chosen from the model's size and the free memory); 1 decodes one attempt at a time "
        "(slower; its texts differ from batched ones, which do not depend on N). Kept with "
        "the run: a resume decodes the same way",
    )
    p.add_argument(
        "--set",
        dest="options",
        type=_text,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a probe parameter, e.g. --set domains=Love,Labor --set name_table=census2020 "
        "(see `gbdesk card PROBE`)",
    )
    p.add_argument(
        "--new",
        action="store_true",
        help="start another run even if this database holds one of the same probe, model "
        "file and settings; without it the same command continues that run where it "
        "stopped, or shows its results when it is done",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("runs", help="list the runs in the database")
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("resume", help="continue an interrupted or cancelled run")
    p.add_argument("run_id", type=_run_id)
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("metrics", help="metrics of a run with 95%% CIs and marks")
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--labels",
        type=_label_mode,
        default="auto",
        metavar="MODE",
        help="auto: automatic labels; reviewed: human where present; ppi: automatic "
        "labels corrected by the reviewed random sample (prediction-powered intervals); "
        "rater:NAME: one rater's labels; consensus: adjudicated where raters disagreed, "
        "else a reviewer's",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "compare", help="compare two runs of a probe item by item (paired bootstrap, BH)"
    )
    p.add_argument("run_a", type=_run_id, metavar="RUN_A")
    p.add_argument("run_b", type=_run_id, metavar="RUN_B", help="differences are B − A")
    p.add_argument("--labels", choices=("auto", "reviewed"), default="auto")
    p.add_argument(
        "--resamples", type=_bounded("resamples"), default=1000, help="default 1000"
    )
    p.add_argument(
        "--seed", type=_draw_seed, default=0, help="seed of the resampling (default 0)"
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "audit",
        help="audit a model in one go: plan every probe to fit a time budget, run, report",
        description="Measure the model's speed, plan every probe's size to fit the budget "
        "(the plan is printed before anything runs), run the probes one after another and "
        "write the PDF report. Running the same command again continues an unfinished "
        "audit of the model.",
    )
    p.add_argument("--model", default="default", help="a GGUF path or 'default' (bundled)")
    p.add_argument("--budget", required=True, help="time budget: 30m, 2h, 8h, 1h30m …")
    p.add_argument("--report", metavar="FILE", help="the PDF (default: next to the database)")
    p.add_argument("--plan-only", action="store_true", help="show the plan, run nothing")
    p.add_argument(
        "--harness",
        metavar="NAME",
        help="run a study's harness: its probes with their own templates and sizes, cut to "
        "the budget (`gbdesk probes` lists the harnesses); default: every probe",
    )
    p.add_argument("--new", action="store_true", help="plan a new audit even if one is unfinished")
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("export", help="export runs as CSV files and/or a PDF report")
    p.add_argument("run_ids", type=_run_id, nargs="+", metavar="RUN_ID")
    p.add_argument("--csv", metavar="DIR", help="write attempts.csv and metrics.csv here")
    p.add_argument("--pdf", metavar="FILE", help="write the PDF report here")
    p.add_argument(
        "--labels",
        type=_label_mode,
        default="reviewed",
        metavar="MODE",
        help="labels the PDF's metrics use (default: reviewed, i.e. human where present; "
        "ppi: prediction-powered estimates from the reviewed random sample; rater:NAME: one "
        "rater's labels; consensus: adjudicated where raters disagreed)",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("import", help="analyse generations made elsewhere")
    p.add_argument("--probe", required=True)
    p.add_argument(
        "--file",
        required=True,
        help="CSV or JSONL with response and item or prompt columns (e.g. an exported "
        "attempts.csv), or the probe's own layout",
    )
    p.add_argument("--model-name", type=_text, help="name of the model that wrote the responses")
    p.add_argument(
        "--template", type=_text, help="template the prompts were made with (text or preset)"
    )
    p.add_argument(
        "--deal-rows",
        action="store_true",
        help="rows without an item column whose prompt several items share are dealt to "
        "those items in turn (otherwise such a file is refused)",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "import-labels",
        help="store a rater's hand labels for a run from CSV/JSONL (e.g. an edited export)",
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--file",
        required=True,
        help="rows keyed by attempt_id, item + attempt, or prompt + response; the label "
        "columns depend on the probe (characters.csv: role, name, gender, references; "
        "answers.csv: category, option; others: label)",
    )
    p.add_argument("--rater", type=_name, required=True, help="who made these labels")
    p.add_argument(
        "--consensus",
        action="store_true",
        help="the labels are adjudicated ones (where raters disagreed), decided by --rater",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "label", help="label a run's stored texts with one of its probe's labelling passes"
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--extractor",
        default="llm",
        metavar="PASS",
        help="the labelling pass (see the probe's card; default: llm)",
    )
    p.add_argument(
        "--labeler-model", default="default", help="GGUF path or 'default' for a model-based pass"
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "sample",
        help="draw a uniformly random review sample of a run (for --labels ppi)",
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument("--size", type=_positive_int, required=True, help="units to draw")
    p.add_argument("--seed", type=_seed, default=0)
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "code",
        help="code a run's texts with a codebook: draw the texts to code, import a rater's "
        "codes, edit the codebook, show progress",
    )
    p.add_argument("run_id", type=_run_id)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--select", action="store_true", help="draw the texts to code (per category, seeded)"
    )
    action.add_argument(
        "--file",
        help="CSV/JSONL of codes to store as --rater's (all or nothing): attempt_id, item + "
        "attempt, or story (item#attempt); codes (names separated by ';'); memo",
    )
    action.add_argument("--add-code", metavar="NAME", type=_text, help="add a code")
    action.add_argument(
        "--rename", nargs=2, metavar=("CODE", "NEW_NAME"), type=_text, help="rename a code"
    )
    action.add_argument(
        "--define", nargs=2, metavar=("CODE", "DEFINITION"), type=_text, help="define a code"
    )
    action.add_argument(
        "--show", action="store_true", help="the codebook, the drawn texts and the progress"
    )
    p.add_argument("--rater", type=_name, help="who coded (--file), or who edits the codebook")
    p.add_argument(
        "--consensus",
        action="store_true",
        help="with --file: the codes are the adjudicated ones, decided by --rater",
    )
    p.add_argument("--definition", type=_text, default="", help="with --add-code")
    p.add_argument(
        "--per-category", type=_positive_int, default=3, help="texts per category (default 3)"
    )
    p.add_argument("--seed", type=_seed, default=0, help="seed of the draw (default 0)")
    p.add_argument(
        "--threshold",
        type=_share,
        help="name-likelihood threshold of a name-based category (default: the probe's own)",
    )
    p.add_argument(
        "--categories", type=_text, help="comma-separated categories to draw (default: all)"
    )
    p.add_argument(
        "--labels",
        type=_label_mode,
        default="reviewed",
        metavar="MODE",
        help="labels whose names the selection reads (default: reviewed)",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser(
        "agreement",
        help="agreement between raters of a run: per label kind, and for codes per code "
        "and overall (initial, current, after adjudication)",
    )
    p.add_argument("run_id", type=_run_id)
    p.add_argument(
        "--with-auto",
        action="store_true",
        help="count the automatic labeller as one more rater",
    )
    _db_arg(p)
    _json_arg(p)

    p = sub.add_parser("review", help="record a reviewer's label for an attempt")
    p.add_argument("attempt_id", type=_run_id)
    p.add_argument(
        "label",
        type=_text,
        help="a label (e.g. male/female/undetected), or JSON for probes with structured labels, "
        'e.g. [{"role": "subject", "name": "Jane", "references": ["she", "her"]}]',
    )
    p.add_argument("--reviewer", type=_name, required=True)
    p.add_argument(
        "--consensus",
        action="store_true",
        help="store the label as the adjudicated one (raters disagreed), decided by --reviewer",
    )
    _db_arg(p)
    _json_arg(p)
    _add_study_commands(sub)
    return parser


@dataclass(frozen=True)
class CommandKit:
    """What a study's own subcommands (`Study.commands`) use to behave like the built-in
    ones: the --db and --json arguments, opening the database, printing the result, a
    progress printer for runs, and the argument types."""

    db_arg: Callable[[argparse.ArgumentParser], None]
    json_arg: Callable[[argparse.ArgumentParser], None]
    open_store: Callable[..., Any]
    emit: Callable[[argparse.Namespace, Any, str], None]
    progress: Callable[[], Callable[[Any], None]]
    text: Callable[[str], str]
    run_id: Callable[[str], int]
    positive_int: Callable[[str], int]
    seed: Callable[[str], int]
    name: Callable[[str], str]
    bounded: Callable[[str], Callable[[str], int]]  # a positive int up to `LIMITS[name]`


#: subcommands added by studies (`Study.commands`), filled when the parser is built
STUDY_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _add_study_commands(sub: Any) -> None:
    """Let every study that declares `commands` add its subcommands."""
    from importlib import import_module

    from gbdesk.studies import studies

    kit = CommandKit(
        _db_arg, _json_arg, _open_store, _emit, _ProgressPrinter, _text, _run_id,
        _positive_int, _seed, _name, _bounded,
    )  # fmt: skip
    for study in studies():
        if not study.commands:
            continue
        module, _, attr = study.commands.partition(":")
        try:
            handlers = getattr(import_module(module), attr)(sub, kit)
        except Exception:  # a broken study must not break the other commands
            logging.getLogger(__name__).exception("commands of the study %r failed", study.name)
            continue
        for name, handler in handlers.items():
            if name in COMMANDS:
                logging.getLogger(__name__).error("study command %r shadows a built-in", name)
                continue
            STUDY_COMMANDS[name] = handler


# -- helpers ----------------------------------------------------------------------------------
_db_in_use: list[Path] = []  # the database this command opened (for database-fault messages)


def _open_store(path: str | None, writes: bool = False):
    """Open the database; say on stderr where the copy made before a layout update is.
    `writes`: check now that the database can take writes (not damaged, read-only or
    locked), before any slow work, rather than at the first write. A path given with
    --db (or $GBDESK_DB) must lie in an existing folder, and only a command that writes
    makes a new file there (`check_db_path`); the per-user default is made when missing."""
    from gbdesk.store import Store
    from gbdesk.store.db import check_db_path
    from gbdesk.support.paths import default_db_path

    target = Path(path).expanduser() if path else default_db_path()
    if path or os.environ.get("GBDESK_DB"):  # a path a person typed: refuse a typo
        check_db_path(target, create=writes)
    _db_in_use[:] = [target]
    store = Store(target)
    if store.backup_path is not None:
        from gbdesk.store.db import backup_notice

        version = store.migrated_from
        print(f"gbdesk: {backup_notice(store.path, store.backup_path, version)}", file=sys.stderr)
    if writes:
        try:
            store.check_writable()
        except BaseException:
            store.close()
            raise
    return store


def _emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(payload, ensure_ascii=False, default=_json_default))
    else:
        print(text)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__}")


class _ProgressPrinter:
    """Progress on stderr: one rewritten line on a terminal, a line every few seconds else.

    From the first second after the model loaded: attempts stored, sequences in flight
    with their tokens (continuous batching), speed, ETA, the last attempt in words."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, p) -> None:
        if p.status == "loading":
            print(f"[run {p.run_id}] loading the model…", file=sys.stderr, flush=True)
            return
        if p.loaded_s is not None:
            batching = f"; continuous batching: {p.slots} sequences at once" if p.slots > 1 else ""
            print(
                f"[run {p.run_id}] model loaded in {p.loaded_s:.1f} s{batching}; "
                f"{p.total - p.done:,} attempt(s) to go",
                file=sys.stderr,
                flush=True,
            )
            return
        unit = "sent/s" if p.rate_unit == "sentences/s" else "tok/s"
        eta = "measuring the speed" if p.eta_s is None else duration(p.eta_s, compact=True)
        parts = [f"[run {p.run_id}] {p.done:,}/{p.total:,} ({100 * p.fraction:.1f}%)"]
        if p.in_flight_text:
            parts.append(p.in_flight_text)
        rate = f"{p.tokens_per_s:.1f}" if p.tokens_per_s < 10 else f"{p.tokens_per_s:.0f}"
        if p.eta_s is None and p.tokens_per_s <= 0:
            parts.append("measuring the speed")
        else:
            parts += [f"{rate} {unit}", f"ETA {eta}"]
        if p.last:
            parts.append(p.last_text)
        if p.status not in ("running", "labelling"):
            parts.append(p.status)
        line = " · ".join(parts)
        now = time.monotonic()
        if self.tty:
            end = "\n" if p.status not in ("running", "labelling") else ""
            print(
                "\r" + line[: os.get_terminal_size().columns - 1].ljust(40),
                end=end,
                file=sys.stderr,
                flush=True,
            )
        elif p.status != "running" or now - self.last > 5 or p.done == p.total:
            print(line, file=sys.stderr, flush=True)
            self.last = now


def _metrics_payload(
    store, run_id: int, labels: str, metrics: dict[str, Any], review: bool = True
) -> dict[str, Any]:
    """The JSON of `gbdesk metrics` from the run's `compute_metrics`, with the labels'
    accuracy (`review`: measured on the random review sample, else estimated; not computed
    with `review=False`)."""
    from gbdesk.analysis.label_accuracy import label_accuracy
    from gbdesk.maths.stats import adjusted_p_values
    from gbdesk.studies import get_probe
    from gbdesk.support.format import clip_ci, unfinished_note

    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    adjusted = adjusted_p_values(metrics)  # Benjamini–Hochberg over the run's tests
    out = {}
    for name, m in metrics.items():
        out[name] = m.to_json()
        out[name]["title"] = probe.metric_title(name)
        (lo, hi), past = clip_ci(m.ci, probe.metric_bounds(name))
        if past:  # the interval within what the metric can be (`ci` is the bootstrap's)
            out[name]["ci_shown"] = [lo, hi]
        if name in adjusted:
            out[name]["p_adj"] = adjusted[name]
    payload = {"run_id": run_id, "probe": run["probe"], "labels": labels, "metrics": out}
    payload["status"] = run["status"]
    payload["attempts"] = {"done": run["attempts_done"], "total": run["attempts_total"]}
    payload["unfinished"] = unfinished_note(run, probe.unit)
    # what the Review pane and the Results caption state
    accuracy = label_accuracy(store, run_id) if review else None
    payload["review"] = accuracy.to_json() if accuracy is not None else None
    return payload


def _findings_text(store, run_id: int, labels: str, metrics: dict[str, Any]) -> str:
    """The run's findings in words, most important first (as on the report's first page),
    from its `metrics` in this label mode."""
    from gbdesk.analysis.findings import ordered, run_findings
    from gbdesk.report.run_results import run_extra_results
    from gbdesk.studies import get_probe

    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    try:
        extra = run_extra_results(store, run_id, labels)
    except UserError:
        raise
    except Exception:  # the table is printed already: say the findings failed, and why
        logging.getLogger(__name__).exception("findings of run %s", run_id)
        return "\n\nFindings: could not be computed (see the log)."
    found = ordered(run_findings(run_id, "", probe, metrics, extra, run["params"]))
    if not found:
        return ""
    lines = [f"{k}. {f.sentence}" for k, f in enumerate(found, start=1)]
    return "\n\nFindings:\n" + "\n".join(lines)


def _metrics_heading(payload: dict[str, Any]) -> str:
    """"run 1 — <the probe's title>, automatic labels" and a line break."""
    from gbdesk.studies import get_probe

    labels = {
        "auto": "automatic labels",
        "reviewed": "reviewed labels (a person's where present)",
        "ppi": "prediction-powered estimates",
        "consensus": "consensus labels",
    }.get(payload["labels"], payload["labels"].replace("rater:", "labels of "))
    return f"run {payload['run_id']} — {get_probe(payload['probe']).card.title}, {labels}\n"


def _metrics_table(payload: dict[str, Any]) -> str:
    """The metrics for reading: what each measures in words (the keys are in --json and
    the CSV), its value and interval (within what the metric can be), mark and support;
    footnotes say why a value or interval is missing."""
    from gbdesk.studies import get_probe
    from gbdesk.support.format import UNDEFINED_CI, UNDEFINED_VALUE, ci_cells

    probe = get_probe(payload["probe"])
    metrics = payload["metrics"]
    titles = {name: m.get("title") or probe.metric_title(name) for name, m in metrics.items()}
    width = min(60, max([28, *(len(t) for t in titles.values())]))
    cis, cut = {}, False
    for name, m in metrics.items():
        lo, hi = (math.nan if v is None else v for v in m["ci"])
        text, was_cut = ci_cells((lo, hi), probe.metric_bounds(name))
        if m["value"] is not None and lo != lo:
            text = "—†"
        cis[name] = text + ("*" if was_cut else "")
        cut |= was_cut
    ci_width = max([19, *(len(ci) for ci in cis.values())])
    with_p = any(m.get("p_value") is not None for m in metrics.values())
    p_head = f"{'p':>7}  {'p_adj':>7}  " if with_p else ""
    ppi = any((m.get("details") or {}).get("kind") == "ppi" for m in metrics.values())
    ppi_head = f"{'automatic':>9}  {'bias':>7}  " if ppi else ""
    rows = [
        f"{'what':<{width}} {'value':>8}  {'95% CI':<{ci_width}} {p_head}{ppi_head}mark  {'n':>5}"
    ]
    undefined: list[str] = []
    reasons: dict[str, list[str]] = {}
    for name, m in metrics.items():
        p_cell = ""
        if with_p:
            p, pa = m.get("p_value"), m.get("p_adj")
            p_cell = (
                f"{'<0.001' if p is not None and p < 0.001 else fmt(p):>7}  "
                f"{'<0.001' if pa is not None and pa < 0.001 else fmt(pa):>7}  "
            )
        ppi_cell = ""
        if ppi:
            d = m.get("details") or {}
            ppi_cell = f"{fmt(d.get('automatic_value')):>9}  {fmt(d.get('bias')):>7}  "
            if not d.get("valid", True):
                reasons.setdefault(d.get("reason") or "no interval", []).append(name)
        title = titles[name] if len(titles[name]) <= width else titles[name][: width - 1] + "…"
        value = fmt(m["value"])
        if m["value"] is None:
            value = "—‡"
            undefined.append(name)
        rows.append(
            f"{title:<{width}} {value:>8}  {cis[name]:<{ci_width}} {p_cell}{ppi_cell}"
            f"{m['mark'] or '—':<4}  {m['n']:>5}"
        )
    if undefined:
        why = sorted({probe.why_undefined(n, {}) or UNDEFINED_VALUE for n in undefined})
        rows.append("\n‡ " + "; ".join(why))
    if any(c.startswith("—†") for c in cis.values()):
        rows.append(f"† {UNDEFINED_CI}")
    if cut:
        rows.append(
            "* interval cut at what the metric can be (e.g. 0–1 for a share): the "
            "bootstrap's normal fit reached past it; the mark is the study's, from the "
            "uncut interval (--json has both)"
        )
    if payload.get("unfinished"):
        rows.insert(
            0,
            f"UNFINISHED RUN — {payload['unfinished'].removeprefix('unfinished: ')}: the "
            f"numbers cover only these (continue it with: gbdesk resume {payload['run_id']})",
        )
    if with_p:
        rows.append(
            "\np_adj: Benjamini–Hochberg adjusted over the run's tests (read this one when "
            "many metrics are tested)"
        )
    if ppi:
        rows.append(
            "\nvalue and 95 % CI: prediction-powered (automatic labels corrected by the "
            "reviewed random sample); automatic: the same from automatic labels alone; bias: "
            "automatic − human on the reviewed sample."
        )
        for reason, names in reasons.items():
            which = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            rows.append(f"no interval for {which}: {reason}")
    return "\n".join(rows)


def _run_summary(store, run_id: int) -> dict[str, Any]:
    run = store.get_run(run_id)
    return {
        "run_id": run_id,
        "status": run["status"],
        "attempts": run["attempts_done"],
        "attempts_total": run["attempts_total"],
        # sequences decoded at once by the last session (continuous batching when > 1)
        "batch_size": (run["engine"].get("batching") or {}).get("slots", 1),
    }


def _tiny_notice(store, run_id: int) -> str:
    from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model

    run = store.get_run(run_id)
    if run["model_id"]:
        model = store.get_model(run["model_id"])
        if model["kind"] == "gguf" and is_default_model(model["path"]):
            return "\n\nNote: " + TINY_MODEL_NOTICE
    return ""


# -- commands ---------------------------------------------------------------------------------
def cmd_probes(args) -> int:
    from gbdesk.studies import get_probe, harnesses, probe_names, probe_table_markdown

    if args.markdown:
        print(probe_table_markdown())
        return 0
    probes = [get_probe(n).describe() for n in probe_names()]
    text = "\n".join(
        f"{p['name']:<22} {p['items']:>6} items  {p['title']}  (licence: {p['card']['licence']})"
        for p in probes
    )
    sets = [
        {"name": h.name, "title": h.title, "probes": list(h.probes), "template": h.template,
         "description": h.description}
        for h in harnesses().values()
    ]  # fmt: skip
    if sets:
        text += "\n\nharnesses (gbdesk audit --harness NAME):\n" + "\n".join(
            f"{h['name']:<22} {h['title']}: {len(h['probes'])} probes" for h in sets
        )
    _emit(args, {"probes": probes, "harnesses": sets}, text)
    return 0


def cmd_card(args) -> int:
    from gbdesk.studies import get_probe

    probe = get_probe(args.probe)
    _emit(args, {"probe": probe.name, "card": probe.card.to_json()}, probe.card.to_text(probe.name))
    return 0


def cmd_items(args) -> int:
    from gbdesk.studies import get_probe

    probe = get_probe(args.probe)
    params = probe.resolve_params(template=args.template, limit=args.limit, sample=args.sample)
    items = probe.items(params)
    payload = {
        "probe": probe.name,
        "template": params["template"],
        # `prompts`: every prompt of the item with its metadata (one for most probes);
        # `prompt`: the first one's text
        "items": [
            {
                "item": i.key,
                "prompt": i.prompt,
                **i.metadata,
                "prompts": i.prompts_json() or [{"text": i.prompt, "metadata": {}}],
            }
            for i in items
        ],
    }
    lines = []
    for i in items:
        lines.append(f"{i.key}\t{i.prompt}")
        lines += [f"  prompt {n + 1}\t{p.text}" for n, p in enumerate(i.prompts) if n]
    _emit(args, payload, "\n".join(lines))
    return 0


def cmd_models(args) -> int:
    from gbdesk.engine.http_backend import with_endpoints
    from gbdesk.workflows.models import list_models

    with _open_store(args.db, writes=bool(args.add)) as store:
        for path in args.add or []:
            _add_model(store, path)
        models = with_endpoints(list_models(store), store)
    _emit(args, {"models": models}, "\n".join(_model_line(m) for m in models))
    return 0


def _add_model(store, spec: str) -> None:
    """`models --add`: a GGUF file (hashed), or an endpoint ``URL#MODEL`` (a preset name
    for the URL too), connected to and checked for what it can do."""
    from gbdesk.engine.http_backend import (
        ENDPOINT_PRESETS,
        check_capabilities,
        parse_endpoint_spec,
    )
    from gbdesk.workflows.runs import resolve_model

    url, sep, model = spec.partition("#")
    if sep and url.strip().lower() in ENDPOINT_PRESETS:
        spec = f"{ENDPOINT_PRESETS[url.strip().lower()][1]}#{model}"
    if parse_endpoint_spec(spec) is None:
        resolve_model(store, spec)
        return
    row = resolve_model(store, spec)
    check_capabilities(store, row)


def _model_line(m: dict[str, Any]) -> str:
    if m.get("endpoint"):
        from gbdesk.engine.http_backend import capability_words

        key = f"${m['api_key_env']}, " if m.get("api_key_env") else ""
        found = m.get("capabilities")
        marks = {True: "yes", False: "no", None: "could not tell"}
        can = (
            "".join(
                f"\n    {what}: {marks[ok]}" + (f" — {why}" if why else "")
                for what, ok, why in capability_words(found)
            )
            + f"\n    (checked {str(found.get('checked_at', '?'))[:16].replace('T', ' ')} UTC)"
            if found
            else f"\n    what it can do: not checked yet (gbdesk models --add {m['path']})"
        )
        return (
            f"{m['name']}\n    {m['url']}\n    OpenAI-compatible endpoint · model "
            f"{m['endpoint_model']} · {m['concurrency']} concurrent request(s) · API key from "
            f"{key}$GBDESK_API_KEY or the keyring (never stored){can}"
        )
    return (
        f"{m['name']}\n    {m['path']}\n    {m.get('architecture') or '?'} · "
        f"{m.get('parameters_label') or '?'} params · {m.get('quantization') or '?'} · "
        f"ctx {m.get('context_length') or '?'} · chat template: "
        f"{'yes' if m.get('has_chat_template') else 'no (completion mode)'} · "
        f"{m.get('size_label') or ''} · needs ≈{m.get('memory_label') or '?'}"
        + (f"\n    ! {m['error']}" if m.get("error") else "")
    )


def cmd_run(args) -> int:
    from gbdesk.engine.llama_backend import LlamaCppBackend
    from gbdesk.studies import get_probe
    from gbdesk.workflows.runs import (
        check_engine_needs,
        plan_run,
        resolve_model,
        same_run,
        subset_note,
    )

    # fail fast on a typo or a bad parameter, before loading anything
    probe = get_probe(args.probe)
    params = probe.resolve_params(
        template=args.template, limit=args.limit, sample=args.sample, **_options(args.options)
    )
    endpoint_only = {
        "--endpoint-model": args.endpoint_model,
        "--concurrency": args.concurrency,
        "--api-key-env": args.api_key_env,
    }
    if not args.endpoint:
        given = [flag for flag, value in endpoint_only.items() if value is not None]
        if given:
            raise UserError(
                f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --endpoint URL"
            )
    elif not args.endpoint_model:
        raise UserError(
            "--endpoint needs --endpoint-model NAME (the model name the server serves; "
            "its /v1/models lists them)"
        )
    planned = {
        "attempts": args.attempts,
        "seed": args.seed,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "max_tokens": args.max_tokens,
        "prompt_mode": args.prompt_mode,
        "batch_size": args.batch_size,
        "template": args.template,
        "limit": args.limit,
        "sample": args.sample,
        **_options(args.options),
    }
    with _open_store(args.db, writes=True) as store:
        # parameters naming data in the database (a dataset, an elicitation run) are
        # checked before the model is registered: a refused run writes nothing
        probe.bind(store, params)
        if args.endpoint:
            from gbdesk.engine.http_backend import (
                HttpBackend,
                endpoint_capabilities,
                register_endpoint,
                store_capabilities,
            )

            # Probe the endpoint before planning: a wrong address, path, model name or key
            # fails here in one line and leaves no empty run behind.
            backend = HttpBackend(
                args.endpoint,
                args.endpoint_model,
                api_key_env=args.api_key_env,
                concurrency=args.concurrency or 1,
                prompt_mode=args.prompt_mode,
            )
            model = register_endpoint(
                store,
                backend.base_url,
                backend.model,
                api_key_env=backend.api_key_env,
                concurrency=backend.concurrency,
            )
            # what it can do, stored with it (checked now when never checked, or when the
            # probe needs something): `plan_run` refuses a probe it cannot serve
            if get_probe(args.probe).engine_needs or not endpoint_capabilities(model):
                try:
                    model = store_capabilities(store, model["id"], backend.capabilities())
                except BaseException:
                    backend.close()
                    raise
        else:
            backend = None
            model = resolve_model(store, args.model)
        earlier = None if args.new else same_run(store, args.probe, model, **planned)
        if earlier is not None and earlier["status"] == "done":
            if backend is not None:
                backend.close()
            print(
                f"run {earlier['id']} already holds these results (the same probe, model and "
                f"settings; {earlier['attempts_done']:,}/{earlier['attempts_total']:,} "
                "attempts); showing them — --new runs it again",
                file=sys.stderr,
            )
            return _show_run(args, store, earlier["id"])
        if earlier is not None:
            _refuse_if_running_elsewhere(store, earlier)
            check_engine_needs(store, get_probe(args.probe), model)  # as plan_run does
        if backend is None:
            # Load before planning, so a file llama.cpp rejects leaves no empty run behind.
            backend = LlamaCppBackend(
                model["path"], prompt_mode=args.prompt_mode, batch_size=args.batch_size
            )
        if earlier is not None:
            run_id = earlier["id"]
            print(
                f"continuing run {run_id} ({earlier['attempts_done']:,}/"
                f"{earlier['attempts_total']:,} attempts done): the same probe, model and "
                "settings; --new starts another",
                file=sys.stderr,
            )
        else:
            try:
                run_id = plan_run(store, args.probe, model, **planned)
            except BaseException:
                backend.close()
                raise
        via = f" ({backend.concurrency} concurrent requests)" if args.endpoint else ""
        print(
            f"[run {run_id}] {args.probe} on {model['name']}{via} → {store.path}", file=sys.stderr
        )
        run = store.get_run(run_id)
        print(
            f"[run {run_id}] {subset_note(get_probe(args.probe), run['params'])}; "
            f"{run['attempts_total']:,} attempts",
            file=sys.stderr,
        )
        return _execute(args, store, run_id, lambda _model, _generation: backend)


def _execute(args, store, run_id: int, backend_factory=None) -> int:
    from gbdesk.store.db import DatabaseFault, database_fault
    from gbdesk.workflows.runs import execute_run, llama_backend_factory

    try:
        execute_run(
            store,
            run_id,
            on_progress=_ProgressPrinter(),
            backend_factory=backend_factory or llama_backend_factory,
        )
    except (sqlite3.Error, DatabaseFault) as exc:
        fault = database_fault(exc, store.path, store.BUSY_TIMEOUT_S)
        if fault is None or fault.kind in ("corrupt", "notadb"):
            raise
        raise DatabaseFault(
            f"{fault}; run {run_id} keeps every attempt saved before — continue it with: "
            f"gbdesk resume {run_id}",
            fault.kind,
        ) from exc
    except KeyboardInterrupt:
        again = " (or the same command again)" if args.command == "run" else ""
        print(
            f"\ninterrupted; run {run_id} is saved — continue it with: gbdesk resume {run_id}"
            f"{again}",
            file=sys.stderr,
        )
        return 130
    return _show_run(args, store, run_id)


def _refuse_if_running_elsewhere(store, run: dict[str, Any]) -> None:
    """An identical run another gbdesk process is running now is not joined."""
    from gbdesk.store.db import ACTIVE_STATUSES

    if run["status"] in ACTIVE_STATUSES:
        raise UserError(
            f"run {run['id']} (the same probe, model and settings) is being run by another "
            "gbdesk process now; wait for it, or start another with --new"
        )


def _show_run(args, store, run_id: int) -> int:
    """What `gbdesk run` prints at the end: the summary, or the metrics and findings."""
    summary = _run_summary(store, run_id)
    if args.json:
        _emit(args, summary, "")
        return 0
    from gbdesk.analysis.results import compute_metrics

    metrics = compute_metrics(store, run_id, "auto")
    payload = _metrics_payload(store, run_id, "auto", metrics, review=False)
    findings = _findings_text(store, run_id, "auto", metrics)
    print(
        f"run {run_id}: {summary['status']}, {summary['attempts']}/{summary['attempts_total']} "
        f"attempts\n\n{_metrics_table(payload)}{findings}"
        f"{_tiny_notice(store, run_id)}\n\n"
        f"Export: gbdesk export {run_id} --csv DIR  (database: {store.path})"
    )
    return 0


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set expects KEY=VALUE, got {pair!r}")
        options[key.strip().replace("-", "_")] = value.strip()
    return options


def cmd_label(args) -> int:
    from gbdesk.workflows.labeling import label_run

    with _open_store(args.db, writes=True) as store:
        result = label_run(
            store, args.run_id, args.extractor, args.labeler_model, on_progress=_ProgressPrinter()
        )
    _emit(
        args,
        {"run_id": args.run_id, **result},
        f"run {args.run_id}: {result['labelled']} {result.get('unit', 'attempts')} labelled by "
        f"{result['source']}"
        + (
            f" ({result['fallbacks']} fell back to the built-in labeller)"
            if result.get("fallbacks")
            else ""
        )
        + "; the run's metrics now use these labels",
    )
    return 0


#: a model name's characters on a line of `gbdesk runs` or `compare` (--json has it whole)
MODEL_CHARS = 60


def cmd_runs(args) -> int:
    with _open_store(args.db) as store:
        runs = store.list_runs()
    payload = [
        {
            "run_id": r["id"],
            "probe": r["probe"],
            "model": r["model_name"],
            "status": r["status"],
            "attempts_done": r["attempts_done"],
            "attempts_total": r["attempts_total"],
            "created_at": r["created_at"],
            "source": r["source"],
        }
        for r in runs
    ]
    text = (
        "\n".join(
            f"{r['run_id']:>4}  {r['probe']:<14} {r['status']:<11} "
            f"{r['attempts_done']:>5}/{r['attempts_total']:<5} {one_line(r['model'], MODEL_CHARS)}"
            for r in payload
        )
        or "no runs yet — start one with: gbdesk run --probe PROBE (see: gbdesk probes)"
    )
    _emit(args, payload, text)
    return 0


def cmd_resume(args) -> int:
    with _open_store(args.db, writes=True) as store:
        run = store.get_run(args.run_id)
        if run["source"] == "imported":
            raise UserError(
                f"run {args.run_id} was imported from a file: it is complete as imported and "
                f"there is nothing to generate (see: gbdesk metrics {args.run_id})"
            )
        if run["status"] == "done":
            print(f"run {args.run_id} is already complete", file=sys.stderr)
        return _execute(args, store, args.run_id)


def cmd_metrics(args) -> int:
    from gbdesk.analysis.results import compute_metrics

    with _open_store(args.db) as store:
        metrics = compute_metrics(store, args.run_id, args.labels)
        payload = _metrics_payload(store, args.run_id, args.labels, metrics)
        notice = _tiny_notice(store, args.run_id)
        findings = "" if args.json else _findings_text(store, args.run_id, args.labels, metrics)
    review = payload["review"]
    text = (
        _metrics_heading(payload)
        + _metrics_table(payload)
        + findings
        + (f"\n\nLabels: {review['text']}" if review else "")
        + notice
    )
    _emit(args, payload, text)
    return 0


def cmd_compare(args) -> int:
    from gbdesk.analysis.compare import compare_runs

    with _open_store(args.db) as store:
        c = compare_runs(
            store, args.run_a, args.run_b, args.labels, resamples=args.resamples, seed=args.seed
        )
    lines = [
        f"run {c.run_b} (B: {one_line(c.model_b, MODEL_CHARS)}) against run {c.run_a} "
        f"(A: {one_line(c.model_a, MODEL_CHARS)}) · {c.probe} · "
        f"{c.items} items paired · {c.label_mode} labels · {c.resamples} paired resamples "
        f"(seed {c.seed})"
    ]
    lines += [f"warning: {w}" for w in c.warnings]
    width = max([24, *(len(n) for n in c.metrics)])
    lines.append(f"{'metric':<{width}} {'A':>8} {'B':>8} {'B − A':>8}  {'95% CI':<19} p_adj")
    for name, m in c.metrics.items():
        cells = f"[{fmt(m.ci[0])}, {fmt(m.ci[1])}]  {fmt(m.p_adj)}" if m.tested else "not tested"
        star = " *" if m.established else ""
        lines.append(f"{name:<{width}} {fmt(m.a):>8} {fmt(m.b):>8} {fmt(m.diff):>8}  {cells}{star}")
    lines += ["", c.summary()]
    reasons: dict[str, int] = {}
    for m in c.metrics.values():
        if m.reason:
            reasons[m.reason] = reasons.get(m.reason, 0) + 1
    lines += [f"not tested ({n}): {reason}" for reason, n in reasons.items()]
    _emit(args, c.to_json(), "\n".join(lines))
    return 0


def cmd_audit(args) -> int:
    from gbdesk.workflows.audit import (
        get_audit,
        measure_speed,
        parse_budget,
        plan_audit,
        run_audit,
        save_audit,
        unfinished_audit,
    )
    from gbdesk.workflows.runs import resolve_model

    budget_s = parse_budget(args.budget)
    with _open_store(args.db, writes=True) as store:
        model = resolve_model(store, args.model)
        audit_id = None if args.new or args.plan_only else unfinished_audit(store, model["id"])
        if audit_id is not None:
            audit = get_audit(store, audit_id)
            print(
                f"[audit {audit_id}] continuing the unfinished audit of {model['name']} "
                f"(budget {audit['budget']}; --new plans another)",
                file=sys.stderr,
            )
        else:
            print(f"measuring the speed of {model['name']}…", file=sys.stderr, flush=True)
            speed = measure_speed(store, model)
            plan = plan_audit(
                store, model, budget_s, speed, budget_text=args.budget, harness=args.harness
            )
            if args.plan_only:
                _emit(args, {"plan": plan.to_json(), "runs": [], "report": None}, plan.text())
                return 0
            print(plan.text(), file=sys.stderr, flush=True)
            if not plan.probes:
                raise UserError(
                    f"the budget {args.budget} fits no probe on this model; give it more time"
                )
            audit_id = save_audit(store, plan)
        printer = _ProgressPrinter()

        def progress(p) -> None:
            if p.run is not None:
                printer(p.run)
            elif p.status == "running":
                print(
                    f"[audit {audit_id}] probe {p.step + 1}/{p.steps}: {p.probe} (run {p.run_id})",
                    file=sys.stderr,
                    flush=True,
                )
            elif p.status == "report":
                print(f"[audit {audit_id}] writing the report…", file=sys.stderr, flush=True)

        try:
            result = run_audit(store, audit_id, on_progress=progress, report=args.report)
        except KeyboardInterrupt:
            print(
                f"\ninterrupted; audit {audit_id} is saved — the same command continues it",
                file=sys.stderr,
            )
            return 130
    payload = {"plan": result["plan"], "runs": result["runs"], "report": result["report"]}
    payload["audit_id"] = audit_id
    text = (
        f"audit {audit_id}: runs {', '.join(map(str, result['runs']))}; report: {result['report']}"
        if result["report"]
        else f"audit {audit_id} stopped; the same command continues it"
    )
    _emit(args, payload, text)
    return 0


def cmd_export(args) -> int:
    if not args.csv and not args.pdf:
        raise UserError("say where to export: --csv DIR and/or --pdf FILE")
    if args.pdf and Path(args.pdf).is_dir():  # before any metric is computed and cached
        raise UserError(f"--pdf must name a file, and {args.pdf} is a folder")
    if args.csv and Path(args.csv).exists() and not Path(args.csv).is_dir():
        raise UserError(f"--csv must name a folder, and {args.csv} is a file")
    written: list[str] = []
    with _open_store(args.db) as store:
        for run_id in args.run_ids:
            store.get_run(run_id)  # a clear error for an unknown run
        if args.csv:
            from gbdesk.report.csv_export import export_run_csv

            written += [str(p) for p in export_run_csv(store, args.run_ids, args.csv)]
        if args.pdf:
            from gbdesk.report.pdf import export_pdf

            written.append(str(export_pdf(store, args.run_ids, args.pdf, label_mode=args.labels)))
    _emit(args, {"files": written}, "\n".join(written))
    return 0


def cmd_sample(args) -> int:
    from gbdesk.analysis.ppi_metrics import draw_sample

    with _open_store(args.db) as store:
        result = draw_sample(store, args.run_id, args.size, args.seed)
    unit = "items (all their attempts)" if result["unit"] == "item" else "attempts"
    _emit(
        args,
        result,
        f"run {args.run_id}: review sample of {result['size']} of {result['of']} {unit}, "
        f"seed {result['seed']} — review them (Review → “In the random review sample”, or "
        f"gbdesk import-labels), then: gbdesk metrics {args.run_id} --labels ppi",
    )
    return 0


def cmd_import_labels(args) -> int:
    from gbdesk.people.label_import import import_labels

    with _open_store(args.db) as store:
        result = import_labels(store, args.run_id, args.file, args.rater, consensus=args.consensus)
    what = "adjudicated (consensus) by" if args.consensus else "labelled by"
    text = f"run {args.run_id}: {result['labelled']} attempts {what} {result['rater']}"
    _emit(args, result, text)
    return 0


def cmd_import(args) -> int:
    from gbdesk.workflows.importer import import_generations

    with _open_store(args.db, writes=True) as store:
        result = import_generations(
            store,
            args.probe,
            args.file,
            model_name=args.model_name,
            template=args.template,
            deal_rows=args.deal_rows,
        )
    for warning in result.get("warnings") or []:
        print(f"gbdesk: note: {warning}", file=sys.stderr)
    _emit(args, result, f"imported {result['attempts']} attempts as run {result['run_id']}")
    return 0


def cmd_review(args) -> int:
    from gbdesk.studies import get_probe

    with _open_store(args.db, writes=True) as store:
        attempt = store.get_attempt(args.attempt_id)
        probe = get_probe(store.get_run(attempt["run_id"])["probe"])
        metadata = next(
            (
                row["metadata"]
                for row in store.run_items(attempt["run_id"])
                if row["item"] == attempt["item"]
            ),
            {},
        )
        label = probe.human_label(attempt["response"], metadata, args.label, args.reviewer)
        add = store.add_consensus_label if args.consensus else store.add_human_label
        label_id = add(
            args.attempt_id, args.reviewer, label["label"], label.get("data"), label.get("evidence")
        )
    kind = "consensus" if args.consensus else "human"
    payload = {"label_id": label_id, "attempt_id": args.attempt_id, "label": label["label"]}
    who = f"consensus, decided by {args.reviewer}" if args.consensus else f"by {args.reviewer}"
    _emit(args, {**payload, "kind": kind}, f"attempt {args.attempt_id}: {label['label']} ({who})")
    return 0


def cmd_code(args) -> int:
    from gbdesk.people import coding

    if args.consensus and not args.file:
        raise UserError("--consensus goes with --file")
    with _open_store(args.db, writes=not args.show) as store:
        store.get_run(args.run_id)
        if args.select:
            categories = (
                [c.strip() for c in args.categories.split(",") if c.strip()]
                if args.categories
                else None
            )
            result = coding.draw_selection(
                store,
                args.run_id,
                per_category=args.per_category,
                seed=args.seed,
                threshold=args.threshold,
                categories=categories,
                label_mode=args.labels,
            )
            lines = [
                f"run {args.run_id}: {len(result['drawn'])} texts drawn to code "
                f"({result['per_category']} per category, seed {result['seed']})",
                f"rule: {result['rule']}",
            ]
            lines += [
                f"  {c}: {sum(1 for d in result['drawn'] if d['category'] == c)} of {n} available"
                for c, n in result["available"].items()
            ]
            lines += [
                f"  {d['item']}#{d['attempt']} (attempt {d['attempt_id']}) · {d['category']} · "
                f"{d['reason']}"
                for d in result["drawn"]
            ]
            _emit(args, result, "\n".join(lines))
            return 0
        if args.file:
            if not args.rater:
                raise UserError("--file needs --rater NAME (who coded)")
            result = coding.import_codes(
                store, args.run_id, args.file, args.rater, consensus=args.consensus
            )
            what = "adjudicated codings" if args.consensus else "codings"
            _emit(
                args,
                result,
                f"run {args.run_id}: {result['coded']} {what} by {result['rater']} stored",
            )
            return 0
        who = args.rater or ""
        if args.add_code:
            key = coding.add_code(store, args.run_id, args.add_code, args.definition, who)
            _emit(args, {"code": key}, f"added code {args.add_code!r} (key {key})")
            return 0
        if args.rename:
            key = coding.rename_code(store, args.run_id, args.rename[0], args.rename[1], who)
            _emit(args, {"code": key}, f"code {key} is now called {args.rename[1]!r}")
            return 0
        if args.define:
            key = coding.define_code(store, args.run_id, args.define[0], args.define[1], who)
            _emit(args, {"code": key}, f"code {key} defined")
            return 0
        book = coding.codebook(store, args.run_id)
        summary = coding.coding_summary(store, args.run_id)
        items = coding.coding_items(store, args.run_id)
    names = {e["code"]: e["name"] for e in book}
    lines = ["codebook:"]
    lines += [f"  {e['name']} ({e['code']}): {e['definition']}" for e in book]
    if summary:
        p = summary["progress"]
        coded = ", ".join(f"{r} {n}/{p['drawn']}" for r, n in p["coded_by"].items())
        lines.append(
            f"{p['drawn']} texts drawn; coded: {coded or 'nobody yet'}; disputed "
            f"{p['disputed']}, adjudicated {p['adjudicated']}, unresolved {p['unresolved']}"
        )
    for item in items:
        codings = "; ".join(
            f"{r}: {', '.join(names.get(c, c) for c in v['codes']) or coding.NO_CODE}"
            for r, v in item.codings.items()
        )
        if item.consensus:
            codings += f"; consensus ({item.consensus['by']}): " + (
                ", ".join(names.get(c, c) for c in item.consensus["codes"]) or coding.NO_CODE
            )
        lines.append(f"  {item.story} · {item.category} · {codings or 'not coded'}")
    payload = {
        "run_id": args.run_id,
        "codebook": book,
        "summary": summary,
        "texts": [
            {
                "attempt_id": i.attempt_id,
                "story": i.story,
                "category": i.category,
                "reason": i.reason,
                "codings": i.codings,
                "consensus": i.consensus,
            }
            for i in items
        ],
    }
    _emit(args, payload, "\n".join(lines))
    return 0


def _agreement_text(payload: dict[str, Any]) -> str:
    def num(x: Any) -> str:
        return "—" if x is None else f"{x:.3f}"

    def pct(x: Any) -> str:
        return "—" if x is None else f"{100 * x:.1f} %"

    def figures(first: dict[str, Any], now: dict[str, Any], indent: str = "  ") -> list[str]:
        rows = [
            ("percent agreement", pct(first["percent_agreement"]["pairwise"]),
             pct(now["percent_agreement"]["pairwise"])),
            ("Cohen's κ", num(first["cohen_kappa"]["value"]), num(now["cohen_kappa"]["value"])),
            ("Fleiss' κ", num(first["fleiss_kappa"]["value"]), num(now["fleiss_kappa"]["value"])),
            ("Krippendorff's α", num(first["krippendorff_alpha"]["value"]),
             num(now["krippendorff_alpha"]["value"])),
        ]  # fmt: skip
        out = [f"{indent}{'':<20} {'initial':>9} {'current':>9}"]
        out += [f"{indent}{t:<20} {a:>9} {b:>9}" for t, a, b in rows]
        reasons = {
            f["reason"]
            for f in (now["cohen_kappa"], now["fleiss_kappa"], now["krippendorff_alpha"])
            if f.get("reason")
        }
        out += [f"{indent}(— {r})" for r in sorted(reasons)]
        return out

    def adjudication(adj: dict[str, Any], indent: str = "  ") -> list[str]:
        vs = "; ".join(
            f"{r} {pct(v['agreement'])} of {v['n_units']} (κ {num(v['cohen_kappa'])})"
            for r, v in adj["raters_vs_final"].items()
        )
        return [
            f"{indent}adjudication: {adj['n_disputed']} disputed, {adj['n_adjudicated']} "
            f"adjudicated, {adj['n_unresolved']} unresolved; against the final labels: "
            f"{vs or '—'}"
        ]

    head = (
        f"run {payload['run_id']} ({payload['probe']}) · raters of its labels: "
        f"{', '.join(payload['raters']) or 'none'}"
    )
    if payload.get("coders"):
        head += f" · coders: {', '.join(payload['coders'])}"
    if payload["with_automatic"]:
        head += " + the automatic labeller"
    if payload["adjudicators"]:
        head += f" · adjudicated by: {', '.join(payload['adjudicators'])}"
    lines = [head]
    rated = [k for k in payload["labels"].values() if k["current"]["n_units"]]
    if not rated:
        lines.append("\nLabels: no person has labelled this run yet.")
    for kind in rated:
        now = kind["current"]
        lines.append(
            f"\n{kind['title']}: {now['n_units']} units rated, {now['n_units_overlap']} by two "
            f"raters or more; {kind['changed']} rating(s) changed since first given"
        )
        if now["n_units_overlap"]:
            lines += figures(kind["initial"], now)
            lines += adjudication(kind["adjudication"])
    codes = payload.get("codes")
    if codes:
        now = codes["current"]
        lines.append(
            f"\nCodes ({', '.join(payload['coders'])}): {now['n_units']} texts coded, "
            f"{now['n_units_overlap']} by two raters or more"
        )
        first_codes = {c["code"]: c for c in codes["initial"]["multi_code"]["codes"]}
        for c in now["multi_code"]["codes"]:
            name = codes["names"].get(c["code"], c["code"])
            prevalence = pct(c["prevalence"])
            lines.append(f"  code {name} (given in {prevalence} of codings):")
            lines += figures(first_codes[c["code"]], c, "    ")
        lines.append("  all codes pooled (every text × code):")
        pooled = (codes["initial"]["multi_code"]["pooled"], now["multi_code"]["pooled"])
        lines += figures(*pooled, "    ")
        lines.append("  whole code sets (equal only when identical):")
        lines += figures(codes["initial"], now, "    ")
        lines += adjudication(codes["adjudication"])
    return "\n".join(lines)


def cmd_agreement(args) -> int:
    from gbdesk.people.raters import run_agreement

    with _open_store(args.db) as store:
        payload = run_agreement(store, args.run_id, include_auto=args.with_auto)
    _emit(args, payload, _agreement_text(payload))
    return 0


COMMANDS = {
    "probes": cmd_probes,
    "card": cmd_card,
    "items": cmd_items,
    "models": cmd_models,
    "run": cmd_run,
    "runs": cmd_runs,
    "resume": cmd_resume,
    "metrics": cmd_metrics,
    "compare": cmd_compare,
    "audit": cmd_audit,
    "export": cmd_export,
    "import": cmd_import,
    "import-labels": cmd_import_labels,
    "sample": cmd_sample,
    "review": cmd_review,
    "label": cmd_label,
    "code": cmd_code,
    "agreement": cmd_agreement,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_worker"]:
        from gbdesk.engine.llama_worker import main as worker_main

        return worker_main()
    from gbdesk.support.logs import setup_logging

    log_file = setup_logging()
    # A log file that cannot be written (a full disk) must not print tracebacks on stderr.
    logging.raiseExceptions = False
    try:
        if not argv or (len(argv) == 1 and argv[0].lower().endswith((".sqlite", ".db"))):
            from gbdesk.ui.app import main as gui_main

            return gui_main(argv[0] if argv else None)
        args = build_parser().parse_args(argv)
        if args.command is None:
            if args.app_db:  # gbdesk --db FILE: the app on that database
                from gbdesk.ui.app import main as gui_main

                return gui_main(args.app_db)
            build_parser().print_help()
            return 0
        if getattr(args, "db", None) is None and args.app_db:
            args.db = args.app_db
        return (COMMANDS.get(args.command) or STUDY_COMMANDS[args.command])(args)
    except UserError as exc:
        print(f"gbdesk: error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:
        from gbdesk.store.db import database_fault

        fault = database_fault(exc, _db_in_use[0] if _db_in_use else None)
        if fault is None:
            return _unexpected(exc, argv, log_file)
        logging.getLogger("gbdesk.cli").warning("database fault: %s", exc)
        print(f"gbdesk: error: {fault}", file=sys.stderr)
        return 2
    except EngineError as exc:
        print(f"gbdesk: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the system refuses: too long, a folder, no permission …
        logging.getLogger("gbdesk.cli").warning("file error in: gbdesk %s", argv[:1], exc_info=exc)
        print(f"gbdesk: error: {_file_error(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line here, the traceback in the log file
        return _unexpected(exc, argv, log_file)


def _file_error(exc: OSError) -> str:
    """An OSError in one line: what the system said, and about which path (cut)."""
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        return f"cannot use {_shown(os.fsdecode(exc.filename))}: {one_line(what, 200)}"
    return one_line(what, 300)


def _unexpected(exc: Exception, argv: list[str], log_file: Path | None) -> int:
    logging.getLogger("gbdesk.cli").error("unexpected error in: gbdesk %s", argv[:1], exc_info=exc)
    where = f"; details in {log_file}" if log_file else ""
    what = one_line(str(exc), 300)
    print(f"gbdesk: unexpected error: {type(exc).__name__}: {what}{where}", file=sys.stderr)
    return 1
