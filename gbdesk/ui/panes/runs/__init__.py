"""The Runs pane (`RunsPane`): the form, the launcher and the history of runs."""

from gbdesk.ui.panes.runs.form import PRESETS, card_html
from gbdesk.ui.panes.runs.launcher import ELSEWHERE_MS, elsewhere
from gbdesk.ui.panes.runs.pane import RunsPane

__all__ = ["ELSEWHERE_MS", "PRESETS", "RunsPane", "card_html", "elsewhere"]
