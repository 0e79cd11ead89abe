"""Where an audit spends its next seconds: first looks for every probe, then the step most
likely to decide a verdict per second; nothing for a probe whose verdicts are decided."""

import math

import pytest

from gbdesk.analysis.audit_rounds import MetricState, Track, first_round, next_step
from gbdesk.maths.sequential import Looks, look_sizes
from gbdesk.maths.stats import MarkDefinition

EDGES = MarkDefinition.from_edges("rate", [0, 0.05, 0.15, 0.5, 1])


def _track(name, spi, items=0, metrics=(), priority=20, last=640):
    return Track(name, Looks(look_sizes(10, last)), spi, items, list(metrics), (priority, name))


def _metric(value, ci, items=40, decided=False):
    return MetricState(EDGES, value, ci, items, decided, (0.0, 1.0))


def test_first_round_takes_every_probe_to_its_first_look_cheapest_first():
    a, b = _track("b_probe", 1.0, priority=20), _track("a_probe", 1.0, priority=10)
    pricey = _track("d_probe", 5.0, priority=5)
    done = _track("c_probe", 1.0, items=10, metrics=[_metric(0.3, (0.2, 0.4))])
    assert first_round([pricey, a, b, done]) == [(b, 10), (a, 10), (pricey, 10)]


def test_the_step_most_likely_to_decide_per_second_comes_first():
    # near the middle of C with a narrowing interval vs right on the C/D edge
    promising = _track("promising", 1.0, 40, [_metric(0.3, (0.12, 0.48))])
    hopeless = _track("hopeless", 1.0, 40, [_metric(0.5, (0.3, 0.7))])
    assert promising.chance() > hopeless.chance()
    assert next_step([hopeless, promising], 1e9) == (promising, 80)
    # the same chance at ten times the cost scores a tenth
    pricey = _track("pricey", 10.0, 40, [_metric(0.3, (0.12, 0.48))])
    assert pricey.chance() == promising.chance()
    assert pricey.score() == pytest.approx(promising.score() / 10)
    assert next_step([pricey, promising], 1e9)[0] is promising


def test_decided_probes_get_no_more_time_and_the_grid_ends():
    decided = _track("decided", 1.0, 40, [_metric(0.8, (0.6, 0.95), decided=True)])
    assert decided.finished
    assert next_step([decided], 1e9) is None
    at_end = _track("at_end", 1.0, 640, [_metric(0.3, (0.1, 0.5))])
    assert at_end.finished and next_step([at_end], 1e9) is None
    assert math.isinf(at_end.step_seconds())


def test_a_step_that_fits_the_time_left_is_preferred_else_the_best_is_cut():
    big = _track("big", 1.0, 320, [_metric(0.3, (0.2, 0.4), items=320)])  # 320 s to 640
    small = _track("small", 1.0, 40, [_metric(0.5, (0.2, 0.8))])  # 40 s to 80
    assert big.score() > small.score()
    assert next_step([big, small], 100.0) == (small, 80)
    assert next_step([big], 100.0) == (big, 640)  # nothing fits: the deadline will cut it


def test_an_unmeasured_probe_keeps_a_chance():
    unmeasured = _track("u", 1.0, 10, [_metric(math.nan, (math.nan, math.nan), items=0)])
    assert 0 < unmeasured.chance() < 1
