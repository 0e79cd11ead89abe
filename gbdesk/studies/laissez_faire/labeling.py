"""Laissez-Faire's labelling passes over stored stories (no Qt).

The deterministic extractor labels each story as it is stored. The paper's LLM extractor
needs a model of its own — the Table S7 labelling prompt on a *labeler* model — so it
runs afterwards, over the stored texts: `llm_pass` writes one automatic label per story
under the extractor's source, skips stories it already labelled (resumable), reports
progress and honours cancel, then points the run's metrics at that extractor.
`deterministic_pass` points them back at the deterministic extractor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gbdesk.errors import EngineCrashed
from gbdesk.runs import Progress, RunControl, resolve_model
from gbdesk.store import Store
from gbdesk.studies.base import LabellingPass
from gbdesk.studies.laissez_faire.probe import character_label, metadata_scenario, roles_of


def deterministic_pass(store: Store, run_id: int, model_spec: str | None = None, **_: Any) -> dict:
    """Make the deterministic extractor the run's extractor (labelling what it lacks)."""
    from gbdesk.results import ensure_auto_labels

    params = dict(store.get_run(run_id)["params"])
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


def llm_pass(
    store: Store,
    run_id: int,
    model_spec: str | None = "default",
    *,
    backend_factory: Callable[[dict[str, Any]], Any] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    control: RunControl | None = None,
) -> dict[str, Any]:
    """Label every stored story of the run with the LLM extractor on `model_spec` and make
    it the run's extractor. Returns {source, labelled, skipped, fallbacks, status}."""
    from gbdesk.studies.laissez_faire.extract.llm import LLMExtractor

    control = control or RunControl()
    params = dict(store.get_run(run_id)["params"])
    model = resolve_model(store, model_spec)
    if backend_factory is None:
        from gbdesk.runs import llama_backend_factory

        def backend_factory(m: dict[str, Any]) -> Any:
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
                characters = llm.extract(
                    attempt["response"], roles_of(meta), metadata_scenario(meta)
                )
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


PASSES = [
    LabellingPass(
        "llm",
        "Extract characters with the selected model",
        "The paper's Table S7 labelling prompt on a labeler model (JSON-constrained, with "
        "its hallucination filter); the run's metrics then use these labels.",
        llm_pass,
    ),
    LabellingPass(
        "deterministic",
        "Use the deterministic extractor",
        "Point the run's metrics back at the deterministic extractor (no model).",
        deterministic_pass,
        needs_model=False,
    ),
]
