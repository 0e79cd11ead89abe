"""Run progress that tells the truth from the first second (issue 26): answers in flight
and tokens decoded before the first answer is done, a speed and an ETA from tokens (the
known length of what remains, corrected by the answers' measured length) that does not
jump from line to line, and the last attempt in words, numbered from 1. No model: a fake
continuous-batching backend on a virtual clock."""

from __future__ import annotations

import hashlib
import io
import itertools
import random

import pytest

import gbdesk.workflows.runs.execution
from gbdesk.workflows.runs import Pace, Progress, execute_run, plan_run
from tests.fakes import FakeStreamBackend, VirtualClock, fake_model

MAX_TOKENS = 200
#: virtual seconds a prompt takes to decode: the run starts with 8 of them (2.4 s without
#: an answer token, as a real stream's first step)
PREFILL_S = 0.3
#: from the first ETA shown on, while more than 20 s remain, two consecutive ETAs differ by
#: at most this factor (the issue's "stable within a few lines"; counting down alone moves
#: it by up to 20/19 there, one report a second), and each is within `ETA_TRUTH` of the
#: time that really remained. Measured here: steps ≤ 1.06, within −16 % … +3 %. Without
#: the smoothing: steps up to 1.15; without the max_tokens prior (the mean of the finished
#: answers alone, the short ones finishing first): down to −41 %; with the speed counted
#: from the start (the prompts' seconds without answer tokens): a first ETA of 61 min for
#: 1.5 min, as in the issue, and the smoothing then never catches up
ETA_STEP_FACTOR = 1.1
ETA_TRUTH = 0.25


def length_of(request) -> int:
    """40 % of the answers use max_tokens, the others 60..MAX_TOKENS (from the seed)."""
    rng = random.Random(request.seed)
    return MAX_TOKENS if rng.random() < 0.4 else rng.randint(60, MAX_TOKENS)


@pytest.fixture
def clocked(monkeypatch):
    clock = VirtualClock()
    monkeypatch.setattr(gbdesk.workflows.runs.execution, "time", clock)  # the run loops' clock
    return clock


def run_with_fake_stream(store, tmp_path, clock, *, slots=8, attempts=3, limit=20):
    model = fake_model(store, tmp_path)
    run_id = plan_run(
        store, "inventories", model, attempts=attempts, limit=limit, max_tokens=MAX_TOKENS
    )
    backend = FakeStreamBackend(clock, length_of, slots=slots, prefill_s=PREFILL_S)
    seen: list[tuple[float, Progress]] = []
    outcome = execute_run(
        store,
        run_id,
        backend_factory=lambda m, g: backend,
        on_progress=lambda p: seen.append((clock.t, p)),
    )
    assert outcome.status == "done"
    return run_id, seen


def test_answers_in_flight_are_reported_before_the_first_is_done(store, tmp_path, clocked):
    _, seen = run_with_fake_stream(store, tmp_path, clocked)
    loaded = [p for _, p in seen if p.loaded_s is not None]
    assert len(loaded) == 1 and loaded[0].loaded_s == 0.5 and loaded[0].slots == 8
    first_stored = next(i for i, (_, p) in enumerate(seen) if p.session_done >= 1)
    before = [p for _, p in seen[:first_stored] if p.in_flight]
    assert len(before) >= 3  # about once a second: the shortest answer takes 3.6 s here
    assert all(p.in_flight == 8 and p.tokens_in_flight > 0 for p in before)
    assert [p.tokens for p in before] == sorted(p.tokens for p in before)
    assert before[-1].tokens_per_s == pytest.approx(8 / 0.06, rel=0.05)  # 8 tokens a step
    assert before[-1].eta_s is not None and before[-1].done == 0
    assert before[-1].in_flight_text.startswith("8 sequences in flight (")


def test_eta_is_true_and_stable_once_warmed_up(store, tmp_path, clocked):
    run_id, seen = run_with_fake_stream(store, tmp_path, clocked)
    end = seen[-1][0]
    running = [(t, p) for t, p in seen if p.status == "running" and p.eta_s is not None]
    assert running[0][1].done == 0  # an ETA before the first answer is done
    warm = [(t, p) for t, p in running if end - t > 20]
    assert len(warm) > 40
    for (_, a), (_, b) in itertools.pairwise(warm):
        assert max(a.eta_s, b.eta_s) / min(a.eta_s, b.eta_s) <= ETA_STEP_FACTOR, (a, b)
    for t, p in warm:
        assert p.eta_s == pytest.approx(end - t, rel=ETA_TRUTH), (t, p.eta_s, end - t)
    # the speed: every token decoded per second from the first progress of the stream on
    # (the prompts that came later count; 8 tokens a 0.06 s step, 0.3 s a prompt)
    t0 = next(t for t, p in seen if p.in_flight)
    made = sum(a["tokens_out"] for a in store.attempts(run_id))
    first_step = 8  # the tokens the first step made before the first progress
    assert seen[-1][1].tokens_per_s == pytest.approx((made - first_step) / (end - t0), rel=0.01)
    assert warm[len(warm) // 2][1].tokens_per_s == pytest.approx(made / (end - t0), rel=0.1)


def test_pace_corrects_the_expected_length_by_the_finished_answers():
    pace = Pace(attempts=100, max_work=300.0, prior=2)
    # 10 s busy, 10 answers of 100 tokens done, nothing in flight: 1000 tokens / 10 s
    rate, eta = pace.update(10.0, 10, 1000.0)
    assert rate == 100.0
    expected = (1000 + 2 * 300) / 12 * 90 / 100  # mean pulled toward max_tokens by 2 answers
    assert eta == pytest.approx(expected)
    # the shown ETA then follows a changed raw estimate only gradually
    rate, eta2 = pace.update(11.0, 10, 1000.0, in_flight_work=100.0)
    assert eta2 < eta and eta2 > (eta - 1.0) * 0.9
    assert pace.update(12.0, 100, 10_000.0)[1] == 0.0
    # before any speed is known, no ETA
    fresh = Pace(attempts=5, max_work=None)
    assert fresh.update(1.0, 0, 0.0) == (0.0, None)
    assert fresh.update(5.0, 1, 50.0) == (10.0, pytest.approx(4 * 50 / 10))


def test_a_stream_gives_no_eta_before_its_first_progress_and_far_off_etas_are_replaced():
    """Seen on a busy machine: the first short answer of a stream finished before the
    stream's first progress event, so the tokens the other answers held were unknown: '0.0
    tok/s · ETA 16h09m', then twenty lines of slow decay to 8 minutes. Now a streaming run
    says it is measuring until the stream reports, and an ETA more than twice off the new
    raw figure is replaced, not smoothed."""
    pace = Pace(attempts=9, max_work=300.0, prior=2, streaming=True)
    assert pace.update(60.0, 1, 3.0) == (0.0, None)  # an answer, but no stream report yet
    pace.measure_from(60.0, 3.0 + 400.0)
    rate, eta = pace.update(70.0, 1, 3.0, in_flight_work=600.0)
    assert rate == pytest.approx(20.0) and eta is not None
    # a raw figure far below the shown one replaces it (no slow decay from a bad start)
    slow = Pace(attempts=100, max_work=300.0, prior=2)
    _, first = slow.update(10.0, 10, 100.0)  # 10 tok/s: long
    _, after = slow.update(11.0, 10, 1000.0)  # ~91 tok/s: 132 s instead of 525 s
    assert first is not None and after is not None and after < first / 3  # smoothed: ~505


def printed(progress: list[Progress], monkeypatch) -> list[str]:
    from gbdesk.cli._common import _ProgressPrinter

    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    printer = _ProgressPrinter()
    for p in progress:
        printer.last = 0.0  # a line for every report (a log, not a terminal)
        printer(p)
    return err.getvalue().splitlines()


def test_cli_progress_lines_show_flight_speed_eta_and_words(monkeypatch):
    last = {
        "item": "bsri/female/00",
        "attempt": 0,
        "title": "“is affectionate” (BSRI, female trait)",
        "label": "female",
        "tokens_out": 80,
    }
    lines = printed(
        [
            Progress(1, "loading", 0, 745),
            Progress(1, "running", 0, 745, slots=16, loaded_s=0.23),
            Progress(
                1, "running", 0, 745, tokens_per_s=41.7, eta_s=3900.0, slots=16,
                in_flight=16, tokens_in_flight=1204, tokens=1204,
            ),
            Progress(
                1, "running", 1, 745, 1, tokens_per_s=42.0, eta_s=3850.0, slots=16,
                in_flight=15, tokens_in_flight=1150, last=last,
            ),
        ],
        monkeypatch,
    )  # fmt: skip
    assert lines[0] == "[run 1] loading the model…"
    assert lines[1] == (
        "[run 1] model loaded in 0.2 s; continuous batching: 16 sequences at once; "
        "745 attempt(s) to go"
    )
    assert lines[2] == (
        "[run 1] 0/745 (0.0%) · 16 sequences in flight (1,204 tokens so far) · 42 tok/s · "
        "ETA 1h05m"
    )
    assert lines[3].endswith("· “is affectionate” (BSRI, female trait) #1 → female")
    assert "bsri/female/00" not in lines[3] and "#0" not in lines[3]


def test_runs_pane_shows_answers_in_flight(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from gbdesk.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(str(tmp_path / "g.sqlite"), settings)
    qtbot.addWidget(window)
    pane = window.runs
    pane._on_progress(Progress(3, "running", 0, 60, slots=8, loaded_s=0.4))
    assert "model loaded in 0.4 s, 8 generations at once" in pane.banner.text()
    pane._on_progress(
        Progress(3, "running", 0, 60, tokens_per_s=133.0, eta_s=None, slots=8,
                 in_flight=8, tokens_in_flight=530)
    )  # fmt: skip
    text = pane.progress_label.text()
    assert "0 / 60 generations · 8 sequences in flight (530 tokens so far) · 133 tokens/s" in text
    assert "measuring the speed" in text
    last = {"item": "bsri/male/03", "attempt": 1, "title": "“acts as a leader” (BSRI, male "
            "trait)", "label": "male", "tokens_out": 88}  # fmt: skip
    pane._on_progress(
        Progress(3, "running", 1, 60, 1, tokens_per_s=130.0, eta_s=95.0, slots=8,
                 in_flight=7, tokens_in_flight=470, last=last)
    )  # fmt: skip
    assert "about 1 min 35 s left" in pane.progress_label.text()
    caption = pane.live_caption.text()
    assert caption.startswith("Last: “acts as a leader” (BSRI, male trait) attempt 2 → detected")


def test_seeds_give_varied_lengths():
    """The fake's lengths are what the ETA test assumes (a sanity check of the fixture)."""
    from gbdesk.engine.base import GenerationRequest

    lengths = [
        length_of(GenerationRequest([], int(hashlib.sha256(bytes([i])).hexdigest()[:6], 16)))
        for i in range(200)
    ]
    assert 0.25 < sum(x == MAX_TOKENS for x in lengths) / 200 < 0.55
    assert min(lengths) >= 60


def test_stream_progress_comes_in_order_with_the_results():
    """A progress event the worker sends after a step's finished answers is handled after
    them (else a report would show those answers neither stored nor in flight)."""
    import json

    from gbdesk.engine.base import StreamProgress
    from gbdesk.engine.llama_backend import GenerationStream

    result = {"text": "He", "tokens_in": 3, "tokens_out": 1, "latency_s": 0.1,
              "finish_reason": "stop", "prompt_mode": "chat"}  # fmt: skip
    lines = [
        {"event": "progress", "id": 1, "live": 2, "live_tokens": 5, "tokens": 5},
        {"event": "item", "id": 1, "key": 0, "result": result},
        {"event": "progress", "id": 1, "live": 1, "live_tokens": 4, "tokens": 6, "queued": 0},
    ]

    class Pipe:
        def _next_line(self, wait, during):
            return json.dumps(lines.pop(0)) if lines else None

    events = GenerationStream(Pipe(), 1, 2, None).poll(timeout=0)
    assert [kind for kind, _, _ in events] == ["progress", "result", "progress"]
    assert events[2][2] == StreamProgress(live=1, live_tokens=4, tokens=6, queued=0)
