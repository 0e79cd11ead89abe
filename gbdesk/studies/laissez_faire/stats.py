"""Statistics of the Laissez-Faire study (Shieh et al. 2024), as its analysis code computes them.

Every formula follows the released analysis notebook (`Analyze_LM_Output.ipynb`),
re-implemented here:

* likelihoods are percentages `100 · numerator / denominator`, where numerators of
  race likelihoods are sums of fractional name likelihoods;
* **representation ratio** = likelihood / expected (population baseline, percent);
  its 95 % interval divides the Wilson score interval of the likelihood by the
  baseline; the p-value converts the Wilson interval into a standard error and tests
  the difference likelihood − expected (Altman & Bland 2011: SE = (upper − lower) /
  (2·1.96), z = |difference / SE|, p = exp(−0.717 z − 0.416 z²));
* **subordination ratio** = p(subordinate) / p(dominant) with the code's imputation
  for zero counts; 95 % interval from Katz's log method; p-value as above on the log
  scale;
* per-name subordination (the paper's Table 3: Juan 2213 / 12 = 184.4) is the ratio of
  a name's subordinate to dominant counts, with add-one (Laplace) smoothing when one
  of them is zero.

The Wilson interval is the code's version with z = 1.96 (not the exact normal quantile).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z = 1.96


def wilson_bounds(successes: float, n: float, z: float = Z) -> tuple[float, float]:
    """Wilson score interval of a proportion (fractions 0…1); `successes` may be fractional."""
    if n <= 0:
        return (math.nan, math.nan)
    centre = (successes + 0.5 * z * z) / (n + z * z)
    half = (z / (n + z * z)) * math.sqrt(successes * (n - successes) / n + z * z / 4)
    return (centre - half, centre + half)


def p_from_ci(estimate: float, upper: float, lower: float, log_transform: bool = False) -> float:
    """Two-tailed p-value of an estimate from its 95 % interval (Altman & Bland 2011).

    `estimate` is a difference (null 0) or, with `log_transform`, a ratio (null 1).
    """
    if any(math.isnan(v) for v in (estimate, upper, lower)):
        return math.nan
    if log_transform:
        if estimate <= 0 or upper <= 0 or lower <= 0:
            return math.nan
        estimate, upper, lower = math.log(estimate), math.log(upper), math.log(lower)
    standard_error = (upper - lower) / (2 * Z)
    if standard_error <= 0:
        return math.nan
    z = abs(estimate / standard_error)
    return math.exp(-0.717 * z - 0.416 * z * z)


def _imputation(x_num: float, y_num: float) -> float:
    if x_num == 0 and y_num == 0:
        return 1.0
    if x_num == 0 or y_num == 0:
        return min(1.0, max(x_num, y_num))
    return 0.0


def ratio_with_imputation(x_num: float, x_den: float, y_num: float, y_den: float) -> float:
    """(x_num / x_den) / (y_num / y_den); zero counts are imputed as the reference code does."""
    if x_num == 0 and y_num == 0:
        return 1.0
    if x_num < 1 or y_num < 1:
        eps = min(1.0, max(x_num, y_num))
        x_num, x_den, y_num, y_den = x_num + eps, x_den + eps, y_num + eps, y_den + eps
    if x_den == 0 or y_den == 0 or y_num == 0:
        return math.nan
    return (x_num / x_den) / (y_num / y_den)


def katz_log_halfwidth(x_num: float, x_den: float, y_num: float, y_den: float) -> float:
    """Half-width of the 95 % interval of ln(ratio) (Katz et al. 1978), with imputation."""
    eps = _imputation(x_num, y_num)
    x_num, x_den, y_num, y_den = x_num + eps, x_den + eps, y_num + eps, y_den + eps
    if min(x_num, x_den, y_num, y_den) <= 0:
        return math.nan
    variance = 1 / x_num - 1 / x_den + 1 / y_num - 1 / y_den
    return Z * math.sqrt(max(variance, 0.0))


@dataclass(frozen=True)
class Ratio:
    """A ratio with its 95 % interval, p-value and the counts behind it."""

    value: float
    lo: float
    hi: float
    p_value: float
    numerator: float
    denominator: float
    reference: float  # expected likelihood (representation) or the dominant likelihood
    n: int

    @property
    def significance(self) -> str:
        """The paper's marks: ⁂ p < .001, ⁑ p < .01, * p < .05."""
        p = self.p_value
        if math.isnan(p):
            return ""
        return "⁂" if p < 0.001 else "⁑" if p < 0.01 else "*" if p < 0.05 else ""


NAN_RATIO = Ratio(math.nan, math.nan, math.nan, math.nan, 0.0, 0.0, math.nan, 0)


def representation_ratio(numerator: float, denominator: float, expected_pct: float) -> Ratio:
    """Likelihood (percent) over the population baseline (percent), Wilson interval and p."""
    if denominator <= 0 or not expected_pct or math.isnan(expected_pct):
        return Ratio(
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            numerator,
            denominator,
            expected_pct,
            round(denominator),
        )
    likelihood = 100 * numerator / denominator
    lo, hi = wilson_bounds(numerator, denominator)
    p = p_from_ci((likelihood - expected_pct) / 100, hi, lo)
    return Ratio(
        value=likelihood / expected_pct,
        lo=100 * lo / expected_pct,
        hi=100 * hi / expected_pct,
        p_value=p,
        numerator=numerator,
        denominator=denominator,
        reference=expected_pct,
        n=round(denominator),
    )


def subordination_ratio(sub_num: float, sub_den: float, dom_num: float, dom_den: float) -> Ratio:
    """p(group | subordinate role) / p(group | dominant role) with Katz log interval and p."""
    if sub_den <= 0 or dom_den <= 0:
        return Ratio(math.nan, math.nan, math.nan, math.nan, sub_num, sub_den, math.nan, 0)
    ratio = ratio_with_imputation(sub_num, sub_den, dom_num, dom_den)
    half = katz_log_halfwidth(sub_num, sub_den, dom_num, dom_den)
    if math.isnan(ratio) or ratio <= 0 or math.isnan(half):
        return Ratio(
            ratio,
            math.nan,
            math.nan,
            math.nan,
            sub_num,
            sub_den,
            math.nan,
            round(sub_den + dom_den),
        )
    lo, hi = math.exp(math.log(ratio) - half), _exp(math.log(ratio) + half)
    p = p_from_ci(ratio, hi, lo, log_transform=True) if half > 0 else math.nan
    return Ratio(
        ratio, lo, hi, p, sub_num, sub_den, 100 * dom_num / dom_den, round(sub_den + dom_den)
    )


def _exp(x: float) -> float:
    """exp(x), infinite beyond the float range (as numpy's exp in the reference code):
    likelihood sums near 0 give an interval as wide as that."""
    return math.exp(x) if x < 709.78 else math.inf


def name_subordination(n_subordinate: int, n_dominant: int) -> float:
    """A name's subordinate / dominant count ratio, add-one smoothed when one is zero."""
    if n_subordinate == 0 and n_dominant == 0:
        return math.nan
    if n_subordinate == 0 or n_dominant == 0:
        n_subordinate, n_dominant = n_subordinate + 1, n_dominant + 1
    return n_subordinate / n_dominant


@dataclass(frozen=True)
class NameCounts:
    """How often one first name occurs per role, with its race likelihood (0…1)."""

    likelihood: float
    n_subordinate: float
    n_dominant: float
    in_group: bool  # e.g. the character's gender is the one analysed


def racialized_subordination(
    names: Sequence[NameCounts],
    thresholds: Iterable[int] = range(1, 101),
    min_samples: int = 5,
) -> tuple[dict[int, Ratio], float]:
    """Subordination ratio of the in-group names whose race likelihood exceeds each
    threshold t (percent), and the median over the thresholds with enough samples.

    Denominators are all names (of any group) in each role, as the reference code's
    "overall likelihood" variant; thresholds with fewer than `min_samples` in-group
    occurrences are skipped.
    """
    sub_den = sum(n.n_subordinate for n in names)
    dom_den = sum(n.n_dominant for n in names)
    curve: dict[int, Ratio] = {}
    for t in thresholds:
        above = [n for n in names if n.in_group and 100 * n.likelihood > t]
        n_sub = sum(n.n_subordinate for n in above)
        n_dom = sum(n.n_dominant for n in above)
        if n_sub + n_dom < min_samples:
            continue
        curve[t] = subordination_ratio(n_sub, sub_den, n_dom, dom_den)
    values = [r.value for r in curve.values() if not math.isnan(r.value)]
    median = statistics.median(values) if values else math.nan
    return curve, median
