"""The random review sample and prediction-powered results in the app (offscreen)."""

from __future__ import annotations

import pytest

from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend, recorded_laissez_faire
from tests.gui_helpers import make_window, settle, wait_for

pytestmark = pytest.mark.gui


def test_draw_a_sample_review_it_and_see_ppi_results(qtbot, tmp_path, settings):
    db = str(tmp_path / "ppi.sqlite")
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=100)
        execute_run(
            store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire())
        )
    window = make_window(qtbot, db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: review.run_combo.count() == 1 and review.items)
    review.draw_sample(40, seed=1)
    wait_for(
        qtbot, lambda: review.filter_combo.currentData() == "sample" and len(review.items) == 40
    )
    assert all(i.in_sample for i in review.items)
    assert review.queue.item(0).text().startswith("• ◆ ")
    for _ in range(40):  # Enter confirms the extractor's characters, then moves on
        review.confirm()
        settle(qtbot, window)
    wait_for(qtbot, lambda: "40</b> of 40 attempts reviewed" in review.stats.text())
    results = window.results
    window.show_pane("Results")
    results.mode_combo.setCurrentIndex(results.mode_combo.findData("ppi"))
    wait_for(qtbot, lambda: results.results and results.mode() == "ppi", timeout=60000)
    settle(qtbot, window)
    texts = [
        results.table.item(r, 1).text()
        for r in range(results.table.rowCount())
        if results.table.item(r, 1) is not None
    ]
    assert any("automatic" in t and "bias" in t for t in texts)
    assert "Prediction-powered estimates" in results.caption.text()


def test_review_pane_and_results_caption_state_the_measured_accuracy(qtbot, tmp_path, settings):
    """Before a random sample the pane says the extractor's figure is its own estimate;
    once the sample is reviewed, the Review pane and the Results caption state the
    figure measured on it — the very text `label_accuracy` (and `metrics --json`) gives."""
    import html

    from gbdesk.analysis.label_accuracy import label_accuracy

    db = str(tmp_path / "acc.sqlite")
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=40)
        execute_run(
            store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire())
        )
        before = label_accuracy(store, run_id)
    window = make_window(qtbot, db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: html.escape(before.text) in review.stats.text())
    assert "own estimate" in before.text
    review.draw_sample(12, seed=3)
    wait_for(
        qtbot, lambda: review.filter_combo.currentData() == "sample" and len(review.items) == 12
    )
    for _ in range(12):
        review.confirm()
        settle(qtbot, window)
    with Store(db) as store:
        after = label_accuracy(store, run_id)
    assert after.measured and after.sample.units >= 12 and after.basis == "measured"
    wait_for(qtbot, lambda: html.escape(after.text) in review.stats.text())
    results = window.results
    window.show_pane("Results")
    wait_for(qtbot, lambda: html.escape(after.text) in results.caption.text(), timeout=60000)
    assert "Measured on the random review sample" in results.caption.text()
