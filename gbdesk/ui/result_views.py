"""Probe-specific result views shown below the metric plots (`Probe.result_view`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget

from gbdesk.studies.base import Probe


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


def result_view_for(probe: Probe) -> type[ResultView] | None:
    """The widget class for a probe's extra results, or None."""
    return probe.view_class("result_view")
