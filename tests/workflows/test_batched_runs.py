"""Runs decoded with continuous batching (the default for local models), on the bundled
model: the batch size is recorded with the run, and a run's texts do not depend on how
many sequences were decoded at once, nor on a kill of the worker and a resume."""

from __future__ import annotations

import pytest

from gbdesk.engine.llama_backend import LlamaCppBackend
from gbdesk.workflows.runs import AUTO_BATCH, RunControl, execute_run, plan_run, resolve_model

pytestmark = pytest.mark.model


def texts(store, run_id) -> dict[tuple[str, int], str]:
    return {(r["item"], r["attempt"]): r["response"] for r in store.attempts(run_id)}


def sized(batch_size: int):
    """A factory decoding with `batch_size` whatever the run recorded (composition)."""
    return lambda model, generation: LlamaCppBackend(model["path"], batch_size=batch_size)


def plan(store, probe="inventories", **kw):
    model = resolve_model(store, "default")
    defaults = {"attempts": 2, "limit": 3, "max_tokens": 10, "temperature": 1.0}
    return plan_run(store, probe, model, **{**defaults, **kw})


def test_default_run_is_batched_and_records_its_batch_size(store):
    run_id = plan(store)
    assert store.get_run(run_id)["generation"]["batch_size"] == AUTO_BATCH
    seen = []
    outcome = execute_run(store, run_id, on_progress=seen.append)
    assert outcome.status == "done" and outcome.attempts_done == 6
    batching = store.get_run(run_id)["engine"]["batching"]
    assert batching["mode"] == "continuous" and batching["requested"] == "auto"
    assert batching["slots"] >= 2 and "sequences at once" in batching["reason"]
    assert {p.slots for p in seen if p.last} == {batching["slots"]}
    # one at a time, as asked: no batching recorded, other texts (other arithmetic)
    single = plan(store, batch_size=1)
    execute_run(store, single)
    assert "batching" not in store.get_run(single)["engine"]
    assert texts(store, single).keys() == texts(store, run_id).keys()


def test_texts_do_not_depend_on_the_batch_or_a_kill_and_resume(store):
    reference = plan(store, batch_size=5)
    execute_run(store, reference)
    expected = texts(store, reference)
    assert len(expected) == 6

    other = plan(store, batch_size=2)
    execute_run(store, other)
    assert texts(store, other) == expected
    assert store.get_run(other)["engine"]["batching"]["slots"] == 2

    # kill the worker after two stored attempts, then resume with another batch size
    killed = plan(store, batch_size=3)
    control = RunControl()

    def on_progress(p) -> None:
        if p.session_done >= 2 and not control.cancelled:
            control.cancel(now=True)

    first = execute_run(store, killed, control=control, on_progress=on_progress)
    assert first.status == "cancelled" and 2 <= first.attempts_done < 6
    partial = texts(store, killed)
    assert partial == {k: expected[k] for k in partial}
    second = execute_run(store, killed, backend_factory=sized(4))
    assert second.status == "done"
    assert texts(store, killed) == expected


def test_automatic_resume_keeps_the_recorded_sequence_count(store):
    run_id = plan(store, limit=2, attempts=1)
    store.claim_run(
        run_id, engine={"batching": {"mode": "continuous", "slots": 3, "requested": "auto"}}
    )
    store.set_run_status(run_id, "interrupted")
    execute_run(store, run_id)
    assert store.get_run(run_id)["engine"]["batching"]["slots"] == 3


def test_schema_constrained_chains_batch_with_the_same_texts(store):
    """Intersectional attempts (a role, then 16 enum-constrained answers sharing it)
    through `run_chains`, several attempts in flight: the same roles and answers for any
    number of sequences at once."""
    runs = []
    for batch in (4, 16):
        run_id = plan(
            store, "intersectional_sdeg", limit=2, attempts=1, max_tokens=12, batch_size=batch
        )
        # one thread: no thread barriers to wait at on a busy machine (both runs alike)
        one_thread = lambda m, g: LlamaCppBackend(  # noqa: E731
            m["path"], batch_size=g["batch_size"], n_threads=1
        )
        assert execute_run(store, run_id, backend_factory=one_thread).status == "done"
        assert store.get_run(run_id)["engine"]["batching"]["slots"] == batch
        runs.append(run_id)
    a, b = (store.attempts(r) for r in runs)
    assert [(r["item"], r["response"]) for r in a] == [(r["item"], r["response"]) for r in b]
    labels_a = [store.labels(runs[0], "auto")[r["id"]]["data"] for r in a]
    assert labels_a == [store.labels(runs[1], "auto")[r["id"]]["data"] for r in b]
    answers = labels_a[0]["answers"]
    assert len(answers) == 16 and all(v["option"] is not None for v in answers.values())
