"""Every marked metric's interval that holds its level (`gbdesk.analysis.intervals`):
the estimators give 1.1.0's values exactly, and the intervals hold them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.worlds import MODELS, PROBES, parse_world
from gbdesk.analysis.intervals import metric_intervals, pool_size
from gbdesk.contract import get_probe


def _spec(probe: str) -> str:
    key = next(iter(MODELS[probe].moves.values()))
    value = 0.6 if probe == "relationship_levy" else 0.08
    return f"{probe}:{key}={value},spread=5"


@pytest.mark.parametrize("probe", PROBES)
def test_estimators_equal_the_reference_values(probe):
    p = get_probe(probe)
    w = parse_world(_spec(probe))
    for n, seed in ((12, 1), (45, 2)):
        results = w.results(n, np.random.default_rng(seed))
        values = p.metrics(results, bootstrap=False)
        estimators = p.capabilities.intervals.estimators(results, None)
        assert set(p.mark_definitions) <= set(estimators)
        for name, est in estimators.items():  # the marked metrics and their breakdowns
            v, e = values[name].value, est.estimate
            assert (math.isnan(v) and math.isnan(e)) or e == pytest.approx(v, abs=1e-12), name
        for alpha in (0.005, 0.05):
            for name, (lo, hi) in metric_intervals(p, results, None, alpha).items():
                v = values[name].value
                assert lo <= v <= hi, (name, alpha, lo, v, hi)
                bounds = p.capabilities.presentation.metric_bounds(name)
                assert bounds[0] <= lo and hi <= bounds[1]
                assert hi > lo


def test_smaller_alpha_gives_a_wider_interval():
    p = get_probe("discrimination_tamkin")
    results = parse_world("discrimination_tamkin:gap=0.1").results(40, np.random.default_rng(3))
    wide = metric_intervals(p, results, None, 0.005)
    narrow = metric_intervals(p, results, None, 0.05)
    for name in p.mark_definitions:
        assert wide[name][0] <= narrow[name][0] and wide[name][1] >= narrow[name][1]


def test_unmeasurable_metrics_map_to_nan():
    p = get_probe("direct")
    got = metric_intervals(p, [], None, 0.05)
    assert all(math.isnan(x) for x in got["fail_rate"])


def test_pool_sizes_are_the_harness_items():
    assert pool_size(get_probe("inventories"), None) == 149
    assert pool_size(get_probe("jobs_lum"), None) == 339
    assert pool_size(get_probe("relationship_levy"), None) == 3000
