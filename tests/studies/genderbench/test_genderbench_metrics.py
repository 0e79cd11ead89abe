"""GenderBench metrics: hand-computed cases and an independent reference transcription."""

from __future__ import annotations

import json
import math

import pytest

import tests as _tests
from gbdesk.contract import ItemResult, get_probe
from gbdesk.studies.genderbench.pronouns import detect_gender
from tests import genderbench_reference as ref

FIXTURE = _tests.FIXTURES / "recorded_inventories.jsonl"


def results(rows):
    return [ItemResult(f"i{n}", meta, labels) for n, (meta, labels) in enumerate(rows)]


def inv(source, gender, *labels):
    return ({"source": source, "gender": gender}, list(labels))


INVENTORY_CASE = [
    inv("bsri", "male", "male", "male"),  # s = 1
    inv("bsri", "male", "male", "female"),  # s = 0.5
    inv("bsri", "female", "female", "female"),  # s = 0
    inv("bsri", "female", "undetected", "undetected"),  # dropped
    inv("epaq", "male", "female"),  # s = 0
    inv("epaq", "female", "male", "undetected"),  # s = 1
    inv("gaucher", "male", "male"),  # s = 1
    inv("gaucher", "female", "female", "male", "male", "undetected"),  # s = 2/3
]


def test_inventories_hand_computed():
    m = get_probe("inventories").metrics(results(INVENTORY_CASE))
    assert m["masculine_rate_bsri"].value == pytest.approx(0.5)
    assert m["stereotype_rate_bsri"].value == pytest.approx(0.75)
    assert m["masculine_rate_epaq"].value == pytest.approx(0.5)
    assert m["stereotype_rate_epaq"].value == pytest.approx(-1.0)
    assert m["masculine_rate_gaucher"].value == pytest.approx(5 / 6)
    assert m["stereotype_rate_gaucher"].value == pytest.approx(1 / 3)
    assert m["masculine_rate"].value == pytest.approx(11 / 18)
    assert m["disparity"].value == pytest.approx(1 / 9)
    assert m["stereotype_rate"].value == pytest.approx(1 / 36)
    assert m["undetected_rate_attempts"].value == pytest.approx(4 / 16)
    assert m["undetected_rate_items"].value == pytest.approx(1 / 8)
    assert m["masculine_rate"].n == 7  # detected items
    assert m["masculine_rate_bsri"].n == 3
    assert m["undetected_rate_attempts"].n == 16


def test_jobs_lum_hand_computed_bounded_slope():
    probe = get_probe("jobs_lum")
    rows = [
        ({"job": "a", "score": 0.0}, ["male"]),
        ({"job": "b", "score": 0.5}, ["male"]),
        ({"job": "c", "score": 1.0}, ["female"]),
    ]
    m = probe.metrics(results(rows))
    # OLS would give slope -1, intercept 7/6 > 1; with the intercept bounded at 1 the
    # least-squares slope is -0.8 (minimise (0.5a)^2 + (a+1)^2).
    assert m["stereotype_rate"].value == pytest.approx(-0.8, abs=1e-6)
    assert m["correlation"].value == pytest.approx(-math.sqrt(3) / 2)
    assert m["masculine_rate"].value == pytest.approx(2 / 3)
    rows = [
        ({"job": "a", "score": 0.0}, ["female"]),
        ({"job": "b", "score": 0.5}, ["male", "female"]),
        ({"job": "c", "score": 1.0}, ["male"]),
    ]
    m = probe.metrics(results(rows))
    # the slope's bound: 1.1.0's `lsq_linear` (its default 'trf' method, as here) stops
    # within its tolerance of it — 1 − 8e-6 with scipy 1.17 — not on it
    assert m["stereotype_rate"].value == pytest.approx(1.0, abs=1e-4)
    assert m["correlation"].value == pytest.approx(1.0)
    assert m["disparity"].value == pytest.approx(0.0)


def test_gest_creative_hand_computed():
    rows = [
        ({"stereotype_id": 1}, ["female"]),
        ({"stereotype_id": 1}, ["female", "male"]),
        ({"stereotype_id": 8}, ["male"]),
        ({"stereotype_id": 15}, ["female"]),  # left out of the stereotype rate
        ({"stereotype_id": 16}, ["male", "undetected"]),
    ]
    m = get_probe("gest_creative").metrics(results(rows))
    assert m["masculine_rate_1"].value == pytest.approx(0.25)
    assert m["masculine_rate_15"].value == pytest.approx(0.0)
    assert math.isnan(m["masculine_rate_2"].value)
    assert m["masculine_rate"].value == pytest.approx((0.25 + 1 + 0 + 1) / 4)
    assert m["stereotype_rate"].value == pytest.approx(1 - 0.25)
    assert m["disparity"].value == pytest.approx(0.0625)


def test_no_attempts_no_metrics():
    assert get_probe("inventories").metrics([ItemResult("a", {"source": "bsri"}, [])]) == {}


def _to_reference(rows):
    return [
        (meta, [None if label == "undetected" else label for label in labels])
        for meta, labels in rows
    ]


def _compare(probe_name, calculator, rows, marks=True):
    ours = get_probe(probe_name).metrics(results(rows))
    point = calculator(_to_reference(rows))
    intervals = ref.bootstrap(calculator, _to_reference(rows))
    assert set(ours) == set(point)
    for name, value in point.items():
        m = ours[name]
        if math.isnan(value):
            assert math.isnan(m.value), name
        else:
            assert m.value == pytest.approx(value, abs=1e-9), name
        lo, hi = intervals[name]
        if math.isnan(lo):
            assert math.isnan(m.ci[0]), name
        else:
            assert m.ci == pytest.approx((lo, hi), abs=1e-7), name
        if marks and name in get_probe(probe_name).mark_definitions:
            bands = get_probe(probe_name).mark_definitions[name].ranges
            ranges = {i: list(bands[letter]) for i, letter in enumerate("ABCD")}
            expected = ref.mark(ranges, intervals[name])
            assert m.mark == (None if expected is None else "ABCD"[expected]), name


def _recorded():
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def test_inventories_equal_reference_on_recorded_texts():
    by_item: dict[str, tuple[dict, list[str]]] = {}
    for r in _recorded():
        by_item.setdefault(r["item"], (r["metadata"], []))[1].append(
            detect_gender(r["response"]).label
        )
    _compare("inventories", ref.inventories, list(by_item.values()))


def test_jobs_lum_and_gest_equal_reference_on_recorded_texts():
    """The recorded texts reassigned to jobs and mottos exercise the other calculators."""
    labels = [detect_gender(r["response"]).label for r in _recorded()]
    jobs = list(get_probe("jobs_lum").jobs.items())
    rows = [
        ({"job": job, "score": score}, labels[2 * i : 2 * i + 2])
        for i, (job, score) in enumerate(jobs[: len(labels) // 2])
    ]
    _compare("jobs_lum", ref.jobs_lum, rows)
    rows = [
        ({"stereotype_id": 1 + i % 16}, labels[2 * i : 2 * i + 2]) for i in range(len(labels) // 2)
    ]
    _compare("gest_creative", ref.gest_creative, rows)


def test_small_hand_cases_equal_reference_including_intervals():
    _compare("inventories", ref.inventories, INVENTORY_CASE)
