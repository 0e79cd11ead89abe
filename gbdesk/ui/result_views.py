"""Probe-specific result views shown below the metric plots (`Presentation.result_view`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gbdesk.contract import Probe
from gbdesk.contract.running import view_class


class ResultView(QWidget):
    """Base of a probe's extra-results widget: `extra` is the probe's `extra_results`,
    `open_review(run_id, item_filter, title)` opens the Review pane on some items."""

    def __init__(
        self,
        extra: dict[str, Any],
        open_review: Callable[[int, dict, str], None],
        run_id: int,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.extra = extra
        self.open_review = open_review
        self.run_id = run_id
        self.box = QVBoxLayout(self)
        self._steps: list[Callable[[], None]] = []
        self._step_timer = QTimer(self)  # the view's own: gone with the view
        self._step_timer.setSingleShot(True)
        self._step_timer.setInterval(0)
        self._step_timer.timeout.connect(self._next_step)

    def later(self, step: Callable[[], None]) -> None:
        """Run a part of building the view (e.g. drawing a plot) in a later turn of the
        event loop, one part per turn, so the window stays responsive while it appears."""
        self._steps.append(step)
        if not self._step_timer.isActive():
            self._step_timer.start()

    def building(self) -> bool:
        """Whether parts of the view are still to be drawn."""
        return bool(self._steps)

    def _next_step(self) -> None:
        if self._steps:
            self._steps.pop(0)()
        if self._steps:
            self._step_timer.start()


def result_view_for(probe: Probe) -> type[ResultView] | None:
    """The widget class for a probe's extra results, or None."""
    return view_class(probe, probe.capabilities.presentation.result_view)
