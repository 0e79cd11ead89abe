"""Background work for the GUI: short tasks on a thread pool, and the run thread.

The UI thread never waits on the database or the model: tasks open their own
store connection on a pool thread and report back through queued signals; runs
execute in a `RunThread` whose model lives in the worker process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal

from gbdesk.store import Store
from gbdesk.support.errors import EngineCrashed, GbdeskError
from gbdesk.workflows.runs import RunControl, execute_run, llama_backend_factory

log = logging.getLogger(__name__)


class _Signals(QObject):
    done = Signal(object)
    failed = Signal(str)
    skipped = Signal()


class _Task(QRunnable):
    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        wanted: Callable[[], bool] = lambda: True,
    ):
        super().__init__()
        self.fn, self.args, self.wanted = fn, args, wanted
        self.signals = _Signals()
        self.setAutoDelete(False)

    def run(self) -> None:
        if not self.wanted():  # superseded while it waited for a thread: not worth running
            self.signals.skipped.emit()
            return
        try:
            result = self.fn(*self.args)
        except GbdeskError as exc:
            log.info("background task: %s", exc)
            self.signals.failed.emit(str(exc))
        except Exception as exc:  # a bug: show it and log it rather than lose it
            log.exception("background task failed")
            self.signals.failed.emit(
                f"{type(exc).__name__}: {exc} (details in the log: Help → Open log folder)"
            )
        else:
            self.signals.done.emit(result)


class TaskRunner(QObject):
    """Run callables off the UI thread; callbacks arrive on the UI thread."""

    failed = Signal(str)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        self._pending: set[_Task] = set()
        self._latest: dict[str, int] = {}
        self._closed = False

    def submit(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        key: str | None = None,
    ) -> None:
        """Run `fn(*args)` on the pool. With a `key`, only the newest request of that key
        delivers its result: an older one finishing later (tasks run two at a time) is
        dropped instead of overwriting fresher data, and one still waiting for a thread
        when a newer one arrives is not run at all (a burst of refreshes while a run
        finishes must not queue minutes of stale work ahead of the one wanted)."""
        if self._closed:
            return
        ticket = None
        if key is not None:
            ticket = self._latest[key] = self._latest.get(key, 0) + 1

        def current() -> bool:
            return not self._closed and (key is None or self._latest.get(key) == ticket)

        task = _Task(fn, args, current)
        self._pending.add(task)

        def finish(result: Any) -> None:
            self._pending.discard(task)
            if on_done is not None and current():
                on_done(result)

        def fail(message: str) -> None:
            self._pending.discard(task)
            if current():
                (on_error or self.failed.emit)(message)

        task.signals.done.connect(finish)
        task.signals.failed.connect(fail)
        task.signals.skipped.connect(lambda: self._pending.discard(task))
        self.pool.start(task)

    def with_store(
        self, db_path: str, fn: Callable[..., Any], *args: Any, **callbacks: Any
    ) -> None:
        """`fn(store, *args)` on a pool thread with its own connection."""

        def job(*a: Any) -> Any:
            with Store(db_path) as store:
                return fn(store, *a)

        self.submit(job, *args, **callbacks)

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    def wait(self, msecs: int = 30000) -> bool:
        return self.pool.waitForDone(msecs)

    def shutdown(self, msecs: int = 30000) -> None:
        """Stop delivering results (the widgets are going away) and let tasks finish."""
        self._closed = True
        self.pool.waitForDone(msecs)


class _StoreJobThread(QThread):
    """A long job on its own store connection; errors arrive as `failed(message, resumable)`."""

    progress = Signal(object)  # gbdesk.workflows.runs.Progress
    completed = Signal(object)
    failed = Signal(str, bool)  # message, resumable

    def __init__(self, db_path: str, run_id: int, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.run_id = run_id
        self.control = RunControl()

    def work(self, store: Store) -> Any:
        raise NotImplementedError

    def run(self) -> None:
        try:
            with Store(self.db_path) as store:
                result = self.work(store)
        except (EngineCrashed, GbdeskError) as exc:
            log.warning("%s: %s", type(self).__name__, exc)
            self.failed.emit(str(exc), True)
        except Exception as exc:  # a bug: show it and log it rather than lose it
            log.exception("%s failed", type(self).__name__)
            self.failed.emit(
                f"{type(exc).__name__}: {exc} (details in the log: Help → Open log folder)", True
            )
        else:
            self.completed.emit(result)


class RunThread(_StoreJobThread):
    """Executes one run; pause/cancel go through `control`; `completed` carries the
    `gbdesk.workflows.runs.RunOutcome`."""

    token = Signal(str)

    def __init__(self, db_path: str, run_id: int, backend_factory=None, parent=None):
        super().__init__(db_path, run_id, parent)
        self.backend_factory = backend_factory or llama_backend_factory

    def work(self, store: Store) -> Any:
        return execute_run(
            store,
            self.run_id,
            backend_factory=self.backend_factory,
            control=self.control,
            on_progress=self.progress.emit,
            on_token=self.token.emit,
        )


class LabelThread(_StoreJobThread):
    """Runs a probe's labelling pass over a run's stored texts with a labeler model
    (`gbdesk.workflows.labeling.label_run`); `completed` carries label_run's summary dict."""

    def __init__(
        self,
        db_path: str,
        run_id: int,
        labeler_path: str,
        backend_factory=None,
        parent=None,
        pass_name: str = "llm",
    ):
        super().__init__(db_path, run_id, parent)
        self.labeler_path = labeler_path
        self.backend_factory = backend_factory
        self.pass_name = pass_name

    def work(self, store: Store) -> Any:
        from gbdesk.workflows.labeling import label_run

        result = label_run(
            store,
            self.run_id,
            self.pass_name,
            self.labeler_path,
            backend_factory=self.backend_factory,
            on_progress=self.progress.emit,
            control=self.control,
        )
        result["run_id"] = self.run_id
        return result
