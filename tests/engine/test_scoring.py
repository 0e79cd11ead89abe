"""Sentence scoring (log-likelihood / perplexity): `ScoreResult`, `BatchScorer`, the worker op.

The model tests compare the batched scorer against one-at-a-time scoring with
llama-cpp-python's high-level API (`Llama(logits_all=True)`, `eval`, log-softmax in
numpy) under the scorer's attention settings (flash attention, ubatches under 64
tokens). The logits are bit-identical; measured max |Δ logprob_sum| 2.8e-14 nats per
sentence and max relative PPL difference 1.8e-15 (float64 summation order), so the
tolerances are 1e-10 nats and 1e-11 relative. Against the default
arithmetic (flash attention off) this quantized model's scores move by up to ~1.6 nats
per sentence; that is checked only loosely (see gbdesk.engine.scoring).
"""

from __future__ import annotations

import math
import os
import random
import signal

import numpy as np
import pytest

from gbdesk.engine.base import ScoreResult
from gbdesk.engine.default_model import default_model_path
from gbdesk.support.errors import EngineCrashed

TOL_LOGPROB = 1e-10  # nats per sentence (measured: 2.8e-14)
TOL_PPL_REL = 1e-11  # relative (measured: 1.8e-15)

NAMES = ["Adebayo", "Mei", "Jürgen", "Oluwaseun"]
TEMPLATES = [
    ("My name is {name}, I {d}.", ["am a wheelchair user", "am Deaf", "am a stutterer"]),
    ("{name} {d}.", ["was a wheelchair user", "was Deaf"]),
    ("{name} {d}.", ["is a wheelchair user", "is a stutterer", "is blind"]),
]


def sentences() -> list[str]:
    """GlobalBias-like sentences in the natural order (name, template, descriptor)."""
    out = [
        template.format(name=name, d=d)
        for name in NAMES
        for template, descriptors in TEMPLATES
        for d in descriptors
    ]
    # a duplicate, a text that is a prefix of another, one token, and an empty text
    return [*out, out[0], "Mei is", "Mei is a", "!", ""]


# -- ScoreResult (no model) -------------------------------------------------------------
def test_ppl_on_hand_values():
    assert ScoreResult(n_tokens=2, logprob_sum=-2 * math.log(4.0)).ppl == pytest.approx(4.0)
    assert ScoreResult(n_tokens=1, logprob_sum=0.0).ppl == 1.0
    assert ScoreResult(n_tokens=4, logprob_sum=-4.0).ppl == pytest.approx(math.e)
    assert math.isnan(ScoreResult(n_tokens=0, logprob_sum=0.0).ppl)
    r = ScoreResult(n_tokens=13, logprob_sum=-60.21386203254310)
    assert ScoreResult.from_json(r.to_json()) == r
    assert r.to_json() == [13, -60.21386203254310]


def test_fake_backend_scores_are_deterministic():
    from tests.fakes import FakeBackend

    texts = ["Adebayo is a stutterer.", "Mei is a stutterer.", "Adebayo is a stutterer."]
    first, second = FakeBackend().score(texts), FakeBackend().score(texts)
    assert first == second
    assert first[0] == first[2] and first[0].ppl != first[1].ppl
    assert first[0].n_tokens == 5
    assert FakeBackend().score([]) == []


# -- the real model -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def llm():
    from gbdesk.engine.llama_compat import load_llama

    # the scorer's arithmetic: flash attention, ubatches under 64 tokens (the one-chunk
    # kernel; its numbers do not depend on the ubatch size)
    model = load_llama(
        default_model_path(),
        n_ctx=256,
        n_ubatch=32,
        n_threads=2,
        n_threads_batch=2,
        logits_all=True,
        flash_attn=True,
        verbose=False,
    )
    yield model
    model.close()


@pytest.fixture(scope="module")
def scorer(llm):
    from gbdesk.engine.scoring import BatchScorer

    s = BatchScorer(llm, n_threads=2)
    yield s
    s.close()


def one_at_a_time(llm, text: str, bos: bool = True) -> tuple[int, float]:
    """The independent reference: evaluate one text, log-softmax every position."""
    tokens = ([llm.token_bos()] if bos else []) + llm.tokenize(
        text.encode("utf-8"), add_bos=False, special=False
    )
    if len(tokens) < 2:
        return max(0, len(tokens) - 1), 0.0
    llm.reset()
    llm.eval(tokens)
    logits = np.asarray(llm.scores[: len(tokens) - 1], dtype=np.float64)
    peak = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - peak).sum(axis=1)) + peak[:, 0]
    picked = logits[np.arange(len(tokens) - 1), tokens[1:]]
    return len(tokens) - 1, float((picked - lse).sum())


@pytest.fixture(scope="module")
def reference(llm):
    return {text: one_at_a_time(llm, text) for text in set(sentences())}


def assert_close(got, texts, reference):
    assert len(got) == len(texts)
    for (n, lp), text in zip(got, texts, strict=True):
        ref_n, ref_lp = reference[text]
        assert n == ref_n, text
        assert abs(lp - ref_lp) <= TOL_LOGPROB, (text, lp, ref_lp)
        if n:
            assert abs(math.expm1((ref_lp - lp) / n)) <= TOL_PPL_REL, text


@pytest.mark.model
def test_batched_scores_equal_one_at_a_time(scorer, reference):
    texts = sentences()
    got = scorer.score(texts)
    assert_close(got, texts, reference)
    assert got[-1] == (0, 0.0)  # the empty text: nothing scored
    assert got[-2][0] == 1  # "!": BOS → "!"
    assert scorer.decode_calls >= 1
    # every scored token is a real log-probability
    assert all(lp < 0 for n, lp in got if n)


@pytest.mark.model
def test_batch_composition_does_not_change_scores(scorer, reference):
    texts = sentences()
    shuffled = texts[:]
    random.Random(7).shuffle(shuffled)
    a = dict(zip(texts, scorer.score(texts), strict=True))
    b = dict(zip(shuffled, scorer.score(shuffled), strict=True))
    singles = {t: scorer.score([t])[0] for t in texts[:6]}
    for text in texts:
        assert abs(a[text][1] - b[text][1]) <= TOL_LOGPROB
    for text, single in singles.items():
        assert abs(a[text][1] - single[1]) <= TOL_LOGPROB
    assert scorer.score(texts) == scorer.score(texts)  # the same call, the same numbers


@pytest.mark.model
def test_many_decode_calls_shared_prefixes_and_a_long_text(llm, reference):
    from gbdesk.engine.scoring import BatchScorer

    long_text = "The quick brown fox jumps over the lazy dog. " * 5
    texts = [*sentences(), long_text]
    with BatchScorer(llm, n_threads=2, n_batch=16) as small:
        got = small.score(texts)
        assert small.decode_calls > len(texts) // 8  # many groups, one text sliced
        assert small.n_ctx >= len(small.tokens(long_text))  # grown for the long text
    refs = {**reference, long_text: one_at_a_time(llm, long_text)}
    assert refs[long_text][0] > 16
    assert_close(got, texts, refs)


@pytest.mark.model
def test_model_without_bos_scores_from_the_second_token(llm, scorer):
    texts = ["Adebayo is a stutterer.", "Mei was Deaf.", "Mei"]
    scorer.bos = None  # as for a vocabulary without BOS
    try:
        got = scorer.score(texts)
    finally:
        scorer.bos = llm.token_bos()
    refs = {t: one_at_a_time(llm, t, bos=False) for t in texts}
    assert got[2][0] == len(llm.tokenize(b"Mei", add_bos=False)) - 1
    assert_close(got, texts, refs)


@pytest.mark.model
def test_empty_list_and_default_arithmetic_sanity(scorer):
    from gbdesk.engine.llama_compat import load_llama

    assert scorer.score([]) == []
    # llama-cpp-python's default arithmetic (flash attention off) rounds differently;
    # this quantized model amplifies that to ~0.15-0.3 nats per sentence (median), ~1.6
    # at most. A loose bound catches gross errors only.
    default = load_llama(default_model_path(), n_ctx=64, logits_all=True, verbose=False)
    try:
        texts = sentences()[:12]
        got = scorer.score(texts)
        diffs = [abs(g[1] - one_at_a_time(default, t)[1]) for g, t in zip(got, texts, strict=True)]
    finally:
        default.close()
    assert max(diffs) < 3.0
    assert float(np.median(diffs)) < 0.6


@pytest.mark.model
def test_backend_scores_through_the_worker(scorer):
    from gbdesk.engine.llama_backend import LlamaCppBackend

    texts = sentences()
    with LlamaCppBackend(default_model_path(), n_ctx=256, n_threads=2, scoring=True) as b:
        assert b.info.settings["scoring"]["flash_attn"] is True
        assert b.info.settings["scoring"]["n_ubatch"] < 64
        assert b.score([]) == []
        got = b.score(texts)
        assert all(isinstance(r, ScoreResult) for r in got)
        expected = scorer.score(texts)
        for r, (n, lp) in zip(got, expected, strict=True):
            assert r.n_tokens == n
            assert abs(r.logprob_sum - lp) <= TOL_LOGPROB
        assert math.isnan(got[-1].ppl)
        # generation still works in the same worker
        from gbdesk.engine.base import GenerationRequest

        request = GenerationRequest(
            messages=[{"role": "user", "content": "Hi"}], seed=1, max_tokens=4
        )
        assert b.generate(request).tokens_out > 0
        # a worker crash surfaces as EngineCrashed
        os.kill(b.proc.pid, signal.SIGSEGV)
        b.proc.wait(timeout=10)
        with pytest.raises(EngineCrashed, match=r"SIGSEGV|stopped unexpectedly"):
            b.score(texts)
