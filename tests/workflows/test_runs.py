"""The run loop on a fake backend: persistence, resume, pause, cancel, crash, progress."""

from __future__ import annotations

import threading

import pytest

from gbdesk.analysis.results import compute_metrics
from gbdesk.support.errors import EngineCrashed
from gbdesk.workflows.runs import RunControl, execute_run, pending_attempts, plan_run
from tests.fakes import FakeBackend, fake_model


def factory(backend):
    return lambda model, generation: backend


@pytest.fixture
def planned(store, tmp_path):
    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "inventories", model, attempts=3, limit=4, seed=5)
    return run_id


def test_plan_stores_items_and_parameters(store, planned):
    run = store.get_run(planned)
    assert run["attempts_total"] == 12
    assert run["status"] == "created"
    assert run["generation"]["temperature"] == 1.0
    assert run["generation"]["max_tokens"] == 300
    assert run["params"]["template_name"] == "card"
    assert [i["item"] for i in store.run_items(planned)] == [
        "bsri/female/00",
        "bsri/female/01",
        "bsri/female/02",
        "bsri/female/03",
    ]


def test_execute_writes_every_attempt_with_its_label(store, planned):
    backend = FakeBackend()
    progress = []
    outcome = execute_run(
        store, planned, backend_factory=factory(backend), on_progress=progress.append
    )
    assert outcome.status == "done" and outcome.attempts_done == 12
    assert backend.closed
    rows = store.attempts(planned)
    assert len(rows) == 12
    assert len(store.labels(planned, "auto")) == 12
    # attempt-major order: every item once before any item twice
    order = [(c.messages[0]["content"], c.seed) for c in backend.calls]
    assert len(set(order)) == 12
    # loading, then "loaded" (running, nothing stored yet), then one per stored attempt
    assert progress[0].status == "loading" and progress[1].loaded_s is not None
    assert [p.done for p in progress if p.status == "running"] == list(range(13))
    assert progress[-1].status == "done" and progress[-1].fraction == 1.0
    # the last attempt in words, numbered from 1 (stored 0-based)
    last = progress[-2]
    assert last.last["item"] == "bsri/female/03" and last.last["attempt"] == 2
    assert last.last_text.startswith("“is compassionate” (BSRI, female trait) #3 → ")
    assert store.get_run(planned)["status"] == "done"
    assert store.get_run(planned)["engine"]["backend"] == "fake"


def test_rerun_is_idempotent(store, planned):
    execute_run(store, planned, backend_factory=factory(FakeBackend()))
    backend = FakeBackend()
    outcome = execute_run(store, planned, backend_factory=factory(backend))
    assert backend.calls == [] and outcome.status == "done"
    assert store.count_attempts(planned) == 12


def test_crash_leaves_run_resumable_and_resume_matches_uninterrupted(store, planned, tmp_path):
    with pytest.raises(EngineCrashed, match="gbdesk resume"):
        execute_run(store, planned, backend_factory=factory(FakeBackend(crash_after=5)))
    assert store.get_run(planned)["status"] == "interrupted"
    assert store.count_attempts(planned) == 5
    assert len(pending_attempts(store, planned)) == 7
    resumed = FakeBackend()
    execute_run(store, planned, backend_factory=factory(resumed))
    assert len(resumed.calls) == 7
    keys = [(a["item"], a["attempt"]) for a in store.attempts(planned)]
    assert len(keys) == len(set(keys)) == 12
    # the same run made in one go gives the same texts (per-attempt seeds)
    model = store.get_model(store.get_run(planned)["model_id"])
    other = plan_run(store, "inventories", model, attempts=3, limit=4, seed=5)
    execute_run(store, other, backend_factory=factory(FakeBackend()))

    def texts(run_id):
        return {
            (a["item"], a["attempt"]): (a["seed"], a["response"]) for a in store.attempts(run_id)
        }

    assert texts(planned) == texts(other)


def test_cancel_between_attempts(store, planned):
    control = RunControl()

    def cancel_after_three(backend, request):
        if len(backend.calls) == 3:
            control.cancel()

    outcome = execute_run(
        store,
        planned,
        backend_factory=factory(FakeBackend(on_generate=cancel_after_three)),
        control=control,
    )
    assert outcome.status == "cancelled"
    assert store.count_attempts(planned) == 3
    assert store.get_run(planned)["status"] == "cancelled"
    execute_run(store, planned, backend_factory=factory(FakeBackend()))
    assert store.count_attempts(planned) == 12


def test_pause_blocks_until_resume(store, planned):
    control = RunControl()
    statuses = []
    paused = threading.Event()

    def on_progress(p):
        statuses.append(p.status)
        if p.status == "paused":
            paused.set()

    def pause_after_two(backend, request):
        if len(backend.calls) == 2:
            control.pause()

    worker = threading.Thread(
        target=execute_run,
        args=(store, planned),
        kwargs={
            "backend_factory": factory(FakeBackend(on_generate=pause_after_two)),
            "control": control,
            "on_progress": on_progress,
        },
    )
    worker.start()
    assert paused.wait(10)
    assert store.count_attempts(planned) == 2
    control.resume()
    worker.join(10)
    assert not worker.is_alive()
    assert "paused" in statuses and statuses[-1] == "done"
    assert store.count_attempts(planned) == 12


def test_tokens_stream_to_the_callback(store, planned):
    chunks = []
    execute_run(store, planned, backend_factory=factory(FakeBackend()), on_token=chunks.append)
    assert "".join(chunks).strip()


def test_metrics_from_a_fake_run(store, planned):
    execute_run(store, planned, backend_factory=factory(FakeBackend()))
    metrics = compute_metrics(store, planned)
    assert {"masculine_rate", "stereotype_rate", "disparity", "undetected_rate_items"} <= set(
        metrics
    )
    cached = compute_metrics(store, planned)
    assert cached["masculine_rate"] == metrics["masculine_rate"]


def test_batch_size_is_kept_with_the_run_and_reaches_the_backend(store, tmp_path, monkeypatch):
    import gbdesk.engine.llama_backend as llama_backend
    from gbdesk.support.errors import UserError
    from gbdesk.workflows.runs import llama_backend_factory

    model = fake_model(store, tmp_path)
    run_id = plan_run(store, "inventories", model, limit=2, batch_size=4)
    generation = store.get_run(run_id)["generation"]
    assert generation["batch_size"] == 4
    seen = {}
    monkeypatch.setattr(
        llama_backend, "LlamaCppBackend", lambda path, **kw: seen.update(kw) or "backend"
    )
    assert llama_backend_factory({"kind": "gguf", "path": "x.gguf"}, generation) == "backend"
    assert seen["batch_size"] == 4
    with pytest.raises(UserError, match="--batch"):
        plan_run(store, "inventories", model, limit=2, batch_size=-1)
    # the default: continuous batching with an automatic sequence count
    auto = plan_run(store, "inventories", model, limit=2)
    assert store.get_run(auto)["generation"]["batch_size"] == 0


def test_estimates_use_the_chosen_engines_measured_speed(store, tmp_path):
    from gbdesk.workflows.runs import estimate_run

    model = fake_model(store, tmp_path)
    endpoint_id = store.register_model(
        {"kind": "endpoint", "name": "remote", "path": "http://127.0.0.1:9/v1", "sha256": None}
    )
    endpoint = store.get_model(endpoint_id)
    run_id = plan_run(store, "inventories", endpoint, limit=2, attempts=1)
    for item in store.run_items(run_id):
        store.add_attempt(run_id, item["item"], 0, "p", "r", tokens_out=50, latency_s=1.0)
    est = estimate_run(
        store, "inventories", None, attempts=1, max_tokens=300, limit=10, model_id=endpoint_id
    )
    assert est.tokens_per_s == 50 and est.seconds == pytest.approx(10 * 50 / 50)
    faster = estimate_run(
        store,
        "inventories",
        None,
        attempts=1,
        max_tokens=300,
        limit=10,
        model_id=endpoint_id,
        concurrency=4,
    )
    assert faster.seconds == pytest.approx(est.seconds / 4) and "4 requests" in faster.basis
    # the GGUF model has no history of its own: nothing measured
    assert (
        estimate_run(store, "inventories", model["sha256"], attempts=1, max_tokens=300).seconds
        is None
    )
