"""The closed-form intervals' primitives against published worked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from gbdesk.maths.intervals import (
    Absolute,
    Context,
    Linear,
    Maximum,
    Share,
    Slope,
    modified_wilson,
    mover,
    wilson,
)


@pytest.mark.parametrize(
    ("x", "n", "lo", "hi"),
    # Newcombe (1998a) "Two-sided confidence intervals for the single proportion",
    # Table I, method 3 (Wilson score)
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
     (1, 29, 0.0061, 0.1718), (29, 29, 0.8830, 1.0)],
)  # fmt: skip
def test_wilson_matches_newcombe_table_i_and_statsmodels(x, n, lo, hi):
    got = wilson(x / n, n, 0.05)
    assert got == pytest.approx((lo, hi), abs=6e-5)
    assert got == pytest.approx(proportion_confint(x, n, 0.05, method="wilson"), abs=1e-12)


def test_modified_wilson_uses_the_poisson_bound_near_the_edges():
    """Brown, Cai & DasGupta (2001) §4.1.1: for x = 1, 2, 3 the lower bound is
    χ²_{2x}(α/2)/2n; Wilson's own is higher there and misses small p too often."""
    from scipy.stats import chi2

    n = 40
    for x in (1, 2, 3):
        lo, hi = modified_wilson(x / n, n, 0.05)
        assert lo == pytest.approx(chi2.ppf(0.025, 2 * x) / (2 * n))
        assert lo < wilson(x / n, n, 0.05)[0]
        assert hi == pytest.approx(wilson(x / n, n, 0.05)[1])
    # the mirror image near 1, and Wilson itself away from the edges
    lo, hi = modified_wilson(39 / 40, 40, 0.05)
    assert 1 - hi == pytest.approx(chi2.ppf(0.025, 2) / 80)
    assert modified_wilson(0.5, 40, 0.05) == wilson(0.5, 40, 0.05)


@pytest.mark.parametrize(
    ("a", "m", "b", "n", "lo", "hi"),
    # Newcombe (1998) "Interval estimation for the difference between independent
    # proportions: comparison of eleven methods", Table II, method 10
    [(56, 70, 48, 80, 0.0524, 0.3339), (9, 10, 3, 10, 0.1705, 0.8090),
     (6, 7, 2, 7, 0.0582, 0.8062), (5, 56, 0, 29, -0.0381, 0.1926)],
)  # fmt: skip
def test_mover_of_wilson_intervals_is_newcombes_method_10(a, m, b, n, lo, hi):
    p1, p2 = a / m, b / n
    l1, u1 = wilson(p1, m, 0.05)
    l2, u2 = wilson(p2, n, 0.05)
    got = mover(p1 - p2, [p1, -p2], [l1, -u2], [u1, -l2])
    assert got == pytest.approx((lo, hi), abs=6e-5)
    sm = confint_proportions_2indep(a, m, b, n, method="newcomb", compare="diff")
    assert got == pytest.approx(tuple(float(v) for v in sm), abs=1e-10)


def _paired_newcombe(e: int, f: int, g: int, h: int, phi: float) -> tuple[float, float]:
    """Newcombe (1998b) "Improved confidence intervals for the difference between
    binomial proportions based on paired data", method 10, written out: a 2×2 table of
    pairs (e both, f first only, g second only, h neither) and the correlation φ."""
    n = e + f + g + h
    p1, p2 = (e + f) / n, (e + g) / n
    l1, u1 = wilson(p1, n, 0.05)
    l2, u2 = wilson(p2, n, 0.05)
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    hi = d + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return lo, hi


@pytest.mark.parametrize("table", [(36, 12, 2, 0), (8, 5, 2, 15), (0, 3, 1, 16)])
def test_paired_mover_is_newcombes_paired_method_10(table):
    """One item asking both sides: the MOVER's correlation is the items' φ (Pearson's
    correlation of the two answers, without Newcombe's continuity correction of it)."""
    e, f, g, h = table
    first = np.array([1] * e + [1] * f + [0] * g + [0] * h, dtype=float)
    second = np.array([1] * e + [0] * f + [1] * g + [0] * h, dtype=float)
    n = len(first)
    phi = float(np.corrcoef(first, second)[0, 1]) if first.std() and second.std() else 0.0
    p1, p2 = first.mean(), second.mean()
    l1, u1 = wilson(p1, n, 0.05)
    l2, u2 = wilson(p2, n, 0.05)
    r = np.array([[1.0, -phi], [-phi, 1.0]])  # the terms are p1 and −p2
    got = mover(p1 - p2, [p1, -p2], [l1, -u2], [u1, -l2], r)
    assert got == pytest.approx(_paired_newcombe(e, f, g, h, phi), abs=1e-12)
    # and the estimators find that correlation from the items themselves
    ctx = Context(n)
    one = np.ones(n)
    a, b = Share(ctx, first, one, one), Share(ctx, second, one, one)
    diff = Linear(ctx, [(1.0, a), (-1.0, b)])
    assert diff.estimate == pytest.approx(p1 - p2)
    lo, hi = diff.interval(0.05)
    assert lo <= diff.estimate <= hi


def test_share_is_wilson_on_items_when_each_item_is_one_answer():
    """One answer per item, many items: the design effect is 1 and the interval is
    Wilson's with Korn–Graubard's t adjustment (which vanishes as items grow)."""
    rng = np.random.default_rng(1)
    y = (rng.random(4000) < 0.3).astype(float)
    one = np.ones_like(y)
    s = Share(Context(len(y)), y, one, one)
    assert s.estimate == pytest.approx(y.mean())
    assert s.interval(0.05) == pytest.approx(wilson(y.mean(), len(y), 0.05), abs=2e-4)


def test_share_of_clustered_attempts_is_wider_than_binomial():
    """Items whose attempts agree (p_i 0 or 1, three attempts each): the item, not the
    attempt, is the unit, so the interval is that of `items` trials, not 3 × items."""
    y = np.array([3.0] * 6 + [0.0] * 14)
    t = np.full(20, 3.0)
    s = Share(Context(20), y, t, t)
    lo, hi = s.interval(0.05)
    lo_bin, hi_bin = wilson(0.3, 60, 0.05)
    assert hi - lo > 1.5 * (hi_bin - lo_bin)


def test_share_of_identical_answers_is_not_zero_width():
    y = np.zeros(10)
    one = np.ones(10)
    lo, hi = Share(Context(10), y, one, one).interval(0.05)
    assert lo == 0.0 and hi > 0.25  # wider than Wilson's 0.278 at 10 (t on 9 df)


def test_finite_pool_takes_the_attempts_noise_only_at_n_equals_n():
    """At n = N with several attempts per item only the attempts' noise is left."""
    rng = np.random.default_rng(2)
    p = rng.beta(2, 2, size=200)
    t = np.full(200, 4.0)
    y = rng.binomial(4, p).astype(float)
    wide = Share(Context(200, None), y, t, t).interval(0.05)
    narrow = Share(Context(200, 200), y, t, t).interval(0.05)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    # one attempt per item: no correction (conservative)
    y1, t1 = (rng.random(200) < p).astype(float), np.ones(200)
    assert Share(Context(200, 200), y1, t1, t1).interval(0.05) == Share(
        Context(200, None), y1, t1, t1
    ).interval(0.05)


def test_absolute_and_maximum_cover_a_gap_of_zero():
    ctx = Context(30)
    one = np.ones(30)
    a = Share(ctx, np.array([1.0] * 10 + [0.0] * 20), one, one)
    b = Share(ctx, np.array([1.0] * 12 + [0.0] * 18), one, one)
    gap = Absolute(Linear(ctx, [(1.0, a), (-1.0, b)]))
    lo, hi = gap.interval(0.05)
    assert lo == 0.0 and hi > gap.estimate
    top = Maximum([gap, Absolute(Linear(ctx, [(1.0, a), (-1.0, a)]))])
    lo2, hi2 = top.interval(0.05)
    assert lo2 == 0.0 and hi2 >= hi  # each part at α/2: wider


def test_slope_is_ordinary_least_squares_inside_the_bounds():
    rng = np.random.default_rng(3)
    x = rng.random(60)
    y = np.clip(0.3 + 0.4 * x + rng.normal(0, 0.1, 60), 0, 1)
    s = Slope(Context(60), x, y, np.ones(60, bool))
    assert s.estimate == pytest.approx(np.polyfit(x, y, 1)[0])
    lo, hi = s.interval(0.05)
    assert lo < s.estimate < hi
    assert math.isnan(Slope(Context(2), x[:2], y[:2], np.ones(2, bool)).estimate)


@pytest.mark.parametrize(
    ("x", "n", "lo", "hi"),
    # Newcombe (1998a), Table I, method 5 (exact, Clopper–Pearson)
    [(81, 263, 0.2527, 0.3676), (15, 148, 0.0578, 0.1617), (0, 20, 0.0, 0.1684),
     (1, 29, 0.0009, 0.1776), (29, 29, 0.8806, 1.0)],
)  # fmt: skip
def test_clopper_pearson_matches_newcombe_table_i_and_statsmodels(x, n, lo, hi):
    from gbdesk.maths.intervals import clopper_pearson

    got = clopper_pearson(x / n, n, 0.05)
    assert got == pytest.approx((lo, hi), abs=6e-5)
    assert got == pytest.approx(proportion_confint(x, n, 0.05, method="beta"), abs=1e-10)


def test_shares_take_the_exact_interval_of_their_effective_sample():
    from gbdesk.maths.intervals import clopper_pearson

    y = np.array([1.0] * 3 + [0.0] * 17)
    one = np.ones(20)
    assert Share(Context(20), y, one, one).interval(0.01) == clopper_pearson(0.15, 20, 0.01)


def test_a_mean_of_shares_on_the_same_items_counts_each_item_once():
    """Two inventories coding the same answers alike: their mean is that share, so its
    interval is the share's own. A stratified mean (Kish's n over the parts) would count
    every item twice and give a narrower interval."""
    from gbdesk.maths.intervals import SameItemsShareMean, ShareMean

    rng = np.random.default_rng(3)
    words = rng.integers(5, 30, 25).astype(float)
    male = rng.binomial(words.astype(int), rng.uniform(0.3, 0.7, 25)).astype(float)
    ctx = Context(25)
    share = Share(ctx, male, words, words, prior=(5, 5))
    twice = SameItemsShareMean(ctx, [share, Share(ctx, male, words, words, prior=(5, 5))])
    assert twice.estimate == pytest.approx(share.estimate)
    for alpha in (0.05, 0.005):
        assert twice.interval(alpha) == pytest.approx(share.interval(alpha), rel=1e-12)
        lo, hi = ShareMean(ctx, [share, share]).interval(alpha)
        assert hi - lo < 0.9 * (share.interval(alpha)[1] - share.interval(alpha)[0])
    nothing = Share(ctx, male, words, np.zeros(25), prior=(5, 5))  # a group with no item
    assert SameItemsShareMean(ctx, [nothing, nothing]).interval(0.05) == (0.0, 1.0)
