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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gbdesk import __version__
from gbdesk.contract import ItemResult, Probe, get_probe
from gbdesk.contract.running import RunItems, new_item_result
from gbdesk.maths.stats import MetricValue
from gbdesk.store import Store
from gbdesk.support.errors import UserError

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


@dataclass(frozen=True, eq=False, repr=False)  # compared and hashed as the object it is
class Run:
    """A stored run opened once (`open_run`): its row, id, parameters, probe and the source
    of its automatic labels, and its items once read. Export, report and compare pass one
    instead of looking the run and its probe up again from the run id. What is read is
    kept: open the run again to see later changes."""

    store: Store
    row: dict[str, Any]
    id: int
    params: dict[str, Any]
    probe: Probe
    #: the source of the run's automatic labels (its extractor's; None: the default)
    label_source: str | None

    def __repr__(self) -> str:
        return f"Run({self.id}, {self.row['probe']!r})"

    @cached_property
    def items(self) -> RunItems:
        """The run's stored items (read once, when first needed)."""
        return RunItems(self.store.run_items(self.id), self.row["generation"].get("attempts") or 1)


def open_run(store: Store, run: int | dict[str, Any] | Run, labelled: bool = False) -> Run:
    """The run (its id, its `Store.get_run` row, or a `Run` already open) opened once;
    `labelled`: its attempts without an automatic label labelled first
    (`ensure_auto_labels`) and its items read."""
    if not isinstance(run, Run):
        row = store.get_run(run) if isinstance(run, int) else run
        probe = get_probe(row["probe"])
        source = probe.capabilities.labelling.auto_source(row["params"])
        run = Run(store, row, row["id"], row["params"], probe, source)
    if labelled:
        _label_missing(run)
        run.items  # noqa: B018 (read now: what comes next needs them)
    return run


def auto_source(store: Store, run_id: int | Run) -> str | None:
    """The source of the run's automatic labels (`Run.label_source`)."""
    return open_run(store, run_id).label_source


def ensure_auto_labels(store: Store, run_id: int | Run) -> int:
    """Label any stored attempt that has no automatic label (of the run's extractor)
    yet with the probe's built-in labeller; return how many were labelled."""
    return _label_missing(open_run(store, run_id))


def _label_missing(run: Run) -> int:
    source, probe = run.label_source, run.probe
    if source is not None and not source.startswith(probe.capabilities.labelling.source_prefix()):
        return 0  # another labeller (e.g. an LLM pass) fills these; nothing to do here
    missing = run.store.unlabelled_attempts(run.id, source)
    if not missing:
        return 0
    items = run.items
    for attempt in missing:
        label = probe.label(
            attempt["response"], items.metadata(attempt["item"], attempt["attempt"])
        )
        run.store.set_auto_label(attempt["id"], **label)
    return len(missing)


def effective_labels(
    store: Store, run_id: int | Run, label_mode: str, attempt_ids: Sequence[int] | None = None
) -> dict[int, dict[str, Any]]:
    """attempt id → the label row the metrics use in this mode (`attempt_ids`: of these
    attempts only; a rater with no label among them then gives none, without the error a
    whole run without that rater's labels raises)."""
    if not is_label_mode(label_mode):
        raise ValueError(f"label mode must be one of {LABEL_MODES}, {CONSENSUS} or rater:NAME")
    run = open_run(store, run_id)
    run_id, ids = run.id, attempt_ids
    labels = store.labels(run_id, "auto", run.label_source, attempt_ids=ids)
    rater = rater_mode(label_mode)
    if label_mode in ("reviewed", CONSENSUS):
        labels.update(store.labels(run_id, "human", attempt_ids=ids))
    if label_mode == CONSENSUS:
        labels.update(store.labels(run_id, "consensus", attempt_ids=ids))
    if rater is not None:
        by_rater = store.rater_labels(run_id, attempt_ids=ids)
        if rater not in by_rater and ids is None:
            known = ", ".join(by_rater) or "nobody has labelled yet"
            raise UserError(f"run {run_id} has no labels by {rater!r} (raters: {known})")
        labels.update(by_rater.get(rater, {}))
    return labels


def item_results(store: Store, run_id: int | Run, label_mode: str = "auto") -> list[ItemResult]:
    """Items (in run order) with the effective labels of their stored attempts (the
    automatic ones for "ppi", whose correction applies to metrics only)."""
    run = open_run(store, run_id)
    labels = effective_labels(store, run, "auto" if label_mode == "ppi" else label_mode)
    items = run.items
    by_item: dict[str, ItemResult] = {row["item"]: new_item_result(row) for row in items.rows}
    for attempt in store.attempts(run.id):
        label = labels.get(attempt["id"])
        result = by_item[attempt["item"]]
        result.labels.append(label["label"] if label else "undetected")
        result.label_data.append((label or {}).get("data") or {})
        result.responses.append(attempt["response"])
        if result.prompts:
            result.prompt_indices.append(items.prompt_index(attempt["item"], attempt["attempt"]))
    if run.probe.capabilities.scores is not None:
        for score in store.scores(run.id):
            by_item[score["item"]].scores.append(score)
    return list(by_item.values())


#: label modes the flat table serves (consensus and one rater's labels read the labels)
FLAT_MODES = ("auto", "reviewed", "ppi")


def flat_run(store: Store, run_id: int | Run, label_mode: str) -> Any:
    """The run read from the flat table of label facts (`gbdesk.analysis.flat.FlatRun`) with the
    labels of `label_mode` ("ppi": the automatic ones), or None when its probe has none."""
    from gbdesk.analysis.flat import load_flat

    mode = "auto" if label_mode == "ppi" else label_mode
    if isinstance(run_id, Run):
        return load_flat(store, run_id.id, mode, run_id.row, run_id.probe)
    return load_flat(store, run_id, mode)


def extra_results(
    store: Store, run_id: int | Run, label_mode: str = "auto", flat: bool = True
) -> dict[str, Any]:
    """The probe's non-scalar results (`Probe.extra_results`), from the flat table when the
    probe has one (`flat=False`: always from the labels)."""
    run = open_run(store, run_id)
    got = None
    caps = run.probe.capabilities
    if flat and caps.flat is not None and label_mode in FLAT_MODES:
        _label_missing(run)
        got = caps.flat.extra_results(flat_run(store, run, label_mode), run.params)
    elif flat and caps.scores is not None:
        got = caps.scores.extra_results(store.score_frame(run.id), run.params)
    if got is not None:
        return got
    return run.probe.extra_results(item_results(store, run, label_mode), run.params)


def compute_metrics(
    store: Store,
    run_id: int | Run,
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
    row = run_id.row if isinstance(run_id, Run) else store.get_run(run_id)
    rid: int = row["id"]
    # Recompute when labels, the run's parameters or the code that computes change.
    params = json.dumps(row["params"], sort_keys=True, default=str)

    def current() -> str:
        return (
            f"{store.labels_fingerprint(rid)}|{__version__}|{INTERVALS_VERSION}|"
            f"{row['probe_version']}|"
            f"{hashlib.sha256(params.encode()).hexdigest()[:16]}"
        )

    # A cached result was computed after every attempt had its automatic label, and any
    # attempt or label added since changes the fingerprint: check the cache first (a run
    # whose study is no longer installed still shows what was computed).
    fingerprint = current()
    if use_cache:
        cached = store.cached_metrics(rid, label_mode, fingerprint)
        if cached is not None:
            return {name: _cached_value(r) for name, r in cached.items()}
    run = open_run(store, row)
    if _label_missing(run):
        fingerprint = current()
    metrics = _metrics(store, run, label_mode, flat)
    store.save_metrics(rid, label_mode, fingerprint, _metric_rows(metrics))
    return metrics


def fresh_metrics(
    store: Store, run_id: int | Run, label_mode: str = "auto"
) -> dict[str, MetricValue]:
    """The run's metrics computed now from what is stored — never read from the metrics
    cache nor written to it, no attempt labelled — as `compute_metrics` computes them
    (the same path, so the same values): what `gbdesk verify` recomputes, on a database it
    only reads."""
    return _metrics(store, open_run(store, run_id), label_mode, flat=True)


def _metrics(store: Store, run: Run, label_mode: str, flat: bool) -> dict[str, MetricValue]:
    if label_mode == "ppi":
        from gbdesk.analysis.ppi_metrics import ppi_metric_values

        return ppi_metric_values(store, run.id)
    metrics = None
    caps = run.probe.capabilities
    if flat and caps.flat is not None and label_mode in FLAT_MODES:
        metrics = caps.flat.metrics(flat_run(store, run, label_mode), run.params)
    elif flat and caps.scores is not None:
        metrics = caps.scores.metrics(store.score_frame(run.id), run.params)
    if metrics is None:
        metrics = run.probe.metrics(item_results(store, run, label_mode), params=run.params)
    return metrics


#: where a cached metric keeps its `ci_shown` (inside its details, taken out on reading)
SHOWN_KEY = "_ci_shown"
#: what changes every cached metric's fingerprint when the intervals' code changes
INTERVALS_VERSION = "held-1"


def _cached_value(row: dict[str, Any]) -> MetricValue:
    details = json.loads(row["details_json"]) if row.get("details_json") else None
    shown = None
    if details and SHOWN_KEY in details:
        lo, hi = details.pop(SHOWN_KEY)
        shown = (_nan(lo), _nan(hi))
    return MetricValue(
        value=_nan(row["value"]),
        ci=(_nan(row["ci_lo"]), _nan(row["ci_hi"])),
        mark=row["mark"],
        n=row["n"],
        p_value=row.get("p_value"),
        details=details or None,
        ci_shown=shown,
    )


def _metric_rows(metrics: dict[str, MetricValue]) -> list[dict[str, Any]]:
    """Metrics as `Store.save_metrics` keeps them."""
    return [
        {
            "name": name,
            "value": none_if_nan(m.value),
            "ci_lo": none_if_nan(m.ci[0]),
            "ci_hi": none_if_nan(m.ci[1]),
            "mark": m.mark,
            "n": m.n,
            "p_value": m.p_value,
            "details": _details_row(m),
        }
        for name, m in metrics.items()
    ]


def _details_row(m: MetricValue) -> dict[str, Any] | None:
    if m.ci_shown is None:
        return m.details
    shown = [none_if_nan(m.ci_shown[0]), none_if_nan(m.ci_shown[1])]
    return {**(m.details or {}), SHOWN_KEY: shown}


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def none_if_nan(x: float) -> float | None:
    """NaN (or None) as JSON's null."""
    return None if x is None or math.isnan(x) else float(x)


def runs_with_generations(store: Store, with_models: bool = False) -> list[dict[str, Any]]:
    """Runs that have at least one stored attempt (what review, results and reports list);
    with `with_models`, each carries its model row under "model"."""
    runs = [r for r in store.list_runs() if r["attempts_done"] > 0]
    if with_models:
        for r in runs:
            r["model"] = store.get_model(r["model_id"]) if r["model_id"] else {}
    return runs


def runs_for_reports(store: Store, with_models: bool = False) -> list[dict[str, Any]]:
    """Every run the Results and Reports panes list: those with answers and those without
    yet (planned, in progress, failed at once — they say "no answers yet"). Each carries
    "elsewhere": what another process does with it while it is alive (a run or an audit,
    from its job's heartbeat, `gbdesk.store.jobs`), else None; with `with_models`, its model
    row under "model"."""
    from gbdesk.store.jobs import live_jobs

    runs = store.list_runs()
    try:
        jobs = live_jobs(store, others_only=True)
    except Exception as exc:  # the list matters more than the note
        log.warning("jobs of other processes not read: %s", exc)
        jobs = []
    by_run = {j.run_id: j for j in jobs if j.run_id is not None}
    for r in runs:
        job = by_run.get(r["id"])
        r["elsewhere"] = job.describe() if job is not None else None
        if with_models:
            r["model"] = store.get_model(r["model_id"]) if r["model_id"] else {}
    return runs
