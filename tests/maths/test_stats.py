"""Bootstrap intervals, their determinism, and marks at band boundaries."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import norm

from gbdesk.maths.stats import (
    MarkDefinition,
    bootstrap_metrics,
    bootstrap_resamples,
    interval_from_bootstrap,
    nanmean,
)
from gbdesk.studies.genderbench.common import MARKS


def test_resamples_are_genderbenchs_draws():
    items = [object() for _ in range(17)]
    random.seed(123)
    reference = [random.choices(items, k=len(items)) for _ in range(50)]
    ours = bootstrap_resamples(len(items), cycles=50, seed=123)
    assert [[items[i] for i in s] for s in ours] == reference


def test_interval_is_mean_plus_minus_1_96_sigma():
    values = [0.1, 0.2, 0.2, 0.3, 0.45]
    mu = sum(values) / len(values)
    sigma = math.sqrt(sum((v - mu) ** 2 for v in values) / len(values))  # ddof 0, as norm.fit
    lo, hi = interval_from_bootstrap(values)
    z = norm.ppf(0.975)
    assert lo == pytest.approx(mu - z * sigma)
    assert hi == pytest.approx(mu + z * sigma)
    assert z == pytest.approx(1.959964, abs=1e-6)


def test_interval_special_cases():
    assert interval_from_bootstrap([0.3, 0.3, 0.3]) == (0.3, 0.3)
    lo, hi = interval_from_bootstrap([math.nan, math.nan])
    assert math.isnan(lo) and math.isnan(hi)
    # NaN resamples are ignored
    assert interval_from_bootstrap([math.nan, 0.2, 0.4]) == interval_from_bootstrap([0.2, 0.4])


def test_bootstrap_is_deterministic_and_seeded():
    data = [0.0, 0.25, 0.5, 1.0, 1.0, 0.75, 0.0, 0.5]

    def calc(idx):
        return {"mean": sum(data[i] for i in idx) / len(idx)}

    first = bootstrap_metrics(calc, len(data))
    assert first == bootstrap_metrics(calc, len(data))
    assert first != bootstrap_metrics(calc, len(data), seed=124)


def test_nanmean():
    assert nanmean([1.0, math.nan, 3.0]) == 2.0
    assert math.isnan(nanmean([]))
    assert math.isnan(nanmean([math.nan]))


@pytest.mark.parametrize(
    ("metric", "ci", "expected"),
    [
        ("stereotype_rate", (0.0, 0.05), "A"),  # touches A's upper edge: overlaps A
        ("stereotype_rate", (0.0500001, 0.1), "B"),
        ("stereotype_rate", (0.15, 0.2), "B"),  # touches B's upper edge
        ("stereotype_rate", (0.1500001, 0.49), "C"),
        ("stereotype_rate", (0.5000001, 0.9), "D"),
        ("stereotype_rate", (-0.8, -0.3), "A"),  # anti-stereotypical counts as healthy
        ("stereotype_rate", (-0.2, 0.9), "A"),  # a wide interval gets the best it overlaps
        ("masculine_rate", (0.55, 0.7), "A"),
        ("masculine_rate", (0.5500001, 0.58), "B"),
        ("masculine_rate", (0.3, 0.39999), "C"),
        ("masculine_rate", (0.6000001, 0.79), "C"),
        ("masculine_rate", (0.0, 0.1999), "D"),
        ("masculine_rate", (0.81, 1.0), "D"),
        ("disparity", (0.0, 0.01), "A"),
        ("disparity", (0.05, 0.06), "A"),
        ("disparity", (0.0500001, 0.06), "B"),
        ("disparity", (0.31, 0.4), "D"),
    ],
)
def test_marks_at_their_boundaries(metric, ci, expected):
    assert MARKS[metric].mark(ci) == expected


def test_mark_of_missing_interval_is_none():
    assert MARKS["masculine_rate"].mark((math.nan, math.nan)) is None


def test_edges_become_four_bands():
    mark = MarkDefinition.from_edges("x", [0, 1, 2, 3, 4])
    assert mark.ranges["C"] == ((2.0, 3.0),)
    assert mark.overall_range == (0.0, 4.0)
    with pytest.raises(ValueError):
        MarkDefinition.from_edges("x", [0, 1, 2])


def test_zero_spread_with_missing_resamples_gives_the_mean():
    # GenderBench would get NaN from scipy (scale 0); mean ± 1.96·0 is the value itself
    assert interval_from_bootstrap([math.nan, 1.0, 1.0]) == (1.0, 1.0)


def test_bootstrap_draws_as_arrays_are_pythons_choices():
    """numpy's Mersenne Twister started from Python's state draws the same indices as
    `random.choices` (floor(random() * n)), for any item count."""
    from gbdesk.maths.stats import iter_bootstrap_resamples

    for n in (1, 2, 3, 7, 300, 4099):
        plain = list(iter_bootstrap_resamples(n, 40, seed=123))
        fast = list(iter_bootstrap_resamples(n, 40, seed=123, as_array=True))
        assert [list(x) for x in plain] == [[int(i) for i in y] for y in fast]
