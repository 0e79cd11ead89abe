"""State shared by the panes: the database, settings, background tasks, cross-pane signals."""

from __future__ import annotations

import math
import time
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal

from gbdesk.ui.tasks import TaskRunner

#: the panes hear of stored answers at most this often (and at every new run): a run or
#: an audit stores thousands, and each `runs_changed` re-reads the run lists of four panes
RUNS_CHANGED_EVERY_S = 2.0


class AppContext(QObject):
    """One per window. Panes talk to each other only through these signals."""

    db_changed = Signal()
    runs_changed = Signal()
    labels_changed = Signal(int)  # run id
    models_changed = Signal()
    open_review = Signal(int, str, object, str)  # run id, filter, item filter, title
    open_results = Signal(int)  # run id
    open_runs = Signal(object)  # run ids to tick together in Results (an audit's)
    open_audit = Signal(object)  # an audit's `AuditReport`, shown as it is in Results
    show_pane = Signal(str)
    message = Signal(str)  # status-bar text
    db_problem = Signal(str)  # the database cannot be used (damaged, read-only, locked…)
    db_notice = Signal(str)  # e.g. where the copy made before a layout update is

    def __init__(self, db_path: str, settings: QSettings, backend_factory=None, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.settings = settings
        self.tasks = TaskRunner(self)
        self.backend_factory = backend_factory
        self.run_thread: Any = None  # the RunThread in progress, if any
        self._answers_said: tuple[Any, float] = (None, -math.inf)  # (run, when) last told

    def answers_stored(self, run_id: int | None) -> None:
        """A run stored answers: `runs_changed`, at most every `RUNS_CHANGED_EVERY_S` and
        at once for a run not told of before (the one throttle of the Runs pane and the
        audit)."""
        run, said = self._answers_said
        now = time.monotonic()
        if run_id != run or now - said >= RUNS_CHANGED_EVERY_S:
            self._answers_said = (run_id, now)
            self.runs_changed.emit()

    def set_db(self, path: str) -> None:
        """Switch to the database at `path` (a new one is made there when missing) — or
        refuse, with `db_problem`, a path whose folder does not exist (nothing is made, the
        open database stays)."""
        from gbdesk.store.db import check_db_path
        from gbdesk.support.errors import UserError

        try:
            check_db_path(path, create=True)
        except UserError as exc:
            self.db_problem.emit(str(exc))
            return
        self.db_path = path
        self.settings.setValue("db_path", path)
        self.db_changed.emit()
        self.check_db()

    def check_db(self) -> None:
        """Open the database off the UI thread (migrating it, after a backup copy, if it
        is older) and check it (SQLite's quick check); the outcome arrives as `db_problem`
        or `db_notice` (the panes' own tasks report their errors in their banners)."""
        path = self.db_path

        def check(store: Any) -> list[str]:
            from gbdesk.store.db import take_backup_notices

            store.check_integrity()
            return take_backup_notices(store.path)

        def done(notices: list[str]) -> None:
            if path == self.db_path:
                for notice in notices:
                    self.db_notice.emit(notice)

        def failed(message: str) -> None:
            if path == self.db_path:
                self.db_problem.emit(message)

        self.tasks.with_store(path, check, on_done=done, on_error=failed, key="db.check")

    def setting(self, key: str, default: Any = None, type_: type | None = None) -> Any:
        if type_ is None:
            return self.settings.value(key, default)
        return self.settings.value(key, default, type=type_)

    @property
    def reviewer(self) -> str:
        return str(self.settings.value("reviewer", "") or "")

    @property
    def running(self) -> bool:
        """A run thread was started and its `finished` has not been handled yet."""
        return self.run_thread is not None
