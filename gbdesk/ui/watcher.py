"""Keep the app current: notice what other connections write to the database — a run or a
labelling pass of the CLI, another window, an import — and tell the panes through the
context's signals, so runs and labels appear without a restart.

Cheap by design, on the UI thread: every second a timer asks its own read-only
connection (`gbdesk.store.watch`) for SQLite's data version, which changes only when
another connection committed. Only then does it read a small snapshot (the runs table,
the highest attempt and label ids, review samples, codings, the model rows) and emit what
differs: `runs_changed` for new runs, status changes and progress (progress at most every
few seconds), `labels_changed(run)` for new labels, samples or codings of a run,
`models_changed` for the model catalogue. Nothing is checked while a long task of the
app's own is writing (a run, a labelling pass, an audit): the pane that started it
refreshes when it ends. Changes the app itself announces (a pane emitting one of those
signals after its own write) are absorbed — a change is announced only once it has gone
unannounced for `GRACE_S` — so the panes do not refresh twice.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer

from gbdesk.store.watch import Snapshot, WatchConnection

log = logging.getLogger(__name__)

INTERVAL_MS = 1000  # how often data_version is asked
# a change is announced once it has stood this long unannounced: a pane that wrote it
# says so itself as soon as its task returns, and is then not echoed
GRACE_S = 1.5
PROGRESS_EVERY_S = 5.0  # another process's run adding attempts: runs_changed at most this often
MANY_LABELS = 50_000  # more new labels than this: every run counts as changed (no lookup)


class DbWatcher(QObject):
    """Watches `ctx.db_path` (see the module docstring); `stop()` before the window goes."""

    def __init__(
        self,
        ctx: Any,
        interval_ms: int = INTERVAL_MS,
        progress_every_s: float = PROGRESS_EVERY_S,
    ):
        super().__init__(ctx)
        self.ctx = ctx
        self.progress_every_s = progress_every_s
        self._conn: WatchConnection | None = None
        self._version: int | None = None
        self._seen = Snapshot()  # what the panes were last told (or told themselves)
        self._pending = False  # a change held back (grace, or the progress throttle)
        self._noticed: float | None = None  # when the change now held back was first seen
        self.grace_s = GRACE_S
        self._last_progress = 0.0
        self._emitting = False
        self.emitted: list[tuple[str, Any]] = []  # what it said, newest last (tests, logs)
        ctx.db_changed.connect(self._db_changed)
        ctx.runs_changed.connect(self._own_runs)
        ctx.labels_changed.connect(self._own_labels)
        ctx.models_changed.connect(self._own_models)
        self._reopen()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.tick)
        self.timer.start()

    # -- the connection ---------------------------------------------------------------------
    def _reopen(self, absorb: bool = True) -> None:
        """(Re)open the read-only connection on the current database; `absorb`: take what
        it holds now as known (another database was opened: the panes load it themselves),
        else compare it with what was known at the next tick."""
        self._close()
        self._version, self._pending, self._noticed = None, False, None
        path = Path(self.ctx.db_path)
        if not path.is_file():
            if absorb:
                self._seen = Snapshot()
            return
        try:
            self._conn = WatchConnection(path)
            self._version = self._data_version()
            if absorb:
                self._seen = self._conn.snapshot()
        except sqlite3.Error as exc:  # not there yet, damaged, …: try again later
            log.info("database watcher: %s: %s", path, exc)
            self._close()

    def _db_changed(self) -> None:
        self._reopen()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _data_version(self) -> int:
        assert self._conn is not None
        return self._conn.data_version()

    def stop(self) -> None:
        self.timer.stop()
        self._close()

    # -- watching ---------------------------------------------------------------------------
    def tick(self) -> None:
        """Once a second: has another connection committed? Then tell the panes what."""
        if self.ctx.running:  # the app's own run/labelling/audit: its pane refreshes after
            return
        if self._conn is None:
            self._reopen(absorb=False)
            if self._conn is None:
                return
            self._version = None  # (re)opened: compare with what was known before
        try:
            version = self._data_version()
            if version == self._version and not self._pending:
                return
            self._version = version
            now = self._conn.snapshot()
            self._announce(now)
        except sqlite3.Error as exc:  # busy, replaced, damaged: the panes' tasks report it
            log.info("database watcher: %s", exc)
            self._close()

    def _label_runs(self, since: int, now: Snapshot) -> set[int]:
        """The runs whose labels have ids above `since`."""
        if now.labels_max <= since:
            return set()
        if now.labels_max - since > MANY_LABELS:
            return set(now.runs)
        assert self._conn is not None
        return self._conn.runs_labelled_since(since)

    def _announce(self, now: Snapshot) -> None:
        seen = self._seen
        if now == seen:  # nothing new, or the app announced it itself meanwhile
            self._pending, self._noticed = False, None
            return
        if self._noticed is None:
            self._noticed = time.monotonic()
        if time.monotonic() - self._noticed < self.grace_s:
            self._pending = True  # give the pane that wrote it time to say so
            return
        runs_moved = now.runs != seen.runs
        progress = now.attempts_max != seen.attempts_max
        progressing: set[int] = set()
        if progress and self._conn is not None:
            progressing = self._conn.runs_with_attempts_since(seen.attempts_max)
        # labels of a run that gained attempts come with them: runs_changed covers those
        labelled = self._label_runs(seen.labels_max, now) - progressing
        labelled |= {
            r
            for r in set(now.per_run) | set(seen.per_run)
            if now.per_run.get(r) != seen.per_run.get(r)
        }
        models = now.models != seen.models
        due = time.monotonic() - self._last_progress >= self.progress_every_s
        if progress and not (runs_moved or labelled or models or due):
            self._pending = True  # another process's run is adding attempts: later
            return
        self._pending, self._noticed = False, None
        self._seen = now
        self._emitting = True
        try:
            if models:
                self._say("models_changed", None)
                self.ctx.models_changed.emit()
            if runs_moved or progress:
                if progress:
                    self._last_progress = time.monotonic()
                self._say("runs_changed", None)
                self.ctx.runs_changed.emit()
            for run_id in sorted(labelled):
                self._say("labels_changed", run_id)
                self.ctx.labels_changed.emit(run_id)
        finally:
            self._emitting = False

    def _say(self, signal: str, arg: Any) -> None:
        log.debug("database watcher: %s %s", signal, arg if arg is not None else "")
        self.emitted.append((signal, arg))
        del self.emitted[:-50]

    # -- what the app announces itself --------------------------------------------------------
    def _current(self) -> Snapshot | None:
        if self._emitting or self._conn is None or self.ctx.running:
            return None
        try:
            self._version = self._data_version()
            return self._conn.snapshot()
        except sqlite3.Error as exc:
            log.info("database watcher: %s", exc)
            return None

    def _own_runs(self) -> None:
        """A pane refreshed every run list: the runs and attempts it saw are known."""
        now = self._current()
        if now is not None:
            self._seen = replace(self._seen, runs=now.runs, attempts_max=now.attempts_max)
            self._pending = False

    def _own_labels(self, run_id: int) -> None:
        """A pane wrote labels (or a sample, a coding) of `run_id` and said so: known —
        unless labels of other runs arrived meanwhile."""
        now = self._current()
        if now is None:
            return
        others = self._label_runs(self._seen.labels_max, now) - {run_id}
        per_run = dict(self._seen.per_run)
        if run_id in now.per_run:
            per_run[run_id] = now.per_run[run_id]
        self._seen = replace(
            self._seen,
            labels_max=self._seen.labels_max if others else now.labels_max,
            per_run=per_run,
        )

    def _own_models(self) -> None:
        now = self._current()
        if now is not None:
            self._seen = replace(self._seen, models=now.models)
