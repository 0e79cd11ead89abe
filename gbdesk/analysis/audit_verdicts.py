"""An audit's verdict of every marked metric of a probe at one look.

At each look (`gbdesk.maths.sequential.Looks`) the audit computes, for every marked
metric, from the answers so far:

* the **value** and the reference's own 95 % interval and mark (`Probe.metrics`, its
  bootstrap, unchanged);
* the **audit interval**: `gbdesk.analysis.intervals.metric_intervals` at the look's
  level 1 − α — closed-form intervals that hold their level from 10 items up, near the
  bounds and at a gap of 0 (effective-sample-size Wilson for shares, MOVER for
  differences, the signed parts through |·| and max; docs/metrics.md), with the
  finite-population correction of the probe's pool (`pool_size`). Ten identical answers
  leave a Wilson-wide interval, never a zero-width one (the earlier pseudo-answers are
  not needed any more);
* the **verdict**: the marks the audit interval allows (`gbdesk.maths.verdicts`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from gbdesk.analysis.intervals import metric_intervals, pool_size
from gbdesk.contract import ItemResult, Probe
from gbdesk.maths.sequential import Looks, interval_at_level
from gbdesk.maths.stats import iter_bootstrap_resamples
from gbdesk.maths.verdicts import Verdict, verdict

#: resamples of the reference's 95 % interval when no run metrics are given (its count)
RESAMPLES = 1000
SEED = 123


@dataclass(frozen=True)
class AuditVerdict:
    """One marked metric at one look of an audit."""

    probe: str
    metric: str
    title: str
    value: float
    ci: tuple[float, float]  # the audit interval (at the look's level, `metric_intervals`)
    ci95: tuple[float, float]  # the reference's 95 % interval on the same answers
    verdict: Verdict
    items: int  # items with a readable answer the metric rests on
    generations: int  # answers of the probe so far
    level: float  # the audit interval's confidence level

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "metric": self.metric,
            "title": self.title,
            "value": _num(self.value),
            "ci": [_num(self.ci[0]), _num(self.ci[1])],
            "ci_95": [_num(self.ci95[0]), _num(self.ci95[1])],
            "marks": list(self.verdict.marks),
            "decided": self.verdict.decided,
            "verdict": self.verdict.words(),
            "study_mark": self.verdict.study_mark,
            "items": self.items,
            "generations": self.generations,
            "level": round(self.level, 6),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditVerdict:
        v = Verdict(
            data["metric"],
            tuple(data.get("marks") or ()),
            data.get("study_mark"),
            int(data.get("items") or 0),
        )
        return cls(
            data["probe"], data["metric"], data.get("title") or data["metric"],
            _nan(data.get("value")), _pair(data.get("ci")), _pair(data.get("ci_95")), v,
            int(data.get("items") or 0), int(data.get("generations") or 0),
            float(data.get("level") or 0.95),
        )  # fmt: skip


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def _pair(x: Any) -> tuple[float, float]:
    if not x:
        return (math.nan, math.nan)
    return (_nan(x[0]), _nan(x[1]))


def look_verdicts(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    looks: Looks,
    generations: int,
    *,
    resamples: int = RESAMPLES,
    reference: dict[str, Any] | None = None,
    items: int | None = None,
    pool: int | None = None,
) -> list[AuditVerdict]:
    """Every marked metric of `probe` on `results` at one look (see the module): the look
    at `items` items drawn (default: every result), whose level the grid `looks` sets.
    `reference`: the run's own metrics (`compute_metrics`), whose 95 % intervals and
    marks are the reference's; without them the 95 % interval is recomputed with the
    reference's bootstrap (`resamples` of them; 0: none, then `ci95` is NaN and the
    verdict carries no study mark — a simulation that needs only the verdicts).
    `pool`: the items the run samples from (default: `pool_size(probe, params)`)."""
    answered = [r for r in results if r.labels]
    marked = list(probe.mark_definitions)
    drawn = len(results) if items is None else int(items)
    level = looks.level_at(drawn)
    if not answered or not marked:
        return [_unmeasured(probe, name, generations, level) for name in marked]
    plain = probe.metrics(answered, bootstrap=False, params=params)
    if pool is None:
        pool = pool_size(probe, params)
    audit = metric_intervals(probe, answered, params, 1 - level, marked, pool=pool)
    ninety_five = (
        _resampled(probe, answered, params, marked, resamples)
        if reference is None and resamples
        else {}
    )
    out = []
    title = probe.capabilities.presentation.metric_title
    for name in marked:
        m = plain.get(name)
        if m is None or not math.isfinite(m.value) or not math.isfinite(audit[name][0]):
            out.append(_unmeasured(probe, name, generations, level))
            continue
        ci = audit[name]
        if reference is not None and name in reference:
            ci95 = tuple(reference[name].ci)
        elif name in ninety_five:
            ci95 = interval_at_level(list(ninety_five[name]), 0.95)
        else:
            ci95 = (math.nan, math.nan)
        v = verdict(probe.mark_definitions[name], ci, m.n, study_ci=ci95)
        out.append(
            AuditVerdict(
                probe.name, name, title(name), m.value, ci, ci95, v, m.n, generations, level
            )
        )
    return out


def _resampled(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    names: list[str],
    resamples: int,
) -> dict[str, Any]:
    """The marked metrics on the reference's bootstrap resamples of `results` (seed 123)."""
    draws = iter_bootstrap_resamples(len(results), resamples, SEED, as_array=True)
    resampling = probe.capabilities.resampling
    if resampling is None:
        raise TypeError(f"{probe.name} computes no metrics on resamples")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = resampling.metrics(results, params, [None] * resamples, idx=draws, names=names)
    return got or {}


def _unmeasured(probe: Probe, name: str, generations: int, level: float) -> AuditVerdict:
    nan = (math.nan, math.nan)
    v = verdict(probe.mark_definitions.get(name), nan, 0)
    title = probe.capabilities.presentation.metric_title(name)
    return AuditVerdict(probe.name, name, title, math.nan, nan, nan, v, 0, generations, level)
