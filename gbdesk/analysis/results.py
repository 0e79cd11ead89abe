"""Metrics of stored runs, from automatic or reviewed labels (no Qt).

`label_mode="auto"` uses only the detector's labels; `"reviewed"` uses a reviewer's
label where one exists and the detector's elsewhere. Results are cached in the
store and recomputed when an attempt, a label, the run's parameters or gbdesk's
version changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gbdesk import __version__
from gbdesk.maths.stats import MetricValue, adjusted_p_values
from gbdesk.store import Store
from gbdesk.studies import ItemResult, ScoringProbe, get_probe
from gbdesk.studies.base import RunItems, new_item_result

if TYPE_CHECKING:
    from gbdesk.analysis.label_accuracy import LabelAccuracy

log = logging.getLogger(__name__)

LABEL_MODES = ("auto", "reviewed")
#: every way metrics can be computed: the label modes, and "ppi" (automatic labels
#: corrected by the human labels of a random review sample, `gbdesk.analysis.ppi_metrics`)
METRIC_MODES = (*LABEL_MODES, "ppi")
#: several raters: "rater:<name>" uses one rater's labels (the detector's elsewhere);
#: "consensus" the adjudicated label where raters disagreed and someone decided, else the
#: latest reviewer's, else the detector's
RATER_PREFIX = "rater:"
CONSENSUS = "consensus"


def rater_mode(mode: str) -> str | None:
    """The rater of a "rater:<name>" mode, else None."""
    if isinstance(mode, str) and mode.startswith(RATER_PREFIX) and mode[len(RATER_PREFIX) :]:
        return mode[len(RATER_PREFIX) :]
    return None


def is_label_mode(mode: str) -> bool:
    """A mode that picks labels: "auto", "reviewed", "consensus" or "rater:<name>"."""
    return mode in LABEL_MODES or mode == CONSENSUS or rater_mode(mode) is not None


def label_modes(store: Store, run_id: int) -> dict[str, str]:
    """The label modes a run offers (mode → title): automatic, reviewed, each rater's,
    and consensus once two people labelled or someone adjudicated."""
    modes = {
        "auto": "Automatic labels (the detector's)",
        "reviewed": "Reviewed labels (a reviewer's where present, the detector's elsewhere)",
    }
    raters = store.rater_labels(run_id)
    for rater, labels in raters.items():
        n = len(labels)
        modes[f"{RATER_PREFIX}{rater}"] = (
            f"{rater}'s labels ({n} attempt{'' if n == 1 else 's'}; the detector's elsewhere)"
        )
    if len(raters) >= 2 or store.labels(run_id, "consensus"):
        modes[CONSENSUS] = (
            "Consensus labels (adjudicated where raters disagreed, else a reviewer's, else "
            "the detector's)"
        )
    return modes


def _auto_source(store: Store, run_id: int) -> str | None:
    run = store.get_run(run_id)
    return get_probe(run["probe"]).auto_source(run["params"])


def ensure_auto_labels(store: Store, run_id: int) -> int:
    """Label any stored attempt that has no automatic label (of the run's extractor)
    yet with the probe's built-in labeller; return how many were labelled."""
    probe = get_probe(store.get_run(run_id)["probe"])
    source = _auto_source(store, run_id)
    if source is not None and not source.startswith(probe.builtin_source_prefix()):
        return 0  # another labeller (e.g. an LLM pass) fills these; nothing to do here
    missing = store.unlabelled_attempts(run_id, source)
    if not missing:
        return 0
    items = RunItems.of(store, run_id)
    for attempt in missing:
        label = probe.label(
            attempt["response"], items.metadata(attempt["item"], attempt["attempt"])
        )
        store.set_auto_label(attempt["id"], **label)
    return len(missing)


def effective_labels(
    store: Store, run_id: int, label_mode: str, attempt_ids: Sequence[int] | None = None
) -> dict[int, dict[str, Any]]:
    """attempt id → the label row the metrics use in this mode (`attempt_ids`: of these
    attempts only; a rater with no label among them then gives none, without the error a
    whole run without that rater's labels raises)."""
    if not is_label_mode(label_mode):
        raise ValueError(f"label mode must be one of {LABEL_MODES}, {CONSENSUS} or rater:NAME")
    ids = attempt_ids
    labels = store.labels(run_id, "auto", _auto_source(store, run_id), attempt_ids=ids)
    rater = rater_mode(label_mode)
    if label_mode in ("reviewed", CONSENSUS):
        labels.update(store.labels(run_id, "human", attempt_ids=ids))
    if label_mode == CONSENSUS:
        labels.update(store.labels(run_id, "consensus", attempt_ids=ids))
    if rater is not None:
        by_rater = store.rater_labels(run_id, attempt_ids=ids)
        if rater not in by_rater and ids is None:
            from gbdesk.support.errors import UserError

            known = ", ".join(by_rater) or "nobody has labelled yet"
            raise UserError(f"run {run_id} has no labels by {rater!r} (raters: {known})")
        labels.update(by_rater.get(rater, {}))
    return labels


def item_results(store: Store, run_id: int, label_mode: str = "auto") -> list[ItemResult]:
    """Items (in run order) with the effective labels of their stored attempts (the
    automatic ones for "ppi", whose correction applies to metrics only)."""
    labels = effective_labels(store, run_id, "auto" if label_mode == "ppi" else label_mode)
    items = RunItems.of(store, run_id)
    by_item: dict[str, ItemResult] = {row["item"]: new_item_result(row) for row in items.rows}
    for attempt in store.attempts(run_id):
        label = labels.get(attempt["id"])
        result = by_item[attempt["item"]]
        result.labels.append(label["label"] if label else "undetected")
        result.label_data.append((label or {}).get("data") or {})
        result.responses.append(attempt["response"])
        if result.prompts:
            result.prompt_indices.append(items.prompt_index(attempt["item"], attempt["attempt"]))
    if isinstance(get_probe(store.get_run(run_id)["probe"]), ScoringProbe):
        for score in store.scores(run_id):
            by_item[score["item"]].scores.append(score)
    return list(by_item.values())


#: label modes the flat table serves (consensus and one rater's labels read the labels)
FLAT_MODES = ("auto", "reviewed", "ppi")


def flat_run(store: Store, run_id: int, label_mode: str) -> Any:
    """The run read from the flat table of label facts (`gbdesk.analysis.flat.FlatRun`) with the
    labels of `label_mode` ("ppi": the automatic ones), or None when its probe has none."""
    from gbdesk.analysis.flat import load_flat

    return load_flat(store, run_id, "auto" if label_mode == "ppi" else label_mode)


def extra_results(
    store: Store, run_id: int, label_mode: str = "auto", flat: bool = True
) -> dict[str, Any]:
    """The probe's non-scalar results (`Probe.extra_results`), from the flat table when the
    probe has one (`flat=False`: always from the labels)."""
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    got = None
    if flat and probe.has_label_facts and label_mode in FLAT_MODES:
        ensure_auto_labels(store, run_id)
        got = probe.flat_extra_results(flat_run(store, run_id, label_mode), run["params"])
    elif flat and isinstance(probe, ScoringProbe):
        got = probe.frame_extra_results(store.score_frame(run_id), run["params"])
    if got is not None:
        return got
    return probe.extra_results(item_results(store, run_id, label_mode), run["params"])


def compute_metrics(
    store: Store,
    run_id: int,
    label_mode: str = "auto",
    use_cache: bool = True,
    flat: bool = True,
) -> dict[str, MetricValue]:
    """The run's metrics from automatic labels ("auto"), reviewed ones ("reviewed": a
    person's where present), consensus or one rater's labels ("consensus", "rater:NAME"),
    or as prediction-powered estimates ("ppi"); cached. Probes with a flat table compute
    "auto" and "reviewed" from it (`flat=False`: from every label's JSON, the reference
    path the flat one must equal)."""
    if label_mode not in METRIC_MODES and not is_label_mode(label_mode):
        raise ValueError(f"label mode must be one of {METRIC_MODES}, {CONSENSUS} or rater:NAME")
    run = store.get_run(run_id)
    # Recompute when labels, the run's parameters or the code that computes change.
    params = json.dumps(run["params"], sort_keys=True, default=str)

    def current() -> str:
        return (
            f"{store.labels_fingerprint(run_id)}|{__version__}|{run['probe_version']}|"
            f"{hashlib.sha256(params.encode()).hexdigest()[:16]}"
        )

    # A cached result was computed after every attempt had its automatic label, and any
    # attempt or label added since changes the fingerprint: check the cache first.
    fingerprint = current()
    if use_cache:
        cached = store.cached_metrics(run_id, label_mode, fingerprint)
        if cached is not None:
            return {
                name: MetricValue(
                    value=_nan(row["value"]),
                    ci=(_nan(row["ci_lo"]), _nan(row["ci_hi"])),
                    mark=row["mark"],
                    n=row["n"],
                    p_value=row.get("p_value"),
                    details=json.loads(row["details_json"]) if row.get("details_json") else None,
                )
                for name, row in cached.items()
            }
    if ensure_auto_labels(store, run_id):
        fingerprint = current()
    probe = get_probe(run["probe"])
    if label_mode == "ppi":
        from gbdesk.analysis.ppi_metrics import ppi_metric_values

        metrics = ppi_metric_values(store, run_id)
    else:
        metrics = None
        if flat and probe.has_label_facts and label_mode in FLAT_MODES:
            metrics = probe.flat_metrics(flat_run(store, run_id, label_mode), run["params"])
        elif flat and isinstance(probe, ScoringProbe):
            metrics = probe.frame_metrics(store.score_frame(run_id), run["params"])
        if metrics is None:
            metrics = probe.metrics(item_results(store, run_id, label_mode), params=run["params"])
    store.save_metrics(
        run_id,
        label_mode,
        fingerprint,
        [
            {
                "name": name,
                "value": _none(m.value),
                "ci_lo": _none(m.ci[0]),
                "ci_hi": _none(m.ci[1]),
                "mark": m.mark,
                "n": m.n,
                "p_value": m.p_value,
                "details": m.details,
            }
            for name, m in metrics.items()
        ],
    )
    return metrics


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def run_extra_results(
    store: Store, run_id: int, label_mode: str = "auto", flat: bool = True
) -> dict[str, Any]:
    """The probe's extra results (`extra_results`) from this mode's labels, plus the
    run's codebook coding under "coding" when people coded its texts
    (`gbdesk.people.coding.coding_summary`)."""
    extra = extra_results(store, run_id, label_mode, flat=flat)
    from gbdesk.people.coding import coding_summary

    coding = coding_summary(store, run_id)
    if coding is not None:
        extra = {**extra, "coding": coding}
    return extra


@dataclass
class ReviewStats:
    """How the detector fares against the reviewers' labels."""

    attempts: int
    reviewed: int
    corrected: int
    per_label: dict[str, dict[str, float]]  # label → precision, recall, support
    accuracy: float
    quality: dict[str, Any] = field(default_factory=dict)  # probe-specific (e.g. names)
    #: the labels' accuracy: measured on the random review sample, else estimated
    label_accuracy: LabelAccuracy | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "reviewed": self.reviewed,
            "corrected": self.corrected,
            "accuracy": _none(self.accuracy),
            "per_label": {
                k: {m: _none(v) if isinstance(v, float) else v for m, v in d.items()}
                for k, d in self.per_label.items()
            },
            "quality": self.quality,
            "label_accuracy": self.label_accuracy.to_json() if self.label_accuracy else None,
        }


def review_stats(store: Store, run_id: int, flat: bool = True) -> ReviewStats:
    """Reviewed/corrected counts and the detector's precision and recall per label,
    taking the latest human label of each reviewed attempt as the truth (with a flat
    table, only the reviewed attempts' automatic labels are read)."""
    from gbdesk.analysis.label_accuracy import label_accuracy

    probe = get_probe(store.get_run(run_id)["probe"])
    ensure_auto_labels(store, run_id)
    human = store.labels(run_id, "human")
    auto = store.labels_of(human, "auto", _auto_source(store, run_id))
    accuracy = label_accuracy(store, run_id, human=human, reviewed_auto=auto, flat=flat)
    rows = [(auto[a], h) for a, h in human.items() if a in auto]
    pairs = [(a["label"], h["label"]) for a, h in rows]
    per_label: dict[str, dict[str, float]] = {}
    predicted = Counter(p for p, _ in pairs)
    actual = Counter(t for _, t in pairs)
    hits = Counter(p for p, t in pairs if p == t)
    for value in probe.label_values():
        per_label[value] = {
            "precision": hits[value] / predicted[value] if predicted[value] else math.nan,
            "recall": hits[value] / actual[value] if actual[value] else math.nan,
            "support": actual[value],  # reviewed generations a person gave this label
            "predicted": predicted[value],  # reviewed generations the detector gave it
        }
    correct = sum(hits.values())
    return ReviewStats(
        attempts=store.count_attempts(run_id),
        reviewed=len(pairs),
        corrected=len(pairs) - correct,
        per_label=per_label,
        accuracy=correct / len(pairs) if pairs else math.nan,
        quality=probe.review_quality(rows) if rows else {},
        label_accuracy=accuracy,
    )


def runs_with_generations(store: Store, with_models: bool = False) -> list[dict[str, Any]]:
    """Runs that have at least one stored attempt (what review, results and reports list);
    with `with_models`, each carries its model row under "model"."""
    runs = [r for r in store.list_runs() if r["attempts_done"] > 0]
    if with_models:
        for r in runs:
            r["model"] = store.get_model(r["model_id"]) if r["model_id"] else {}
    return runs


def run_results(
    store: Store,
    run_ids: list[int],
    mode: str,
    flat: bool = True,
    models: dict[int, str] | None = None,
) -> dict[int, dict[str, Any]]:
    """What the Results pane shows of each run: metrics, review counts, the probe's extra
    results and detector — read from the flat table where the probe has one, so a run of
    500,000 stories loads in seconds without reading every text (`flat=False`: the
    reference path, for the benchmarks)."""
    from gbdesk.analysis.findings import run_findings
    from gbdesk.people.raters import mode_counts

    out = {}
    for run_id in run_ids:
        run = store.get_run(run_id)
        probe = get_probe(run["probe"])
        modes = label_modes(store, run_id)
        # a rater's or the consensus mode where this run has no such labels: reviewed labels
        used = mode if mode in METRIC_MODES or mode in modes else "reviewed"
        metrics = compute_metrics(store, run_id, used, flat=flat)
        extra = run_extra_results(store, run_id, used, flat=flat)
        out[run_id] = {
            "metrics": metrics,
            "review": review_stats(store, run_id, flat=flat),
            "extra": extra,
            "detector": probe.detector_title(run["params"]),
            "modes": modes,
            "mode": used,
            "counts": mode_counts(store, run_id, used) if used not in METRIC_MODES else {},
            "adjusted": adjusted_p_values(metrics),
            "findings": run_findings(
                run_id, (models or {}).get(run_id, "?"), probe, metrics, extra, run["params"]
            ),
        }
    return out


#: from how many attempts `run_results_apart` computes in a worker process
APART_FROM = 50_000
_apart: Any = None  # the worker process pool, started on first use
WORKER_NICENESS = 10  # the worker yields the CPU to the app's UI thread on a busy machine


def _lower_priority() -> None:
    """Run the worker process at a lower scheduling priority: on a laptop's few cores the
    UI thread then gets the CPU first while a big run's metrics are computed."""
    import os

    try:
        if hasattr(os, "nice"):
            os.nice(WORKER_NICENESS)
        else:  # Windows
            import ctypes

            below_normal = 0x4000
            kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
            kernel32.SetPriorityClass(kernel32.GetCurrentProcess(), below_normal)
    except Exception as exc:  # the priority is a courtesy: compute anyway
        log.info("worker process priority unchanged: %s", exc)


def _run_results_at(
    db_path: str, run_ids: list[int], mode: str, models: dict[int, str] | None = None
) -> dict[int, dict[str, Any]]:
    with Store(db_path) as store:
        return run_results(store, run_ids, mode, models=models)


def run_results_apart(
    store: Store, run_ids: list[int], mode: str, models: dict[int, str] | None = None
) -> dict[int, dict[str, Any]]:
    """`run_results`, computed in a worker process when the runs are big (≥ `APART_FROM`
    attempts), so that the pandas work on hundreds of thousands of rows — which holds
    the interpreter's lock for long stretches — never stalls the app's UI thread; in this
    thread otherwise, in a frozen app, or when no process can be started."""
    import sys

    global _apart
    size = sum(store.count_attempts(r) for r in run_ids)
    if size < APART_FROM or getattr(sys, "frozen", False):
        return run_results(store, run_ids, mode, models=models)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        if _apart is None:
            _apart = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=_lower_priority
            )
        return _apart.submit(_run_results_at, str(store.path), run_ids, mode, models).result()
    except (OSError, BrokenProcessPool) as exc:
        log.warning("results of runs %s computed here: worker process failed (%s)", run_ids, exc)
        _apart = None
        return run_results(store, run_ids, mode, models=models)
