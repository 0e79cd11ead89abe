"""Statistics shared by the probes: bootstrap CIs, marks, interval tests.

The bootstrap reproduces the reference harness of the profile probes (`probing/probe.py`): items are
resampled with Python's `random.choices` after seeding (default seed 123), 1000
times; for each metric the interval is `norm.interval(0.95, *norm.fit(values))`,
i.e. mean ± 1.96·σ of the bootstrap distribution (σ with ddof 0). The reference harness drops
the point estimate; gbdesk keeps it beside the interval.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from gbdesk.support.format import MARK_LETTERS
from gbdesk.support.format import MARK_MEANINGS as MARK_MEANINGS  # re-exported


def nanmean(values: Iterable[float]) -> float:
    """Mean of the values that are not NaN; NaN when none is left (the harness's nanmean)."""
    kept = [float(v) for v in values if not math.isnan(v)]
    if not kept:
        return math.nan
    return float(np.mean(kept))


def mean_or_nan(values: np.ndarray) -> float:
    """`np.mean`, but NaN instead of a warning for an empty selection."""
    if values.size == 0:
        return math.nan
    return float(np.mean(values))


@dataclass(frozen=True)
class MetricValue:
    """A metric's point estimate, its 95 % interval (the study's own method, as the
    reference computes it), its mark, its support and, for tests against a null value,
    its p-value. `ci_shown`: the 95 % interval to quote where the study's metric has a
    closed-form interval that holds its level (`gbdesk.analysis.intervals`); None:
    views show `ci` (`gbdesk.analysis.shown.shown_ci`)."""

    value: float
    ci: tuple[float, float]
    mark: str | None
    n: int
    p_value: float | None = None
    details: dict | None = None  # e.g. a prediction-powered estimate's diagnostics
    ci_shown: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "value": _json_float(self.value),
            "ci": [_json_float(self.ci[0]), _json_float(self.ci[1])],
            "mark": self.mark,
            "n": self.n,
        }
        if self.p_value is not None:
            data["p_value"] = _json_float(self.p_value)
        if self.details:
            data["details"] = self.details
        return data


def _json_float(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def bootstrap_resamples(n_items: int, cycles: int = 1000, seed: int = 123) -> list[list[int]]:
    """Index lists of the bootstrap resamples, identical to the reference harness's item draws.

    The reference harness seeds Python's global `random` and calls `random.choices(items, k=n)`;
    `choices` depends only on the number of items, so drawing indices reproduces the
    same resamples.
    """
    return list(iter_bootstrap_resamples(n_items, cycles, seed))


def iter_bootstrap_resamples(
    n_items: int, cycles: int = 1000, seed: int = 123, as_array: bool = False
) -> Iterator[Any]:
    """`bootstrap_resamples` one resample at a time (the same draws): a big run's 1000
    resamples of 20,000 items would hold 20 million ints at once.

    `as_array`: each resample as a numpy array, drawn by numpy's Mersenne Twister from
    Python's own state. `random.choices` takes ``floor(random() * n)`` per draw, and
    numpy's `random_sample` builds its doubles from the same two 32-bit outputs the same
    way, so the indices are identical (tests/maths/test_stats.py) and ~20× faster to draw."""
    rng = random.Random(seed)
    if not as_array:
        population = range(n_items)
        for _ in range(cycles):
            yield rng.choices(population, k=n_items)
        return
    internal = rng.getstate()[1]
    mt = np.random.RandomState()
    mt.set_state(("MT19937", np.array(internal[:-1], dtype=np.uint32), internal[-1], 0, 0.0))
    for _ in range(cycles):
        yield np.floor(mt.random_sample(n_items) * n_items).astype(np.intp)


def interval_from_bootstrap(values: Sequence[float], alpha: float = 0.95) -> tuple[float, float]:
    """The reference harness's interval from the bootstrap distribution of one metric."""
    if all(math.isnan(v) for v in values):
        return (math.nan, math.nan)
    if len(set(values)) == 1:
        return (float(values[0]), float(values[0]))
    kept = [v for v in values if not math.isnan(v)]
    mu, sigma = norm.fit(kept)
    if sigma == 0:
        # scipy's interval is NaN for a zero scale; mean ± 1.96·0 is the mean itself.
        return (float(mu), float(mu))
    lo, hi = norm.interval(alpha, mu, sigma)
    return (float(lo), float(hi))


def bootstrap_metrics(
    calculate: Callable[[Sequence[int]], Mapping[str, float]],
    n_items: int,
    cycles: int = 1000,
    seed: int = 123,
    alpha: float = 0.95,
    interval: Callable[[Sequence[float], float], tuple[float, float]] | None = None,
) -> dict[str, tuple[float, float]]:
    """Run `calculate` on every resample of item indices; return each metric's interval
    (`interval(values, alpha)`, by default `interval_from_bootstrap`)."""
    interval = interval or interval_from_bootstrap
    buffer: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for sample in iter_bootstrap_resamples(n_items, cycles, seed):
            for name, value in calculate(sample).items():
                buffer.setdefault(name, []).append(float(value))
    return {name: interval(values, alpha) for name, values in buffer.items()}


@dataclass(frozen=True)
class MarkDefinition:
    """Mark bands of one metric (the reference harness's `MarkDefinition`).

    `ranges` maps a letter to one or more closed [low, high] bands. The mark of an
    interval is the best letter whose band overlaps it.
    """

    metric: str
    ranges: Mapping[str, tuple[tuple[float, float], ...]]
    description: str = ""

    @classmethod
    def from_edges(
        cls, metric: str, edges: Sequence[float], description: str = ""
    ) -> MarkDefinition:
        """Five edges → four consecutive bands A…D (the reference harness's list form)."""
        if len(edges) != 5:
            raise ValueError("mark edges need five values")
        bands = {
            letter: ((float(edges[i]), float(edges[i + 1])),)
            for i, letter in enumerate(MARK_LETTERS)
        }
        return cls(metric, bands, description)

    def mark(self, ci: tuple[float, float] | float) -> str | None:
        if isinstance(ci, tuple):
            lo, hi = ci
        else:
            lo = hi = ci
        if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
            return None
        for letter in MARK_LETTERS:
            for band_lo, band_hi in self.ranges.get(letter, ()):
                if hi >= band_lo and lo <= band_hi:
                    return letter
        return None

    @property
    def overall_range(self) -> tuple[float, float]:
        lows = [lo for bands in self.ranges.values() for lo, _ in bands]
        highs = [hi for bands in self.ranges.values() for _, hi in bands]
        return (min(lows), max(highs))


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    if n <= 0:
        return (math.nan, math.nan)
    z = float(norm.ppf(1 - alpha / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (centre - half, centre + half)


def bh_adjust(p_values: Mapping[str, float | None]) -> dict[str, float]:
    """Benjamini–Hochberg adjusted p-values (statsmodels `multipletests`, method "fdr_bh")
    of the named tests; a None or NaN p-value is no test and is left out."""
    from statsmodels.stats.multitest import multipletests

    named = [(k, float(p)) for k, p in p_values.items() if p is not None and not math.isnan(p)]
    if not named:
        return {}
    _, adjusted, _, _ = multipletests([p for _, p in named], method="fdr_bh")
    return {k: float(a) for (k, _), a in zip(named, adjusted, strict=True)}


def adjusted_p_values(metrics: Mapping[str, MetricValue]) -> dict[str, float]:
    """Each tested metric's p-value adjusted by Benjamini–Hochberg across all the run's
    tests (every metric with a p-value), metric name → adjusted p."""
    return bh_adjust({name: m.p_value for name, m in metrics.items()})


def p_text(p: float | None) -> str:
    """A p-value for reading: "< 0.001", "0.012", or "—"."""
    if p is None or math.isnan(p):
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"
