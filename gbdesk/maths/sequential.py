"""An audit's repeated looks at the same metric, kept valid: a fixed grid of looks with
Bonferroni alpha spending.

An audit that looks at a metric after every round and stops when its verdict is decided
would, with a plain 95 % interval at each look, be wrong far more often than 5 % of the
time (it stops at the first look that happens to be narrow). gbdesk fixes, before any
answer is seen, the sample sizes at which a probe may be looked at — its **grid**: the
first look at `first` items (at least 10), then twice as many each time, up to the most
items the budget could reach — and one more look for the moment the budget runs out
between two grid points. Each look k uses a ``1 − α_k`` interval with the α_k summing to
α (`Looks`), so that with probability at least ``1 − α`` *every* look's interval holds
the truth at once (Bonferroni's inequality, valid whatever the dependence between the
looks). Which probe gets its next look, and
whether a probe stops, may then depend on anything seen so far: the decision is made on
intervals that all hold together.

Why not an anytime-valid confidence sequence (`confseq`, `expectation`)? Those bound a
*mean* of bounded observations; the marked metrics are nonlinear functions of pooled
counts (differences of rates between groups, the largest gap between three genders, a
regression slope) whose intervals come from the reference's bootstrap over items. A grid of
looks keeps that bootstrap — the same resamples, at another level — for every metric,
and with looks only at doublings the price stays moderate: with six grid looks the last
one's interval uses z = 2.45 instead of 1.96 at a single look (a look at every item would
cost far more).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import norm

from gbdesk.maths.stats import MarkDefinition

#: the chance that any decided verdict of a metric is wrong, over all its looks
ALPHA = 0.05
#: look k of a grid gets a share of α proportional to k ** WEIGHT_POWER
WEIGHT_POWER = 2


def look_sizes(first: int, last: int) -> tuple[int, ...]:
    """The grid: `first`, then doubling, then `last` (every item), increasing."""
    first, last = max(1, int(first)), max(1, int(last))
    if first >= last:
        return (last,)
    sizes = [first]
    while sizes[-1] * 2 < last:
        sizes.append(sizes[-1] * 2)
    sizes.append(last)
    return tuple(sizes)


@dataclass(frozen=True)
class Looks:
    """A probe's grid of looks (`look_sizes`) and the level of each look's interval.

    α is spent over ``len(sizes) + 1`` looks: one per grid size and one for the audit's
    end between two grid sizes. Look k (1-based) of the grid gets a share of α that grows
    as k² — ``α · k² / W`` — and the end look the share of the largest, ``α · K² / W``,
    with ``W = Σ k² + K²``: the early looks, on a handful of items, decide only what is
    blatant, so they get little; the later ones, which decide most verdicts, get more
    (in simulation, k² decided more verdicts than k or an even split, with none wrong:
    `benchmarks/audit_simulation.py`). Bonferroni's inequality holds for any split that
    sums to α."""

    sizes: tuple[int, ...]
    alpha: float = ALPHA
    #: whether a look between grid sizes (the audit's end) gets a share; without it, a
    #: single size is a fixed plan's one look at 1 − α
    end_look: bool = True

    @property
    def count(self) -> int:
        return len(self.sizes) + int(self.end_look)

    def _weight(self, k: int) -> float:
        return float(k**WEIGHT_POWER)

    @property
    def _weights_total(self) -> float:
        k = len(self.sizes)
        total = sum(self._weight(j) for j in range(1, k + 1))
        return total + (self._weight(k) if self.end_look else 0.0)

    def alpha_at(self, items: int) -> float:
        """α of the look at `items` items: a grid size's own share, or the end look's for
        a count between two grid sizes."""
        k = self.sizes.index(items) + 1 if items in self.sizes else len(self.sizes)
        return self.alpha * self._weight(k) / self._weights_total

    def level_at(self, items: int) -> float:
        """The confidence level of the look at `items` items (e.g. 0.989)."""
        return 1.0 - self.alpha_at(items)

    def z_at(self, items: int) -> float:
        return float(norm.ppf(1.0 - self.alpha_at(items) / 2.0))

    @property
    def z(self) -> float:
        """The z of the last grid look (the narrowest; planning's yardstick)."""
        return self.z_at(self.sizes[-1])

    @property
    def level(self) -> float:
        return self.level_at(self.sizes[-1])

    def next_size(self, done: int) -> int | None:
        """The first grid size beyond `done` items (None: the grid is done)."""
        return next((n for n in self.sizes if n > done), None)

    def to_json(self) -> dict[str, object]:
        return {"sizes": list(self.sizes), "alpha": self.alpha, "looks": self.count}


def decide_probability(
    definition: MarkDefinition,
    value: float,
    sigma: float,
    next_half_width: float,
    bounds: tuple[float, float] | None = None,
) -> float:
    """How likely the next look decides this metric: the chance, with the truth taken as
    Normal(`value`, `sigma`) (the current interval's half-width over its z), that the next
    look's interval (± `next_half_width` around the truth) fits inside one mark band — a
    band's edge at the metric's own bound needs no margin. 0 when the next interval is
    wider than every band. The audit uses it only to choose where to spend time."""
    if not all(math.isfinite(x) for x in (value, sigma, next_half_width)):
        return 0.0
    sigma = max(sigma, 1e-9)
    total = 0.0
    for bands in definition.ranges.values():
        for lo, hi in bands:
            at_low = bounds is not None and lo <= bounds[0]
            at_high = bounds is not None and hi >= bounds[1]
            lo_in = -math.inf if at_low else lo + next_half_width
            hi_in = math.inf if at_high else hi - next_half_width
            if hi_in > lo_in:
                total += float(norm.cdf(hi_in, value, sigma) - norm.cdf(lo_in, value, sigma))
    return min(1.0, max(0.0, total))


def projected_half_width(half_width: float, items: int, next_items: int) -> float:
    """The half-width a look at `next_items` items should reach from one at `items`
    (intervals narrow as 1/√n)."""
    if items <= 0 or next_items <= 0:
        return math.inf
    return half_width * math.sqrt(items / next_items)


def interval_at_level(values: Sequence[float], level: float) -> tuple[float, float]:
    """the reference's interval from bootstrap values (`norm.interval(level, *norm.fit(v))` over
    the values that are not NaN) at another level; NaN when all are NaN, the value itself
    when the values have no spread."""
    kept = [float(v) for v in values if not math.isnan(v)]
    if not kept:
        return (math.nan, math.nan)
    mu, sigma = norm.fit(kept)
    if not sigma > 0:
        return (float(mu), float(mu))
    lo, hi = norm.interval(level, mu, sigma)
    return (float(lo), float(hi))
