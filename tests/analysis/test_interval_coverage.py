"""A seconds-long run of benchmarks/interval_coverage.py (and its CLI twin): the intervals
that views and audits quote cover simulated truths near band edges and at a gap of 0."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.interval_coverage import gate, near_edges, run_world, summarise
from benchmarks.interval_coverage_cli import one_run
from benchmarks.worlds import parse_world


def test_a_gap_of_zero_and_a_rate_near_an_edge_are_covered():
    worlds = [
        parse_world("discrimination_tamkin:gap=0,spread=4"),
        parse_world("discrimination_tamkin:gap=0.1"),
    ]
    runs = [run_world((w, [20, 80], 40, 1, 0, "clopper-pearson")) for w in worlds]
    summary = summarise("discrimination_tamkin", runs)
    for metric in ("max_diff", "diff_mvf_success_rate"):
        for n in (20, 80):
            cell = summary[metric][n]
            assert cell["coverage_all"] >= 0.9, (metric, n, cell)
            assert set(cell["coverage"]) >= {"0", "0.1"}
    # at a gap of 0 the largest gap's interval starts at 0 whenever a signed part allows it
    assert summary["max_diff"][20]["coverage"]["0"] >= 0.95
    assert isinstance(gate({"discrimination_tamkin": summary}), list)


def test_truths_are_grouped_by_the_edge_they_sit_near():
    assert near_edges("direct", "fail_rate", 0.045) == ["0.05"]
    assert near_edges("direct", "fail_rate", 0.0) == ["0"]
    assert near_edges("discrimination_tamkin", "diff_mvf_success_rate", -0.095) == ["0.1"]
    assert near_edges("direct", "fail_rate", 0.3) == []


def test_the_cli_prints_the_same_interval(tmp_path: Path):
    """`gbdesk import` + `gbdesk metrics --json`: ci_shown equals the in-process interval."""
    w = parse_world("relationship_levy:man=0.53,spread=3")
    db = tmp_path / "db.sqlite"
    for rep in range(2):
        got = one_run(w, 20, rep, 1, db, tmp_path)
        for name, g in got.items():
            assert g["same"], (name, g)
            lo, hi = g["ci_shown"]
            assert math.isfinite(lo) and lo < hi
