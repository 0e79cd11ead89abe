"""The simulated worlds of benchmarks/worlds.py: exact truths, stable seeds, specs."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.worlds import (
    MODELS,
    PROBES,
    TRUTHS,
    edge_worlds,
    interior_edges,
    parse_world,
    pool_items,
    unit,
)
from gbdesk.contract import get_probe


def test_every_marked_probe_has_a_world_with_a_truth_per_marked_metric():
    marked = [p for p in PROBES if get_probe(p).mark_definitions]
    assert len(marked) == 14 and set(marked) == set(MODELS) == set(TRUTHS)
    assert sum(len(get_probe(p).mark_definitions) for p in marked) == 27
    for probe in marked:
        assert set(MODELS[probe].moves) == set(get_probe(probe).mark_definitions)
    for probe in ("inventories", "jobs_lum", "diversity_med_qa"):  # the small pools: fast
        w = parse_world(f"{probe}:spread=3")
        assert set(w.truth()) == set(get_probe(probe).mark_definitions)


@pytest.mark.parametrize(
    ("spec", "metric", "value"),
    [
        ("direct:fail=0.047", "fail_rate", 0.047),
        ("discrimination_tamkin:gap=0", "max_diff", 0.0),
        ("discrimination_tamkin:gap=0.1", "diff_mvf_success_rate", 0.1),
        ("inventories:base=0.55,pull=0.025", "stereotype_rate", 0.05),
        ("inventories:base=0.55", "disparity", 0.05),
        ("relationship_levy:man=0.55", "diff_success_rate", 0.1),
        ("hiring_an:gap=0.1", "diff_acceptance_rate", 0.1),
        ("hiring_an:slope=0.2", "diff_regression", 0.2),
        ("gest:s=0.45,o=0.3", "stereotype_rate", 0.15),
        ("jobs_lum:slope=0.3", "stereotype_rate", 0.3),
    ],
)
def test_truths_are_exact_for_constant_items(spec, metric, value):
    assert parse_world(spec).truth()[metric] == pytest.approx(value, abs=1e-9)


def test_truth_is_the_limit_of_many_answers():
    """The truth is what the probe's own calculator reaches with many attempts."""
    w = parse_world("discrimination_tamkin:base=0.5,gap=0.06,nb=0.02,spread=6")
    results = w.results(len(pool_items(w.probe)), np.random.default_rng(5), attempts=30)
    got = get_probe(w.probe).metrics(results, bootstrap=False)
    for name, value in w.truth().items():
        assert got[name].value == pytest.approx(value, abs=0.006)


def test_unit_is_stable_across_processes():
    code = "from benchmarks.worlds import unit; print(repr(unit('direct/sbic/0001')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(out.stdout) == unit("direct/sbic/0001")


def test_specs_are_checked():
    with pytest.raises(ValueError, match="unknown key"):
        parse_world("direct:rate=0.1")
    with pytest.raises(ValueError, match="no simulated world"):
        parse_world("nonesuch:x=1")
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_world("direct:fail")


def test_results_follow_the_draw_order_and_the_harness_attempts():
    w = parse_world("dreaddit:gap=0.1")
    results = w.results(12, random.Random(1))
    assert [r.key for r in results] == [i.key for i in pool_items("dreaddit")[:12]]
    assert all(len(r.labels) == 2 * len(r.prompts) for r in results)


def test_redraw_with_the_audits_seed_is_the_draw_order():
    from benchmarks.worlds import redraw
    from gbdesk.contract.running import SAMPLE_SEED

    items = redraw("inventories", random.Random(SAMPLE_SEED), 10**6)
    assert [i.key for i in items] == [i.key for i in pool_items("inventories")]
    other = redraw("inventories", random.Random(5), 20)
    assert [i.key for i in other] != [i.key for i in items[:20]]
    w = parse_world("inventories:pull=0.1")
    assert [r.key for r in w.results(20, random.Random(1), items=other)] == [i.key for i in other]


def test_edge_worlds_sit_on_the_edges_and_at_zero():
    worlds = edge_worlds("inventories")
    for metric in ("stereotype_rate", "masculine_rate", "disparity"):
        truths = [w.truth()[metric] for m, _, w in worlds if m == metric]
        for edge in interior_edges("inventories", metric):
            if edge < 0 or (metric == "masculine_rate" and edge < 0.5):
                continue
            for off in (-0.01, -0.005, 0.0, 0.005, 0.01):
                assert min(abs(t - edge - off) for t in truths) < 1e-6, (metric, edge, off)
    assert any(m == "disparity" and abs(w.truth()[m]) < 1e-9 for m, _, w in worlds)
    assert any("varying" in what for _, what, _ in worlds)
