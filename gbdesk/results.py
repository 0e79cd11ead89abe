"""Metrics of stored runs, from automatic or reviewed labels (no Qt).

`label_mode="auto"` uses only the detector's labels; `"reviewed"` uses a reviewer's
label where one exists and the detector's elsewhere. Results are cached in the
store and recomputed when an attempt, a label, the run's parameters or gbdesk's
version changes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gbdesk import __version__
from gbdesk.stats import MetricValue
from gbdesk.store import Store
from gbdesk.studies import ItemResult, ScoringProbe, get_probe

LABEL_MODES = ("auto", "reviewed")
#: every way metrics can be computed: the label modes, and "ppi" (automatic labels
#: corrected by the human labels of a random review sample, `gbdesk.ppi_metrics`)
METRIC_MODES = (*LABEL_MODES, "ppi")


def _auto_source(store: Store, run_id: int) -> str | None:
    run = store.get_run(run_id)
    return get_probe(run["probe"]).auto_source(run["params"])


def ensure_auto_labels(store: Store, run_id: int) -> int:
    """Label any stored attempt that has no automatic label (of the run's extractor)
    yet with the probe's built-in labeller; return how many were labelled."""
    probe = get_probe(store.get_run(run_id)["probe"])
    source = _auto_source(store, run_id)
    labelled = store.labels(run_id, "auto", source)
    if source is not None and not source.startswith(probe.builtin_source_prefix()):
        return 0  # another labeller (e.g. an LLM pass) fills these; nothing to do here
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    missing = [a for a in store.attempts(run_id) if a["id"] not in labelled]
    for attempt in missing:
        label = probe.label(attempt["response"], metadata.get(attempt["item"], {}))
        store.set_auto_label(attempt["id"], **label)
    return len(missing)


def effective_labels(store: Store, run_id: int, label_mode: str) -> dict[int, dict[str, Any]]:
    """attempt id → the label row the metrics use in this mode."""
    if label_mode not in LABEL_MODES:
        raise ValueError(f"label mode must be one of {LABEL_MODES}")
    labels = store.labels(run_id, "auto", _auto_source(store, run_id))
    if label_mode == "reviewed":
        labels.update(store.labels(run_id, "human"))
    return labels


def item_results(store: Store, run_id: int, label_mode: str = "auto") -> list[ItemResult]:
    """Items (in run order) with the effective labels of their stored attempts (the
    automatic ones for "ppi", whose correction applies to metrics only)."""
    labels = effective_labels(store, run_id, "auto" if label_mode == "ppi" else label_mode)
    by_item: dict[str, ItemResult] = {
        row["item"]: ItemResult(row["item"], row["metadata"], []) for row in store.run_items(run_id)
    }
    for attempt in store.attempts(run_id):
        label = labels.get(attempt["id"])
        result = by_item[attempt["item"]]
        result.labels.append(label["label"] if label else "undetected")
        result.label_data.append((label or {}).get("data") or {})
        result.responses.append(attempt["response"])
    if isinstance(get_probe(store.get_run(run_id)["probe"]), ScoringProbe):
        for score in store.scores(run_id):
            by_item[score["item"]].scores.append(score)
    return list(by_item.values())


def compute_metrics(
    store: Store, run_id: int, label_mode: str = "auto", use_cache: bool = True
) -> dict[str, MetricValue]:
    """The run's metrics from automatic labels ("auto"), reviewed ones ("reviewed": a
    person's where present), or as prediction-powered estimates ("ppi"); cached."""
    if label_mode not in METRIC_MODES:
        raise ValueError(f"label mode must be one of {METRIC_MODES}")
    ensure_auto_labels(store, run_id)
    run = store.get_run(run_id)
    # Recompute when labels, the run's parameters or the code that computes change.
    params = json.dumps(run["params"], sort_keys=True, default=str)
    fingerprint = (
        f"{store.labels_fingerprint(run_id)}|{__version__}|{run['probe_version']}|"
        f"{hashlib.sha256(params.encode()).hexdigest()[:16]}"
    )
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
    probe = get_probe(run["probe"])
    if label_mode == "ppi":
        from gbdesk.ppi_metrics import ppi_metric_values

        metrics = ppi_metric_values(store, run_id)
    else:
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


@dataclass
class ReviewStats:
    """How the detector fares against the reviewers' labels."""

    attempts: int
    reviewed: int
    corrected: int
    per_label: dict[str, dict[str, float]]  # label → precision, recall, support
    accuracy: float
    quality: dict[str, Any] = field(default_factory=dict)  # probe-specific (e.g. names)
    estimate: dict[str, Any] | None = None  # the labels' estimated accuracy now (probe's)

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
            "estimate": self.estimate,
        }


def review_stats(store: Store, run_id: int) -> ReviewStats:
    """Reviewed/corrected counts and the detector's precision and recall per label,
    taking the latest human label of each reviewed attempt as the truth."""
    probe = get_probe(store.get_run(run_id)["probe"])
    ensure_auto_labels(store, run_id)
    auto = store.labels(run_id, "auto", _auto_source(store, run_id))
    human = store.labels(run_id, "human")
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
            "support": actual[value],
        }
    correct = sum(hits.values())
    return ReviewStats(
        attempts=store.count_attempts(run_id),
        reviewed=len(pairs),
        corrected=len(pairs) - correct,
        per_label=per_label,
        accuracy=correct / len(pairs) if pairs else math.nan,
        quality=probe.review_quality(rows) if rows else {},
        estimate=probe.estimated_accuracy(auto, human),
    )


def runs_with_generations(store: Store, with_models: bool = False) -> list[dict[str, Any]]:
    """Runs that have at least one stored attempt (what review, results and reports list);
    with `with_models`, each carries its model row under "model"."""
    runs = [r for r in store.list_runs() if r["attempts_done"] > 0]
    if with_models:
        for r in runs:
            r["model"] = store.get_model(r["model_id"]) if r["model_id"] else {}
    return runs
