"""Long prompts read in chunks aligned to fixed positions (issue 44): every request's
logits, token for token, and its text equal those of the request decoded alone — in a
full batch, in another order, one after another through one slot (each prompt keeping
the cells it shares with the one before) — at the cells where ggml's kernels switch:
256 and 512 cells of a sequence, and the chunk boundaries (a last chunk of 1, 63 and 64
rows, a prefix shared up to a point inside a chunk). The controls show that the checks
fail when a text depends on the batch."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from gbdesk.engine.base import GenerationRequest
from tests.engine import test_continuous_batching

pytestmark = pytest.mark.model
generator = test_continuous_batching.generator  # the bundled model's fixture

CHUNK = 512
TAIL = 6  # SmolLM2's chat template: tokens after the user's words (checked below)
# (tokens shared with the other prompts, prompt length in tokens): a prompt is "storm"
# repeated up to its divergence point, then a word of its own repeated
SHAPES = [
    (200, 255),  # its answer crosses 256 cells (a sequence alone gets the dummy token)
    (500, CHUNK + 1),  # the last chunk is one token: read by the generation step
    (540, CHUNK + 63),  # a last chunk of 63 rows (the one-chunk kernel)
    (540, CHUNK + 90),  # 90 rows (tiled); shares 540 with the one above, keeps 512
    (520, CHUNK + 200),  # shares 520: the chunk's rest (192 rows) is read from there
    (CHUNK + 200 - TAIL - 1, CHUNK + 200),  # the one above with another last word
]
WORDS = ["apple", "river", "cloud", "stone", "maple", "tiger"]


def _tracing(base):
    """A batcher class that keeps a digest of every logits row it samples from."""
    import llama_cpp
    import numpy as np

    class Tracing(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.trace: dict = {}

        def _take(self, slot, row):
            logits = llama_cpp.llama_get_logits_ith(self.ctx, row)
            digest = hashlib.sha1(
                np.ctypeslib.as_array(logits, shape=(self._n_vocab,)).tobytes()
            ).hexdigest()
            self.trace.setdefault(slot.item.key, []).append(digest)
            super()._take(slot, row)

    return Tracing


def decode(generator, requests, slots, order=None, **kw):
    """{index: (text, tokens_out, logits digests)} and the batcher's counters."""
    from gbdesk.engine.continuous import ContinuousBatcher

    batcher = _tracing(ContinuousBatcher)(generator, slots=slots, n_threads=2, **kw)
    try:
        for i in order or range(len(requests)):
            batcher.add(i, requests[i].to_json())
        results = {}
        while batcher.has_work:
            for kind, key, payload in batcher.step():
                assert kind != "item_error", payload
                if kind == "item":
                    results[key] = (payload["text"], payload["tokens_out"], batcher.trace[key])
        return results, dict(batcher.stats)
    finally:
        batcher.close()


def long_requests(generator, shapes=SHAPES, max_tokens=8):
    """Requests of exactly the prompt lengths and shared prefixes of `shapes`; a shape
    whose word is None is the prompt before with its last word changed."""

    def tokens(content: str) -> list[int]:
        return list(generator.prompt_tokens([{"role": "user", "content": content}])[0])

    a, b = tokens("storm storm"), tokens("apple storm")
    assert len(tokens("storm")) + 1 == len(a) == len(b)  # one token a word
    lead = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    tail = len(a) - lead - 2  # the template's tokens after the words
    assert tail == TAIL
    out, words = [], []
    for i, (shared, length) in enumerate(shapes):
        if shared == length - tail - 1:  # the prompt before, another last word
            words = [*words[:-1], "tiger"]
        else:
            words = ["storm"] * (shared - lead) + [WORDS[i]] * (length - shared - tail)
        content = " ".join(words)
        assert len(tokens(content)) == length, (i, len(tokens(content)), length)
        out.append(
            GenerationRequest(
                messages=[{"role": "user", "content": content}],
                seed=300 + i,
                max_tokens=max_tokens,
                temperature=1.0,
            )
        )
    return out


ARITHMETICS = [
    pytest.param({"prompt_chunk": CHUNK, "flash_attn": True}, id="flash-aligned-512"),
    pytest.param({"prompt_chunk": CHUNK, "flash_attn": False}, id="plain-512"),
]


@pytest.fixture(scope="module")
def reqs(generator):
    """`SHAPES`, then the last prompt again with another seed (it shares all but the
    token whose logits it needs: a rest of one row)."""
    out = long_requests(generator)
    return [*out, dataclasses.replace(out[-1], seed=out[-1].seed + 1)]


@pytest.fixture(scope="module")
def alone(generator, reqs):
    """Each request decoded alone (a fresh one-slot batcher), by arithmetic."""
    cache: dict = {}

    def get(arithmetic: dict) -> dict:
        key = tuple(sorted(arithmetic.items()))
        if key not in cache:
            cache[key] = {
                i: decode(generator, [r], 1, **arithmetic)[0][0] for i, r in enumerate(reqs)
            }
        return cache[key]

    return get


@pytest.mark.timeout(1800)  # ~1 min on an idle machine
@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_long_prompts_decode_as_alone_in_any_batch(generator, reqs, alone, arithmetic):
    expected = alone(arithmetic)
    full, stats = decode(generator, reqs, len(reqs), **arithmetic)
    assert full == expected
    assert stats["copies"] > 0  # prompts copied the cells of live ones
    # two slots, another order: prompts keep the idle cells of the one before, or copy
    reordered, stats = decode(generator, reqs, 2, order=[6, 5, 3, 1, 4, 2, 0], **arithmetic)
    assert reordered == expected
    assert stats["shared_tokens"] >= 2 * CHUNK


def test_a_prompt_keeps_cells_only_where_its_kernels_are_its_own(generator):
    """Where a prompt may continue another's cells (`_reusable`), by hand: chunk 512,
    flash attention (64 rows or more of one sequence: the tiled kernel)."""
    from gbdesk.engine.continuous import ContinuousBatcher, _Slot

    batcher = ContinuousBatcher(generator, slots=1, prompt_chunk=CHUNK)
    try:
        src = _Slot()
        src.kinds = batcher._prompt_kinds(CHUNK + 90)  # chunk 512..601: 90 rows, tiled
        assert src.kinds[:CHUNK] == b"\x01" * CHUNK and set(src.kinds[CHUNK:]) == {1}
        short = batcher._prompt_kinds(CHUNK + 63)  # 63 rows: the one-chunk kernel
        assert set(short[CHUNK:]) == {0}
        assert batcher._reusable(540, src, short) == CHUNK  # kinds differ from 512 on
        long = batcher._prompt_kinds(CHUNK + 200)
        assert batcher._reusable(540, src, long) == 540  # 172 rows left: tiled as alone
        # cells past the source's prompt were generated (kind 0): cut where they begin
        assert batcher._reusable(CHUNK + 95, src, long) == CHUNK + 90  # 110 rows left
        src.kinds = long
        assert batcher._reusable(CHUNK + 150, src, long) == CHUNK  # 50 rows left: not
        assert batcher._pieces(540, 172, long) == [172]
        assert batcher._pieces(0, CHUNK + 63, short) == [CHUNK, 48, 15]
        assert batcher._pieces(0, CHUNK + 1, batcher._prompt_kinds(CHUNK + 1)) == [CHUNK, 1]
    finally:
        batcher.close()


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_the_checks_fail_when_a_prompt_is_cut_anywhere(
    generator,
    reqs,
    alone,
    arithmetic,
    monkeypatch,
):
    """Control: a prompt that keeps any shared prefix (cut inside a chunk, so that the
    rest is read by the other kernel than alone) computes other numbers, and the
    comparison of the test above sees it."""
    from gbdesk.engine.continuous import ContinuousBatcher

    expected = alone(arithmetic)
    monkeypatch.setattr(ContinuousBatcher, "_reusable", lambda self, keep, slot, kinds: keep)
    one_slot, _ = decode(generator, reqs, 1, **arithmetic)
    differ = [i for i in expected if expected[i][2] != one_slot[i][2]]
    assert differ  # the logits of some request changed with what was decoded before
