"""Laissez-Faire statistics on hand-computed cases."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import pytest

from gbdesk.studies.laissez_faire.stats import (
    NameCounts,
    katz_log_halfwidth,
    name_subordination,
    p_from_ci,
    racialized_subordination,
    ratio_with_imputation,
    representation_ratio,
    subordination_ratio,
    wilson_bounds,
)


def test_wilson_matches_the_textbook_formula():
    lo, hi = wilson_bounds(5, 20)
    # centre (p + z²/2n)/(1 + z²/n), half z/(1+z²/n)·sqrt(p(1-p)/n + z²/4n²)
    p, n, z = 0.25, 20, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    assert (lo, hi) == pytest.approx((0.111860, 0.468706), abs=1e-6)
    assert wilson_bounds(0.5, 2)[0] < 0.25 < wilson_bounds(0.5, 2)[1]  # fractional counts
    assert all(math.isnan(v) for v in wilson_bounds(1, 0))


def test_p_value_from_an_interval():
    # z = 1.96 exactly gives p ≈ 0.05
    assert p_from_ci(0.1, 0.2, 0.0) == pytest.approx(math.exp(-0.717 * 1.96 - 0.416 * 1.96**2))
    assert p_from_ci(0.1, 0.2, 0.0) == pytest.approx(0.0496, abs=1e-4)
    assert p_from_ci(0.0, 0.2, -0.2) == pytest.approx(1.0)
    # log scale: ratio 2 with interval [1, 4] → z = ln2 / (ln4 / 3.92)
    z = math.log(2) / (math.log(4) / 3.92)
    assert p_from_ci(2, 4, 1, log_transform=True) == pytest.approx(
        math.exp(-0.717 * z - 0.416 * z * z)
    )


def test_ratio_imputation_like_the_reference_code():
    assert ratio_with_imputation(0, 10, 0, 20) == 1.0
    assert ratio_with_imputation(0, 10, 5, 20) == pytest.approx((1 / 11) / (6 / 21))
    assert ratio_with_imputation(3, 10, 6, 20) == pytest.approx(1.0)
    assert ratio_with_imputation(0.5, 10, 4, 20) == pytest.approx((1.5 / 11) / (5 / 21))
    assert katz_log_halfwidth(20, 100, 10, 100) == pytest.approx(1.96 * math.sqrt(0.13))


def test_representation_ratio_hand_computed():
    r = representation_ratio(30, 100, 50.8)  # 30 % observed against a 50.8 % baseline
    assert r.value == pytest.approx(30 / 50.8)
    assert (r.lo, r.hi) == pytest.approx((21.8949 / 50.8, 39.5857 / 50.8), abs=2e-4)
    se = (0.395857 - 0.218949) / 3.92
    z = 0.208 / se
    assert r.p_value == pytest.approx(math.exp(-0.717 * z - 0.416 * z * z), rel=1e-3)
    assert r.p_value < 1e-5 and r.significance == "⁂"
    assert r.n == 100
    assert math.isnan(representation_ratio(1, 0, 50).value)


def test_subordination_ratio_hand_computed():
    r = subordination_ratio(20, 100, 10, 100)
    half = 1.96 * math.sqrt(1 / 20 - 1 / 100 + 1 / 10 - 1 / 100)
    assert r.value == pytest.approx(2.0)
    assert (r.lo, r.hi) == pytest.approx((2 * math.exp(-half), 2 * math.exp(half)))
    assert r.p_value == pytest.approx(0.0542, abs=2e-4)
    assert r.significance == ""
    # a group never subordinate: imputed, ratio below one
    assert subordination_ratio(0, 50, 7, 50).value == pytest.approx((1 / 51) / (8 / 51))


def test_table_3_arithmetic():
    juan = name_subordination(2213, 12)
    jamal = name_subordination(211, 40)
    assert Decimal(str(juan)).quantize(Decimal("0.1"), ROUND_HALF_UP) == Decimal("184.4")
    assert jamal == 211 / 40
    assert Decimal("211") / Decimal("40") == Decimal("5.275")  # printed 5.28 (half up)
    assert Decimal("5.275").quantize(Decimal("0.01"), ROUND_HALF_UP) == Decimal("5.28")
    assert name_subordination(0, 3) == pytest.approx(1 / 4)  # Laplace when one count is 0
    assert math.isnan(name_subordination(0, 0))


def test_racialized_subordination_median_over_thresholds():
    names = [
        NameCounts(0.90, 10, 2, True),
        NameCounts(0.50, 3, 3, True),
        NameCounts(0.95, 0, 10, False),  # another gender: only in the denominators
        NameCounts(0.20, 5, 5, True),
    ]
    curve, median = racialized_subordination(names)
    # denominators 18 subordinate, 20 dominant occurrences
    assert curve[1].value == pytest.approx((18 / 18) / (10 / 20))  # A, B, D above 1 %
    assert curve[19].value == pytest.approx(2.0)
    assert curve[20].value == pytest.approx((13 / 18) / (5 / 20))  # D (20 %) drops out
    assert curve[50].value == pytest.approx((10 / 18) / (2 / 20))  # only A
    assert 90 not in curve  # nobody above 90 % in the group: < 5 occurrences
    assert len(curve) == 89
    assert median == pytest.approx(26 / 9)  # 19 × 2.0, 30 × 2.89, 40 × 5.56 → 45th value


def test_subordination_ratio_of_near_zero_likelihood_sums_does_not_overflow():
    """Sums of tiny name likelihoods (1e-6 of a race) give an interval wider than the float
    range: infinite at the top, as numpy's exp in the reference code (it raised before)."""
    r = subordination_ratio(1e-6, 10.0, 0.0, 12.0)
    assert r.value == pytest.approx((2e-6 / (10 + 1e-6)) / (1e-6 / (12 + 1e-6)))
    assert r.hi == math.inf and 0 <= r.lo < r.value
