"""The interval to quote: one that holds its stated level, for every marked metric.

`metric_intervals(probe, results, params, alpha)` gives, for each named metric (default:
the probe's marked ones), a two-sided 1 − α interval from the items in `results` — items,
not attempts, are the unit — built in closed form by the probe's `Intervals` capability
(`gbdesk.maths.intervals`: effective-sample-size Wilson for rates and shares, MOVER for
differences and sums, interval arithmetic over the signed parts for |·|, max and
|0.5 − rate|, a t interval for slopes; docs/metrics.md says which metric uses which and
how often each covers the truth). No bootstrap runs here: an audit takes it at every look
(well under 5 ms a probe at a few hundred items).

A probe without the capability gets its resampled metrics' percentile-free normal
interval (`gbdesk.maths.sequential.interval_at_level` of 1,000 item resamples, seed 123)
at the same level. Every interval is cut at what the metric can be and holds its own
value; a metric not measurable on these results maps to (nan, nan).

`pool_size(probe, params)`: the number of items a run samples from (the finite-population
correction's N), None when unknown.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from gbdesk.contract import ItemResult, Probe

Interval = tuple[float, float]
NAN: Interval = (math.nan, math.nan)
#: the fallback bootstrap's resamples and seed (1.1.0's)
RESAMPLES = 1000
SEED = 123


def pool_size(probe: Probe, params: dict[str, Any] | None) -> int | None:
    """How many items a run of `probe` with `params` samples from (None: unknown)."""
    caps = probe.capabilities.intervals
    if caps is None:
        return None
    return caps.pool(params)


def metric_intervals(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    alpha: float,
    names: Sequence[str] | None = None,
    *,
    pool: int | None = None,
) -> dict[str, tuple[float, float]]:
    """Two-sided 1 − `alpha` intervals that hold their level for each named metric
    (default: the probe's marked metrics), from the items in `results` (items are the
    unit). `pool`: the number of items the run samples from (finite-population
    correction); None = an infinite pool. A metric not measurable on these results maps
    to (nan, nan)."""
    wanted = list(names) if names is not None else list(probe.mark_definitions)
    answered = [r for r in results if r.labels]
    if not answered or not wanted:
        return {name: NAN for name in wanted}
    caps = probe.capabilities.intervals
    estimators = caps.estimators(answered, pool) if caps is not None else {}
    out: dict[str, Interval] = {}
    missing = []
    for name in wanted:
        est = estimators.get(name)
        if est is None:
            missing.append(name)
            continue
        if not est.measurable:
            out[name] = NAN
            continue
        out[name] = _held(probe, name, est.interval(alpha), est.estimate)
    if missing:
        out.update(bootstrap_intervals(probe, answered, params, alpha, missing))
    return {name: out[name] for name in wanted}


def estimator_intervals(
    probe: Probe, estimators: dict[str, Any], alpha: float, names: Sequence[str]
) -> dict[str, Interval]:
    """`metric_intervals` from estimators built once (several levels of the same items)."""
    out = {}
    for name in names:
        est = estimators.get(name)
        if est is None or not est.measurable:
            out[name] = NAN
        else:
            out[name] = _held(probe, name, est.interval(alpha), est.estimate)
    return out


def bootstrap_intervals(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    alpha: float,
    names: Sequence[str],
) -> dict[str, Interval]:
    """The fallback: the normal interval of the metrics over item resamples, at 1 − α."""
    from gbdesk.maths.sequential import interval_at_level
    from gbdesk.maths.stats import iter_bootstrap_resamples

    plain = probe.metrics(results, bootstrap=False, params=params)
    resampling = probe.capabilities.resampling
    values: dict[str, Any] = {}
    if resampling is not None:
        draws = iter_bootstrap_resamples(len(results), RESAMPLES, SEED, as_array=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            values = (
                resampling.metrics(
                    results, params, [None] * RESAMPLES, idx=draws, names=list(names)
                )
                or {}
            )
    out: dict[str, Interval] = {}
    for name in names:
        m = plain.get(name)
        if m is None or not math.isfinite(m.value) or name not in values:
            out[name] = NAN
            continue
        ci = interval_at_level(list(values[name]), 1 - alpha)
        if not all(math.isfinite(x) for x in ci):
            out[name] = NAN
            continue
        out[name] = _held(probe, name, ci, m.value)
    return out


def _held(probe: Probe, name: str, ci: Interval, value: float) -> Interval:
    """`ci` cut at what the metric can be, widened to hold `value`."""
    lo, hi = ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return NAN
    lo, hi = min(lo, value), max(hi, value)
    try:
        bounds = probe.capabilities.presentation.metric_bounds(name)
    except Exception:  # a study's bug must not hide the interval: shown uncut
        bounds = None
    if bounds is not None:
        b_lo, b_hi = bounds
        lo, hi = min(max(lo, b_lo), b_hi), max(min(hi, b_hi), b_lo)
    return (float(lo), float(hi))
