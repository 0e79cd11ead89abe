"""The audit's two-look design (`gbdesk.analysis.audit_design`) on hand-computed cases."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from gbdesk.analysis import audit_design as d
from gbdesk.maths.stats import MarkDefinition


def test_two_looks_spend_alpha_once_each():
    looks = d.TwoLooks((40,))
    assert looks.alpha1 == pytest.approx(0.0025) and looks.alpha2 == pytest.approx(0.0475)
    assert looks.alpha1 + looks.alpha2 == pytest.approx(0.05)
    assert looks.level_at(40) == pytest.approx(0.9975)
    assert looks.level_at(41) == pytest.approx(0.9525)
    assert looks.z_at(40) == pytest.approx(3.023, abs=1e-3)  # norm.ppf(0.99875)
    assert looks.z == pytest.approx(1.981, abs=1e-3)  # norm.ppf(0.97625)
    assert looks.next_size(0) == 40 and looks.next_size(40) is None
    assert d.TwoLooks((40, 300)).next_size(40) == 300
    family = d.TwoLooks((40,), alpha=0.05 / 27)
    assert family.alpha1 + family.alpha2 == pytest.approx(0.05 / 27)


def test_a_final_look_on_the_first_looks_items_takes_alpha2():
    # the budget or the pool bought no more: (40, 40) is the final look on the same items
    looks = d.TwoLooks((40, 40))
    assert looks.alpha_at(40) == pytest.approx(0.0475) and looks.is_final(40)
    assert not d.TwoLooks((40,)).is_final(40) and d.TwoLooks((40,)).is_final(41)
    assert d.TwoLooks((40, 300)).alpha_at(40) == pytest.approx(0.0025)
    assert d.TwoLooks((40, 300)).is_final(300)


def test_the_chance_of_deciding_is_predictive_power_at_the_reach():
    # value 0.3, 95 % interval 0.1 to 0.5 from 100 items: se = 0.4 / (2 · 1.96); at 400
    # items the half-width is 1.96 · se / 2 = 0.1 and the final value N(0.3, se² · 3/4):
    # decided when it lies in C shrunk by 0.1 each side (0.25 to 0.4) or at 0.6 or above
    # (D, at the bound 1: no margin there); A would need ≤ -0.05, which a rate never is
    z = norm.ppf(0.975)
    v = {"value": 0.3, "ci": [0.1, 0.5], "level": 0.95, "items": 100}
    sd = 0.4 / (2 * z) * math.sqrt(0.75)
    want = (norm.cdf((0.4 - 0.3) / sd) - norm.cdf((0.25 - 0.3) / sd)
            + 1 - norm.cdf((0.6 - 0.3) / sd))  # fmt: skip
    got = d.decide_chance(RATE, v, 100, 400, z, bounds=(0.0, 1.0))
    assert got == pytest.approx(want, abs=1e-9) and got == pytest.approx(0.586, abs=1e-3)
    # no more items: decided exactly when this interval, at z_next, fits (here it does not)
    assert d.decide_chance(RATE, v, 100, 100, z, bounds=(0.0, 1.0)) == pytest.approx(0.0)
    # far too few: a value near the edge between A and B cannot be told apart at 120
    near = {"value": 0.05, "ci": [0.0, 0.3], "level": 0.9975, "items": 40}
    assert d.decide_chance(RATE, near, 40, 120, z, bounds=(0.0, 1.0)) < 0.1
    assert d.decide_chance(RATE, {**v, "value": None}, 100, 400, z) is None
    assert d.decide_chance(RATE, {**v, "ci": [None, None]}, 100, 400, z) is None


def test_a_probe_stops_when_each_open_verdict_is_unlikely_to_be_decided():
    assert d.FUTILE_CHANCE == 0.1
    assert d.futile([0.01, 0.09]) and not d.futile([0.01, 0.11])
    assert not d.futile([0.0, None])  # a chance that cannot be told keeps it
    assert not d.futile([])
    assert d.futile([0.15], below=0.2) and not d.futile([0.15], below=0.1)


def test_the_first_look_is_a_quarter_of_the_even_share_at_least():
    assert d.first_look_size(10, 400, 3944) == 100
    assert d.first_look_size(10, 20, 3944) == 10  # a quarter is 5
    assert d.first_look_size(10, 4000, 149) == 149  # at most the pool
    assert d.first_look_size(12, 0, 3944) == 12


def test_water_filling_shares_evenly_up_to_each_need():
    # 300 s for three: a needs 50 → 50; the rest 250 shared by b and c: 125 each
    assert d.water_fill({"a": 50, "b": 500, "c": 1000}, 300) == pytest.approx(
        {"a": 50, "b": 125, "c": 125}
    )
    # enough for everyone: each gets its need
    assert d.water_fill({"a": 50, "b": 60}, 1000) == pytest.approx({"a": 50, "b": 60})
    assert d.water_fill({"a": 0, "b": 60}, 30) == pytest.approx({"a": 0, "b": 30})


def test_final_sizes_buy_items_with_the_share():
    # direct: 100 of 3944 items at 1 s; inventories: 40 of 149 at 5 s (needs 545 s)
    got = d.final_sizes({"direct": (100, 3944, 1.0), "inventories": (40, 149, 5.0)}, 2000)
    assert got == {"inventories": 149, "direct": 100 + 1455}
    assert d.final_sizes({"x": (10, 100, 3.0)}, 2.0) == {"x": 10}


def test_a_verdict_decided_at_the_first_look_is_kept():
    first = [{"metric": "a", "decided": True, "marks": ["D"]},
             {"metric": "b", "decided": False, "marks": ["A", "B"]}]  # fmt: skip
    final = [{"metric": "a", "decided": False, "marks": ["C", "D"]},
             {"metric": "b", "decided": True, "marks": ["A"]}]  # fmt: skip
    got = d.merge_looks(first, final)
    assert got[0]["marks"] == ["D"] and got[0]["look"] == "first"
    assert got[1] == final[1]


def test_the_audit_bound_is_bonferroni_across_its_verdicts():
    assert d.verdict_alpha(27, False) == 0.05 and d.audit_bound(27, 0.05) == 1.0
    assert d.audit_bound(9, 0.005) == pytest.approx(0.045)
    assert d.verdict_alpha(27, True) == pytest.approx(0.05 / 27)
    assert d.audit_bound(27, d.verdict_alpha(27, True)) == pytest.approx(0.05)


RATE = MarkDefinition("rate", {"A": ((0.0, 0.05),), "B": ((0.05, 0.15),),
                               "C": ((0.15, 0.5),), "D": ((0.5, 1.0),)})  # fmt: skip


def test_the_forecast_scales_each_side_as_one_over_root_n():
    # value 0.3 in C [0.15, 0.5]; interval 0.1 to 0.5 at the first look (z 2.807) from 40
    # items: the tighter side is the lower one, (0.3 - 0.15)/(0.3 - 0.1) = 0.75 of its
    # half-width; at the final z: n' = 40 · (2.005 / 2.807 / 0.75)² = 36.3 → already
    # within reach of 40; the minimum is one more item
    z1, z2 = norm.ppf(0.9975), norm.ppf(0.9775)
    assert d.forecast(RATE, 0.3, (0.1, 0.5), z1, z2, 40, 40, 3944) == 1
    # the same interval at the final level: n' = 40 / 0.75² = 71.1 → 32 more
    assert d.forecast(RATE, 0.3, (0.1, 0.5), z2, z2, 40, 40, 3944) == math.ceil(40 / 0.5625 - 40)
    # a pool that small cannot decide it
    assert d.forecast(RATE, 0.3, (0.1, 0.5), z2, z2, 40, 40, 60) == -1
    # a value on an edge never fits one band
    assert d.forecast(RATE, 0.5, (0.4, 0.6), z2, z2, 40, 40, 3944) == -1
    # at the metric's bound no margin is needed on that side: only the upper side counts
    got = d.forecast(RATE, 0.01, (0.0, 0.08), z2, z2, 40, 40, 3944, bounds=(0.0, 1.0))
    assert got == math.ceil(40 * (0.07 / 0.04) ** 2 - 40)
    assert d.forecast(RATE, math.nan, (0.1, 0.5), z2, z2, 40, 40, 3944) is None
