"""Labelling passes over a run's stored texts (no Qt).

Generation runs label each attempt with the probe's built-in labeller as it is stored.
Some labellers need a model of their own (e.g. a story probe's LLM character extractor
on a labeler model), so a probe may offer *labelling passes* (`Labelling.passes`)
that run afterwards, over the stored texts; `label_run` runs one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.support.errors import UserError
from gbdesk.workflows.runs import Progress, RunControl


def pass_names(probe_name: str) -> list[str]:
    return [p.name for p in get_probe(probe_name).capabilities.labelling.passes()]


def label_run(
    store: Store,
    run_id: int,
    extractor: str,
    labeler_model: str | None = "default",
    *,
    backend_factory: Callable[[dict[str, Any]], Any] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    control: RunControl | None = None,
) -> dict[str, Any]:
    """Run the labelling pass `extractor` of the run's probe (e.g. "llm") with the labeler
    model `labeler_model`; returns the pass's summary ({source, labelled, status, …})."""
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    passes = {p.name: p for p in probe.capabilities.labelling.passes()}
    if not passes:
        raise UserError(f"run {run_id} is a {run['probe']} run, which has no labelling pass")
    if extractor not in passes:
        raise UserError(f"--extractor must be one of {', '.join(passes)} for {run['probe']} runs")
    result = passes[extractor].run(
        store,
        run_id,
        labeler_model,
        backend_factory=backend_factory,
        on_progress=on_progress,
        control=control,
    )
    return {**result, "unit": probe.capabilities.running.unit}
