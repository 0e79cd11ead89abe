"""The ceiling arithmetic of benchmarks/decode_costs.py on hand-computed cases."""

from __future__ import annotations

import pytest

from benchmarks.decode_costs import (
    DecodeCosts,
    ceiling_seconds,
    minimal_prompt_tokens,
    previous_shared_tokens,
)

# three prompts: two share [1, 2, 3], the third shares [1] with both
PROMPTS = [[1, 2, 3, 4], [1, 5, 6], [1, 2, 3, 7, 8]]


def test_least_prompt_tokens_are_the_prefix_trees_nodes():
    # nodes: 1; 2, 3, 4; 5, 6; 7, 8 = 8 (of 12 tokens)
    assert minimal_prompt_tokens(PROMPTS) == 8
    assert minimal_prompt_tokens([[1, 2], [1, 2, 3]]) == 3
    assert minimal_prompt_tokens([]) == 0


def test_a_plain_loop_shares_only_with_the_prompt_before():
    # 4, then 3 - 1 shared = 2, then 5 - 1 shared (with [1, 5, 6]) = 4
    assert previous_shared_tokens(PROMPTS) == 10
    # the same prompt twice still decodes its last token (for its logits)
    assert previous_shared_tokens([[1, 2, 3], [1, 2, 3]]) == 4


def test_ceiling_uses_the_cheapest_prompt_and_step_costs():
    costs = DecodeCosts(6.0, {48: 2.5, 256: 2.0}, {2: 6.0, 16: 3.0, 32: 3.5})
    assert costs.best_prompt_ms == 2.0 and costs.best_step_ms == 3.0
    # 1,000 prompt tokens × 2 ms + 500 answer tokens × 3 ms + 0.25 s sampling
    assert ceiling_seconds(costs, 1000, 500, 0.25) == pytest.approx(3.75)
    assert "one token alone" in costs.table() and "step of 16 sequences" in costs.table()


def test_reading_time_joins_the_measured_whole_prompts():
    from benchmarks.harness import Projection, reading_seconds

    curve = {128: 2.0, 1024: 3.0, 2600: 5.0}  # ms per token of whole prompts
    # whole-prompt seconds: 0.256 at 128, 3.072 at 1,024, 13.0 at 2,600
    assert reading_seconds(curve, 0) == 0
    assert reading_seconds(curve, 64) == pytest.approx(0.128)
    assert reading_seconds(curve, 576) == pytest.approx(0.256 + (3.072 - 0.256) / 2)
    assert reading_seconds(curve, 2600) == pytest.approx(13.0)
    # past the longest: its last slope, (13.0 - 3.072) / 1,576 s a token
    assert reading_seconds(curve, 2600 + 1576) == pytest.approx(13.0 + 9.928)
    # two prompts: 1,024 tokens from scratch, then 1,024 sharing 128 with it; answers of
    # 10 tokens at 4 ms; 100 generations
    p = Projection(100, [(1024, 0), (1024, 128)], 10.0, "measured")
    per = ((3.072 - 0) + (3.072 - 0.256)) / 2 + 10 * 0.004
    assert p.seconds(curve, 4.0) == pytest.approx(100 * per)
    assert p.mean_prompt == 1024
