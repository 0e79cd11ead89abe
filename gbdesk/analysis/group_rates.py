"""Group tables of the probes whose answers decide about people (no Qt): per group the items
and answers, the rate of favourable answers with its interval, and the ratio of that rate to
the highest group's with its interval, with the groups left out and why — the impact ratio
of NYC Local Law 144's bias-audit summaries (rate ÷ the highest rate; a category under 2 %
of the data left out of the ratios, its counts still shown).

A probe declares its groups (`GroupRates`, its `groups` capability); nothing here names a
probe. The rates are those of the probe's own metrics: favourable ÷ answers pooled, or
the mean over items of each item's share (`per_item`), over the answers its evaluator
could read.

Intervals (95 %). Answers are clustered in items (several attempts, several prompts of one
item), so each group's rate gets a cluster-robust variance — the linearised variance of
a ratio estimator over items for a pooled rate, the variance of the item shares' mean for
`per_item` — and the design effect it implies turns the answers into an effective count
(Kish; Rao & Scott 1992's adjustment of clustered binary data), clipped to between the
items and the answers. The rate's interval is Wilson's score interval at that count
(statsmodels). The ratio's interval combines the two rates' Wilson intervals by MOVER-R
(Donner & Zou 2012; statsmodels' implementation), which assumes the two rates independent:
for groups asked about in the same items (the same question about a woman and about a man)
their rates are positively correlated and MOVER-R is conservative. Two groups of a choice
(`exclusive`) decided in the same answers — a man or a woman ranked first from one list —
are negatively correlated instead; there the ratio's interval comes from one group's share
of the answers favouring either (a binomial share, clustered and Wilson as above:
ratio = share ÷ (1 − share)), which is exact for two groups. The highest group is chosen
from the data and no interval is adjusted for the several ratios of a table.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gbdesk.analysis.results import Run, open_run
from gbdesk.contract.capabilities import GroupRates
from gbdesk.store import Store

#: a group under this share of a table's answers is left out of the ratios (LL144's rule)
SMALL_SHARE = 0.02
#: the interval's level
ALPHA = 0.05


@dataclass(frozen=True)
class GroupRow:
    """One group of a table: its value of each dimension (`key`), counts, rate with its
    interval, and ratio to the highest rate (1 for the highest group itself, whose
    `ratio_ci` is None: the reference)."""

    key: tuple[str, ...]
    title: str
    items: int  # items with a readable answer about the group
    answers: int  # readable answers about the group
    unreadable: int  # answers about the group that could not be read
    favoured: int  # readable answers that favoured the group
    rate: float
    rate_ci: tuple[float, float]
    effective: float  # the answers' effective count after the design effect
    ratio: float
    ratio_ci: tuple[float, float] | None
    highest: bool = False


@dataclass(frozen=True)
class LeftOutGroup:
    """A group in no ratio, with its counts and why."""

    key: tuple[str, ...]
    title: str
    items: int
    answers: int
    unreadable: int
    favoured: int
    reason: str


@dataclass(frozen=True)
class GroupTable:
    """One table of a run (one set of dimensions, e.g. gender; race and gender)."""

    run_id: int
    probe: str
    dimensions: tuple[str, ...]
    rate: str  # "Yes-rate"
    favoured: str  # "a yes"
    rows: list[GroupRow]
    left_out: list[LeftOutGroup]
    answers: int  # readable answers in the table's groups
    unreadable: int  # answers in the table's groups that could not be read
    per_item: bool
    exclusive: bool
    label_mode: str
    note: str = ""  # e.g. why no ratio could be given

    @property
    def title(self) -> str:
        dims = " and ".join(d.replace("_", " ") for d in self.dimensions)
        return f"{self.rate} by {dims}"

    @property
    def highest(self) -> GroupRow | None:
        return next((r for r in self.rows if r.highest), None)


@dataclass
class _Tally:
    """A group's answers, per item position: readable, favoured, unreadable; and the
    answers' ids (to tell groups decided in the same answers)."""

    n: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    y: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    unreadable: int = 0
    answers: set[tuple[int, int]] = field(default_factory=set)
    favoured_in: dict[tuple[int, int], bool] = field(default_factory=dict)


def group_tables(store: Store, run_id: int | Run, label_mode: str = "reviewed") -> list[GroupTable]:
    """The run's group tables from the labels of `label_mode` ("ppi": the reviewed ones — a
    table counts labels, which prediction-powered estimates do not correct); [] for a
    probe without the `groups` capability or a run without answers."""
    from gbdesk.analysis.results import item_results

    run = open_run(store, run_id)
    spec = run.probe.capabilities.groups
    if spec is None:
        return []
    mode = "reviewed" if label_mode == "ppi" else label_mode
    results = item_results(store, run, mode)
    return tables_of(results, spec, run.id, run.probe.name, mode)


def tables_of(
    results: list[Any], spec: GroupRates, run_id: int = 0, probe: str = "", label_mode: str = ""
) -> list[GroupTable]:
    """The tables of `spec` over `ItemResult`s (each label read with the prompt's metadata
    over the item's)."""
    tallies: list[dict[tuple[str, ...], _Tally]] = [{} for _ in spec.tables]
    order: dict[str, dict[str, int]] = defaultdict(dict)  # first-seen order of each value
    for i, result in enumerate(results):
        for position, label in enumerate(result.labels):
            metadata = {**result.metadata, **result.prompt_metadata(position)}
            for groups, favoured in spec.candidacies(label, metadata) or ():
                for dim, value in groups.items():
                    order[dim].setdefault(value, len(order[dim]))
                for t, dims in enumerate(spec.tables):
                    if not all(d in groups for d in dims):
                        continue
                    key = tuple(str(groups[d]) for d in dims)
                    tally = tallies[t].setdefault(key, _Tally())
                    if favoured is None:
                        tally.unreadable += 1
                        continue
                    tally.n[i] += 1
                    tally.y[i] += int(bool(favoured))
                    tally.answers.add((i, position))
                    tally.favoured_in[(i, position)] = bool(favoured)
    out = []
    for dims, by_key in zip(spec.tables, tallies, strict=True):
        if not by_key:
            continue
        keys = sorted(by_key, key=functools.partial(_first_seen, order, dims))
        out.append(_table(spec, dims, keys, by_key, run_id, probe, label_mode))
    return out


def _first_seen(
    order: dict[str, dict[str, int]], dims: tuple[str, ...], key: tuple[str, ...]
) -> list[int]:
    """A key's place: each of its values in the order the run first met them."""
    return [order[d].get(v, 0) for d, v in zip(dims, key, strict=True)]


def _title(spec: GroupRates, dims: tuple[str, ...], key: tuple[str, ...]) -> str:
    return " · ".join(spec.value_title(d, v) for d, v in zip(dims, key, strict=True))


def _table(
    spec: GroupRates,
    dims: tuple[str, ...],
    keys: list[tuple[str, ...]],
    by_key: dict[tuple[str, ...], _Tally],
    run_id: int,
    probe: str,
    label_mode: str,
) -> GroupTable:
    total = sum(sum(t.n.values()) for t in by_key.values())
    unreadable = sum(t.unreadable for t in by_key.values())
    left_out: list[LeftOutGroup] = []
    kept: list[tuple[str, ...]] = []
    for key in keys:
        t = by_key[key]
        answers = sum(t.n.values())
        if answers == 0:
            reason = "no readable answer"
        elif answers < SMALL_SHARE * total:
            reason = (
                f"under {100 * SMALL_SHARE:g} % of the table's readable answers ({answers:,} of "
                f"{total:,}): left out of the ratios, as Local Law 144 allows"
            )
        else:
            kept.append(key)
            continue
        favoured = sum(t.y.values())
        title = _title(spec, dims, key)
        left_out.append(
            LeftOutGroup(key, title, _items(t), answers, t.unreadable, favoured, reason)
        )
    estimates = {k: rate_interval(by_key[k], spec.per_item) for k in kept}
    rows: list[GroupRow] = []
    note = ""
    top = max(kept, key=lambda k: estimates[k][0], default=None)
    top_rate = estimates[top][0] if top is not None else math.nan
    if top is not None and not top_rate > 0:
        note = "every rate is 0, so no ratio is defined"
    for key in kept:
        t = by_key[key]
        rate, ci, effective = estimates[key]
        if key == top:
            ratio, ratio_ci = (1.0 if top_rate > 0 else math.nan), None
        elif top is None or not top_rate > 0:
            ratio, ratio_ci = math.nan, None
        else:
            ratio = rate / top_rate
            ratio_ci = _ratio_interval(spec, t, by_key[top], estimates[key], estimates[top])
        row = GroupRow(
            key, _title(spec, dims, key), _items(t), sum(t.n.values()), t.unreadable,
            sum(t.y.values()), rate, ci, effective, ratio, ratio_ci, key == top,
        )  # fmt: skip
        rows.append(row)
    return GroupTable(
        run_id, probe, dims, spec.rate, spec.favoured, rows, left_out, total, unreadable,
        spec.per_item, spec.exclusive, label_mode, note,
    )  # fmt: skip


def _items(t: _Tally) -> int:
    return sum(1 for n in t.n.values() if n)


def clustered_rate(n: np.ndarray, y: np.ndarray, per_item: bool) -> tuple[float, float]:
    """(rate, its variance over items) from per-item answers `n` and favourable answers `y`
    (items with n > 0): pooled p = Σy/Σn with the linearised variance of a ratio estimator,
    Σ(yᵢ − p·nᵢ)² / (Σn)²; or the mean of the item shares sᵢ = yᵢ/nᵢ with the variance of a
    mean, Σ(sᵢ − p)² / m². Neither has a small-sample factor, like the binomial variance
    p(1 − p)/N they are compared with (`effective_count`): one answer per item gives a
    design effect of exactly 1, i.e. Wilson's interval itself."""
    m = len(n)
    if per_item:
        shares = y / n
        rate = float(shares.mean())
        var = float(((shares - rate) ** 2).sum() / m**2)
    else:
        rate = float(y.sum() / n.sum())
        var = float(((y - rate * n) ** 2).sum() / n.sum() ** 2)
    return rate, var


def effective_count(rate: float, var: float, items: int, answers: int) -> float:
    """The answers' effective count: rate·(1 − rate) / variance (the answers divided by the
    design effect), clipped to [items, answers]; the items when the variance says nothing
    (a rate of 0 or 1, or no spread between items)."""
    if 0 < rate < 1 and var > 0:
        return float(min(answers, max(items, rate * (1 - rate) / var)))
    return float(items)


def wilson(rate: float, count: float) -> tuple[float, float]:
    """Wilson's score interval of a rate from `count` (effective) answers (statsmodels)."""
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(rate * count, count, alpha=ALPHA, method="wilson")
    return float(lo), float(hi)


def rate_interval(t: _Tally, per_item: bool) -> tuple[float, tuple[float, float], float]:
    """(rate, its interval, the effective count) of a group."""
    positions = sorted(i for i, n in t.n.items() if n)
    n = np.array([t.n[i] for i in positions], dtype=float)
    y = np.array([t.y[i] for i in positions], dtype=float)
    rate, var = clustered_rate(n, y, per_item)
    effective = effective_count(rate, var, len(positions), int(n.sum()))
    return rate, wilson(rate, effective), effective


def mover_ratio(
    p1: float, ci1: tuple[float, float], p2: float, ci2: tuple[float, float]
) -> tuple[float, float]:
    """The MOVER-R interval of p1 / p2 from the two rates' intervals (Donner & Zou 2012;
    statsmodels' `_mover_confint`, the limit where a denominator is exactly 0)."""
    from statsmodels.stats._inference_tools import _mover_confint

    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = _mover_confint(p1, p2, ci1, ci2, contrast="ratio")
    lo, hi = float(lo), float(hi)
    if math.isnan(lo) and p1 > 0:  # u2 = 2·p2: the lower limit's limit
        l1 = ci1[0]
        lo = l1 * (2 * p1 - l1) / (2 * p1 * p2)
    return max(0.0, lo), hi


def share_ratio(share: float, ci: tuple[float, float]) -> tuple[float, float]:
    """The interval of s / (1 − s) from a share's interval (monotone in s)."""

    def odds(s: float) -> float:
        return math.inf if s >= 1 else s / (1 - s)

    return odds(ci[0]), odds(ci[1])


def _ratio_interval(
    spec: GroupRates,
    group: _Tally,
    top: _Tally,
    est: tuple[float, tuple[float, float], float],
    top_est: tuple[float, tuple[float, float], float],
) -> tuple[float, float]:
    """The interval of a group's ratio to the highest group (see the module)."""
    if spec.exclusive and group.answers == top.answers:
        # one share of the answers that favoured either group, clustered by item
        n: dict[int, int] = defaultdict(int)
        y: dict[int, int] = defaultdict(int)
        for answer in group.answers:
            g, t = group.favoured_in[answer], top.favoured_in[answer]
            if g or t:
                n[answer[0]] += 1
                y[answer[0]] += int(g)
        positions = sorted(n)
        if not positions:
            return (math.nan, math.nan)
        nn = np.array([n[i] for i in positions], dtype=float)
        yy = np.array([y[i] for i in positions], dtype=float)
        share, var = clustered_rate(nn, yy, spec.per_item)
        effective = effective_count(share, var, len(positions), int(nn.sum()))
        return share_ratio(share, wilson(share, effective))
    return mover_ratio(est[0], est[1], top_est[0], top_est[1])
