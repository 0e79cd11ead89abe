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

from gbdesk.store import Store
from gbdesk.studies.base import LabellingPass
from gbdesk.studies.laissez_faire.probe import (
    character_label,
    characters_from_data,
    metadata_scenario,
    roles_of,
)
from gbdesk.support.errors import EngineCrashed
from gbdesk.workflows.runs import AUTO_BATCH, Progress, RunControl, resolve_model, stream_requests


def deterministic_pass(store: Store, run_id: int, model_spec: str | None = None, **_: Any) -> dict:
    """Make the deterministic extractor the run's extractor (labelling what it lacks)."""
    from gbdesk.analysis.results import ensure_auto_labels

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
        from gbdesk.workflows.runs import llama_backend_factory

        def backend_factory(m: dict[str, Any]) -> Any:
            # a GGUF file (continuous batching, automatic count), or an endpoint
            return llama_backend_factory(m, {"batch_size": AUTO_BATCH})

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

    def store_characters(attempt: dict[str, Any], characters: list, fallback: bool, raw: str):
        nonlocal fallbacks, labelled
        label = character_label(characters, source)
        label["data"]["fallback"] = fallback
        label["data"]["raw"] = raw
        store.set_auto_label(attempt["id"], **label)
        fallbacks += fallback
        labelled += 1
        if on_progress is not None:
            elapsed = time.monotonic() - started
            on_progress(
                Progress(
                    run_id, "labelling", total - len(todo) + labelled, total, labelled, 0.0,
                    elapsed / labelled * (len(todo) - labelled), elapsed,
                )
            )  # fmt: skip

    streaming = _streams(backend)
    try:
        if streaming:  # continuous batching: every story's request at once
            asked = []
            for attempt in todo:
                meta = metadata.get(attempt["item"], {})
                roles, scenario = roles_of(meta), metadata_scenario(meta)
                if roles:
                    asked.append((attempt, roles, scenario))
                else:
                    store_characters(attempt, [], False, "")

            def on_result(i: int, result: Any) -> None:
                attempt, roles, scenario = asked[i]
                chars = llm.from_reply(attempt["response"], roles, scenario, result.text)
                store_characters(attempt, chars, llm.last_fallback, llm.last_raw)

            requests = [llm.request(a["response"], r, sc) for a, r, sc in asked]
            try:
                status = stream_requests(backend, requests, on_result, control)
            except EngineCrashed:
                if not control.cancelled:
                    raise
                status = "cancelled"
        for attempt in [] if streaming else todo:
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
            store_characters(attempt, characters, llm.last_fallback, llm.last_raw)
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


def _streams(backend: Any) -> bool:
    """Whether the labeler decodes with continuous batching (a local model not set to
    one request at a time)."""
    return hasattr(backend, "generate_stream") and getattr(backend, "batch_size", 1) != 1


HYBRID_THRESHOLD = 0.8  # ask the labeler about characters the extractor is less sure of


def hybrid_pass(
    store: Store,
    run_id: int,
    model_spec: str | None = "default",
    *,
    threshold: float = HYBRID_THRESHOLD,
    backend_factory: Callable[[dict[str, Any]], Any] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    control: RunControl | None = None,
    batch: int = 8,
) -> dict[str, Any]:
    """The deterministic extractor everywhere, and the labeler model's answer only for the
    characters it is less than `threshold` sure of: those stories are sent to the labeler
    (several per call when the backend batches), and a low-confidence character takes
    the labeler's name and references for its role. Both answers are kept in the label
    (`deterministic`, `llm`, `llm_raw`, `replaced`). Resumable; makes "hybrid" the run's
    extractor. Returns {source, labelled, asked, replaced, skipped, fallbacks, status}."""
    from gbdesk.analysis.results import ensure_auto_labels
    from gbdesk.studies.laissez_faire.extract.llm import LLMExtractor

    control = control or RunControl()
    params = dict(store.get_run(run_id)["params"])
    if params.get("extractor", "deterministic") != "deterministic":
        params["extractor"] = "deterministic"
        store.update_run_params(run_id, params)
    ensure_auto_labels(store, run_id)  # the deterministic labels, with confidences
    deterministic = store.labels(run_id, "auto", "deterministic/")
    model = resolve_model(store, model_spec)
    if backend_factory is None:
        from gbdesk.workflows.runs import llama_backend_factory

        def backend_factory(m: dict[str, Any]) -> Any:
            return llama_backend_factory(m, {"batch_size": AUTO_BATCH})

    backend = backend_factory(model)
    control._backend = backend
    llm = LLMExtractor(backend, model.get("file_name") or model["name"])
    source = f"hybrid/1:{model.get('file_name') or model['name']}@{threshold:g}"
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    done = store.labels(run_id, "auto", source)
    attempts = [a for a in store.attempts(run_id) if a["id"] not in done]
    total, started = len(store.attempts(run_id)), time.monotonic()
    counts = {"labelled": 0, "asked": 0, "replaced": 0, "fallbacks": 0}
    status = "done"

    def store_label(attempt: dict[str, Any], chars: list, answer: list | None, raw: str) -> None:
        by_role = {c.role: c for c in answer or []}
        final, replaced = [], []
        for c in chars:
            better = by_role.get(c.role)
            if c.confidence is not None and c.confidence < threshold and better is not None:
                final.append(better)
                replaced.append(c.role)
            else:
                final.append(c)
        label = character_label(final, source)
        label["data"].update(
            deterministic=[c.to_json() for c in chars],
            llm=[c.to_json() for c in answer] if answer is not None else None,
            llm_raw=raw,
            replaced=replaced,
        )
        store.set_auto_label(attempt["id"], **label)
        counts["labelled"] += 1
        counts["replaced"] += len(replaced)
        counts["fallbacks"] += bool(raw) and answer is None

    streaming = _streams(backend)
    try:
        pending: list[tuple[dict[str, Any], list, Any]] = []
        for index, attempt in enumerate(attempts):
            control.wait_while_paused()
            if control.cancelled:
                status = "cancelled"
                break
            chars = characters_from_data((deterministic.get(attempt["id"]) or {}).get("data"))
            if all(c.confidence is None or c.confidence >= threshold for c in chars):
                store_label(attempt, chars, None, "")
            else:
                pending.append((attempt, chars, metadata.get(attempt["item"], {})))
            if streaming:
                pass  # every pending story goes to one stream below
            elif len(pending) >= batch or (index == len(attempts) - 1 and pending):
                requests = [
                    llm.request(a["response"], roles_of(m), metadata_scenario(m))
                    for a, _, m in pending
                ]
                try:
                    if hasattr(backend, "generate_batch") and len(requests) > 1:
                        results = backend.generate_batch(requests)
                    else:
                        results = [backend.generate(r) for r in requests]
                except EngineCrashed:
                    if control.cancelled:
                        status = "cancelled"
                        break
                    raise
                for (a, chars_a, m), result in zip(pending, results, strict=True):
                    story, roles = a["response"], roles_of(m)
                    answer = llm.parse(story, roles, metadata_scenario(m), result.text)
                    store_label(a, chars_a, answer, result.text)
                counts["asked"] += len(pending)
                pending = []
            if on_progress is not None and counts["labelled"]:
                elapsed = time.monotonic() - started
                left = len(attempts) - counts["labelled"]
                on_progress(
                    Progress(
                        run_id,
                        "labelling",
                        total - len(attempts) + counts["labelled"],
                        total,
                        counts["labelled"],
                        0.0,
                        elapsed / counts["labelled"] * left,
                        elapsed,
                    )
                )
        if streaming and pending and status == "done":  # continuous batching
            asked = pending

            def on_result(i: int, result: Any) -> None:
                a, chars_a, m = asked[i]
                story, roles = a["response"], roles_of(m)
                answer = llm.parse(story, roles, metadata_scenario(m), result.text)
                store_label(a, chars_a, answer, result.text)
                counts["asked"] += 1
                if on_progress is not None:
                    elapsed = time.monotonic() - started
                    done_ = total - len(attempts) + counts["labelled"]
                    on_progress(Progress(run_id, "labelling", done_, total, counts["labelled"],
                                         0.0, None, elapsed))  # fmt: skip

            requests = [
                llm.request(a["response"], roles_of(m), metadata_scenario(m)) for a, _, m in asked
            ]
            try:
                status = stream_requests(backend, requests, on_result, control)
            except EngineCrashed:
                if not control.cancelled:
                    raise
                status = "cancelled"
    finally:
        backend.close()
    if status == "done":
        params["extractor"] = "hybrid"
        store.update_run_params(run_id, params)
    return {"source": source, "skipped": total - len(attempts), "status": status, **counts}


PASSES = [
    LabellingPass(
        "llm",
        "Extract characters with the selected model",
        "The paper's Table S7 labelling prompt on a labeler model (JSON-constrained, with "
        "its hallucination filter); the run's metrics then use these labels.",
        llm_pass,
    ),
    LabellingPass(
        "hybrid",
        "Check the least sure characters with the selected model",
        f"The deterministic extractor everywhere; stories with a character it is less than "
        f"{HYBRID_THRESHOLD:.0%} sure of are sent to the labeler model (the paper's Table S7 "
        "prompt), whose answer replaces those characters. Both answers are kept.",
        hybrid_pass,
    ),
    LabellingPass(
        "deterministic",
        "Use the deterministic extractor",
        "Point the run's metrics back at the deterministic extractor (no model).",
        deterministic_pass,
        needs_model=False,
    ),
]
