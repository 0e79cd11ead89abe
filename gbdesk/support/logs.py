"""The log file: a rotating file in the per-user data folder (stdlib `logging`).

Everything gbdesk logs at INFO and above goes there, and every exception nobody caught —
in the main thread, a worker thread or a background task — is written with its
traceback, so a reviewer has something to attach to a bug report. `setup_logging` is
idempotent; the CLI and the app call it at start.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
import threading
from pathlib import Path

from gbdesk.support.paths import data_dir

LOG_FILE = "gbdesk.log"
_installed: Path | None = None
_lock = threading.Lock()
log = logging.getLogger("gbdesk")


def log_dir() -> Path:
    """The folder of the log files (inside the per-user data folder)."""
    path = data_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_path() -> Path:
    return log_dir() / LOG_FILE


def setup_logging(level: int = logging.INFO) -> Path | None:
    """Send gbdesk's log records to the rotating log file (1 MB × 5) and log uncaught
    exceptions; returns the file, or None when it cannot be written (logging then stays
    on stderr for warnings, as Python's default)."""
    global _installed
    with _lock:
        if _installed is not None:
            return _installed
        try:
            path = log_path()
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=1_000_000, backupCount=5, encoding="utf-8", delay=True
            )
        except OSError:
            return None
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s")
        )
        log.addHandler(handler)
        log.setLevel(min(level, log.level or level))
        _hook_exceptions()
        _installed = path
        return path


def _hook_exceptions() -> None:
    previous = sys.excepthook
    previous_thread = threading.excepthook

    def main_hook(kind, value, tb):  # type: ignore[no-untyped-def]
        if not issubclass(kind, KeyboardInterrupt):
            log.error("uncaught exception", exc_info=(kind, value, tb))
        previous(kind, value, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not SystemExit:
            log.error(
                "uncaught exception in thread %s",
                args.thread.name if args.thread else "?",
                exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
            )
        previous_thread(args)

    sys.excepthook = main_hook
    threading.excepthook = thread_hook
