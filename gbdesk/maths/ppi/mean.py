"""Means and shares (a per-unit value averaged over units): PPI++ (Angelopoulos, Duchi &
Zrnic 2023, arXiv:2311.01453) through the authors' package `ppi_py`, with its
power-tuning parameter λ estimated from the data and clipped to [0, 1]."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gbdesk.maths.ppi.common import (
    MIN_DISAGREEMENTS,
    MIN_HUMAN,
    MIN_PER_OUTCOME,
    NAN_CI,
    Interval,
    PPIResult,
    _note_few_disagreements,
    _pair,
    _ppi_py,
    _z,
)

logger = logging.getLogger(__name__)


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
