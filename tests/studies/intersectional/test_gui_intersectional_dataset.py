"""Validating a stereotype dataset in the Review pane by keyboard, as several validators."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gbdesk.store import Store
from gbdesk.studies.intersectional import dataset as ds
from gbdesk.workflows.runs import execute_run, plan_run
from tests.fakes import fake_model
from tests.gui_helpers import make_window, settle, wait_for
from tests.intersectional_fakes import DatasetBackend

pytestmark = pytest.mark.gui


def test_validators_decide_by_keyboard_each_their_own(qtbot, tmp_path, settings):
    from gbdesk.studies.intersectional._qt.views import StereotypeValidationView

    path = str(tmp_path / "dataset.sqlite")
    with Store(path) as store:
        model = fake_model(store, tmp_path)
        backend = DatasetBackend()
        elicit = plan_run(store, "intersectional_elicit", model, groups="White;women")
        execute_run(store, elicit, backend_factory=lambda m, g: backend)
        dataset = plan_run(store, "intersectional_filter", model, elicitation=elicit)
        execute_run(store, dataset, backend_factory=lambda m, g: backend)
    window = make_window(qtbot, path, settings)
    window.ctx.open_review.emit(dataset, "all", {}, "stereotypes")
    window.show_pane("Review")
    review = window.review
    wait_for(qtbot, lambda: review.items and not window.ctx.tasks.busy)
    view = review.view
    assert isinstance(view, StereotypeValidationView)
    review.queue.setCurrentRow(0)
    first = review.current().item
    assert "Stereotype" in view.text.toPlainText()
    assert view.category.currentData() == review.current().auto_data["category_suggested"]

    # ana: common (1), exclusive (3), the next category (Alt+↓), Enter saves and moves on
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_1)
    qtbot.keyClick(view, Qt.Key.Key_3)
    qtbot.keyClick(view, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)
    chosen = view.category.currentData()
    assert view.current_label()["data"] == {
        "common": "yes", "specific": "a", "category": chosen, "category_changed": True,
        "filter_status": review.current().auto_data["status"],
    }  # fmt: skip
    qtbot.keyClick(view, Qt.Key.Key_Return)
    settle(qtbot, window)
    assert review.current().item != first  # moved on

    # bo, on the same stereotype, starts undecided (not ana's answers) and answers N / B
    review.reviewer.setText("bo")
    review.reviewer.editingFinished.emit()
    review.queue.setCurrentRow(0)
    assert view.answers == {"common": None, "specific": None}
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_N)
    qtbot.keyClick(view, Qt.Key.Key_B)
    qtbot.keyClick(view, Qt.Key.Key_Return)
    settle(qtbot, window)

    with Store(path) as store:
        data = ds.load(store, dataset)
    s = next(x for x in data.stereotypes if x.id == first)
    assert {v: (d.common, d.specific) for v, d in s.validations.items()} == {
        "ana": ("yes", "a"),
        "bo": ("no", "b"),
    }
    assert s.validations["ana"].category == chosen
    assert ds.agreement(data)["commonality"]["validators"] == 2

    # back as ana after reloading: the view shows ana's own decision, not bo's (the latest)
    review.reviewer.setText("ana")
    review.reviewer.editingFinished.emit()
    review.reload()
    wait_for(qtbot, lambda: review.items and not window.ctx.tasks.busy)
    review.queue.setCurrentRow(next(i for i, it in enumerate(review.items) if it.item == first))
    assert view.answers == {"common": "yes", "specific": "a"}
    assert view.category.currentData() == chosen
