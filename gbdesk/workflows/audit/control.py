"""The audit's control for one step (`StepControl`): cancelled at the budget's end or when
the user stops the audit, paused with it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gbdesk.workflows.audit.budget import DRAIN_GRACE_S
from gbdesk.workflows.runs import (
    RunControl,
)

log = logging.getLogger(__name__)


class StepControl(RunControl):
    """The audit's control for one step: cancelled when the user stops the audit or its
    time is up (the answers under way finish and are kept); paused with the audit."""

    def __init__(self, parent: RunControl, deadline: float, clock: Callable[[], float]):
        self.parent, self.deadline, self.clock = parent, deadline, clock
        super().__init__()

    @property
    def _backend(self) -> Any:
        return self.__dict__.get("_step_backend")

    @_backend.setter
    def _backend(self, backend: Any) -> None:
        """The step's model is the audit's too: `cancel(now=True)` on the audit's control
        (the dialog's Stop when its window closes, a test's teardown) stops it at once."""
        self.__dict__["_step_backend"] = backend
        if backend is not None:
            self.parent._backend = backend
            if self.parent.cancel_now and hasattr(backend, "abort"):
                backend.abort()

    @property
    def under_way(self) -> int:  # type: ignore[override]
        return self.parent.under_way

    @under_way.setter
    def under_way(self, n: int) -> None:
        """The audit's control hears of the answers under way (its Ctrl-C says them)."""
        self.parent.under_way = n

    @property
    def cancelled(self) -> bool:  # type: ignore[override]
        return self.parent.cancelled or self._cancelled.is_set() or self.clock() >= self.deadline

    @property
    def paused(self) -> bool:  # type: ignore[override]
        return self.parent.paused

    def wait_while_paused(self, on_pause: Callable[[], None] | None = None) -> None:
        self.parent.wait_while_paused(on_pause)

    def cancel(self, now: bool = False) -> None:
        self._cancelled.set()
        if now and self._backend is not None and hasattr(self._backend, "abort"):
            self._backend.abort()

    @contextmanager
    def watched(self, grace_s: float = DRAIN_GRACE_S, every_s: float = 0.25) -> Iterator[None]:
        """While the step runs: once its deadline is `grace_s` behind and answers are still
        under way, stop the model (`cancel(now=True)`); those answers are dropped, every
        answer stored stays."""
        done = threading.Event()
        self.overran = False

        def watch() -> None:
            while not done.wait(every_s):
                if self.clock() >= self.deadline + grace_s:
                    log.info("the budget is spent: the answers under way are dropped")
                    self.overran = True
                    self.cancel(now=True)
                    return

        watcher = threading.Thread(target=watch, name="gbdesk-audit-deadline", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
