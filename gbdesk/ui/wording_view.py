"""The Results pane's Wordings tab: a run's wording family ("Does it survive a rewording?")
as the report shows it — a chart of each metric under every wording with its interval
(pyqtgraph, error bars), the figures and the stability sentence. The blocks come from
`gbdesk.report.rewording` (computed off the UI thread); this widget only shows them."""

from __future__ import annotations

from typing import Any

from gbdesk.support.blocks import Paragraph
from gbdesk.ui.blocks_view import BlocksView

TAB_TEXT = "&Wordings"
TAB_TIP = (
    "The selected run's items asked under other wordings of the prompt: each metric under "
    "every wording with its 95 % interval, the range, the wording's share of the variance and "
    "whether the verdict holds (the numbers elsewhere stay the run's own wording's)"
)


class WordingsView(BlocksView):
    """A run's wording family: `show_family` with `report.rewording.run_family_blocks`'s
    result; `family` is wording → run id (empty: no family shown)."""

    def __init__(self) -> None:
        super().__init__()
        self.family: dict[int, int] = {}
        self.run_id: int | None = None

    def show_computing(self, run_id: int) -> None:
        self.run_id = run_id
        self.show_blocks(
            [Paragraph(f"Comparing run {run_id}'s wordings (bootstrap over items)…", "muted")]
        )

    def show_family(self, run_id: int, result: dict[str, Any]) -> None:
        self.run_id = run_id
        self.family = dict(result.get("family") or {})
        self.show_blocks(result.get("blocks") or [])

    @property
    def has_family(self) -> bool:
        """Whether the shown run has two or more wordings (the tab is shown then)."""
        return len(self.family) >= 2
