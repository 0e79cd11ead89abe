"""What the Results pane, the PDF and the CSV show of a run: its metrics with their labels'
sources, review counts, the probe's extra results with the codebook coding people did, and
findings — assembled from the analysis (`gbdesk.analysis`) and what people did
(`gbdesk.people`), which is why it sits above both, in the report layer.

Big runs are computed in a worker process (`run_results_apart`) so that the app's UI thread
never stalls on pandas work.
"""

from __future__ import annotations

import logging
from typing import Any

from gbdesk.analysis.findings import run_findings
from gbdesk.analysis.label_accuracy import review_stats
from gbdesk.analysis.results import (
    METRIC_MODES,
    Run,
    compute_metrics,
    extra_results,
    label_modes,
    open_run,
)
from gbdesk.maths.stats import adjusted_p_values
from gbdesk.people.coding import coding_summary
from gbdesk.people.raters import mode_counts
from gbdesk.report.audit_findings import audit_findings, with_audit
from gbdesk.store import Store

log = logging.getLogger(__name__)


def run_extra_results(
    store: Store, run_id: int | Run, label_mode: str = "auto", flat: bool = True
) -> dict[str, Any]:
    """The probe's extra results (`extra_results`) from this mode's labels, plus the
    run's codebook coding under "coding" when people coded its texts
    (`gbdesk.people.coding.coding_summary`)."""
    extra = extra_results(store, run_id, label_mode, flat=flat)
    coding = coding_summary(store, run_id.id if isinstance(run_id, Run) else run_id)
    if coding is not None:
        extra = {**extra, "coding": coding}
    return extra


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
    out = {}
    for run_id in run_ids:
        run = open_run(store, run_id)  # once: its row and probe for all that follows
        probe = run.probe
        modes = label_modes(store, run_id)
        # a rater's or the consensus mode where this run has no such labels: reviewed labels
        used = mode if mode in METRIC_MODES or mode in modes else "reviewed"
        metrics = compute_metrics(store, run, used, flat=flat)
        extra = run_extra_results(store, run, used, flat=flat)
        findings = run_findings(
            run_id, (models or {}).get(run_id, "?"), probe, metrics, extra, run.params
        )
        audit = audit_findings(store, run_id, (models or {}).get(run_id, "?"), probe)
        findings = with_audit(findings, audit)
        out[run_id] = {
            "metrics": metrics,
            "review": review_stats(store, run_id, flat=flat),
            "extra": extra,
            "detector": probe.capabilities.labelling.detector_title(run.params),
            "modes": modes,
            "mode": used,
            "counts": mode_counts(store, run_id, used) if used not in METRIC_MODES else {},
            "adjusted": adjusted_p_values(metrics),
            "findings": findings,
            "audit": audit,
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
