"""`gbdesk.cli.main`: the desktop app without arguments, else one subcommand, with the
exit statuses of the contract (`gbdesk.cli`)."""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from gbdesk.cli._args import _shown
from gbdesk.cli._common import _db_in_use
from gbdesk.cli.commands import COMMANDS
from gbdesk.cli.parser import STUDY_COMMANDS, build_parser
from gbdesk.support.errors import EngineError, UserError
from gbdesk.support.guards import one_line


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
