"""State shared by the panes: the database, settings, background tasks, cross-pane signals."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal

from gbdesk.ui.tasks import TaskRunner


class AppContext(QObject):
    """One per window. Panes talk to each other only through these signals."""

    db_changed = Signal()
    runs_changed = Signal()
    labels_changed = Signal(int)  # run id
    models_changed = Signal()
    open_review = Signal(int, str, object, str)  # run id, filter, item filter, title
    open_results = Signal(int)  # run id
    show_pane = Signal(str)
    message = Signal(str)  # status-bar text

    def __init__(self, db_path: str, settings: QSettings, backend_factory=None, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.settings = settings
        self.tasks = TaskRunner(self)
        self.backend_factory = backend_factory
        self.run_thread: Any = None  # the RunThread in progress, if any

    def set_db(self, path: str) -> None:
        self.db_path = path
        self.settings.setValue("db_path", path)
        self.db_changed.emit()

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
