"""Review where it matters: least-sure-first order and the labels' estimated accuracy."""

from __future__ import annotations

from gbdesk.results import review_stats
from gbdesk.review import review_queue
from gbdesk.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend, recorded_laissez_faire


def test_least_sure_first_and_estimated_accuracy(store):
    model = resolve_model(store, "default")
    run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=20)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire()))
    queue = review_queue(store, run_id, "all", None, "least_sure")
    confidences = [i.confidence for i in queue]
    assert all(c is not None and 0 <= c <= 1 for c in confidences)
    assert confidences == sorted(confidences)
    run_order = review_queue(store, run_id, "all", None, "run")
    assert [i.index for i in run_order] == sorted(i.index for i in run_order)

    before = review_stats(store, run_id).estimate
    assert before["reviewed"] == 0 and 0 < before["accuracy"] < 1
    chars = [c for i in queue for c in i.auto_data["characters"]]
    expected = sum(c["confidence"] for c in chars) / len(chars)
    assert abs(before["accuracy"] - expected) < 1e-12
    # reviewing the least sure story raises the estimate by exactly its shortfall
    least = queue[0]
    store.add_human_label(least.attempt_id, "ana", least.auto_label, least.auto_data)
    after = review_stats(store, run_id).estimate
    n = len(least.auto_data["characters"])
    shortfall = sum(1 - c["confidence"] for c in least.auto_data["characters"])
    assert after["reviewed"] == n
    assert abs(after["accuracy"] - (before["accuracy"] + shortfall / len(chars))) < 1e-12
    assert "checked by a person" in after["text"]
    # reviewed stories go to the end of the least-sure queue
    again = review_queue(store, run_id, "all", None, "least_sure")
    assert again[-1].attempt_id == least.attempt_id
