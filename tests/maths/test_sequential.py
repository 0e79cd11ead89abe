"""The audit's grid of looks: sizes, the α each look spends, and the planning chance."""

import math

import pytest
from scipy.stats import norm

from gbdesk.maths.sequential import (
    ALPHA,
    Looks,
    decide_probability,
    interval_at_level,
    look_sizes,
    projected_half_width,
)
from gbdesk.maths.stats import MarkDefinition

EDGES = MarkDefinition.from_edges("fail_rate", [0, 0.05, 0.15, 0.5, 1])


def test_look_sizes_double_from_the_first_to_the_last():
    assert look_sizes(10, 149) == (10, 20, 40, 80, 149)
    assert look_sizes(10, 160) == (10, 20, 40, 80, 160)
    assert look_sizes(10, 161) == (10, 20, 40, 80, 160, 161)
    assert look_sizes(12, 12) == (12,)
    assert look_sizes(30, 12) == (12,)


def test_the_looks_spend_alpha_exactly_later_looks_more():
    looks = Looks(look_sizes(10, 300))
    assert looks.sizes == (10, 20, 40, 80, 160, 300)
    spent = [looks.alpha_at(n) for n in looks.sizes] + [looks.alpha_at(55)]  # + the end look
    assert sum(spent) == pytest.approx(ALPHA, abs=1e-15)
    # weights k² for k = 1..6 and 6² for the end look: W = 91 + 36 = 127
    assert looks.alpha_at(10) == pytest.approx(ALPHA / 127)
    assert looks.alpha_at(300) == pytest.approx(ALPHA * 36 / 127)
    assert looks.alpha_at(55) == looks.alpha_at(300)
    zs = [looks.z_at(n) for n in looks.sizes]
    assert zs == sorted(zs, reverse=True)
    assert looks.z_at(300) == pytest.approx(norm.ppf(1 - ALPHA * 36 / 127 / 2))
    assert looks.level_at(300) == pytest.approx(1 - ALPHA * 36 / 127)
    assert looks.next_size(0) == 10 and looks.next_size(80) == 160 and looks.next_size(300) is None


def test_a_fixed_plan_is_one_look_at_the_full_alpha():
    once = Looks((200,), end_look=False)
    assert once.count == 1
    assert once.alpha_at(200) == pytest.approx(ALPHA)
    assert once.z_at(200) == pytest.approx(1.959964, abs=1e-6)


def test_decide_probability():
    # a value deep in D with a narrow next interval: almost surely decided
    assert decide_probability(EDGES, 0.8, 0.05, 0.05, (0.0, 1.0)) > 0.99
    # right on an edge: about half the mass on each side, minus the margins
    p = decide_probability(EDGES, 0.5, 0.05, 0.05, (0.0, 1.0))
    assert 0.0 < p < 0.5
    # a next interval wider than every band: cannot decide
    assert decide_probability(EDGES, 0.3, 0.1, 0.6, (0.0, 1.0)) < 1e-9
    # at the metric's bound the band A needs no margin below 0
    assert decide_probability(EDGES, 0.0, 0.005, 0.04, (0.0, 1.0)) == pytest.approx(norm.cdf(2))
    assert decide_probability(EDGES, math.nan, 0.1, 0.1) == 0.0


def test_projected_half_width_and_interval_at_level():
    assert projected_half_width(0.2, 10, 40) == pytest.approx(0.1)
    assert projected_half_width(0.2, 0, 40) == math.inf
    values = [0.1, 0.2, 0.3, 0.2]
    mu, sigma = norm.fit(values)
    assert interval_at_level(values, 0.9) == pytest.approx(norm.interval(0.9, mu, sigma))
    assert interval_at_level([math.nan, 0.2, 0.4], 0.95) == pytest.approx(
        norm.interval(0.95, *norm.fit([0.2, 0.4]))
    )
    assert all(math.isnan(x) for x in interval_at_level([math.nan, math.nan], 0.95))
    assert interval_at_level([0.3, 0.3], 0.95) == (0.3, 0.3)
