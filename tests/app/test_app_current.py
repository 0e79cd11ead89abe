"""The app stays current: runs, labels and models written by another connection (the CLI,
another window) appear in the open window without a restart, and every count follows.

Driven offscreen with pytest-qt; the other process is a second `Store` connection, which
the database sees exactly as it sees the CLI.
"""

from __future__ import annotations

import time

import pytest

from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.gui_helpers import make_window, settle, wait_for

pytestmark = pytest.mark.gui

WAIT = 30_000


def another_run(db: str) -> int:
    """A run made by another process (here: another connection, as the CLI's)."""
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "jobs_lum", model, attempts=1, limit=6)
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    return run_id


def label_elsewhere(db: str, run_id: int, rater: str, count: int, start: int = 0) -> None:
    with Store(db) as store:
        attempts = sorted(store.attempts(run_id), key=lambda a: a["id"])
        for a in attempts[start : start + count]:
            store.add_human_label(a["id"], rater, "female")


def combo_texts(combo) -> list[str]:
    return [combo.itemText(i) for i in range(combo.count())]


def test_runs_and_labels_from_another_process_appear_and_counts_follow(qtbot, filled_db, settings):
    window = make_window(qtbot, filled_db, settings)
    settle(qtbot, window)
    runs, review, results, reports = window.runs, window.review, window.results, window.reports
    assert len(runs.runs) == 1 and results.run_list.count() == 1
    assert review.run_combo.count() == 1 and reports.run_list.count() == 1
    wait_for(qtbot, lambda: "0</b> of 60 attempts reviewed" in review.stats.text(), WAIT)

    # a run finished by the CLI: listed in Runs, Review, Results and Reports
    new = another_run(filled_db)
    wait_for(qtbot, lambda: [r["id"] for r in runs.runs][:1] == [new], WAIT)
    wait_for(qtbot, lambda: results.run_list.count() == 2, WAIT)
    wait_for(qtbot, lambda: review.run_combo.count() == 2, WAIT)
    wait_for(qtbot, lambda: reports.run_list.count() == 2, WAIT)
    assert any(f"Run {new}" in results.run_list.item(i).text() for i in range(2))
    assert review.run_id() == 1  # the run being reviewed stays chosen

    # another window's reviewer labels run 1: the counts follow, each time
    results.set_checked([1])
    settle(qtbot, window)
    label_elsewhere(filled_db, 1, "bo", 1)
    wait_for(qtbot, lambda: any("bo's labels (1 attempt;" in t for t in combo_texts(
        results.mode_combo)), WAIT)  # fmt: skip
    wait_for(qtbot, lambda: "1</b> of 60 attempts reviewed" in review.stats.text(), WAIT)
    wait_for(qtbot, lambda: any("bo's labels" in t for t in combo_texts(reports.mode_combo)), WAIT)
    label_elsewhere(filled_db, 1, "bo", 4, start=1)
    wait_for(qtbot, lambda: any("bo's labels (5 attempts;" in t for t in combo_texts(
        results.mode_combo)), WAIT)  # fmt: skip
    assert not any("(1 attempt;" in t for t in combo_texts(results.mode_combo))
    wait_for(qtbot, lambda: "5</b> of 60 attempts reviewed" in review.stats.text(), WAIT)
    reviewed = {i.attempt_id for i in review.items if i.reviewed}
    assert len(reviewed) == 5  # the queue's marks too, not only the count


def test_the_apps_own_writes_are_not_announced_twice_and_long_tasks_hold_it(
    qtbot, filled_db, settings
):
    window = make_window(qtbot, filled_db, settings)
    review, watcher = window.review, window.watcher
    window.show_pane("Review")
    wait_for(qtbot, lambda: len(review.items) == 60, WAIT)
    settle(qtbot, window)
    said: list[int] = []
    window.ctx.labels_changed.connect(said.append)
    first = review.current()
    target = "female" if first.auto_label != "female" else "male"
    qtbot.keyClick(review.queue, target[0].upper())
    wait_for(qtbot, lambda: said == [1], WAIT)  # the Review pane said so itself
    settle(qtbot, window)
    qtbot.wait(2500)  # two ticks of the watcher
    assert said == [1] and ("labels_changed", 1) not in watcher.emitted

    # while the app's own long task writes (a run, a labelling pass, an audit), the
    # watcher holds still; the other process's run appears once the task is over
    window.ctx.run_thread = object()
    new = another_run(filled_db)
    qtbot.wait(2500)
    assert new not in [r["id"] for r in window.runs.runs]
    window.ctx.run_thread = None
    wait_for(qtbot, lambda: new in [r["id"] for r in window.runs.runs], WAIT)


def test_models_added_elsewhere_appear_in_models_and_runs(qtbot, tmp_path, settings):
    from gbdesk.engine.http import register_endpoint

    db = str(tmp_path / "models.sqlite")
    window = make_window(qtbot, db, settings)
    settle(qtbot, window)
    assert not any(m.get("endpoint") for m in window.models.models)
    with Store(db) as store:  # `gbdesk models --add URL#MODEL` in a terminal
        register_endpoint(store, "http://127.0.0.1:9/v1", "elsewhere")
    wait_for(qtbot, lambda: any(m.get("endpoint") for m in window.models.models), WAIT)
    wait_for(
        qtbot, lambda: window.runs.model_combo.findData("http://127.0.0.1:9/v1#elsewhere") >= 0
    )


def test_progress_of_another_process_is_throttled(qtbot, filled_db, settings):
    """Attempts added by a run elsewhere refresh the run lists at most every few seconds;
    a new run or a finished one at once."""
    window = make_window(qtbot, filled_db, settings)
    settle(qtbot, window)
    watcher = window.watcher
    with Store(filled_db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "jobs_lum", model, attempts=1, limit=20)
    wait_for(qtbot, lambda: ("runs_changed", None) in watcher.emitted, WAIT)
    watcher.emitted.clear()
    started = time.monotonic()
    with Store(filled_db) as store:  # a run in progress elsewhere: an attempt a second
        items = store.run_items(run_id)
        for item in items[:6]:
            store.add_attempt(run_id, item["item"], 0, "p", "a response", tokens_out=3)
            qtbot.wait(1000)
    elapsed = time.monotonic() - started
    said = [e for e in watcher.emitted if e[0] == "runs_changed"]
    assert 1 <= len(said) <= elapsed / watcher.progress_every_s + 1


def test_the_runs_estimate_recounts_after_a_run_elsewhere(qtbot, filled_db, settings):
    """The Runs pane's estimate says how many earlier generations it measured: another
    run stored elsewhere makes it recount."""
    settings.setValue("probe", "inventories")
    window = make_window(qtbot, filled_db, settings)
    runs = window.runs
    runs.batch.setCurrentIndex(runs.batch.findData(1))  # the fake run: one at a time
    wait_for(qtbot, lambda: "measured on 60 earlier generations" in runs.estimate.text(), WAIT)
    with Store(filled_db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "inventories", model, attempts=2, limit=30, batch_size=1)
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    wait_for(qtbot, lambda: "measured on 120 earlier generations" in runs.estimate.text(), WAIT)
