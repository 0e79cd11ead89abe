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
from dataclasses import dataclass, field
from typing import Any

from gbdesk.contract.capabilities import LabellingPass
from gbdesk.store import Store
from gbdesk.studies.laissez_faire.characters import (
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
    control = control or RunControl()
    params = dict(store.get_run(run_id)["params"])
    _model, backend, llm = _open_labeler(store, model_spec, backend_factory, control)
    source = f"{llm.name}/{llm.version}"
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    done = store.labels(run_id, "auto", source)
    attempts = store.attempts(run_id)
    todo = [a for a in attempts if a["id"] not in done]
    writer = _LLMLabels(store, run_id, source, len(attempts), len(todo), on_progress)
    try:
        if _streams(backend):  # continuous batching: every story's request at once
            status = _llm_streamed(llm, backend, todo, metadata, writer, control)
        else:
            status = _llm_one_by_one(llm, todo, metadata, writer, control)
    finally:
        backend.close()
    if status == "done":
        params["extractor"] = "llm"
        store.update_run_params(run_id, params)
    return {
        "source": source,
        "labelled": writer.labelled,
        "skipped": len(attempts) - len(todo),
        "fallbacks": writer.fallbacks,
        "status": status,
    }


def _open_labeler(
    store: Store,
    model_spec: str | None,
    backend_factory: Callable[[dict[str, Any]], Any] | None,
    control: RunControl,
) -> tuple[dict[str, Any], Any, Any]:
    """(model, backend, LLM extractor) of the labeler model; the backend is the one
    `control` stops."""
    from gbdesk.studies.laissez_faire.extract.llm import LLMExtractor

    model = resolve_model(store, model_spec)
    if backend_factory is None:
        from gbdesk.workflows.runs import llama_backend_factory

        def backend_factory(m: dict[str, Any]) -> Any:
            # a GGUF file (continuous batching, automatic count), or an endpoint
            return llama_backend_factory(m, {"batch_size": AUTO_BATCH})

    backend = backend_factory(model)
    control._backend = backend
    return model, backend, LLMExtractor(backend, model.get("file_name") or model["name"])


@dataclass
class _LLMLabels:
    """Stores the LLM extractor's labels (`llm_pass`) and reports progress."""

    store: Store
    run_id: int
    source: str
    total: int  # stories of the run
    todo: int  # stories without a label from this extractor
    on_progress: Callable[[Progress], None] | None
    started: float = field(default_factory=time.monotonic)
    labelled: int = 0
    fallbacks: int = 0

    def write(self, attempt: dict[str, Any], characters: list, fallback: bool, raw: str) -> None:
        label = character_label(characters, self.source)
        label["data"]["fallback"] = fallback
        label["data"]["raw"] = raw
        self.store.set_auto_label(attempt["id"], **label)
        self.fallbacks += fallback
        self.labelled += 1
        if self.on_progress is not None:
            elapsed = time.monotonic() - self.started
            self.on_progress(
                Progress(
                    self.run_id, "labelling", self.total - self.todo + self.labelled, self.total,
                    self.labelled, 0.0, elapsed / self.labelled * (self.todo - self.labelled),
                    elapsed,
                )
            )  # fmt: skip


def _llm_streamed(
    llm: Any,
    backend: Any,
    todo: list[dict[str, Any]],
    metadata: dict[str, Any],
    writer: _LLMLabels,
    control: RunControl,
) -> str:
    """Send every story with roles in one stream; store each answer as it comes."""
    asked = []
    for attempt in todo:
        meta = metadata.get(attempt["item"], {})
        roles, scenario = roles_of(meta), metadata_scenario(meta)
        if roles:
            asked.append((attempt, roles, scenario))
        else:
            writer.write(attempt, [], False, "")

    def on_result(i: int, result: Any) -> None:
        attempt, roles, scenario = asked[i]
        chars = llm.from_reply(attempt["response"], roles, scenario, result.text)
        writer.write(attempt, chars, llm.last_fallback, llm.last_raw)

    requests = [llm.request(a["response"], r, sc) for a, r, sc in asked]
    return _stream(backend, requests, on_result, control)


def _llm_one_by_one(
    llm: Any,
    todo: list[dict[str, Any]],
    metadata: dict[str, Any],
    writer: _LLMLabels,
    control: RunControl,
) -> str:
    """Ask about one story at a time (pausable, cancellable between stories)."""
    for attempt in todo:
        control.wait_while_paused()
        if control.cancelled:
            return "cancelled"
        meta = metadata.get(attempt["item"], {})
        try:
            characters = llm.extract(attempt["response"], roles_of(meta), metadata_scenario(meta))
        except EngineCrashed:
            if control.cancelled:  # cancel(now=True) stopped the worker mid-answer
                return "cancelled"
            raise
        writer.write(attempt, characters, llm.last_fallback, llm.last_raw)
    return "done"


def _stream(
    backend: Any, requests: list, on_result: Callable[[int, Any], None], control: RunControl
) -> str:
    """`stream_requests`, "cancelled" when a cancel stopped the worker mid-stream."""
    try:
        return stream_requests(backend, requests, on_result, control)
    except EngineCrashed:
        if not control.cancelled:
            raise
        return "cancelled"


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

    control = control or RunControl()
    params = dict(store.get_run(run_id)["params"])
    if params.get("extractor", "deterministic") != "deterministic":
        params["extractor"] = "deterministic"
        store.update_run_params(run_id, params)
    ensure_auto_labels(store, run_id)  # the deterministic labels, with confidences
    deterministic = store.labels(run_id, "auto", "deterministic/")
    model, backend, llm = _open_labeler(store, model_spec, backend_factory, control)
    source = f"hybrid/1:{model.get('file_name') or model['name']}@{threshold:g}"
    metadata = {row["item"]: row["metadata"] for row in store.run_items(run_id)}
    done = store.labels(run_id, "auto", source)
    attempts = [a for a in store.attempts(run_id) if a["id"] not in done]
    job = _Hybrid(
        store, run_id, source, threshold, llm, len(store.attempts(run_id)), len(attempts),
        on_progress,
    )  # fmt: skip
    streaming = _streams(backend)
    try:
        status, pending = job.walk(attempts, deterministic, metadata, backend, streaming, batch,
                                   control)  # fmt: skip
        if streaming and pending and status == "done":  # continuous batching
            status = job.stream(pending, backend, control)
    finally:
        backend.close()
    if status == "done":
        params["extractor"] = "hybrid"
        store.update_run_params(run_id, params)
    return {"source": source, "skipped": job.total - len(attempts), "status": status, **job.counts}


#: (attempt, the deterministic characters, the item's metadata) of a story to ask about
_Pending = tuple[dict[str, Any], list, Any]


@dataclass
class _Hybrid:
    """One `hybrid_pass`: stores each story's label (the deterministic characters, the
    unsure ones replaced by the labeler's), asks the labeler in batches or in one stream,
    reports progress."""

    store: Store
    run_id: int
    source: str
    threshold: float
    llm: Any
    total: int  # stories of the run
    todo: int  # stories without a hybrid label
    on_progress: Callable[[Progress], None] | None
    started: float = field(default_factory=time.monotonic)
    counts: dict[str, int] = field(
        default_factory=lambda: {"labelled": 0, "asked": 0, "replaced": 0, "fallbacks": 0}
    )

    def write(self, attempt: dict[str, Any], chars: list, answer: list | None, raw: str) -> None:
        by_role = {c.role: c for c in answer or []}
        final, replaced = [], []
        for c in chars:
            better = by_role.get(c.role)
            if c.confidence is not None and c.confidence < self.threshold and better is not None:
                final.append(better)
                replaced.append(c.role)
            else:
                final.append(c)
        label = character_label(final, self.source)
        label["data"].update(
            deterministic=[c.to_json() for c in chars],
            llm=[c.to_json() for c in answer] if answer is not None else None,
            llm_raw=raw,
            replaced=replaced,
        )
        self.store.set_auto_label(attempt["id"], **label)
        counts = self.counts
        counts["labelled"] += 1
        counts["replaced"] += len(replaced)
        counts["fallbacks"] += bool(raw) and answer is None

    def answer(self, pending: _Pending, text: str) -> None:
        """Store a story's label with the labeler's reply `text`."""
        a, chars_a, m = pending
        story, roles = a["response"], roles_of(m)
        answer = self.llm.parse(story, roles, metadata_scenario(m), text)
        self.write(a, chars_a, answer, text)

    def request(self, pending: _Pending) -> Any:
        a, _, m = pending
        return self.llm.request(a["response"], roles_of(m), metadata_scenario(m))

    def walk(
        self,
        attempts: list[dict[str, Any]],
        deterministic: dict[int, Any],
        metadata: dict[str, Any],
        backend: Any,
        streaming: bool,
        batch: int,
        control: RunControl,
    ) -> tuple[str, list[_Pending]]:
        """Store the stories the extractor is sure of; ask about the others `batch` at a
        time (streaming: keep them for one stream). Returns (status, stories kept)."""
        pending: list[_Pending] = []
        for index, attempt in enumerate(attempts):
            control.wait_while_paused()
            if control.cancelled:
                return "cancelled", pending
            chars = characters_from_data((deterministic.get(attempt["id"]) or {}).get("data"))
            if all(c.confidence is None or c.confidence >= self.threshold for c in chars):
                self.write(attempt, chars, None, "")
            else:
                pending.append((attempt, chars, metadata.get(attempt["item"], {})))
            if streaming:
                pass  # every pending story goes to one stream afterwards
            elif len(pending) >= batch or (index == len(attempts) - 1 and pending):
                try:
                    self.ask(pending, backend)
                except EngineCrashed:
                    if control.cancelled:
                        return "cancelled", pending
                    raise
                pending = []
            if self.on_progress is not None and self.counts["labelled"]:
                elapsed = time.monotonic() - self.started
                labelled = self.counts["labelled"]
                self.on_progress(
                    Progress(
                        self.run_id, "labelling", self.total - self.todo + labelled, self.total,
                        labelled, 0.0, elapsed / labelled * (self.todo - labelled), elapsed,
                    )
                )  # fmt: skip
        return "done", pending

    def ask(self, pending: list[_Pending], backend: Any) -> None:
        """Ask the labeler about `pending` in one batch (one at a time if it cannot)."""
        requests = [self.request(p) for p in pending]
        if hasattr(backend, "generate_batch") and len(requests) > 1:
            results = backend.generate_batch(requests)
        else:
            results = [backend.generate(r) for r in requests]
        for p, result in zip(pending, results, strict=True):
            self.answer(p, result.text)
        self.counts["asked"] += len(pending)

    def stream(self, asked: list[_Pending], backend: Any, control: RunControl) -> str:
        """Ask about every kept story in one stream (continuous batching)."""

        def on_result(i: int, result: Any) -> None:
            self.answer(asked[i], result.text)
            self.counts["asked"] += 1
            if self.on_progress is not None:
                elapsed = time.monotonic() - self.started
                done_ = self.total - self.todo + self.counts["labelled"]
                self.on_progress(Progress(self.run_id, "labelling", done_, self.total,
                                          self.counts["labelled"], 0.0, None, elapsed))  # fmt: skip

        return _stream(backend, [self.request(p) for p in asked], on_result, control)


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
