"""What the command modules share: opening the database, printing the result (text or
`--json`) and a progress printer for runs."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from gbdesk.support.errors import UserError
from gbdesk.support.format import duration
from gbdesk.support.paths import default_db_path

_db_in_use: list[Path] = []  # the database this command opened (for database-fault messages)


@contextlib.contextmanager
def _open_store(path: str | None, writes: bool = False):
    """Open the database (``with _open_store(…) as store``); say on stderr where the copy
    made before a layout update is. `writes`: check now that the database can take writes
    (not damaged, read-only or locked), before any slow work, rather than at the first
    write. A path given with --db (or $GBDESK_DB) must lie in an existing folder, and only
    a command that writes makes a new file there (`check_db_path`); the per-user default is
    made when missing. **A refused command leaves no new database**: a file this command
    created is removed again when the command ends in a `UserError` (a model file that
    does not exist, a text file as a model …) with nothing of value stored in it
    (`gbdesk.store.db.remove_if_empty`)."""
    from gbdesk.store.db import check_db_path

    target = Path(path).expanduser() if path else default_db_path()
    if path or os.environ.get("GBDESK_DB"):  # a path a person typed: refuse a typo
        check_db_path(target, create=writes)
    created = not target.exists()
    try:
        with _opened(target, writes) as store:
            yield store
    except UserError:
        if created:
            from gbdesk.store.db import remove_if_empty

            remove_if_empty(target)
        raise


@contextlib.contextmanager
def _opened(target: Path, writes: bool):
    from gbdesk.store import Store

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
    with store:
        yield store


def _holding(store: Any, args: argparse.Namespace, kind: str, what: str):
    """Hold the database for a long writing command (`gbdesk.store.jobs`): refused in one
    line while another process's run, audit or import holds it, or — with --wait — waits,
    saying once for which job."""
    from gbdesk.store import jobs

    def waiting(job: jobs.Job) -> None:
        print(f"gbdesk: waiting for {job.describe()} to end…", file=sys.stderr, flush=True)

    return jobs.job(store, kind, what, wait=bool(getattr(args, "wait", False)), on_wait=waiting)


class Interrupts:
    """THE rule of Ctrl-C, for `run`, `resume` and `audit` alike (docs/cli.md):

    * **once** — stop taking new answers, finish and keep those under way (saying how many
      it waits for: `RunControl.under_way`); the command then ends with status 130, its
      run or audit resumable;
    * **twice** — stop at once (`KeyboardInterrupt`; the model is stopped), saying how many
      answers under way were dropped; every answer made before is kept.

    ``with Interrupts(control) as stop: …``; `stop.asked` tells whether Ctrl-C came."""

    def __init__(self, control: Any) -> None:
        self.control = control
        self.previous: Any = None
        self.asked = False
        self.dropped = 0

    def __enter__(self) -> Interrupts:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _handle(self, _signum: int, _frame: Any) -> None:
        waiting = int(getattr(self.control, "under_way", 0) or 0)
        if self.asked:
            self.dropped = waiting
            print(
                f"\nstopping at once: {_answers(waiting)} under way dropped; every answer "
                "made before is kept",
                file=sys.stderr, flush=True,
            )  # fmt: skip
            raise KeyboardInterrupt
        self.asked = True
        self.control.cancel()
        print(
            f"\nstopping: no new answers; waiting for the {_answers(waiting)} under way "
            "(they are kept) — Ctrl-C again to stop at once",
            file=sys.stderr, flush=True,
        )  # fmt: skip


def _answers(n: int) -> str:
    return f"{n:,} answer{'' if n == 1 else 's'}"


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
    with the tokens made so far (never going down), the speed of the last seconds, ETA —
    the figures, whole — then the last attempt in words, cut to what the terminal's width
    leaves (`fit_line`)."""

    def __init__(self) -> None:
        from gbdesk.workflows.runs import RecentRate

        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.rate = RecentRate()

    def __call__(self, p) -> None:
        if getattr(p, "waiting", ""):  # the endpoint is silent: always said, on a line
            start = "\n" if self.tty else ""  # after the line being rewritten
            print(f"{start}[run {p.run_id}] {p.waiting}", file=sys.stderr, flush=True)
            return
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
        figures, words = self.parts(p)
        now = time.monotonic()
        if self.tty:
            end = "\n" if p.status not in ("running", "labelling") else ""
            width = _terminal_width() - 1
            print("\r" + fit_line(figures, words, width).ljust(40), end=end, file=sys.stderr,
                  flush=True)  # fmt: skip
        elif p.status != "running" or now - self.last > 5 or p.done == p.total:
            print(" · ".join([*figures, *words]), file=sys.stderr, flush=True)
            self.last = now

    def parts(self, p) -> tuple[list[str], list[str]]:
        """(the figures — counts, speed, ETA, status — and the words: the last attempt)."""
        unit = "sent/s" if p.rate_unit == "sentences/s" else "tok/s"
        speed = self.rate.update(p)
        eta = "measuring the speed" if p.eta_s is None else duration(p.eta_s, compact=True)
        figures = [f"[run {p.run_id}] {p.done:,}/{p.total:,} ({100 * p.fraction:.1f}%)"]
        if p.in_flight:
            figures.append(p.in_flight_words(self.rate.tokens))
        rate = f"{speed:.1f}" if speed < 10 else f"{speed:.0f}"
        if p.eta_s is None and speed <= 0:
            figures.append("measuring the speed")
        else:
            figures += [f"{rate} {unit}", f"ETA {eta}"]
        if p.status not in ("running", "labelling"):
            figures.append(p.status)
        return figures, [p.last_text] if p.last else []


def _terminal_width() -> int:
    """The width of the terminal stderr writes to (else $COLUMNS, else 80)."""
    import shutil

    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return shutil.get_terminal_size().columns


def fit_line(figures: list[str], words: list[str], width: int) -> str:
    """One progress line of at most `width` characters: the figures whole (shortened to
    their compact form, "8 in flight, 312 tok", if they do not fit), then as much of the
    words as fits, cut with "…" — never a figure cut in the middle (an ETA read as
    "ETA measuring the s")."""
    line = " · ".join(figures)
    if len(line) > width:
        line = " · ".join(_compact(f) for f in figures)
    room = width - len(line) - 3
    text = " · ".join(words)
    if text and room >= 12:
        line += " · " + (text if len(text) <= room else text[: room - 1] + "…")
    return line


def _compact(figure: str) -> str:
    """A figure in fewer characters: "8 sequences in flight (312 tokens so far)" → "8 in
    flight, 312 tok"; "measuring the speed" → "measuring"."""
    import re

    m = re.fullmatch(r"(\d+) sequences? in flight \(([\d,]+) tokens so far\)", figure)
    if m:
        return f"{m.group(1)} in flight, {m.group(2)} tok"
    return figure.replace("ETA measuring the speed", "ETA ?").replace(
        "measuring the speed", "measuring"
    )


#: a model name's characters on a line of `gbdesk runs` or `compare` (--json has it whole)
MODEL_CHARS = 60
