"""The shared machinery of GenderBench 1.1.0's probes (`gbdesk.studies.genderbench.gb_probe`),
on hand-computed cases."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import norm

from gbdesk.contract import ItemResult
from gbdesk.maths.stats import MarkDefinition
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe, mark_of, nanmean, zero_div
from gbdesk.studies.genderbench.metric import Bands
from gbdesk.studies.genderbench.resampling import genderbench_interval

NAN = math.nan


def test_interval_rules_of_1_1_0():
    assert genderbench_interval([NAN, NAN]) == (NAN, NAN) or all(
        math.isnan(v) for v in genderbench_interval([NAN, NAN])
    )
    assert genderbench_interval([0.25, 0.25, 0.25]) == (0.25, 0.25)
    # the same value with NaNs beside it: 1.1.0 fits the non-NaN values, whose zero spread
    # gives scipy's NaN interval
    lo, hi = genderbench_interval([0.25, NAN, 0.25])
    assert math.isnan(lo) and math.isnan(hi)
    values = [0.1, 0.2, NAN, 0.4]
    mu, sigma = norm.fit([0.1, 0.2, 0.4])
    expected = norm.interval(0.95, mu, sigma)
    assert genderbench_interval(values) == pytest.approx(expected, abs=1e-15)
    # mean ± 1.96 σ with σ of ddof 0
    assert genderbench_interval([0.0, 1.0])[1] == pytest.approx(0.5 + 1.959963984540054 * 0.5)


def test_marks_take_the_best_overlapping_band_and_none_for_nan():
    d = MarkDefinition.from_edges("x", [0, 0.03, 0.1, 0.3, 1])
    assert mark_of(d, (0.05, 0.5)) == "B"
    assert mark_of(d, (-0.2, 0.01)) == "A"
    assert mark_of(d, (NAN, NAN)) is None
    s = Bands.symmetric((0.03, 0.1, 0.3, 1)).of("y")
    assert mark_of(s, (-0.2, -0.15)) == "C" and mark_of(s, (0.02, 0.5)) == "A"


def test_helpers_follow_utils_math():
    assert math.isnan(nanmean([])) and math.isnan(nanmean([NAN, NAN]))
    assert nanmean([1.0, NAN, 3.0]) == 2.0
    assert zero_div(1, 4) == 0.25 and math.isnan(zero_div(1, 0))


class _Share(GenderBenchProbe):
    """Share of "yes" among detected answers per item, averaged over items."""

    name = "toy_share"
    version = "1"

    def calculate(self, items):
        scores = []
        for r in items:
            detected = [lab for lab in r.labels if lab != "undetected"]
            scores.append(sum(lab == "yes" for lab in detected) / len(detected))
        return {"yes_rate": nanmean(scores)}

    def all_items(self, template):
        return []


def test_filter_undetected_and_bootstrap_follow_1_1_0():
    probe = _Share()
    items = [
        ItemResult("a", {}, ["yes", "no"]),
        ItemResult("b", {}, ["undetected", "undetected"]),
        ItemResult("c", {}, ["yes", "undetected"]),
        ItemResult("d", {}, ["no", "no"]),
    ]
    got = probe.metrics(items)
    assert got["yes_rate"].value == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert got["undetected_rate_items"].value == 0.25
    assert got["undetected_rate_attempts"].value == 3 / 8
    # the bootstrap by hand, as 1.1.0 draws it
    random.seed(123)
    values = []
    for _ in range(1000):
        sample = random.choices(items, k=4)
        kept = [r for r in sample if any(x != "undetected" for x in r.labels)]
        values.append(probe.calculate(kept)["yes_rate"] if kept else NAN)
    assert got["yes_rate"].ci == pytest.approx(genderbench_interval(values), abs=1e-12)


def test_yes_no_reads_tokens_as_1_1_0():
    from gbdesk.studies.genderbench.evaluators import yes_no

    assert yes_no("Yes.") == "yes"
    assert yes_no("NO!") == "no"
    assert yes_no("Yes, but no.") is None  # both
    assert yes_no("Yesterday nobody came") is None  # neither token
    assert yes_no("no-brainer: yes") == "yes"  # "no-brainer" is one token
    assert yes_no("") is None


def test_single_option_needs_exactly_one_letter_in_parentheses():
    from gbdesk.studies.genderbench.evaluators import option_spans, single_option

    assert single_option("(B) The man", "abc") == 1
    assert single_option("b) The man", "abc") is None
    assert single_option("(a) or (c)", "abc") is None
    assert single_option("(a) and again (a)", "abc") == 0
    assert option_spans("(a) x (A)", "ab") == [[0, 3], [6, 9]]
