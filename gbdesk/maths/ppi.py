"""Prediction-powered inference (PPI): intervals that stay valid when automatic labels are wrong.

gbdesk labels most units automatically (pronoun detector, character extractor, answer
mapper). Estimates computed from those labels alone inherit the labeller's errors, and
their intervals cover the labeller's answer, not the truth. PPI (Angelopoulos, Bates,
Fannjiang, Jordan & Zrnic, *Science* 2023) combines the automatic labels of all units with
human labels of a **uniformly random** sample of them (`review_sample`): the human sample
measures the labeller's error (the "rectifier") and removes it, so the interval is valid
whatever the labeller gets wrong; the more the labeller agrees with the humans, the
narrower the interval.

* `ppi_mean` — means and shares (a per-unit value averaged over units): PPI++
  (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) through the authors' package
  `ppi_py` (`ppi_mean_pointestimate`, `ppi_mean_ci`) with its power-tuning parameter λ
  estimated from the data and clipped to [0, 1] (λ = 1 is classic PPI, λ = 0 the
  human-only estimate). Normal-approximation interval.
* `ppi_bootstrap` — any statistic of a table of units (ratios, SDeg, disparities): the
  prediction-powered bootstrap of Zrnic (2024, arXiv:2405.18379), the algorithm of
  `ppi_py.ppboot` re-implemented here because `ppboot` draws from numpy's global random
  state and only resamples arrays. Same resampling order and formulas, so with a
  `numpy.random.RandomState` it reproduces `ppboot` to the last digit (tested); gbdesk
  passes a seeded `numpy.random.Generator`.
* `review_sample` — the uniformly random set of units to label by hand.

`ppi_py` (and numba, statsmodels, scikit-learn under it) costs about a second to import,
so it is imported inside the functions; importing it also switches every Python warning
off for the whole process (`warnings.simplefilter("ignore")` at its top level), which
`_ppi_py` leaves out.
"""

from __future__ import annotations

import hashlib
import logging
import math
import sys
import warnings
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

#: Fewest human labels for an interval (means, shares and bootstrap statistics alike).
MIN_HUMAN = 30
#: Fewest human labels of each outcome for a binary share.
MIN_PER_OUTCOME = 5
#: Fewest reviewed units whose human and automatic values differ, for PPI's correction.
MIN_DISAGREEMENTS = 5
#: Largest share of bootstrap resamples on which the statistic may be undefined (NaN/inf).
MAX_UNDEFINED_RESAMPLES = 0.01

Interval = tuple[float, float]
NAN_CI: Interval = (math.nan, math.nan)


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered estimate with its interval and diagnostics.

    `value`/`ci`: the PPI estimate and its interval (`ci` is NaN when `valid` is False).
    `automatic_value`/`automatic_ci`: the same estimand from the automatic labels of all
    `n_total` units, with the plain interval that ignores labelling errors (Wilson for a
    binary share, normal for another mean, percentile bootstrap for a statistic).
    `bias`/`bias_ci`: the labeller's bias on the human sample (automatic − human; for a
    mean, mean(ŷ − y); for a statistic, θ(Ŷ) − θ(Y) on the labelled units).
    `lam`: the power-tuning λ used. `notes`: dropped units and other remarks.
    """

    value: float
    ci: Interval
    automatic_value: float
    automatic_ci: Interval
    bias: float
    bias_ci: Interval
    n_human: int
    n_total: int
    valid: bool
    reason: str = ""
    lam: float = math.nan
    method: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (NaN and infinities become None)."""
        return {
            "value": _json_float(self.value),
            "ci": [_json_float(v) for v in self.ci],
            "automatic_value": _json_float(self.automatic_value),
            "automatic_ci": [_json_float(v) for v in self.automatic_ci],
            "bias": _json_float(self.bias),
            "bias_ci": [_json_float(v) for v in self.bias_ci],
            "n_human": self.n_human,
            "n_total": self.n_total,
            "valid": self.valid,
            "reason": self.reason,
            "lam": _json_float(self.lam),
            "method": self.method,
            "notes": list(self.notes),
        }


def _json_float(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


# What `warnings.simplefilter("ignore")` adds to `warnings.filters`.
_IGNORE_ALL = ("ignore", None, Warning, None, 0)


def _ppi_py() -> Any:
    """Import `ppi_py` lazily, without the blanket "ignore every warning" filter it installs.

    The filters the libraries under it add on import (scipy, statsmodels, …) are kept.
    """
    if "ppi_py" in sys.modules:
        return sys.modules["ppi_py"]
    before = list(warnings.filters)
    with warnings.catch_warnings():
        import ppi_py

        added: list[tuple[Any, ...]] = [
            f for f in warnings.filters if f not in before and f != _IGNORE_ALL
        ]
    for action, message, category, module, lineno in reversed(added):
        warnings.filterwarnings(
            action,
            message.pattern if message is not None else "",
            category,
            module.pattern if module is not None else "",
            lineno,
        )
    return ppi_py


def _z(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def _pair(lo: Any, hi: Any) -> Interval:
    return (float(np.asarray(lo).squeeze()), float(np.asarray(hi).squeeze()))


# ---------------------------------------------------------------------------------------------
# Means and shares
# ---------------------------------------------------------------------------------------------


def power_tuning_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """PPI++'s estimated optimal λ for a mean, clipped to [0, 1], as `ppi_py` computes it.

    λ = (1/n)·Σ(y−ȳ)(ŷ−ŷ̄) / ((1 + n/N) · Var(ŷ over labelled ∪ unlabelled, ddof 1)).
    0 when the automatic labels do not vary (they then carry no information).
    """
    n, big_n = len(y), len(yhat_unlabeled)
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var = float(np.var(np.concatenate([yhat, yhat_unlabeled]), ddof=1))
    if not var > 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(
    y_human: Iterable[float],
    yhat_labeled: Iterable[float],
    yhat_unlabeled: Iterable[float],
    *,
    alpha: float = 0.05,
    lam: float | None = None,
    min_human: int = MIN_HUMAN,
    min_per_outcome: int = MIN_PER_OUTCOME,
    min_disagreements: int = MIN_DISAGREEMENTS,
) -> PPIResult:
    """Prediction-powered estimate and (1 − alpha) interval of a mean or share.

    `y_human[i]` and `yhat_labeled[i]` are the human and the automatic value of the i-th
    unit of the random review sample; `yhat_unlabeled` the automatic values of the other
    units. A NaN marks a unit whose value is undefined; a reviewed unit is dropped when
    either of its values is NaN, an unreviewed one when its automatic value is, and the
    automatic-only figures use exactly the units the PPI estimate uses.

    PPI++ via `ppi_py.ppi_mean_pointestimate`/`ppi_mean_ci` (normal interval; λ estimated
    by `ppi_py` when `lam` is None, clipped to [0, 1]).

    Human-only estimate instead (λ = 0: the mean of the human labels, Wilson interval for
    a share, normal otherwise) when every unit was reviewed (N = 0) or when, with `lam`
    None, human and automatic values differ on fewer than `min_disagreements` (5) reviewed
    units. The correction's variance is estimated from those disagreements; with none it
    is 0 and the PPI interval shrinks to the automatic one around a bias it cannot see (a
    labeller that misses 2 % of the women, n = 100: PPI covers 69 % of 2,000 seeds). 5 is
    the n·p ≥ 5 rule applied to the disagreement count. Simulated (share 0.4 or 0.1,
    n = 30…1,000, N = 20,000, error rates 0.3 %…20 %, 2,000 seeds each), it kept coverage
    in 0.944…0.957 where PPI alone fell to 0.69…0.93; a threshold of 3 gave ≥ 0.938, 1 gave
    ≥ 0.920 with narrower intervals. The price: with a very good labeller and a small
    sample the interval is the human-only one.

    No interval (``valid=False``) with fewer than `min_human` (30) reviewed units, or, for a
    binary share, fewer than `min_per_outcome` (5) human labels of either outcome: the
    interval is a normal approximation whose variance is estimated from the human sample;
    30 is the usual floor for that, and the textbook condition n·p ≥ 5 and n·(1−p) ≥ 5
    for the binomial's normal approximation guards the case where the estimated variance
    of a rare outcome is near 0 (e.g. no woman among the reviewed units gives a
    zero-width rectifier term).
    """
    y, yl, yu, notes = _defined_units(y_human, yhat_labeled, yhat_unlabeled)
    n, big_n = len(y), len(yu)
    yhat_all = np.concatenate([yl, yu])
    binary = bool(np.isin(np.concatenate([y, yhat_all]), (0.0, 1.0)).all())
    method = "PPI++ mean (ppi_py), normal interval"

    automatic_value, automatic_ci = _automatic_mean(yhat_all, binary, alpha)

    def invalid(reason: str, value: float = math.nan, bias: float = math.nan) -> PPIResult:
        logger.info("PPI mean: no interval: %s", reason)
        return PPIResult(
            value=value, ci=NAN_CI, automatic_value=automatic_value,
            automatic_ci=automatic_ci, bias=bias, bias_ci=NAN_CI, n_human=n,
            n_total=n + big_n, valid=False, reason=reason, method=method, notes=tuple(notes),
        )  # fmt: skip

    if n + big_n == 0:
        return invalid("no unit with a defined value")
    if n == 0:
        return invalid("no human labels")
    bias = float(np.mean(yl - y))
    ppi = _ppi_py()
    value, lam_used, lam_arg, method = _mean_point_estimate(ppi, y, yl, yu, lam, method)
    if reason := _too_few_human_labels(y, binary, min_human, min_per_outcome):
        return invalid(reason, value, bias)

    disagreements = int((y != yl).sum())
    if _note_few_disagreements(disagreements, n, min_disagreements, "values", notes):
        bias_ci = NAN_CI
    else:
        bias_ci = _pair(*ppi.classical_mean_ci(yl - y, alpha=alpha))
    if big_n == 0 or (lam is None and disagreements < min_disagreements):
        value, lam_used = float(np.mean(y)), 0.0
        ci, method = _human_only_mean_interval(ppi, y, binary, alpha, every_unit=big_n == 0)
    else:
        ci = _pair(*ppi.ppi_mean_ci(y, yl, yu, alpha=alpha, lam=lam_arg))
    return PPIResult(
        value=value, ci=ci, automatic_value=automatic_value, automatic_ci=automatic_ci,
        bias=bias, bias_ci=bias_ci, n_human=n, n_total=n + big_n, valid=True, lam=lam_used,
        method=method, notes=tuple(notes),
    )  # fmt: skip


def _defined_units(
    y_human: Iterable[float], yhat_labeled: Iterable[float], yhat_unlabeled: Iterable[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """`ppi_mean`'s inputs as float arrays, checked, without the units whose value is
    undefined (NaN): (human, automatic of the reviewed, automatic of the others, notes that
    count what was dropped)."""
    y = np.asarray(list(y_human) if not isinstance(y_human, np.ndarray) else y_human, float)
    yl = np.asarray(
        list(yhat_labeled) if not isinstance(yhat_labeled, np.ndarray) else yhat_labeled, float
    )
    yu = np.asarray(
        list(yhat_unlabeled) if not isinstance(yhat_unlabeled, np.ndarray) else yhat_unlabeled,
        float,
    )
    if y.ndim != 1 or yl.ndim != 1 or yu.ndim != 1:
        raise ValueError("ppi_mean takes one-dimensional arrays")
    if len(y) != len(yl):
        raise ValueError(f"{len(y)} human labels but {len(yl)} automatic labels of the sample")

    notes: list[str] = []
    keep_l = np.isfinite(y) & np.isfinite(yl)
    keep_u = np.isfinite(yu)
    if (dropped := int((~keep_l).sum())) > 0:
        notes.append(f"{dropped} reviewed unit(s) dropped: human or automatic value undefined")
    if (dropped := int((~keep_u).sum())) > 0:
        notes.append(f"{dropped} unreviewed unit(s) dropped: automatic value undefined")
    return y[keep_l], yl[keep_l], yu[keep_u], notes


def _mean_point_estimate(
    ppi: Any, y: np.ndarray, yl: np.ndarray, yu: np.ndarray, lam: float | None, method: str
) -> tuple[float, float, float | None, str]:
    """`ppi_mean`'s point estimate: (value, λ used, λ passed to `ppi_py`, method). With
    every unit reviewed, the human mean (λ = 0)."""
    if len(yu) == 0:
        return float(np.mean(y)), 0.0, 0.0, method
    lam_arg: float | None
    if lam is not None:
        lam_used = lam_arg = float(lam)
        method = f"PPI mean (ppi_py, λ = {lam_used:g}), normal interval"
    else:
        # ppi_py tunes λ itself; power_tuning_lambda reports the same value (tested) and
        # gives 0 where ppi_py's formula is 0/0 (automatic labels all equal).
        lam_used = power_tuning_lambda(y, yl, yu)
        lam_arg = None if np.var(np.concatenate([yl, yu])) > 0 else 0.0
        method = "PPI++ mean (ppi_py, power-tuned λ), normal interval"
    value = float(np.asarray(ppi.ppi_mean_pointestimate(y, yl, yu, lam=lam_arg)).squeeze())
    return value, lam_used, lam_arg, method


def _too_few_human_labels(
    y: np.ndarray, binary: bool, min_human: int, min_per_outcome: int
) -> str | None:
    """Why the human sample is too small for `ppi_mean`'s normal interval, or None."""
    n = len(y)
    if n < min_human:
        return f"only {n} human labels (at least {min_human} needed)"
    if binary:
        ones = int(y.sum())
        if min(ones, n - ones) < min_per_outcome:
            return (
                f"human labels: {ones} of outcome 1 and {n - ones} of outcome 0 (at least "
                f"{min_per_outcome} of each needed)"
            )
    return None


def _human_only_mean_interval(
    ppi: Any, y: np.ndarray, binary: bool, alpha: float, *, every_unit: bool
) -> tuple[Interval, str]:
    """The interval of the human labels alone (Wilson for a share) and its method."""
    if binary:
        from gbdesk.maths.stats import wilson_interval

        ci = wilson_interval(int(y.sum()), len(y), alpha)
        method = "human labels only, Wilson interval"
    else:
        ci = _pair(*ppi.classical_mean_ci(y, alpha=alpha))
        method = "human labels only, normal interval"
    method += " (every unit reviewed)" if every_unit else " (too few disagreements for PPI)"
    return ci, method


def _automatic_mean(values: np.ndarray, binary: bool, alpha: float) -> tuple[float, Interval]:
    """Plain estimate and interval from automatic labels: Wilson for 0/1, normal otherwise."""
    m = len(values)
    if m == 0:
        return math.nan, NAN_CI
    value = float(values.mean())
    if binary:
        from gbdesk.maths.stats import wilson_interval

        return value, wilson_interval(int(values.sum()), m, alpha)
    if m < 2:
        return value, NAN_CI
    half = _z(alpha) * float(values.std(ddof=1)) / math.sqrt(m)
    return value, (value - half, value + half)


# ---------------------------------------------------------------------------------------------
# Any statistic: the prediction-powered bootstrap
# ---------------------------------------------------------------------------------------------

Statistic = Callable[[pd.DataFrame], float]
RandomSource = int | np.random.Generator | np.random.RandomState


def ppi_bootstrap(
    statistic: Statistic,
    human: pd.DataFrame,
    automatic_labeled: pd.DataFrame,
    automatic_unlabeled: pd.DataFrame,
    *,
    n_resamples: int = 1000,
    n_resamples_lam: int = 50,
    lam: float | None = None,
    alpha: float = 0.05,
    seed: RandomSource = 0,
    min_human: int = MIN_HUMAN,
    min_disagreements: int = MIN_DISAGREEMENTS,
) -> PPIResult:
    """Prediction-powered bootstrap (Zrnic 2024) of `statistic` with a percentile interval.

    Rows are units. `human` holds the human-labelled columns of the reviewed units,
    `automatic_labeled` the automatically labelled columns of the same units in the same
    order, `automatic_unlabeled` those of the other units; `statistic(frame)` returns the
    estimand computed on a frame of units (e.g. a representation or subordination ratio
    from 0/1 columns `female`, `subordinate`; NaN handling is the statistic's job; it must
    not rely on the index, which repeats in resamples).

    Point estimate θ̂ = λ·θ(Ŷ_unlabelled) + θ(Y_human) − λ·θ(Ŷ_labelled). Each of the
    `n_resamples` resamples redraws the reviewed units (human and automatic rows together)
    and, independently, the unreviewed ones, and recomputes θ̂; the interval is the
    alpha/2 and 1 − alpha/2 quantiles. λ (None: power-tuned) is estimated as `ppboot` does
    from `n_resamples_lam` earlier resamples, λ = Cov(θ(Y*), θ(Ŷ*)) / (Var θ(Ŷ*) +
    Var θ(Ŷ_unlabelled*)), then clipped to [0, 1] (`ppboot` does not clip).

    `seed`: an int (a fresh `numpy.random.default_rng(seed)`) or a generator. The
    automatic-only interval is the percentile bootstrap of θ over all automatic rows,
    drawn from the same resamples (stratified by reviewed/unreviewed); the bias interval
    is the percentile interval of θ(Ŷ*) − θ(Y*) over the reviewed resamples.

    No interval (``valid=False``) with fewer than `min_human` reviewed units, when θ is
    undefined on the human sample, or when it is undefined on more than 1 % of resamples
    (then the percentile interval would only describe the resamples where it exists).
    As in `ppi_mean`, λ = 0 (the bootstrap of the human labels alone) when, with `lam`
    None, fewer than `min_disagreements` reviewed rows differ between `human` and
    `automatic_labeled` (in any common column), and when every unit was reviewed.
    """
    frames = _bootstrap_frames(human, automatic_labeled, automatic_unlabeled)
    human, automatic_labeled, automatic_unlabeled, automatic_all = frames
    rng = np.random.default_rng(seed) if isinstance(seed, int) else seed
    n, big_n = len(human), len(automatic_unlabeled)
    notes: list[str] = []
    method = "prediction-powered bootstrap (Zrnic 2024), percentile interval"
    lo_q, hi_q = alpha / 2, 1 - alpha / 2
    theta = _undefined_as_nan(statistic)

    automatic_value = theta(automatic_all)
    theta_y, theta_yl, theta_yu = _point_values(theta, frames)
    bias = theta_yl - theta_y

    def plain_automatic_ci() -> Interval:
        return _automatic_bootstrap_ci(theta, automatic_all, rng, n_resamples, lo_q, hi_q, notes)

    def invalid(
        reason: str, value: float = math.nan, automatic_ci: Interval | None = None
    ) -> PPIResult:
        logger.info("PPI bootstrap: no interval: %s", reason)
        if automatic_ci is None:
            automatic_ci = plain_automatic_ci()
        return PPIResult(
            value=value, ci=NAN_CI, automatic_value=automatic_value,
            automatic_ci=automatic_ci, bias=bias, bias_ci=NAN_CI, n_human=n,
            n_total=n + big_n, valid=False, reason=reason, method=method, notes=tuple(notes),
        )  # fmt: skip

    if n + big_n == 0:
        return invalid("no units")
    if n == 0:
        return invalid("no human labels")
    if big_n == 0:
        return _human_only_bootstrap(
            theta, human, automatic_value, plain_automatic_ci(), bias, rng, n_resamples, lo_q,
            hi_q, min_human, notes,
        )  # fmt: skip
    if n < min_human:
        return invalid(f"only {n} human labels (at least {min_human} needed)", theta_y)
    if not math.isfinite(theta_y):
        return invalid("the statistic is undefined on the human-labelled sample")

    disagreements = _differing_rows(human, automatic_labeled)
    few = _note_few_disagreements(disagreements, n, min_disagreements, "rows", notes)
    lam_used, method = _bootstrap_lambda(theta, frames, rng, n_resamples_lam, lam, few, method)

    value = _rectified(lam_used, theta_y, theta_yl, theta_yu)
    boot, auto, bias_boot = _ppi_resamples(theta, frames, rng, n_resamples, lam_used)
    automatic_ci = _percentile(auto, lo_q, hi_q, notes, "automatic-only")
    bias_ci = NAN_CI if few else _percentile(bias_boot, lo_q, hi_q, notes, "bias")
    if reason := _undefined_reason(boot, n_resamples):
        return invalid(reason, value, automatic_ci)
    ci = _percentile(boot, lo_q, hi_q, notes, "PPI")
    return PPIResult(
        value=value, ci=ci, automatic_value=automatic_value, automatic_ci=automatic_ci,
        bias=bias, bias_ci=bias_ci, n_human=n, n_total=n + big_n, valid=True, lam=lam_used,
        method=method, notes=tuple(notes),
    )  # fmt: skip


def _bootstrap_frames(
    human: pd.DataFrame, automatic_labeled: pd.DataFrame, automatic_unlabeled: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`ppi_bootstrap`'s frames, checked and indexed from 0, with all automatic rows (the
    reviewed ones first) as a fourth."""
    if len(human) != len(automatic_labeled):
        raise ValueError(
            f"{len(human)} human rows but {len(automatic_labeled)} automatic rows of the sample"
        )
    human = human.reset_index(drop=True)
    automatic_labeled = automatic_labeled.reset_index(drop=True)
    automatic_unlabeled = automatic_unlabeled.reset_index(drop=True)
    automatic_all = pd.concat([automatic_labeled, automatic_unlabeled], ignore_index=True)
    return human, automatic_labeled, automatic_unlabeled, automatic_all


def _automatic_bootstrap_ci(
    theta: Callable[[pd.DataFrame], float],
    automatic_all: pd.DataFrame,
    rng: np.random.Generator | np.random.RandomState,
    n_resamples: int,
    lo_q: float,
    hi_q: float,
    notes: list[str],
) -> Interval:
    """The plain percentile bootstrap of θ over all automatic rows (when PPI has no
    resamples to draw it from)."""
    m = len(automatic_all)
    draws = [theta(automatic_all.take(rng.choice(m, m, replace=True))) for _ in range(n_resamples)]
    return _percentile(draws, lo_q, hi_q, notes, "automatic-only") if m else NAN_CI


def _bootstrap_lambda(
    theta: Callable[[pd.DataFrame], float],
    frames: tuple[pd.DataFrame, ...],
    rng: np.random.Generator | np.random.RandomState,
    n_resamples_lam: int,
    lam: float | None,
    few: bool,
    method: str,
) -> tuple[float, str]:
    """`ppi_bootstrap`'s λ and its method: 0 (human labels only) when power tuning was asked
    and too few reviewed rows disagree, power-tuned, or the λ given."""
    if lam is None and few:
        return 0.0, (
            "bootstrap of the human labels only (too few disagreements for PPI), "
            "percentile interval"
        )
    if lam is None:
        lam_used = _power_tuned_lambda(theta, frames[:3], rng, n_resamples_lam)
        return lam_used, method + f", power-tuned λ = {lam_used:.3f}"
    lam_used = float(lam)
    return lam_used, method + f", λ = {lam_used:g}"


def _note_few_disagreements(
    disagreements: int, n: int, min_disagreements: int, what: str, notes: list[str]
) -> bool:
    """Whether human and automatic `what` differ on too few of the `n` reviewed units to
    estimate the labeller's error (then said in `notes`)."""
    few = disagreements < min_disagreements
    if few:
        notes.append(
            f"human and automatic {what} differ on {disagreements} of {n} reviewed units "
            f"(at least {min_disagreements} needed to estimate the labeller's error)"
        )
    return few


def _point_values(
    theta: Callable[[pd.DataFrame], float], frames: tuple[pd.DataFrame, ...]
) -> tuple[float, float, float]:
    """θ(Y), θ(Ŷ) of the reviewed units and θ(Ŷ) of the others (NaN on no rows)."""
    human, automatic_labeled, automatic_unlabeled = frames[:3]
    n, big_n = len(human), len(automatic_unlabeled)
    theta_y = theta(human) if n else math.nan
    theta_yl = theta(automatic_labeled) if n else math.nan
    theta_yu = theta(automatic_unlabeled) if big_n else math.nan
    return theta_y, theta_yl, theta_yu


def _undefined_as_nan(statistic: Statistic) -> Callable[[pd.DataFrame], float]:
    """`statistic` as a float, NaN where it is undefined on a frame (an exception of the
    kinds arithmetic on an empty or one-sided resample raises)."""

    def theta(frame: pd.DataFrame) -> float:
        try:
            with np.errstate(divide="ignore", invalid="ignore"):
                return float(statistic(frame))
        except (ArithmeticError, ValueError, KeyError, IndexError) as exc:
            logger.debug("statistic undefined on a frame of %d rows: %s", len(frame), exc)
            return math.nan

    return theta


def _rectified(lam: float, t_y: float, t_yl: float, t_yu: float) -> float:
    """θ̂ = λ·θ(Ŷ_unlabelled) + θ(Y) − λ·θ(Ŷ_labelled): the same expression (and order of
    operations) as ppi_py.ppboot's rectified_estimator."""
    return lam * t_yu + t_y - lam * t_yl


def _power_tuned_lambda(
    theta: Callable[[pd.DataFrame], float],
    frames: tuple[pd.DataFrame, ...],
    rng: np.random.Generator | np.random.RandomState,
    n_resamples_lam: int,
) -> float:
    """`ppi_bootstrap`'s λ as `ppboot` estimates it, from `n_resamples_lam` resamples of the
    (human, automatic reviewed, automatic unreviewed) frames, clipped to [0, 1]."""
    human, automatic_labeled, automatic_unlabeled = frames
    n, big_n = len(human), len(automatic_unlabeled)
    triples = []
    for _ in range(n_resamples_lam):
        i = rng.choice(n, n, replace=True)
        j = rng.choice(big_n, big_n, replace=True)
        triples.append(
            (
                theta(human.take(i)),
                theta(automatic_labeled.take(i)),
                theta(automatic_unlabeled.take(j)),
            )
        )
    arr = np.array(triples)
    arr = arr[np.isfinite(arr).all(axis=1)]
    denominator = float(np.var(arr[:, 1]) + np.var(arr[:, 2])) if len(arr) > 1 else 0.0
    raw = float(np.cov(arr[:, 0], arr[:, 1])[0, 1]) / denominator if denominator > 0 else 0.0
    return float(np.clip(raw, 0.0, 1.0)) if math.isfinite(raw) else 0.0


def _ppi_resamples(
    theta: Callable[[pd.DataFrame], float],
    frames: tuple[pd.DataFrame, ...],
    rng: np.random.Generator | np.random.RandomState,
    n_resamples: int,
    lam: float,
) -> tuple[list[float], list[float], list[float]]:
    """`ppi_bootstrap`'s resamples: per resample, the rectified estimate, θ over all
    automatic rows and the bias θ(Ŷ*) − θ(Y*), from the (human, automatic reviewed,
    automatic unreviewed, automatic all) frames; the reviewed units are redrawn together,
    the unreviewed ones independently."""
    human, automatic_labeled, automatic_unlabeled, automatic_all = frames
    n, big_n = len(human), len(automatic_unlabeled)
    boot, auto, bias_boot = [], [], []
    for _ in range(n_resamples):
        i = rng.choice(n, n, replace=True)
        j = rng.choice(big_n, big_n, replace=True)
        t_y, t_yl = theta(human.take(i)), theta(automatic_labeled.take(i))
        boot.append(_rectified(lam, t_y, t_yl, theta(automatic_unlabeled.take(j))))
        auto.append(theta(automatic_all.take(np.concatenate([i, n + j]))))
        bias_boot.append(t_yl - t_y)
    return boot, auto, bias_boot


def _differing_rows(human: pd.DataFrame, automatic: pd.DataFrame) -> int:
    """Rows whose values differ in at least one common column (NaN equals NaN)."""
    columns = [c for c in human.columns if c in automatic.columns]
    h, a = human[columns], automatic[columns]
    same = (h.to_numpy() == a.to_numpy()) | (h.isna().to_numpy() & a.isna().to_numpy())
    return int((~same).any(axis=1).sum())


def _human_only_bootstrap(
    theta: Callable[[pd.DataFrame], float],
    human: pd.DataFrame,
    automatic_value: float,
    automatic_ci: Interval,
    bias: float,
    rng: np.random.Generator | np.random.RandomState,
    n_resamples: int,
    lo_q: float,
    hi_q: float,
    min_human: int,
    notes: list[str],
) -> PPIResult:
    """All units reviewed: the plain percentile bootstrap of the human labels (λ = 0)."""
    n = len(human)
    method = "bootstrap of the human labels (every unit reviewed), percentile interval"
    value = theta(human)
    common: dict[str, Any] = dict(
        value=value, automatic_value=automatic_value, automatic_ci=automatic_ci, bias=bias,
        bias_ci=NAN_CI, n_human=n, n_total=n, lam=0.0, method=method,
    )  # fmt: skip
    if n < min_human or not math.isfinite(value):
        reason = (
            f"only {n} human labels (at least {min_human} needed)"
            if n < min_human
            else "the statistic is undefined on the human-labelled sample"
        )
        return PPIResult(ci=NAN_CI, valid=False, reason=reason, notes=tuple(notes), **common)
    boot = [theta(human.take(rng.choice(n, n, replace=True))) for _ in range(n_resamples)]
    if reason := _undefined_reason(boot, n_resamples):
        return PPIResult(ci=NAN_CI, valid=False, reason=reason, notes=tuple(notes), **common)
    ci = _percentile(boot, lo_q, hi_q, notes, "human-only")
    return PPIResult(ci=ci, valid=True, notes=tuple(notes), **common)


def _undefined_reason(boot: list[float], n_resamples: int) -> str:
    """Why a bootstrap gives no interval: the statistic is undefined on more than
    `MAX_UNDEFINED_RESAMPLES` of the resamples (else "")."""
    undefined = sum(not math.isfinite(b) for b in boot)
    if undefined > MAX_UNDEFINED_RESAMPLES * n_resamples:
        return f"the statistic is undefined on {undefined} of {n_resamples} resamples"
    return ""


def _percentile(
    values: list[float], lo_q: float, hi_q: float, notes: list[str], label: str
) -> Interval:
    """Percentile interval of the finite bootstrap values (a note counts the others)."""
    arr = np.asarray(values, float)
    finite = arr[np.isfinite(arr)]
    if len(finite) < len(arr):
        notes.append(
            f"{label} interval: statistic undefined on {len(arr) - len(finite)} of "
            f"{len(arr)} resamples (left out)"
        )
    if len(finite) == 0:
        return NAN_CI
    return _pair(np.quantile(finite, lo_q), np.quantile(finite, hi_q))


# ---------------------------------------------------------------------------------------------
# The random review sample
# ---------------------------------------------------------------------------------------------


def review_sample(ids: Iterable[Hashable], size: int, seed: int) -> list:
    """A uniformly random sample of `size` ids to review by hand, reproducible from `seed`.

    Each id is ranked by BLAKE2b(seed, str(id)) and the `size` lowest are returned, lowest
    first. Hence the sample
    * does not depend on the order of `ids` (nor on numpy's version: the hash is fixed
      forever, unlike numpy generators' streams);
    * is nested: the first k of a sample of size m > k are the sample of size k (a reviewer
      who stops early, or a later enlargement, keeps a uniform random sample);
    * keeps an id's rank when other ids are added or removed.
    Ids are compared through `str(id)` (1 and "1" are the same unit; duplicates raise
    ValueError). `size` larger than the number of ids returns them all. Choose the seed
    before looking at the sample: trying seeds until one "looks right" breaks the
    randomness every interval relies on.
    """
    if size < 0:
        raise ValueError(f"sample size must be ≥ 0, not {size}")
    items = list(ids)
    keys = [str(i) for i in items]
    if len(set(keys)) != len(keys):
        raise ValueError("ids contain duplicates")
    if size > len(items):
        logger.warning("review sample of %d asked from %d ids: all of them", size, len(items))
    prefix = f"gbdesk-review-sample\x00{int(seed)}\x00".encode()

    def rank(k: str) -> bytes:
        return hashlib.blake2b(prefix + k.encode("utf-8"), digest_size=16).digest()

    order = sorted(range(len(items)), key=lambda x: (rank(keys[x]), keys[x]))
    return [items[x] for x in order[:size]]


# ---------------------------------------------------------------------------------------------
# Many statistics at once, from resampled values (gbdesk.analysis.ppi_metrics)
# ---------------------------------------------------------------------------------------------

#: theta(which, w) → statistic name → its value on each row of unit multiplicities `w`;
#: which is "human" or "labeled" (the reviewed units, by hand / automatically; w over them)
#: or "unlabeled" (the other units, automatically; w over them).
ThetaMany = Callable[[str, np.ndarray], dict[str, np.ndarray]]


def _multinomial(rng: np.random.Generator, size: int, counts: np.ndarray, rows: int) -> np.ndarray:
    """Bootstrap multiplicities: `rows` resamples of `size` draws from units weighted by
    `counts` (a plain bootstrap when every count is 1)."""
    p = counts / counts.sum()
    return rng.multinomial(size, p, size=rows).astype(float)


#: weight cells (resamples × units) evaluated at a time: a 500,000-story run's 1,000
#: resamples are drawn and evaluated in chunks of ~16 (64 MB each), not at once (4 GB)
MAX_WEIGHT_CELLS = 2**23


def _resample_rows(
    theta: ThetaMany,
    rng: np.random.Generator,
    n: int,
    counts: np.ndarray,
    rows: int,
    sets: tuple[str, ...],
) -> dict[str, dict[str, np.ndarray]]:
    """`rows` resamples: per set asked
    for ("human", "labeled", "unlabeled", "all"), `theta` on them, name → values. The
    unreviewed units' multiplicities are drawn and evaluated a chunk of rows at a time
    (`MAX_WEIGHT_CELLS`); the random stream is the one of drawing all rows at once."""
    big_n = int(counts.sum())
    wl = _multinomial(rng, n, np.ones(n), rows) if n else np.zeros((rows, 0))
    out: dict[str, dict[str, np.ndarray]] = {}
    for which in ("human", "labeled"):
        if which in sets:
            out[which] = theta(which, wl) if n else {}
    want_u, want_all = "unlabeled" in sets, "all" in sets
    if not (want_u or want_all):
        return out
    chunk = max(1, MAX_WEIGHT_CELLS // max(1, n + len(counts)))
    parts: dict[str, list[dict[str, np.ndarray]]] = {"unlabeled": [], "all": []}
    sizes = []
    for start in range(0, rows, chunk):
        r = min(chunk, rows - start)
        wu = _multinomial(rng, big_n, counts, r) if big_n else np.zeros((r, len(counts)))
        sizes.append(r)
        if want_u:
            parts["unlabeled"].append(theta("unlabeled", wu) if big_n else {})
        if want_all:
            parts["all"].append(theta("all", np.hstack([wl[start : start + r], wu])))
    for which in ("unlabeled", "all"):
        if which in sets:
            names = list(dict.fromkeys(k for part in parts[which] for k in part))
            out[which] = {
                name: np.concatenate(
                    [np.asarray(part.get(name, np.full(r, np.nan)), dtype=float)
                     for part, r in zip(parts[which], sizes, strict=True)]
                )
                for name in names
            }  # fmt: skip
    return out


def _one_unit_changed(
    theta: ThetaMany,
    which: str,
    base_w: np.ndarray,
    edit: Callable[[np.ndarray, np.ndarray], None],
    n: int,
    chunk: int = 256,
) -> dict[str, tuple[float, np.ndarray]]:
    """Per statistic of `theta(which, ·)`: its value at the weights `base_w` (one row) and
    its values with one reviewed unit changed at a time — `edit(w, rows)` changes row k of
    `w` (a copy of `base_w`) for unit `rows[k]`; evaluated `chunk` units at a time."""
    base = theta(which, base_w)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in base}
    for start in range(0, n, chunk):
        rows = np.arange(start, min(n, start + chunk))
        w = np.tile(base_w, (len(rows), 1))
        edit(w, rows)
        changed = theta(which, w)
        for name in base:
            v = changed.get(name)
            if v is not None:
                parts[name].append(np.asarray(v, dtype=float))
    return {
        name: (float(b[0]), np.concatenate(parts[name]) if parts[name] else np.empty(0))
        for name, b in base.items()
    }


def _informative_units(theta: ThetaMany, n: int, chunk: int = 256) -> dict[str, int]:
    """Per statistic, how many reviewed units change it when their human labels are
    swapped for the automatic ones (all other reviewed units keeping their human labels).

    PPI's correction is estimated from those units only: when almost none of them bears on
    a statistic, the bootstrap sees no labeller error there and would give the automatic
    interval back, however biased the labeller is elsewhere. `theta("mixed", w)` evaluates
    the reviewed units' human labels (first n columns) and automatic labels (last n)
    together; a `theta` without that set gives {} (no per-statistic check)."""

    def swap(w: np.ndarray, rows: np.ndarray) -> None:
        w[np.arange(len(rows)), rows] = 0.0
        w[np.arange(len(rows)), n + rows] = 1.0

    base_w = np.hstack([np.ones((1, n)), np.zeros((1, n))])
    try:
        values = _one_unit_changed(theta, "mixed", base_w, swap, n, chunk)
    except KeyError:
        return {}
    counts = {}
    for name, (b0, v) in values.items():
        same = np.isclose(v, b0, rtol=1e-12, atol=1e-12) | (np.isnan(v) & math.isnan(b0))
        counts[name] = int(np.sum(~same))
    return counts


def _effective_count(pulls: np.ndarray) -> float:
    """Kish's effective number of units behind a sum of same-signed pulls: (Σ d)² / Σ d².
    Equal pulls give their count; a few large pulls among many small ones count as few."""
    total = float(np.sum(pulls))
    squares = float(np.sum(pulls**2))
    return total * total / squares if squares > 0 else 0.0


def _support(theta: ThetaMany, n: int, chunk: int = 256) -> dict[str, tuple[float, float]]:
    """Per statistic, how many reviewed units, in effect, pull its human-label value up and
    how many pull it down.

    The run-wide count of reviewed units says little about a metric computed on a part of
    them (one domain's stories, one group's characters): 256 reviewed stories may hold 3
    with a character of that group, and a bootstrap over so few gives an interval that
    covers far less often than it claims. This is the per-metric version of `ppi_mean`'s
    rule for binary shares (at least `MIN_PER_OUTCOME` units of each outcome, the
    textbook n·p ≥ 5 and n·(1 − p) ≥ 5). Each reviewed unit is left out of the human
    labels in turn; its pull is how much the value drops (a unit that raises it) or rises
    (one that lowers it) without it. The units on each side are counted by Kish's
    effective number (`_effective_count`), so for a share of equal units this is the
    number of units with and without the outcome; where the outcome is spread unevenly
    (a race share made of first-name likelihoods: many names give a group 1 %, a few give
    it 80 %) the few heavy units are what count."""

    def leave_out(w: np.ndarray, rows: np.ndarray) -> None:
        w[np.arange(len(rows)), rows] = 0.0

    support = {}
    for name, (b0, v) in _one_unit_changed(theta, "human", np.ones((1, n)), leave_out, n,
                                           chunk).items():  # fmt: skip
        if not math.isfinite(b0):
            support[name] = (0.0, 0.0)
            continue
        changed = ~np.isclose(v, b0, rtol=1e-12, atol=1e-12) & np.isfinite(v)
        pull = b0 - v  # > 0: the unit raises the value
        support[name] = (
            _effective_count(pull[changed & (pull > 0)]),
            _effective_count(-pull[changed & (pull < 0)]),
        )
    return support


def _support_reason(support: tuple[float, float] | None, min_per_outcome: int) -> str:
    """Why a statistic gets no interval from its reviewed units, or ""."""
    if support is None:
        return ""
    up, down = support
    if up + down == 0:
        return (
            "no variation in the reviewed sample (no reviewed unit bears on this metric, "
            "e.g. no unit of this group among the reviewed ones)"
        )
    if min(up, down) < min_per_outcome:
        return (
            f"too few reviewed units bear on this metric: {_count_words(up)} raise it and "
            f"{_count_words(down)} lower it (at least {min_per_outcome} of each needed for "
            f"an interval, e.g. {min_per_outcome} reviewed units with a character of this "
            "group; units that carry little of it count as part of a unit)"
        )
    return ""


def _count_words(count: float) -> str:
    """A whole effective count as an integer, another one as "in effect 2.4"."""
    return f"{count:.0f}" if abs(count - round(count)) < 1e-6 else f"in effect {count:.1f}"


def _power_tuned_lambdas(
    theta: ThetaMany,
    rng: np.random.Generator,
    n: int,
    counts: np.ndarray,
    n_resamples_lam: int,
    names: list[str],
) -> dict[str, float]:
    """`ppi_bootstrap_many`'s λ per statistic, as `ppi_bootstrap` estimates it, from
    `n_resamples_lam` resamples, clipped to [0, 1]."""
    lam_sets = _resample_rows(
        theta, rng, n, counts, n_resamples_lam, ("human", "labeled", "unlabeled")
    )
    ty, tyl, tyu = lam_sets["human"], lam_sets["labeled"], lam_sets["unlabeled"]
    lam = {}
    for name in names:
        missing = np.full(n_resamples_lam, np.nan)
        arr = np.column_stack(
            [ty.get(name, missing), tyl.get(name, missing), tyu.get(name, missing)]
        )
        arr = arr[np.isfinite(arr).all(axis=1)]
        den = float(np.var(arr[:, 1]) + np.var(arr[:, 2])) if len(arr) > 1 else 0.0
        raw = float(np.cov(arr[:, 0], arr[:, 1])[0, 1]) / den if den > 0 else 0.0
        lam[name] = float(np.clip(raw, 0.0, 1.0)) if math.isfinite(raw) else 0.0
    return lam


def _few_informative(k: int | None, n: int, min_disagreements: int, notes: list[str]) -> bool:
    """Whether only `k` (< `min_disagreements`) reviewed units disagree in a way that
    changes a statistic (then said in `notes`): the reviewed sample says almost nothing
    about the labeller's error on it."""
    if k is not None and k < min_disagreements:
        notes.append(
            f"only {k} of {n} reviewed units disagree in a way that changes this metric "
            f"(at least {min_disagreements} needed to estimate the labeller's error on it)"
        )
        return True
    return False


def _reviewed_sample_reason(
    n: int,
    y: float,
    min_human: int,
    support: tuple[float, float] | None,
    min_per_outcome: int,
) -> str:
    """Why the reviewed sample gives a statistic (of human-label value `y`) no interval,
    or ""."""
    return (
        "no human labels in the review sample"
        if n == 0
        else f"only {n} reviewed units in the random sample (at least {min_human} needed)"
        if n < min_human
        else "undefined on the reviewed sample"
        if not math.isfinite(y)
        else _support_reason(support, min_per_outcome)
    )


def _rectified_many(
    lam: float,
    point: tuple[float, float, float],
    resampled: tuple[np.ndarray, np.ndarray, np.ndarray],
    big_n: int,
    few: bool,
) -> tuple[float, np.ndarray, str]:
    """One statistic's (value, resampled values, method) from its (human, automatic
    reviewed, automatic unreviewed) point values and resamples: rectified with `lam`, or
    the human labels' when every unit was reviewed."""
    y, yl, yu = point
    by, byl, byu = resampled
    if not big_n:
        return y, by, "bootstrap of the human labels (every unit reviewed)"
    value = lam * yu + y - lam * yl
    boot = lam * byu + by - lam * byl
    method = (
        f"prediction-powered bootstrap (Zrnic 2024), percentile interval, power-tuned λ = {lam:.3f}"
        if not few
        else "bootstrap of the human labels only (too few disagreements for PPI)"
    )
    return value, boot, method


def _resamples_reason(boot: np.ndarray, n_resamples: int) -> str:
    """Why a statistic's resampled values give no interval (they do not vary, or it is
    undefined on too many resamples), or ""."""
    undefined = int(np.sum(~np.isfinite(boot)))
    finite = boot[np.isfinite(boot)]
    if finite.size and float(np.ptp(finite)) == 0.0:
        return (
            "no variation in the reviewed sample (e.g. no unit of this group among the "
            "reviewed ones): a zero-width interval would claim certainty"
        )
    if undefined > MAX_UNDEFINED_RESAMPLES * n_resamples:
        return f"undefined on {undefined} of {n_resamples} resamples"
    return ""


def ppi_bootstrap_many(
    theta: ThetaMany,
    n: int,
    unlabeled_counts: np.ndarray,
    disagreements: int,
    *,
    n_resamples: int = 1000,
    n_resamples_lam: int = 50,
    alpha: float = 0.05,
    seed: int = 0,
    min_human: int = MIN_HUMAN,
    min_per_outcome: int = MIN_PER_OUTCOME,
    min_disagreements: int = MIN_DISAGREEMENTS,
) -> dict[str, PPIResult]:
    """`ppi_bootstrap` for every statistic `theta` gives, vectorised over resamples.

    Same estimator as `ppi_bootstrap` (Zrnic 2024): θ̂ = λ·θ(Ŷ_unlabelled) + θ(Y) − λ·θ(Ŷ),
    λ power-tuned per statistic from `n_resamples_lam` resamples and clipped to [0, 1]
    (0 when fewer than `min_disagreements` reviewed units differ), percentile interval
    over `n_resamples` resamples that redraw the reviewed units (human and automatic
    together) and, independently, the unreviewed ones. The unreviewed units may carry
    counts (`unlabeled_counts`: how many identical units each row stands for), so a
    bootstrap over N = sum(counts) units costs only the distinct ones. The
    automatic-only value and interval are θ over all units' automatic labels; the bias
    is θ(Ŷ) − θ(Y) on the reviewed units.

    No interval for a statistic with fewer than `min_per_outcome` reviewed units pulling
    it each way (`_support`; for a share, units with and without the outcome).
    """
    counts = np.asarray(unlabeled_counts, dtype=float)
    big_n = int(counts.sum())
    rng = np.random.default_rng(seed)
    lo_q, hi_q = alpha / 2, 1 - alpha / 2
    ones_l, ones_u = np.ones((1, n)), counts[None, :]
    point_y = theta("human", ones_l) if n else {}
    point_yl = theta("labeled", ones_l) if n else {}
    point_yu = theta("unlabeled", ones_u) if big_n else {}
    names = list(dict.fromkeys([*point_yu, *point_yl, *point_y]))

    point_all = theta("all", np.hstack([ones_l, ones_u]))  # all units' automatic labels
    few = disagreements < min_disagreements
    informative = _informative_units(theta, n) if n and not few else {}
    support = _support(theta, n) if n >= min_human else {}
    base_notes = (
        [
            f"human and automatic labels differ on {disagreements} of {n} reviewed units "
            f"(at least {min_disagreements} needed to estimate the labeller's error)"
        ]
        if few and n
        else []
    )
    lam = dict.fromkeys(names, 0.0)  # λ per statistic
    if n and big_n and not few:
        lam.update(_power_tuned_lambdas(theta, rng, n, counts, n_resamples_lam, names))
    boot_sets = _resample_rows(
        theta, rng, n, counts, n_resamples, ("human", "labeled", "unlabeled", "all")
    )
    by, byl, byu, ball = (boot_sets[k] for k in ("human", "labeled", "unlabeled", "all"))
    out: dict[str, PPIResult] = {}
    nan_row = np.full(n_resamples, np.nan)
    for name in names:
        notes = list(base_notes)
        few_here = few or _few_informative(informative.get(name), n, min_disagreements, notes)
        y = float(point_y.get(name, [math.nan])[0]) if n else math.nan
        yl = float(point_yl.get(name, [math.nan])[0]) if n else math.nan
        yu = float(point_yu.get(name, [math.nan])[0]) if big_n else math.nan
        auto_value = float(point_all.get(name, [math.nan])[0])
        auto_ci = _percentile(list(ball.get(name, nan_row)), lo_q, hi_q, notes, "automatic-only")
        bias = yl - y
        common: dict[str, Any] = dict(
            automatic_value=auto_value, automatic_ci=auto_ci, bias=bias, n_human=n,
            n_total=n + big_n,
        )  # fmt: skip
        reason = _reviewed_sample_reason(n, y, min_human, support.get(name), min_per_outcome)
        if reason:
            out[name] = PPIResult(
                value=y, ci=NAN_CI, bias_ci=NAN_CI, valid=False, reason=reason, **common
            )
            continue
        lam_used = lam[name] if big_n and not few_here else 0.0
        resampled = (by.get(name, nan_row), byl.get(name, nan_row), byu.get(name, nan_row))
        value, boot, method = _rectified_many(lam_used, (y, yl, yu), resampled, big_n, few_here)
        bias_ci = (
            NAN_CI
            if few_here
            else _percentile(
                list(byl.get(name, nan_row) - by.get(name, nan_row)), lo_q, hi_q, notes, "bias"
            )
        )
        if reason := _resamples_reason(boot, n_resamples):
            out[name] = PPIResult(
                value=value, ci=NAN_CI, bias_ci=bias_ci, valid=False, reason=reason,
                lam=lam_used, method=method, notes=tuple(notes), **common,
            )  # fmt: skip
            continue
        ci = _percentile(list(boot), lo_q, hi_q, notes, "PPI")
        out[name] = PPIResult(value=value, ci=ci, bias_ci=bias_ci, valid=True, lam=lam_used,
                              method=method, notes=tuple(notes), **common)  # fmt: skip
    return out
