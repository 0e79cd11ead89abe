"""Labelling passes over stored generations (no Qt).

Generation runs label each attempt with the probe's built-in detector as it is
stored. Some labellers need a model of their own — the Laissez-Faire LLM extractor
runs the paper's labelling prompt on a *labeler* GGUF — so they run afterwards, over
the stored texts: `label_run` writes one automatic label per attempt under the
extractor's source, skips attempts it already labelled (resumable), reports progress
and honours cancel, then points the run's metrics at that extractor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gbdesk.errors import EngineCrashed, UserError
from gbdesk.runs import Progress, RunControl, resolve_model
from gbdesk.store import Store


def _require_extraction_run(store: Store, run_id: int) -> dict[str, Any]:
    run = store.get_run(run_id)
    if run["probe"] != "laissez_faire":
        raise UserError(
            f"run {run_id} is a {run['probe']} run; labelling passes apply to laissez_faire runs"
        )
    return run


def label_run(
    store: Store,
    run_id: int,
    extractor: str = "llm",
    labeler_model: str | None = "default",
    *,
    backend_factory: Callable[[dict[str, Any]], Any] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    control: RunControl | None = None,
) -> dict[str, Any]:
    """Label every stored attempt of a Laissez-Faire run with `extractor` and make it the
    run's extractor. Returns {source, labelled, skipped, fallbacks, status}."""
    from gbdesk.studies.laissez_faire.probe import _scenario, character_label, roles_of

    run = _require_extraction_run(store, run_id)
    control = control or RunControl()
    params = dict(run["params"])
    if extractor == "deterministic":
        from gbdesk.results import ensure_auto_labels

        params["extractor"] = "deterministic"
        store.update_run_params(run_id, params)
        labelled = ensure_auto_labels(store, run_id)
        return {
            "source": "deterministic/",
            "labelled": labelled,
            "skipped": 0,
            "fallbacks": 0,
            "status": "done",
        }
    if extractor != "llm":
        raise UserError("--extractor must be llm or deterministic")

    from gbdesk.studies.laissez_faire.extract.llm import LLMExtractor

    model = resolve_model(store, labeler_model)
    if backend_factory is None:
        from gbdesk.runs import llama_backend_factory

        def backend_factory(m):
            return llama_backend_factory(m, {})  # a GGUF file, or an endpoint

    backend = backend_factory(model)
    control._backend = backend
    llm = LLMExtractor(backend, model.get("file_name") or model["name"])
    source = f"{llm.name}/{llm.version}"
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    done = store.labels(run_id, "auto", source)
    attempts = store.attempts(run_id)
    todo = [a for a in attempts if a["id"] not in done]
    total, started, fallbacks, labelled = len(attempts), time.monotonic(), 0, 0
    status = "done"
    try:
        for attempt in todo:
            control.wait_while_paused()
            if control.cancelled:
                status = "cancelled"
                break
            meta = metadata.get(attempt["item"], {})
            try:
                characters = llm.extract(attempt["response"], roles_of(meta), _scenario(meta))
            except EngineCrashed:
                if control.cancelled:  # cancel(now=True) stopped the worker mid-answer
                    status = "cancelled"
                    break
                raise
            label = character_label(characters, source)
            label["data"]["fallback"] = llm.last_fallback
            label["data"]["raw"] = llm.last_raw
            store.set_auto_label(attempt["id"], **label)
            fallbacks += llm.last_fallback
            labelled += 1
            if on_progress is not None:
                elapsed = time.monotonic() - started
                on_progress(
                    Progress(
                        run_id,
                        "labelling",
                        total - len(todo) + labelled,
                        total,
                        labelled,
                        0.0,
                        elapsed / labelled * (len(todo) - labelled),
                        elapsed,
                    )
                )
    finally:
        backend.close()
    if status == "done":
        params["extractor"] = "llm"
        store.update_run_params(run_id, params)
    return {
        "source": source,
        "labelled": labelled,
        "skipped": total - len(todo),
        "fallbacks": fallbacks,
        "status": status,
    }
