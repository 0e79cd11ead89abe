"""Many statistics at once, from resampled values (`gbdesk.analysis.ppi_metrics`): the
prediction-powered bootstrap of `ppi_bootstrap`, vectorised over resamples as unit
multiplicities, with per-statistic checks that the reviewed sample bears on each."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gbdesk.maths.ppi.common import (
    MAX_UNDEFINED_RESAMPLES,
    MIN_DISAGREEMENTS,
    MIN_HUMAN,
    MIN_PER_OUTCOME,
    NAN_CI,
    PPIResult,
    _percentile,
)

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


def _at(values: dict[str, np.ndarray], name: str) -> float:
    """A statistic's value at one row of weights, NaN when `theta` gave none."""
    return float(values.get(name, [math.nan])[0])


def _resampled_result(
    value: float,
    boot: np.ndarray,
    bias_ci: tuple[float, float],
    lam: float,
    method: str,
    notes: list[str],
    common: dict[str, Any],
    n_resamples: int,
    quantiles: tuple[float, float],
) -> PPIResult:
    """One statistic's result from its resampled values: no interval when they do not
    vary or are undefined on too many resamples (`_resamples_reason`), else their
    percentile interval at `quantiles`."""
    if reason := _resamples_reason(boot, n_resamples):
        return PPIResult(
            value=value, ci=NAN_CI, bias_ci=bias_ci, valid=False, reason=reason, lam=lam,
            method=method, notes=tuple(notes), **common,
        )  # fmt: skip
    ci = _percentile(list(boot), *quantiles, notes, "PPI")
    return PPIResult(value=value, ci=ci, bias_ci=bias_ci, valid=True, lam=lam,
                     method=method, notes=tuple(notes), **common)  # fmt: skip


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
        # (point_y and point_yl are {} without reviewed units, point_yu without others)
        y, yl, yu, auto_value = (_at(p, name) for p in (point_y, point_yl, point_yu, point_all))
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
            else _percentile(list(resampled[1] - resampled[0]), lo_q, hi_q, notes, "bias")
        )
        out[name] = _resampled_result(
            value, boot, bias_ci, lam_used, method, notes, common, n_resamples, (lo_q, hi_q)
        )
    return out
