"""Probe-specific result views shown below the metric plots (registry, imported lazily)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget

RESULT_VIEWS = {
    "laissez_faire": "gbdesk.studies.laissez_faire._qt.views:CharacterResultsView",
    "globalbias_apx": "gbdesk.studies.globalbias._qt.views:AssociationsView",
    "globalbias_profiles": "gbdesk.studies.globalbias._qt.views:ProfileResultsView",
    "intersectional_sdeg": "gbdesk.studies.intersectional._qt.views:SDegResultsView",
}


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


def result_view_for(probe_name: str):
    """The widget class for a probe's extra results, or None."""
    target = RESULT_VIEWS.get(probe_name)
    if target is None:
        return None
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)
