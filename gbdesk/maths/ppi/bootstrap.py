"""Any statistic of a table of units (ratios, SDeg, disparities): the prediction-powered
bootstrap of Zrnic (2024, arXiv:2405.18379), the algorithm of `ppi_py.ppboot` re-implemented
(same resampling order and formulas, so with a `numpy.random.RandomState` it reproduces
`ppboot` to the last digit)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gbdesk.maths.ppi.common import (
    MAX_UNDEFINED_RESAMPLES,
    MIN_DISAGREEMENTS,
    MIN_HUMAN,
    NAN_CI,
    Interval,
    PPIResult,
    _note_few_disagreements,
    _percentile,
)

logger = logging.getLogger(__name__)


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
    lo_q, hi_q = alpha / 2, 1 - alpha / 2
    theta = _undefined_as_nan(statistic)

    automatic_value = theta(automatic_all)
    theta_y, theta_yl, theta_yu = _point_values(theta, frames)
    out = _Outcome(automatic_value, theta_yl - theta_y, n, n + big_n)

    def plain_automatic_ci() -> Interval:
        return _automatic_bootstrap_ci(theta, automatic_all, rng, n_resamples, lo_q, hi_q,
                                       out.notes)  # fmt: skip

    if n + big_n == 0:
        return out.invalid("no units", math.nan, plain_automatic_ci())
    if n == 0:
        return out.invalid("no human labels", math.nan, plain_automatic_ci())
    if big_n == 0:
        return _human_only_bootstrap(
            theta, human, out.automatic_value, plain_automatic_ci(), out.bias, rng, n_resamples,
            lo_q, hi_q, min_human, out.notes,
        )  # fmt: skip
    if n < min_human:
        reason = f"only {n} human labels (at least {min_human} needed)"
        return out.invalid(reason, theta_y, plain_automatic_ci())
    if not math.isfinite(theta_y):
        reason = "the statistic is undefined on the human-labelled sample"
        return out.invalid(reason, math.nan, plain_automatic_ci())

    disagreements = _differing_rows(human, automatic_labeled)
    few = _note_few_disagreements(disagreements, n, min_disagreements, "rows", out.notes)
    lam_used, out.method = _bootstrap_lambda(
        theta, frames, rng, n_resamples_lam, lam, few, out.method
    )
    value = _rectified(lam_used, theta_y, theta_yl, theta_yu)
    boot, auto, bias_boot = _ppi_resamples(theta, frames, rng, n_resamples, lam_used)
    automatic_ci = _percentile(auto, lo_q, hi_q, out.notes, "automatic-only")
    bias_ci = NAN_CI if few else _percentile(bias_boot, lo_q, hi_q, out.notes, "bias")
    if reason := _undefined_reason(boot, n_resamples):
        return out.invalid(reason, value, automatic_ci)
    ci = _percentile(boot, lo_q, hi_q, out.notes, "PPI")
    return out.valid(value, ci, automatic_ci, bias_ci, lam_used)


@dataclass
class _Outcome:
    """What every result of one `ppi_bootstrap` shares, the method as chosen so far and
    the notes gathered on the way."""

    automatic_value: float
    bias: float
    n_human: int
    n_total: int
    method: str = "prediction-powered bootstrap (Zrnic 2024), percentile interval"
    notes: list[str] = field(default_factory=list)

    def invalid(self, reason: str, value: float, automatic_ci: Interval) -> PPIResult:
        """No interval, for `reason`."""
        logger.info("PPI bootstrap: no interval: %s", reason)
        return PPIResult(
            value=value, ci=NAN_CI, automatic_value=self.automatic_value,
            automatic_ci=automatic_ci, bias=self.bias, bias_ci=NAN_CI, n_human=self.n_human,
            n_total=self.n_total, valid=False, reason=reason, method=self.method,
            notes=tuple(self.notes),
        )  # fmt: skip

    def valid(
        self, value: float, ci: Interval, automatic_ci: Interval, bias_ci: Interval, lam: float
    ) -> PPIResult:
        """The interval `ci` of the estimate `value`."""
        return PPIResult(
            value=value, ci=ci, automatic_value=self.automatic_value, automatic_ci=automatic_ci,
            bias=self.bias, bias_ci=bias_ci, n_human=self.n_human, n_total=self.n_total,
            valid=True, lam=lam, method=self.method, notes=tuple(self.notes),
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
