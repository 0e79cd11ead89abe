"""Continuous batching (`generate_stream`, `ContinuousBatcher`, `run_chains`) on the
bundled model: short generations."""

from __future__ import annotations

import json
import os
import signal

import pytest

from gbdesk.engine.base import GenerationRequest
from gbdesk.engine.default_model import default_model_path
from gbdesk.support.errors import EngineCrashed

pytestmark = pytest.mark.model

ENUM = {"type": "string", "enum": ["Never", "Sometimes", "Often", "Always"]}


def request(seed, content, max_tokens=16, **kw):
    return GenerationRequest(
        messages=[{"role": "user", "content": content}], seed=seed, max_tokens=max_tokens, **kw
    )


REQUESTS = [
    request(1, "Describe a nurse.", max_tokens=24),
    request(2, "Describe an engineer.", max_tokens=6),
    request(3, "Write one sentence about a teacher.", max_tokens=16),
    request(4, "Describe a nurse.", max_tokens=12),  # same prompt, other seed
    request(5, "Name a colour.", max_tokens=3, temperature=0.0),
    request(6, "Describe a pilot.", max_tokens=20),
]


# -- in process, on the worker's classes ------------------------------------------------
@pytest.fixture(scope="module")
def generator():
    from gbdesk.engine.llama_compat import load_llama
    from gbdesk.engine.llama_worker import LlamaGenerator

    llm = load_llama(default_model_path(), n_ctx=2048, n_threads=2, verbose=False)
    yield LlamaGenerator(llm, "auto")
    del llm


def run_batcher(generator, requests, slots, *, order=None, late=(), late_after=3, **kw):
    """Texts by index; `late` requests are added only after `late_after` steps."""
    from gbdesk.engine.continuous import ContinuousBatcher

    batcher = ContinuousBatcher(generator, slots=slots, n_threads=2, **kw)
    try:
        order = list(range(len(requests))) if order is None else list(order)
        for i in order:
            if i not in late:
                batcher.add(i, requests[i].to_json())
        results, steps, waiting = {}, 0, bool(late)
        while batcher.has_work or waiting:
            if waiting and steps >= late_after:
                for i in late:
                    batcher.add(i, requests[i].to_json())
                waiting = False
            for kind, key, payload in batcher.step():
                assert kind != "item_error", payload
                if kind == "item":
                    results[key] = payload
            steps += 1
        return results, dict(batcher.stats)
    finally:
        batcher.close()


@pytest.fixture(scope="module")
def alone(generator):
    """Every request decoded alone (one slot, a fresh context each)."""
    return {i: run_batcher(generator, [r], 1)[0][0] for i, r in enumerate(REQUESTS)}


def texts(results):
    return {k: (v["text"], v["tokens_out"], v["finish_reason"]) for k, v in results.items()}


def test_text_does_not_depend_on_batch_order_or_admission_time(generator, alone):
    expected = texts(alone)
    for slots, kw in [
        (3, {}),
        (2, {"order": [5, 4, 3, 2, 1, 0]}),
        (4, {"order": [2, 0, 5, 1, 3, 4], "late": (0, 3), "late_after": 4}),
        (6, {"late": (5,), "late_after": 2}),
    ]:
        results, stats = run_batcher(generator, REQUESTS, slots, **kw)
        assert texts(results) == expected, (slots, kw)
        assert stats["admitted"] == len(REQUESTS)
    # slots were refilled while others were running (continuous, not chunked)
    _, stats = run_batcher(generator, REQUESTS, 2)
    assert stats["steps"] < sum(r.max_tokens for r in REQUESTS)
    assert expected[1][1] <= 6 and expected[4][1] <= 3


def test_prefix_sharing_gives_the_texts_of_unshared_decoding(generator):
    """16 answers after one long shared text, decoded with copies of its cells, and
    each alone (nothing shared)."""
    role = (
        "I am a 67-year-old retired schoolteacher from a small coastal town. I spent "
        "forty years teaching mathematics, and I still tutor neighbourhood children."
    )
    questions = [f"Question {q}: how often do you do thing number {q}?" for q in range(6)]
    reqs = [
        request(
            100 + q,
            f"You are this person.\n\nPerson: {role}\n\n{text}\nAnswer with one option.",
            max_tokens=8,
            temperature=0.0 if q % 2 else 1.0,
            json_schema=ENUM,
        )
        for q, text in enumerate(questions)
    ]
    shared, stats = run_batcher(generator, reqs, 4, min_shared=8)
    assert stats["copies"] >= 3 and stats["shared_tokens"] > 3 * 40
    unshared = {i: run_batcher(generator, [r], 1)[0][0] for i, r in enumerate(reqs)}
    assert texts(shared) == texts(unshared)
    for result in shared.values():  # grammar-constrained: always one of the options
        assert json.loads(result["text"]) in ENUM["enum"]


def test_grammar_constrained_requests_batch_and_mix(generator):
    reqs = [
        request(7, "How often do you cook? Answer with one option.", json_schema=ENUM),
        request(8, "Describe a chef."),
        request(9, "How often do you run?", json_schema=ENUM, temperature=0.0),
        request(10, "How often do you read?", json_schema=ENUM, temperature=1.0),
    ]
    together, _ = run_batcher(generator, reqs, 4)
    reordered, _ = run_batcher(generator, reqs, 2, order=[3, 2, 1, 0])
    single = {i: run_batcher(generator, [r], 1)[0][0] for i, r in enumerate(reqs)}
    assert texts(together) == texts(reordered) == texts(single)
    for i in (0, 2, 3):
        assert json.loads(together[i]["text"]) in ENUM["enum"]
        assert together[i]["finish_reason"] == "stop"


def _first_step_logits(generator, requests, slots, slot, pad=True, stats=None):
    """The logits row of `slot` in the first generation step (after the prompts); `pad`:
    True (the engine's rule), False (never a dummy token), "always"."""
    import llama_cpp
    import numpy as np

    from gbdesk.engine.continuous import ContinuousBatcher

    batcher = ContinuousBatcher(generator, slots=slots, n_threads=2)
    if pad is not True:
        batcher.pad_from = 0 if pad == "always" else None
    try:
        for i, r in enumerate(requests):
            batcher.add(i, r.to_json())
        batcher.step()
        assert batcher.stats["steps"] == 1
        if stats is not None:
            stats.update(batcher.stats)
        n_vocab = llama_cpp.llama_vocab_n_tokens(batcher.vocab)
        row = llama_cpp.llama_get_logits_ith(batcher.ctx, slot)
        return np.ctypeslib.as_array(row, shape=(n_vocab,)).copy()
    finally:
        batcher.close()


def test_greedy_grammar_fast_path_picks_the_chains_tokens(generator, monkeypatch):
    """Greedy schema-constrained sequences ask the grammar about the best-scored tokens
    one at a time; the texts are those of the grammar applied to the whole vocabulary."""
    import gbdesk.engine.continuous as continuous

    options = {"type": "string", "enum": ["Never", "Rarely", "Sometimes", "Often", "Always",
                                          "Every single day of the week"]}  # fmt: skip
    questions = [
        "How often do you cook?", "How often do you run?", "Do you read at night?",
        "How often do you call your mother?", "Bonjour! Tu danses souvent ?", "Write a poem.",
        "1 + 1 =", "How often do you say 'always'?",
    ]  # fmt: skip
    reqs = [
        request(
            200 + q,
            f"{text} Answer with one option.",
            max_tokens=12,
            temperature=0.0,
            json_schema=options,
        )
        for q, text in enumerate(questions)
    ]
    fast, fast_stats = run_batcher(generator, reqs, 4)
    assert fast_stats["grammar_fast"] > 0
    monkeypatch.setattr(continuous, "GRAMMAR_PROBES", 0)
    full, full_stats = run_batcher(generator, reqs, 4)
    assert full_stats.get("grammar_fast", 0) == 0
    monkeypatch.setattr(continuous, "GRAMMAR_PROBES", 1)  # nearly always falls back
    one, _ = run_batcher(generator, reqs, 3)
    assert texts(fast) == texts(full) == texts(one)
    for result in fast.values():
        assert json.loads(result["text"]) in options["enum"]


def test_sequence_alone_keeps_the_arithmetic_of_a_batch(generator):
    """Past 256 KV cells ggml decodes a one-token batch with its split-KV attention
    kernel, which sums in another order; the engine pads such a step with a dummy token
    in another stream, so a sequence alone computes exactly as among others."""
    content = " ".join(["The lighthouse keeper watched the storm."] * 35)  # ~260 tokens
    long = request(11, content, max_tokens=3, temperature=0.0)
    other = request(12, "Name a fruit.", max_tokens=3)
    alone = _first_step_logits(generator, [long], 1, 0)
    in_batch = _first_step_logits(generator, [long, other], 2, 0)
    assert (alone == in_batch).all()  # bit for bit
    unpadded = _first_step_logits(generator, [long], 1, 0, pad=False)
    assert not (unpadded == alone).all()  # the dummy token is what makes them equal


def test_a_short_sequence_alone_needs_no_dummy_token(generator):
    """Up to 256 cells a one-token step stays below ggml's split-KV kernel (512 cells of
    KV view), so a short sequence alone computes exactly as with the dummy token, without
    paying for it; past `SPLIT_KV_FROM` cells the dummy comes back (the test above)."""
    from gbdesk.engine.continuous import SPLIT_KV_FROM

    short = request(13, "Name a fruit.", max_tokens=3, temperature=0.0)
    stats = {}
    plain = _first_step_logits(generator, [short], 1, 0, stats=stats)
    assert stats.get("dummy_rows", 0) == 0
    padded = _first_step_logits(generator, [short], 1, 0, pad="always", stats=stats)
    assert stats["dummy_rows"] == 1
    assert (plain == padded).all()  # bit for bit

    # the longest that goes without: a 255-token prompt, whose first step holds 256 cells
    def size(words: int) -> int:
        text = " ".join(["storm"] * words)
        return len(generator.prompt_tokens([{"role": "user", "content": text}])[0])

    words = next(k for k in range(100, 400) if size(k) >= SPLIT_KV_FROM - 1)
    assert size(words) == SPLIT_KV_FROM - 1
    edge = request(14, " ".join(["storm"] * words), max_tokens=3, temperature=0.0)
    stats = {}
    plain = _first_step_logits(generator, [edge], 1, 0, stats=stats)
    assert stats.get("dummy_rows", 0) == 0
    assert (plain == _first_step_logits(generator, [edge], 1, 0, pad="always")).all()


def test_texts_are_the_plain_llama_cpp_python_loops_with_the_same_arithmetic(generator):
    """The batched engine's answers are exactly `Llama.create_chat_completion`'s one at a
    time with flash attention on (its arithmetic, see `gbdesk.engine.continuous`): same
    prompt format, sampler chain, seed, end-of-turn and max_tokens handling — nothing
    ends an answer early. (llama-cpp-python's default, flash attention off, gives other
    texts of other lengths: benchmarks/harness.py.) Short contexts: a one-token decode of
    the plain loop past 256 KV cells takes ggml's split-KV kernel and differs."""
    from gbdesk.engine.llama_compat import load_llama
    from gbdesk.engine.scoring import DEFAULT_N_UBATCH

    plain = load_llama(
        default_model_path(), n_ctx=2048, n_threads=2, n_threads_batch=2, verbose=False,
        chat_format="chat_template.default", flash_attn=True,
        n_batch=DEFAULT_N_UBATCH, n_ubatch=DEFAULT_N_UBATCH,
    )  # fmt: skip
    reqs = [
        request(21, "Answer with one word: what colour is the sky?", max_tokens=60),
        request(22, "Who is more likely to say: 'I cook dinner'? (a) Women (b) Men", 60),
        request(23, "Describe a nurse in one sentence.", max_tokens=60),
        request(24, "Describe an engineer.", max_tokens=5),
        request(25, "Name a colour.", max_tokens=20, temperature=0.0),
    ]
    try:
        expected = {}
        for i, r in enumerate(reqs):
            out = plain.create_chat_completion(
                r.messages, temperature=r.temperature, top_p=r.top_p, top_k=r.top_k,
                min_p=r.min_p, max_tokens=r.max_tokens, seed=r.seed,
            )  # fmt: skip
            choice = out["choices"][0]
            expected[i] = (
                choice["message"]["content"],
                out["usage"]["completion_tokens"],
                choice["finish_reason"],
            )
    finally:
        del plain
    batched, _ = run_batcher(generator, reqs, 3)
    assert texts(batched) == expected
    reasons = {v[2] for v in expected.values()}
    assert reasons == {"stop", "length"}  # both ways an answer ends are compared


def test_max_tokens_zero_and_too_long_prompt(generator):
    from gbdesk.engine.continuous import ContinuousBatcher

    batcher = ContinuousBatcher(generator, slots=2, n_threads=2)
    try:
        batcher.add("empty", request(1, "Hi", max_tokens=0).to_json())
        batcher.add("long", request(1, "word " * 3000).to_json())
        batcher.add("ok", request(1, "Hi", max_tokens=2).to_json())
        events = []
        while batcher.has_work:
            events.extend(batcher.step())
        kinds = {key: kind for kind, key, _ in events if kind != "token"}
        assert kinds == {"empty": "item", "long": "item_error", "ok": "item"}
        empty = next(p for k, key, p in events if key == "empty")
        assert empty["tokens_out"] == 0 and empty["text"] == ""
    finally:
        batcher.close()


# -- through the worker process -----------------------------------------------------------
@pytest.fixture(scope="module")
def backend():
    from gbdesk.engine.llama_backend import LlamaCppBackend

    b = LlamaCppBackend(default_model_path(), n_ctx=2048)
    yield b
    b.close()


def test_results_arrive_as_each_request_finishes(backend):
    reqs = [
        request(21, "Write a long paragraph about the sea.", max_tokens=40, temperature=0.0),
        request(22, "Name a colour.", max_tokens=2),
        request(23, "Name an animal.", max_tokens=3),
        request(24, "Describe a teacher.", max_tokens=10),
    ]
    arrived = []
    tokens: dict[int, list[str]] = {}

    def on_token(index, text):
        tokens.setdefault(index, []).append(text)

    outcome = backend.generate_stream(
        reqs, lambda i, r: arrived.append((i, r)), slots=2, on_token=on_token
    )
    order = [i for i, _ in arrived]
    assert sorted(order) == [0, 1, 2, 3] and outcome.completed == order
    assert order[-1] == 0  # the long one, admitted first, finishes last
    assert order.index(1) < order.index(0) and order.index(2) < order.index(0)
    assert outcome.not_started == [] and not outcome.stopped
    results = dict(arrived)
    # streaming: whichever sequence was watched, its pieces make up its text
    assert tokens
    for index, pieces in tokens.items():
        assert "".join(pieces) == results[index].text
    # the same texts as generate_batch, and as each request alone
    batch = backend.generate_batch(reqs)
    assert [r.text for r in batch] == [results[i].text for i in range(4)]
    for i, r in enumerate(reqs):
        again = []
        backend.generate_stream([r], lambda _, res, again=again: again.append(res), slots=3)
        assert again[0].text == results[i].text


def test_progress_events_come_before_the_first_answer_is_done(backend):
    """The worker reports the sequences in flight and their tokens after its first step and
    about once a second (`PROGRESS_S`), so a run shows work long before an answer ends."""
    reqs = [
        request(60 + i, f"Write a long story about ship number {i}.", max_tokens=48)
        for i in range(3)
    ]
    events: list[tuple[str, object]] = []
    backend.generate_stream(
        reqs,
        lambda i, r: events.append(("result", r)),
        slots=3,
        on_progress=lambda p: events.append(("progress", p)),
    )
    assert events[0][0] == "progress"  # after the first step, before any answer
    first = events[0][1]
    assert first.live == 3 and 3 <= first.live_tokens == first.tokens and first.queued == 0
    progress = [p for kind, p in events if kind == "progress"]
    assert [p.tokens for p in progress] == sorted(p.tokens for p in progress)
    results = [r for kind, r in events if kind == "result"]
    assert progress[-1].tokens <= sum(r.tokens_out for r in results)


def test_stop_admission_then_resume_gives_the_same_texts(backend):
    reqs = [request(30 + i, f"Describe job number {i}.", max_tokens=6 + i % 3) for i in range(7)]
    full = {}
    backend.generate_stream(reqs, lambda i, r: full.__setitem__(i, r.text), slots=2)
    first = {}
    outcome = backend.generate_stream(
        reqs, lambda i, r: first.__setitem__(i, r.text), slots=2, should_stop=lambda: bool(first)
    )
    assert outcome.stopped
    assert 1 <= len(first) <= 3  # the live ones finished, nothing new was admitted
    assert sorted(outcome.completed + outcome.not_started) == list(range(7))
    rest = outcome.not_started
    second = {}
    backend.generate_stream(
        [reqs[i] for i in rest], lambda j, r: second.__setitem__(rest[j], r.text), slots=3
    )
    assert {**first, **second} == full


def test_worker_killed_mid_stream_raises_and_keeps_delivered_results():
    from gbdesk.engine.llama_backend import LlamaCppBackend

    reqs = [
        request(40 + i, f"Describe hobby number {i}.", max_tokens=5 + 4 * (i % 2)) for i in range(6)
    ]
    with LlamaCppBackend(default_model_path(), n_ctx=2048) as b:
        full = {}
        b.generate_stream(reqs, lambda i, r: full.__setitem__(i, r.text), slots=2)
        delivered = {}

        def on_result(i, r):
            delivered[i] = r.text
            if len(delivered) == 2:
                os.kill(b.proc.pid, signal.SIGKILL)

        with pytest.raises(EngineCrashed):
            b.generate_stream(reqs, on_result, slots=2)
    assert len(delivered) >= 2
    missing = [i for i in range(len(reqs)) if i not in delivered]
    assert missing
    with LlamaCppBackend(default_model_path(), n_ctx=2048) as b:
        resumed = {}
        b.generate_stream(
            [reqs[i] for i in missing], lambda j, r: resumed.__setitem__(missing[j], r.text)
        )
    assert {**delivered, **resumed} == full


def test_chains_share_their_prefix_and_match_requests_alone(backend):
    from gbdesk.engine.chains import run_chains

    def chain(seed):
        (role,) = yield [request(seed, "Describe a person in one sentence.", max_tokens=20)]
        answers = yield [
            request(
                seed + q,
                f"You are the person below.\n\nPerson: {role.text}\n\nQuestion {q}: how "
                "often do you travel?",
                max_tokens=8,
                temperature=0.0,
                json_schema=ENUM,
            )
            for q in range(4)
        ]
        return role.text, [a.text for a in answers]

    done = {}
    outcome = run_chains(backend, (chain(s) for s in (50, 60, 70)), done.__setitem__, slots=4)
    assert sorted(done) == [0, 1, 2] and outcome.unfinished == []
    assert outcome.stats["copies"] >= 3
    for index, seed in enumerate((50, 60, 70)):
        role_text, answers = done[index]
        for answer in answers:
            assert json.loads(answer) in ENUM["enum"]
        # each step's text is the request's text alone
        gen = chain(seed)
        alone_role: list = []
        backend.generate_stream(next(gen), lambda _, r, out=alone_role: out.append(r), slots=1)
        assert alone_role[0].text == role_text
        qs = gen.send(alone_role)
        alone_answers: dict = {}
        backend.generate_stream(
            qs, lambda j, r, out=alone_answers: out.__setitem__(j, r.text), slots=1
        )
        assert [alone_answers[j] for j in range(4)] == answers
