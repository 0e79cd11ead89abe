"""Paired comparisons of two runs of the same probe on the same items (no Qt).

Two runs of one probe (two models, two quantisations, two templates …) are compared
item by item:

* **Pairing.** Items are paired by item key. The compared items are those with at least
  one stored attempt (or score) in both runs, in run A's order; every other item is left
  out and a warning says how many.
* **Paired bootstrap over items.** `rng = numpy.random.default_rng(seed)`;
  `idx = rng.integers(0, n, size=(resamples, n))`: row r draws n item positions (of the
  common items, in run A's order) with replacement. Both runs' metrics are recomputed on
  the *same* drawn items — each drawn item keeps all its attempts — and the resampled
  difference is d*_r = metric_B − metric_A. Resamples in which the metric is undefined
  (NaN) in either run are left out; a metric undefined in more than half of them is not
  tested.
* **Interval.** The 95 % percentile interval of the d*_r (`numpy.percentile`, linear
  interpolation).
* **p-value** (two-sided, with the +1 correction so it is never 0):
  p = min(1, 2 · min((1 + #{d* ≤ 0}) / (R + 1), (1 + #{d* ≥ 0}) / (R + 1))), R the number
  of resamples used. With 1,000 resamples the smallest possible p is 2/1001 ≈ 0.002.
* **Multiple comparisons.** Benjamini–Hochberg over the tested metrics of the comparison
  (`statsmodels.stats.multitest.multipletests(method="fdr_bh")`, α = 0.05). A difference
  is *established* when BH rejects it and the 95 % interval excludes 0 on the side of the
  point difference.
* **Point values** a, b and diff = b − a are the probe's own metrics on the full common
  item set (which equal the single-run metrics only when both runs have the same items).

Which metrics are tested is the probe's call (`Ppi.paired_test_exclusion`): counts that
grow with the number of items, one item's own value, classifier accuracies on a split, or
statistics computed across all items at once are reported without a test, with the
reason. Resampled values come from the probe's fast path where it has one
(`Resampling.metrics`, see `gbdesk.maths.resampling`) — checked against the probe's own
point values on the full item set; a metric that disagrees is reported without a test
and logged — else `Probe.metrics` is recomputed on every resample. Measured with 1,000
resamples on a shared, loaded 2-core machine (fake-backend runs): 745 attempts of
character profiles per run, 0.65 s; 3,565 GEST items, 3.2 s; 1,000 stories of
a story study per run, 1.4 s (recomputing `metrics` would take ~14 min).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from statsmodels.stats.multitest import multipletests

from gbdesk.analysis.results import LABEL_MODES, is_label_mode, item_results, open_run
from gbdesk.contract import ItemResult, Probe
from gbdesk.maths.resampling import Values, resample_values
from gbdesk.store import Store
from gbdesk.support.errors import UserError
from gbdesk.support.format import fmt
from gbdesk.support.limits import LIMITS, MAX_RESAMPLE_CELLS

log = logging.getLogger(__name__)

ALPHA = 0.05
DEFAULT_RESAMPLES = 1000
MIN_VALID_SHARE = 0.5  # a metric undefined in more resamples than this share is not tested
# run parameters that only select items (their differences show up as item differences)
_ITEM_SELECTION_PARAMS = {"limit", "sample", "sample_seed", "imported_from", "template_name"}
# generation settings that change what is estimated (seed and batching do not)
_GENERATION_KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens", "prompt_mode")
_CHECK_TOLERANCE = 1e-9


# -- results ------------------------------------------------------------------------------------
@dataclass
class MetricComparison:
    """One metric of a comparison: both runs' values, the paired difference and its test."""

    name: str
    a: float
    b: float
    diff: float
    ci: tuple[float, float] = (math.nan, math.nan)
    p: float | None = None
    p_adj: float | None = None
    established: bool = False
    sentence: str = ""
    tested: bool = False
    reason: str | None = None  # why it was not tested
    resamples: int = 0  # resamples in which the difference was defined
    description: str = ""
    title: str = ""  # the metric's name for people (`Presentation.metric_title`)

    @property
    def what(self) -> str:
        """The metric in a sentence: "share of male characters (masculine_rate)"."""
        if not self.title or self.title == self.name:
            return self.name
        t = self.title
        if len(t) > 1 and t[1].islower():
            t = t[0].lower() + t[1:]
        return f"{t} ({self.name})"

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "a": _num(self.a),
            "b": _num(self.b),
            "diff": _num(self.diff),
            "ci": [_num(self.ci[0]), _num(self.ci[1])],
            "p": _num(self.p),
            "p_adj": _num(self.p_adj),
            "established": self.established,
            "sentence": self.sentence,
            "tested": self.tested,
            "reason": self.reason,
            "resamples": self.resamples,
        }


@dataclass
class Comparison:
    """A paired comparison of run B against run A (differences are B − A)."""

    run_a: int
    run_b: int
    probe: str
    model_a: str
    model_b: str
    label_mode: str
    items: int
    resamples: int
    seed: int
    warnings: list[str] = field(default_factory=list)
    metrics: dict[str, MetricComparison] = field(default_factory=dict)

    @property
    def established(self) -> list[MetricComparison]:
        return [m for m in self.metrics.values() if m.established]

    def summary(self) -> str:
        """The established differences, one sentence each, or that none was established."""
        tested = sum(m.tested for m in self.metrics.values())
        if not tested:
            return "No metric could be tested, so no difference was established."
        if not self.established:
            return (
                f"No difference established between A ({self.model_a}) and B "
                f"({self.model_b}) on any of the {tested} tested metrics "
                f"(Benjamini–Hochberg, α = {ALPHA})."
            )
        return "\n".join(m.sentence for m in self.established)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "model_a": self.model_a,
            "model_b": self.model_b,
            "probe": self.probe,
            "labels": self.label_mode,
            "items": self.items,
            "resamples": self.resamples,
            "seed": self.seed,
            "alpha": ALPHA,
            "warnings": list(self.warnings),
            "summary": self.summary(),
            "metrics": {name: m.to_json() for name, m in self.metrics.items()},
        }


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


# -- the comparison -----------------------------------------------------------------------------
def compare_runs(
    store: Store,
    run_a: int,
    run_b: int,
    label_mode: str = "auto",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Comparison:
    """Compare run B with run A item by item (see the module docstring for the method)."""
    _check_settings(label_mode, resamples, seed)
    ra, rb = store.get_run(run_a), store.get_run(run_b)
    if ra["probe"] != rb["probe"]:
        raise UserError(
            f"run {run_a} is a {ra['probe']} run and run {run_b} a {rb['probe']} run: "
            "only runs of the same probe can be compared"
        )
    opened_a, opened_b = open_run(store, ra, labelled=True), open_run(store, rb, labelled=True)
    probe = opened_a.probe
    res_a = _present(item_results(store, opened_a, label_mode))
    res_b = _present(item_results(store, opened_b, label_mode))
    keys = [k for k in res_a if k in res_b]
    _check_common_items(run_a, run_b, len(keys), resamples)
    items_a = [res_a[k] for k in keys]
    items_b = [res_b[k] for k in keys]
    model_a, model_b = _model_names(store, ra, rb)
    comparison = Comparison(
        run_a=run_a,
        run_b=run_b,
        probe=probe.name,
        model_a=model_a,
        model_b=model_b,
        label_mode=label_mode,
        items=len(keys),
        resamples=resamples,
        seed=seed,
        warnings=_warnings(ra, rb, res_a, res_b, items_a, items_b),
    )
    point_a = probe.metrics(items_a, bootstrap=False, params=ra["params"])
    point_b = probe.metrics(items_b, bootstrap=False, params=rb["params"])
    idx = draw_resamples(len(keys), resamples, seed)
    boot_a, bad_a = _checked_values(probe, items_a, ra["params"], idx, point_a)
    boot_b, bad_b = _checked_values(probe, items_b, rb["params"], idx, point_b)

    names = list(point_a) + [n for n in point_b if n not in point_a]
    for name in names:
        comparison.metrics[name] = _compare_metric(
            probe, name, (point_a, point_b), (boot_a, boot_b), bad_a | bad_b, resamples
        )
    _adjust_for_many_tests(list(comparison.metrics.values()))
    for m in comparison.metrics.values():
        m.sentence = _sentence(m, model_a, model_b)
    return comparison


def _check_settings(label_mode: str, resamples: int, seed: int) -> None:
    """`UserError` for labels, a number of resamples or a seed `compare_runs` cannot use."""
    if not is_label_mode(label_mode):
        raise UserError(f"labels must be one of {', '.join(LABEL_MODES)}, consensus or rater:NAME")
    if not 1 <= resamples <= LIMITS["resamples"]:
        raise UserError(f"--resamples must be from 1 to {LIMITS['resamples']:,}")
    if not 0 <= seed < 2**63:
        raise UserError("--seed must be from 0 to 2^63 - 1")


def _check_common_items(run_a: int, run_b: int, common: int, resamples: int) -> None:
    """`UserError` when the runs share no item with results, or when the resamples of the
    `common` items would hold more draws than `MAX_RESAMPLE_CELLS`."""
    if not common:
        raise UserError(f"runs {run_a} and {run_b} have no item with stored results in common")
    if resamples * common > MAX_RESAMPLE_CELLS:
        raise UserError(
            f"{resamples:,} resamples of {common:,} items would hold "
            f"{resamples * common:,} item draws (at most {MAX_RESAMPLE_CELLS:,}): ask for "
            f"at most {MAX_RESAMPLE_CELLS // common:,} resamples"
        )


def _compare_metric(
    probe: Probe,
    name: str,
    points: tuple[dict[str, Any], dict[str, Any]],
    boots: tuple[Values, Values],
    bad: set[str],
    resamples: int,
) -> MetricComparison:
    """One metric of runs A and B: their values, and the paired bootstrap interval and
    p-value of B − A (or the reason it has none)."""
    (point_a, point_b), (boot_a, boot_b) = points, boots
    a = point_a[name].value if name in point_a else math.nan
    b = point_b[name].value if name in point_b else math.nan
    m = MetricComparison(
        name,
        a,
        b,
        b - a,
        description=probe.capabilities.presentation.metric_description(name),
        title=probe.capabilities.presentation.metric_title(name),
    )
    m.reason = probe.capabilities.ppi.paired_test_exclusion(name)
    if m.reason is None:
        m.reason = _missing_reason(name, point_a, point_b, bad)
    if m.reason is None and (name not in boot_a or name not in boot_b):
        m.reason = "not recomputed on the resamples (no per-item form of it)"
        log.warning("compare: %s %s has no resampled values", probe.name, name)
    if m.reason is None:
        diffs = boot_b[name] - boot_a[name]
        diffs = diffs[np.isfinite(diffs)]
        m.resamples = len(diffs)
        if m.resamples < MIN_VALID_SHARE * resamples or m.resamples == 0:
            m.reason = (
                f"undefined in {resamples - m.resamples} of {resamples} resamples "
                "(too few items behind it)"
            )
        else:
            lo, hi = np.percentile(diffs, [2.5, 97.5])
            m.ci = (float(lo), float(hi))
            m.p = bootstrap_p_value(diffs)
            m.tested = True
    return m


def _adjust_for_many_tests(metrics: list[MetricComparison]) -> None:
    """Benjamini-Hochberg over the tested metrics: each one's adjusted p-value, and
    whether its difference is established (rejected, and its interval excludes 0 on the
    side of the difference)."""
    tested = [m for m in metrics if m.tested]
    if tested:
        reject, p_adj, _, _ = multipletests([m.p for m in tested], alpha=ALPHA, method="fdr_bh")
        for m, rej, pa in zip(tested, reject, p_adj, strict=True):
            m.p_adj = float(pa)
            lo, hi = m.ci
            m.established = bool(rej) and ((m.diff > 0 and lo > 0) or (m.diff < 0 and hi < 0))


def draw_resamples(n_items: int, resamples: int, seed: int) -> np.ndarray:
    """Item positions of the paired bootstrap: row r holds resample r's n draws."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_items, size=(resamples, n_items))


def bootstrap_p_value(diffs: np.ndarray) -> float:
    """Two-sided bootstrap p of "no difference": 2·min(share ≤ 0, share ≥ 0), +1-corrected."""
    r = len(diffs)
    below = (1 + int(np.sum(diffs <= 0))) / (r + 1)
    above = (1 + int(np.sum(diffs >= 0))) / (r + 1)
    return min(1.0, 2 * min(below, above))


def _missing_reason(
    name: str, point_a: dict[str, Any], point_b: dict[str, Any], failed_check: set[str]
) -> str | None:
    for label, point in (("A", point_a), ("B", point_b)):
        if name not in point:
            return f"not computed for run {label} (no data behind it)"
        if math.isnan(point[name].value):
            return f"undefined (NaN) in run {label}"
    if name in failed_check:
        return "internal check failed: the resampling did not reproduce the probe's value"
    return None


def _present(results: list[ItemResult]) -> dict[str, ItemResult]:
    """Items that have stored attempts (or scores), by key, in run order."""
    return {r.key: r for r in results if r.labels or r.scores}


def _model_names(store: Store, ra: dict[str, Any], rb: dict[str, Any]) -> tuple[str, str]:
    def name(run: dict[str, Any]) -> str:
        if not run.get("model_id"):
            return f"run {run['id']}"
        return str(store.get_model(run["model_id"]).get("name") or f"run {run['id']}")

    a, b = name(ra), name(rb)
    if a == b:
        a, b = f"{a}, run {ra['id']}", f"{b}, run {rb['id']}"
    return a, b


def _warnings(
    ra: dict[str, Any],
    rb: dict[str, Any],
    res_a: dict[str, ItemResult],
    res_b: dict[str, ItemResult],
    items_a: list[ItemResult],
    items_b: list[ItemResult],
) -> list[str]:
    out = []
    n = len(items_a)
    if n != len(res_a) or n != len(res_b):
        out.append(
            f"the runs' items differ (A has {len(res_a)} with results, B {len(res_b)}): only "
            f"the {n} items in common are compared"
        )
    pa, pb = ra["params"], rb["params"]
    if pa.get("template") != pb.get("template"):
        out.append(
            f"the templates differ (A: {pa.get('template_name')}, B: {pb.get('template_name')})"
            ": the runs do not measure the same thing"
        )
    for key in sorted(set(pa) | set(pb)):
        if key in _ITEM_SELECTION_PARAMS or key == "template":
            continue
        if pa.get(key) != pb.get(key):
            out.append(
                f"the option {key} differs (A: {_show(pa.get(key))}, B: {_show(pb.get(key))})"
                ": the runs do not measure the same thing"
            )
    ga, gb = ra["generation"], rb["generation"]
    for key in _GENERATION_KEYS:
        if key in ga and key in gb and ga[key] != gb[key]:
            out.append(f"generation setting {key} differs (A: {ga[key]}, B: {gb[key]})")
    per_a = sum(len(r.labels) for r in items_a) / n
    per_b = sum(len(r.labels) for r in items_b) / n
    if [len(r.labels) for r in items_a] != [len(r.labels) for r in items_b]:
        out.append(
            f"attempts per item differ (A: {per_a:.3g}, B: {per_b:.3g} on average over the "
            "common items)"
        )
    if ra["probe_version"] != rb["probe_version"]:
        out.append(
            f"the probe version differs (A: {ra['probe_version']}, B: {rb['probe_version']})"
        )
    return out


def _show(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _fmt_p(p: float | None) -> str:
    return "< 0.001" if p is not None and p < 0.001 else fmt(p)


def _sentence(m: MetricComparison, model_a: str, model_b: str) -> str:
    a_label, b_label = f"A ({model_a})", f"B ({model_b})"
    about = f" {m.description}" if m.description else ""
    if not m.tested:
        return (
            f"{m.what[:1].upper()}{m.what[1:]} not tested: {m.reason} (A {fmt(m.a)}, B {fmt(m.b)}, "
            f"B − A {_signed(m.diff)})."
        )
    interval = f"{_signed(m.diff)} [{fmt(m.ci[0])}, {fmt(m.ci[1])}] (p_adj = {_fmt_p(m.p_adj)})"
    if m.established:
        direction = "higher" if m.diff > 0 else "lower"
        return f"{b_label} has a {direction} {m.what} than {a_label}: {interval}.{about}"
    return f"No difference in {m.what} established between {a_label} and {b_label}: {interval}."


def _signed(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.3f}"


# -- resampled metric values ----------------------------------------------------------------------
def _checked_values(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    idx: np.ndarray,
    point: dict[str, Any],
) -> tuple[Values, set[str]]:
    """Resampled values plus the metrics whose fast path does not reproduce the point
    value on the full item set (an identity resample is appended for the check)."""
    identity = np.arange(len(results))[None, :]
    values = resample_values(probe, results, params, np.vstack([idx, identity]))
    bad = set()
    for name, m in point.items():
        if name not in values:
            continue
        got, want = values[name][-1], m.value
        same = (math.isnan(got) and math.isnan(want)) or math.isclose(
            got, want, rel_tol=_CHECK_TOLERANCE, abs_tol=_CHECK_TOLERANCE
        )
        if not same:
            log.error("compare: %s fast path gives %r, the probe %r", name, got, want)
            bad.add(name)
    return {k: v[:-1] for k, v in values.items()}, bad
