"""Review where it matters: least-sure-first order and the labels' estimated accuracy."""

from __future__ import annotations

from gbdesk.analysis.label_accuracy import review_stats
from gbdesk.people.review import review_queue
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
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

    before = review_stats(store, run_id).label_accuracy
    assert before.reviewed == 0 and 0 < before.estimate < 1 and before.basis == "confidence"
    chars = [c for i in queue for c in i.auto_data["characters"]]
    expected = sum(c["confidence"] for c in chars) / len(chars)
    assert abs(before.estimate - expected) < 1e-12
    # reviewing the least sure story raises the estimate by exactly its shortfall
    least = queue[0]
    store.add_human_label(least.attempt_id, "ana", least.auto_label, least.auto_data)
    after = review_stats(store, run_id).label_accuracy
    n = len(least.auto_data["characters"])
    shortfall = sum(1 - c["confidence"] for c in least.auto_data["characters"])
    assert after.reviewed == n
    assert abs(after.estimate - (before.estimate + shortfall / len(chars))) < 1e-12
    assert "a person checked" in after.text and "own estimate" in after.text
    # reviewed stories go to the end of the least-sure queue
    again = review_queue(store, run_id, "all", None, "least_sure")
    assert again[-1].attempt_id == least.attempt_id


def test_queue_keeps_label_data_as_text_until_a_view_asks(store):
    """A 500,000-story queue must fit in memory: label data and evidence stay JSON text
    (ranked once while the queue is built), parsed only for the items a view shows, and
    the attempts of one item share its prompt string. Same values as the stored labels."""
    model = resolve_model(store, "default")
    run_id = plan_run(store, "laissez_faire", model, attempts=2, limit=6)
    execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire()))
    stored = store.labels(run_id, "auto")
    queue = review_queue(store, run_id, "all", None, "hard")
    assert len(queue) == 12
    for item in queue:
        assert "auto_data" not in vars(item) and "evidence" not in vars(item)  # not parsed
        assert item.ranks is not None  # ranked while the queue was built
    first = queue[0]
    assert first.auto_data == stored[first.attempt_id]["data"]
    assert first.evidence == (stored[first.attempt_id]["evidence"] or [])
    assert "auto_data" in vars(first)  # parsed once, then kept for the view
    # the ranks are those of the parsed label
    probe = first.probe
    assert first.confidence == probe.label_confidence(first.auto_label, first.auto_data)
    assert first.margin == probe.review_margin(first.auto_label, first.auto_data)
    by_item: dict[str, list] = {}
    for item in queue:
        by_item.setdefault(item.item, []).append(item)
    pairs = [v for v in by_item.values() if len(v) == 2]
    assert pairs and all(a.prompt is b.prompt for a, b in pairs)
