"""Does a verdict survive a rewording? The runs of one probe on one model under several
wordings of its prompts (`gbdesk run --wordings`), compared metric by metric.

A run's **wording family** is the runs of the same probe (and version), on the same
model, with the same generation settings and the same parameters but for the wording
(`wording`, and the template it brings): per wording the newest such run, the run itself
for its own wording. Its items are the same under every wording (same keys, same seeds).

Per metric (`WordingSpread`):

* each wording's value, interval and the marks its interval allows (each run's own metrics:
  the probe's intervals, `gbdesk.maths.verdicts`);
* the **range** of the values across wordings;
* the **share of variance due to wording**, from a cluster bootstrap over items: the items
  present under every wording are resampled together (one draw of items serves every
  wording, so the item noise the wordings share cancels). With θ̂_w the value under
  wording w and θ*_bw its value in resample b:
  item variance V_items = mean over w of Var_b(θ*_bw) (how much the metric moves with the
  draw of items); wording variance V_wording = max(0, Var_w(θ̂_w) − mean_b Var_w(θ*_bw −
  θ̂_w)) (the spread of the values across wordings beyond what item noise alone gives
  them); share = V_wording / (V_wording + V_items). The bootstrap also gives a test of
  "no wording effect": p = (1 + #{b: Var_w(θ*_bw − θ̂_w) ≥ Var_w(θ̂_w)}) / (B + 1);
* **verdict stability** (`stable`): true when every wording's interval allows the same one
  decided mark, or when all the wordings' intervals overlap (they share a point: nothing
  tells the wordings apart); false otherwise — the verdict depends on the wording. A metric
  measured under fewer than two wordings has no stability (None).

For several models (one family each), `orders` says whether their order on a metric is
the same under every wording.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gbdesk.analysis.results import compute_metrics, item_results
from gbdesk.analysis.shown import metric_verdict, shown_ci
from gbdesk.contract import get_probe, wording_id
from gbdesk.maths.resampling import resample_values
from gbdesk.maths.stats import MetricValue
from gbdesk.maths.verdicts import Verdict
from gbdesk.store import Store

log = logging.getLogger(__name__)

#: parameters a wording sets (left out when runs are compared for a family)
WORDING_PARAMS = ("wording", "template", "template_name")
#: resamples of the cluster bootstrap over items, and its seed
RESAMPLES = 400
SEED = 20261128


#: parameters that never tell two runs of one family apart: the wording's own, and the
#: file an imported run came from (a family exported and imported back comes as one file
#: or as one per wording, from wherever)
NOT_FRAME = (*WORDING_PARAMS, "imported_from")


def _frame(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in NOT_FRAME}


def wording_family(store: Store, run_id: int) -> dict[int, int]:
    """Wording id → run id of the run's wording family (see the module), in wording order."""
    run = store.get_run(run_id)
    own = wording_id(run["params"])
    family = {own: run_id}
    if own == 0 and run["params"].get("template_name") == "custom":
        return family  # a custom template is not wording 0 of anything
    for row in reversed(store.list_runs()):  # newest first
        if (
            row["id"] == run_id
            or row["probe"] != run["probe"]
            or row["probe_version"] != run["probe_version"]
            or row["model_id"] != run["model_id"]
            or row["generation"] != run["generation"]
            or _frame(row["params"]) != _frame(run["params"])
        ):
            continue
        w = wording_id(row["params"])
        if w == 0 and row["params"].get("template_name") == "custom":
            continue
        family.setdefault(w, row["id"])
    return dict(sorted(family.items()))


@dataclass
class WordingValue:
    """One metric under one wording."""

    wording: int
    run_id: int
    value: float
    ci: tuple[float, float] | None
    verdict: Verdict | None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "value": None if math.isnan(self.value) else self.value,
            "ci": list(self.ci) if self.ci is not None else None,
            "marks": list(self.verdict.marks) if self.verdict is not None else [],
            "decided": bool(self.verdict and self.verdict.decided),
        }


@dataclass
class WordingSpread:
    """One metric across a family's wordings (see the module for every figure)."""

    metric: str
    title: str
    values: list[WordingValue]
    marked: bool
    share: float | None = None
    p_value: float | None = None
    var_wording: float | None = None
    var_items: float | None = None

    @property
    def measured(self) -> list[WordingValue]:
        return [v for v in self.values if not math.isnan(v.value)]

    @property
    def range(self) -> float | None:
        got = [v.value for v in self.measured]
        return max(got) - min(got) if len(got) >= 2 else None

    @property
    def decided_marks(self) -> list[str | None]:
        return [v.verdict.mark if v.verdict is not None else None for v in self.measured]

    @property
    def stable(self) -> bool | None:
        """The rule of the module: one decided mark everywhere, or intervals that overlap."""
        got = self.measured
        if len(got) < 2:
            return None
        marks = self.decided_marks
        if self.marked and all(marks) and len(set(marks)) == 1:
            return True
        cis = [v.ci for v in got]
        if any(ci is None for ci in cis):
            return None
        return max(ci[0] for ci in cis) <= min(ci[1] for ci in cis)  # type: ignore[index]

    def marks_text(self) -> str:
        """The decided marks by how many wordings decide them: "D under 1, undecided
        under 4"."""
        marks = self.decided_marks
        counts = Counter(m for m in marks if m)
        parts = [f"{m} under {k}" for m, k in sorted(counts.items())]
        undecided = sum(1 for m in marks if not m)
        if undecided:
            parts.append(f"undecided under {undecided}")
        return ", ".join(parts)

    def sentence(self) -> str:
        """ "decided D under 5 of 5 wordings: the verdict holds" / "A under 3, C under 2:
        the verdict depends on the wording" / "the intervals of all 5 wordings overlap: no
        wording effect shown"."""
        got = self.measured
        n = len(self.values)
        if len(got) < 2:
            return f"measured under {len(got)} of {n} wordings: nothing to compare"
        stable = self.stable
        marks = self.decided_marks
        counts = Counter(m for m in marks if m)
        if self.marked and len(counts) == 1 and all(marks):
            return (
                f"decided {next(iter(counts))} under {len(got)} of {n} wordings: the verdict holds"
            )
        what = "verdict" if self.marked else "value"
        if stable is None:
            tail = "some wordings have no interval: cannot tell whether it depends on the wording"
        elif stable:
            tail = "the intervals overlap: no wording effect shown"
        else:
            tail = f"the {what} depends on the wording"
        if self.marked and counts:
            return f"{self.marks_text()}: {tail}"
        if stable:
            return f"the intervals of all {len(got)} wordings overlap: no wording effect shown"
        return tail if stable is None else f"the wordings' intervals do not all overlap: {tail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "range": self.range,
            "wording_share": self.share,
            "wording_p": self.p_value,
            "var_wording": self.var_wording,
            "var_items": self.var_items,
            "stable": self.stable,
            "sentence": self.sentence(),
        }


@dataclass
class WordingReport:
    """A run's wording family and its metrics across wordings."""

    probe: str
    family: dict[int, int]
    names: dict[int, str]
    spreads: dict[str, WordingSpread] = field(default_factory=dict)
    items: int = 0

    @property
    def wordings(self) -> list[int]:
        return list(self.family)

    def by_wording(self) -> dict[str, dict[str, Any]]:
        """`{"0": {metric: {value, ci, marks, …}}, "1": …}` (the JSON of issue 32)."""
        out: dict[str, dict[str, Any]] = {str(w): {} for w in self.family}
        for name, spread in self.spreads.items():
            for v in spread.values:
                out[str(v.wording)][name] = v.to_json()
        return out

    def stable(self) -> dict[str, bool | None]:
        return {name: s.stable for name, s in self.spreads.items()}

    def depends_on_wording(self) -> list[WordingSpread]:
        """Marked metrics whose verdict depends on the wording (stable is False)."""
        return [s for s in self.spreads.values() if s.marked and s.stable is False]

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "runs": {str(w): r for w, r in self.family.items()},
            "names": {str(w): n for w, n in self.names.items()},
            "items_compared": self.items,
            "metrics": {name: s.to_json() for name, s in self.spreads.items()},
        }


def wording_report(
    store: Store,
    run_id: int,
    labels: str = "auto",
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    metrics: list[str] | None = None,
) -> WordingReport:
    """The run's wording family compared (see the module); `metrics`: only these (default:
    every metric the wording-0 run has, else the run's own)."""
    family = wording_family(store, run_id)
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    available = {w.id: w.name for w in probe.capabilities.parameters.wordings()}
    names = {w: available.get(w, f"wording {w}") for w in family}
    per_run = {w: compute_metrics(store, r, labels) for w, r in family.items()}
    wanted = metrics or list(per_run.get(0, per_run[wording_id(run["params"])]))
    report = WordingReport(run["probe"], family, names)
    for name in wanted:
        values = []
        for w, r in family.items():
            m = per_run[w].get(name)
            if m is None:
                continue
            values.append(
                WordingValue(
                    w, r, float(m.value), shown_ci(probe, name, m), metric_verdict(probe, name, m)
                )
            )
        title = probe.capabilities.presentation.metric_title(name)
        report.spreads[name] = WordingSpread(name, title, values, name in probe.mark_definitions)
    if len(family) >= 2 and resamples:
        _variance_shares(store, report, probe, labels, resamples, seed)
    return report


def _variance_shares(
    store: Store, report: WordingReport, probe: Any, labels: str, resamples: int, seed: int
) -> None:
    """The cluster bootstrap over the items every wording has (see the module)."""
    results = {w: item_results(store, r, labels) for w, r in report.family.items()}
    keys = set.intersection(*({r.key for r in rs} for rs in results.values()))
    order = sorted(keys)
    report.items = len(order)
    if len(order) < 2:
        return
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(order), size=(resamples, len(order)))
    draws: dict[int, dict[str, np.ndarray]] = {}
    points: dict[int, dict[str, MetricValue]] = {}
    for w, rs in results.items():
        by_key = {r.key: r for r in rs}
        aligned = [by_key[k] for k in order]
        params = store.get_run(report.family[w])["params"]
        draws[w] = resample_values(probe, aligned, params, idx)
        points[w] = probe.metrics(aligned, bootstrap=False, params=params)
    for name, spread in report.spreads.items():
        if not all(name in draws[w] and name in points[w] for w in report.family):
            continue  # e.g. a metric some wording's answers cannot give
        # the wordings that measured it (a wording with no readable answer is left out)
        measured = [w for w in report.family if not math.isnan(points[w][name].value)]
        if len(measured) < 2:
            continue
        theta = np.array([points[w][name].value for w in measured], dtype=float)
        star = np.column_stack([draws[w][name] for w in measured])  # B × W
        ok = ~np.isnan(star).any(axis=1)
        if ok.sum() < 10:
            continue
        star = star[ok]
        v_wording, v_items, share, p = split_variance(theta, star)
        spread.var_wording, spread.var_items = v_wording, v_items
        spread.share, spread.p_value = share, p


def split_variance(theta: np.ndarray, star: np.ndarray) -> tuple[float, float, float, float]:
    """(V_wording, V_items, share, p) from the values under each wording `theta` (W) and
    their values in paired resamples `star` (B × W); the formulas are the module's."""
    observed = float(np.var(theta, ddof=1))
    noise = np.var(star - theta, axis=1, ddof=1)
    v_items = float(np.mean(np.var(star, axis=0, ddof=1)))
    v_wording = max(0.0, observed - float(np.mean(noise)))
    total = v_wording + v_items
    share = v_wording / total if total > 0 else 0.0
    p = float((1 + np.sum(noise >= observed)) / (len(noise) + 1))
    return v_wording, v_items, share, p


def orders(reports: list[tuple[str, WordingReport]], metric: str) -> dict[str, Any]:
    """Several models' families on one metric: the models from lowest to highest value
    under each wording, and whether that order is the same under every wording — None
    (nothing to tell) unless at least two wordings they share measured it: one shared
    wording says nothing about a rewording."""
    common = set.intersection(*(set(r.family) for _, r in reports)) if reports else set()
    by_wording: dict[int, list[str]] = {}
    for w in sorted(common):
        vals = []
        for model, r in reports:
            spread = r.spreads.get(metric)
            v = next(
                (x.value for x in (spread.values if spread else []) if x.wording == w), math.nan
            )
            vals.append((v, model))
        if any(math.isnan(v) for v, _ in vals):
            continue
        by_wording[w] = [model for _, model in sorted(vals)]
    distinct = {tuple(o) for o in by_wording.values()}
    return {
        "metric": metric,
        "order_by_wording": {str(w): o for w, o in by_wording.items()},
        "same_order": len(distinct) == 1 if len(by_wording) >= 2 else None,
    }


def stability_line(spread: WordingSpread) -> str:
    """The metric's title and its stability sentence, with the wording share."""
    share = "" if spread.share is None else f"; wording's share of the variance {spread.share:.0%}"
    return f"{spread.title}: {spread.sentence()}{share}"


__all__ = [
    "WordingReport",
    "WordingSpread",
    "WordingValue",
    "orders",
    "stability_line",
    "wording_family",
    "wording_report",
]
