"""The audit's design (plan version 3): two looks per probe, α spent where the budget goes.

Pure (no store, no engine): the audit (`gbdesk.workflows.audit`) and its simulation
(`benchmarks/audit_simulation.py`) use the same functions.

* **First look** at α₁ = `FIRST_SHARE` · α (0.0025 of 0.05) on `first_look_size` items:
  max(the first size, a quarter of the even share of the budget), at most the pool.
* Probes whose marked verdicts are all decided stop; so do those each of whose open
  verdicts has less than `FUTILE_CHANCE` of being decided at the items their share
  would reach (`decide_chance`, `futile`). The others share the seconds left evenly —
  water-filling (`water_fill`): a probe whose pool needs less than its share gets what
  it needs, the rest is shared again — and get **one final look** at α₂ = α − α₁
  (`final_sizes`). A step the deadline cuts *is* that final look; a probe left open
  that the budget or its pool gives no more items has its final look on the same items
  (`TwoLooks` (n, n)).
* A metric decided at the first look keeps that verdict unless the final look decides
  it too (`merge_looks`); any rule choosing one of the two looks' verdicts is covered.
* **Validity** (docs/audit.md): a decided verdict is wrong only if the interval of the
  look it comes from misses the truth; P(first misses) ≤ α₁ and P(final misses) ≤ α₂
  (the final size depends on the budget, the measured speed and the other probes, each
  judged on its own answers — not on this probe's; its own answers only decide whether
  it goes on), so P(wrong) ≤ α₁ + α₂ = α per verdict (union bound), whatever is
  stopped when. Over an audit's k verdicts, P(some decided verdict
  wrong) ≤ min(1, k·α) (Bonferroni); `--family-wise` runs each verdict at α/k so that
  the whole audit's bound is α (`verdict_alpha`, `audit_bound`).
* **Forecast** (`forecast`): for an undecided verdict, the items at which its interval,
  narrowing as 1/√n and taken at the final look's z, would likely fit the band that holds
  its value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy.stats import norm

from gbdesk.maths.stats import MarkDefinition
from gbdesk.maths.verdicts import MIN_ITEMS

#: the chance that a decided verdict is wrong, over both its looks
ALPHA = 0.05
#: the first look's share of α (α₁ = 0.0025 of 0.05)
FIRST_SHARE = 0.05
#: the first look's items: at least this share of the even share's items
FIRST_OF_EVEN = 0.25
#: a probe stops after its first look when each open verdict's chance of being decided at
#: the items its share of the budget reaches is below this (`futile`, `decide_chance`)
FUTILE_CHANCE = 0.1
#: the audit's plan version of this design (2: the earlier grid of doublings)
PLAN_VERSION = 3
DESIGN = "two-look"


@dataclass(frozen=True)
class TwoLooks:
    """A probe's looks: `sizes` is (first,) until the final size is fixed, then
    (first, final); any look beyond the first size is the final look (α₂)."""

    sizes: tuple[int, ...]
    alpha: float = ALPHA
    first_share: float = FIRST_SHARE

    @property
    def alpha1(self) -> float:
        return self.alpha * self.first_share

    @property
    def alpha2(self) -> float:
        return self.alpha - self.alpha1

    @property
    def count(self) -> int:
        return 2

    def alpha_at(self, items: int) -> float:
        return self.alpha2 if self.is_final(items) else self.alpha1

    def is_final(self, items: int) -> bool:
        """A look beyond the first size, or at the final size of (n, n): the budget or
        the pool bought no more, so the final look is on the first look's items."""
        return items > self.sizes[0] or (len(self.sizes) > 1 and items >= self.sizes[1])

    def level_at(self, items: int) -> float:
        return 1.0 - self.alpha_at(items)

    def z_at(self, items: int) -> float:
        return float(norm.ppf(1.0 - self.alpha_at(items) / 2.0))

    @property
    def z(self) -> float:
        """The final look's z (planning's yardstick)."""
        return float(norm.ppf(1.0 - self.alpha2 / 2.0))

    @property
    def level(self) -> float:
        return 1.0 - self.alpha2

    def next_size(self, done: int) -> int | None:
        return next((n for n in self.sizes if n > done), None)

    def to_json(self) -> dict[str, object]:
        return {"sizes": list(self.sizes), "alpha": self.alpha, "looks": self.count}


def first_look_size(first: int, even_items: int, pool: int) -> int:
    """max(`first`, ¼ of the even share's items), at most the pool."""
    return max(1, min(int(pool), max(int(first), int(FIRST_OF_EVEN * max(0, even_items)))))


def water_fill(needs: dict[str, float], seconds: float) -> dict[str, float]:
    """Seconds for each: an even share of `seconds`, none more than its need (what its
    pool can still use), the rest shared again between the others."""
    out = {k: 0.0 for k in needs}
    left, open_ = max(0.0, float(seconds)), {k for k, v in needs.items() if v > 0}
    while open_ and left > 1e-9:
        share = left / len(open_)
        full = {k for k in open_ if needs[k] - out[k] <= share}
        if not full:
            for k in open_:
                out[k] += share
            break
        for k in full:
            left -= needs[k] - out[k]
            out[k] = needs[k]
        open_ -= full
    return out


def final_sizes(
    probes: dict[str, tuple[int, int, float]], seconds: float
) -> dict[str, int]:
    """Each open probe's final size: {name: (items now, pool, seconds per item)} share
    `seconds` by `water_fill`; a probe whose share buys no item stays at its items."""
    needs = {k: max(0, pool - n) * max(spi, 1e-9) for k, (n, pool, spi) in probes.items()}
    got = water_fill(needs, seconds)
    return {
        k: min(pool, n + int(got[k] / max(spi, 1e-9) + 1e-9))
        for k, (n, pool, spi) in probes.items()
    }


def decide_chance(
    definition: MarkDefinition,
    verdict: dict[str, Any],
    drawn: int,
    reach: int,
    z_next: float,
    bounds: tuple[float, float] | None = None,
) -> float | None:
    """The chance that an undecided verdict is decided at a final look on `reach` items:
    predictive power under a flat prior. From this look's value θ̂ and its standard error
    se (the interval's width over 2 z), the final value is N(θ̂, se²(1 − n/n')) and its
    interval's half-width z_next·se·√(n/n'); it is decided when that value sits at least
    a half-width inside one band (no margin at the metric's bounds). None when that cannot
    be told (no value, no interval)."""
    value, ci = verdict.get("value"), verdict.get("ci") or (None, None)
    low, high = ci
    if value is None or low is None or high is None:
        return None
    lo, hi, theta = float(low), float(high), float(value)
    if not all(math.isfinite(x) for x in (lo, hi, theta)):
        return None
    n, n2 = max(1, int(drawn)), max(1, int(reach))
    z_now = float(norm.ppf(1 - (1 - float(verdict.get("level") or 0.95)) / 2))
    se = max(hi - lo, 0.0) / (2 * z_now)
    if se <= 0:
        return None
    half = z_next * se * math.sqrt(n / max(n, n2))
    spread = se * math.sqrt(max(0.0, 1 - n / max(n, n2))) or 1e-12
    chance = 0.0
    for bands in definition.ranges.values():
        for b_lo, b_hi in bands:
            at_lo = bounds is not None and b_lo <= bounds[0]
            at_hi = bounds is not None and b_hi >= bounds[1]
            a, b = b_lo + (0 if at_lo else half), b_hi - (0 if at_hi else half)
            if a < b:
                a_ = -math.inf if at_lo else a
                b_ = math.inf if at_hi else b
                chance += float(norm.cdf((b_ - theta) / spread) - norm.cdf((a_ - theta) / spread))
    return min(1.0, chance)


def open_chances(
    definitions: dict[str, MarkDefinition],
    bounds: Any,
    verdicts: list[dict[str, Any]],
    drawn: int,
    reach: int,
    z_next: float,
) -> list[float | None]:
    """Each undecided verdict's `decide_chance` at `reach` items (`bounds(metric)`: the
    metric's own bounds)."""
    return [
        decide_chance(definitions[v["metric"]], v, drawn, reach, z_next, bounds(v["metric"]))
        for v in verdicts
        if not v.get("decided")
    ]


def futile(chances: list[float | None], below: float = FUTILE_CHANCE) -> bool:
    """Whether a probe's final look is not worth its seconds: each of its open verdicts'
    `decide_chance` at the items its share reaches is below `below`; a chance that
    cannot be told keeps it."""
    return bool(chances) and all(c is not None and c < below for c in chances)


def merge_looks(first: list[dict[str, Any]], final: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verdicts to report after the final look: the final look's, except that a
    metric decided at the first look and not at the final keeps the first's."""
    earlier = {v["metric"]: v for v in first if v.get("decided")}
    out = []
    for v in final:
        kept = earlier.get(v["metric"])
        out.append({**kept, "look": "first"} if kept and not v.get("decided") else v)
    return out


def verdict_alpha(verdicts: int, family_wise: bool, alpha: float = ALPHA) -> float:
    """Each verdict's α: `alpha`, or `alpha` / k across the audit's k verdicts."""
    return alpha / max(1, verdicts) if family_wise else alpha


def audit_bound(verdicts: int, per_verdict: float) -> float:
    """Bonferroni across the audit's verdicts: P(at least one decided verdict wrong)."""
    return min(1.0, max(1, verdicts) * per_verdict)


def _band_of(definition: MarkDefinition, value: float) -> tuple[float, float] | None:
    best = None
    for bands in definition.ranges.values():
        for lo, hi in bands:
            if lo <= value <= hi:
                margin = min(value - lo, hi - value)
                if best is None or margin > best[0]:
                    best = (margin, (lo, hi))
    return None if best is None else best[1]


def forecast(
    definition: MarkDefinition,
    value: float,
    ci: tuple[float, float],
    z_now: float,
    z_next: float,
    support: int,
    drawn: int,
    pool: int,
    bounds: tuple[float, float] | None = None,
) -> int | None:
    """More items to draw (beyond `drawn`) at which the interval — each side scaled by
    (z_next / z_now)·√(n / n'), n the items the metric rests on (`support`) — would
    likely fit the band holding `value` (a side at the metric's bound needs no margin);
    -1 when that takes more than the pool; None when it cannot be told."""
    lo, hi = ci
    if not all(math.isfinite(x) for x in (value, lo, hi, z_now, z_next)) or support < 1:
        return None
    band = _band_of(definition, value)
    if band is None:
        return None
    ratios = []
    if not (bounds is not None and band[0] <= bounds[0]) and value - lo > 0:
        ratios.append((value - band[0]) / (value - lo))
    if not (bounds is not None and band[1] >= bounds[1]) and hi - value > 0:
        ratios.append((band[1] - value) / (hi - value))
    if not ratios:
        return max(1, MIN_ITEMS - drawn)
    r = min(ratios)
    if r <= 0:
        return -1
    factor = (z_next / z_now / r) ** 2  # n' / n
    need = max(drawn * factor, MIN_ITEMS)
    more = math.ceil(need - drawn)
    if drawn + more > pool:
        return -1
    return max(1, more)
