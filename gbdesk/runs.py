"""Planning and executing runs (no Qt).

A run is a probe × model × parameters. `plan_run` stores the run and its items;
`execute_run` generates the attempts that are not stored yet, writing each one (with
its automatic label) the moment it completes, reporting progress to a callback and
honouring pause and cancel between attempts. Running it again after a crash, a
cancel or a kill continues where the store left off: the UNIQUE (run, item,
attempt) key makes every write idempotent and per-attempt seeds make the texts
independent of the order and the session they are generated in.

Attempts are generated attempt-major (every item once, then every item again …) so
that a half-finished run already covers every item.
"""

from __future__ import annotations

import math
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gbdesk import __version__
from gbdesk.engine.base import (
    DEFAULT_MIN_P,
    DEFAULT_TOP_K,
    Backend,
    GenerationRequest,
    GenerationResult,
    attempt_seed,
)
from gbdesk.errors import EngineCrashed, EngineError, UserError
from gbdesk.store import Store
from gbdesk.studies import get_probe

RUN_STATUSES = ("created", "running", "paused", "cancelled", "interrupted", "failed", "done")


# -- models ---------------------------------------------------------------------------------
def resolve_model(store: Store, spec: str | None) -> dict[str, Any]:
    """Register the GGUF named by `spec` ("default" or a path) and return its row.

    The sha256 is computed once per file version (path, size, mtime) and cached. An
    ``http(s)://BASE-URL#MODEL`` spec names an OpenAI-compatible endpoint model instead
    (`gbdesk.engine.http_backend`; nothing is contacted here).
    """
    if spec and spec.strip().lower().startswith(("http://", "https://")):
        from gbdesk.engine.http_backend import resolve_endpoint

        return resolve_endpoint(store, spec)
    from gbdesk.engine.default_model import (
        DEFAULT_MODEL_LABEL,
        default_model_path,
        is_default_model,
    )
    from gbdesk.engine.gguf_meta import read_gguf, sha256_file

    path = default_model_path() if spec in (None, "", "default") else Path(spec).expanduser()
    info = read_gguf(path)  # UserError for missing, foreign or truncated files
    stat = Path(info.path).stat()
    cached = store.model_by_path(info.path, stat.st_size, stat.st_mtime)
    if cached and cached.get("sha256"):
        return cached
    record = {
        "kind": "gguf",
        "name": DEFAULT_MODEL_LABEL
        if is_default_model(info.path)
        else (info.name or info.file_name),
        "path": info.path,
        "file_name": info.file_name,
        "sha256": sha256_file(info.path),
        "size_bytes": stat.st_size,
        "mtime": stat.st_mtime,
        "architecture": info.architecture,
        "parameters": info.parameters,
        "quantization": info.quantization,
        "context_length": info.context_length,
        "has_chat_template": int(info.has_chat_template),
        "chat_template": info.chat_template,
        "metadata_json": _json({k: v for k, v in info.to_json().items() if k != "chat_template"}),
    }
    model_id = store.register_model(record)
    return store.get_model(model_id)


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, sort_keys=True, default=str)


def verify_model_file(model: dict[str, Any]) -> None:
    """Refuse to resume on a model file that changed since the run was planned."""
    from gbdesk.engine.gguf_meta import sha256_file

    path = Path(model["path"])
    if not path.is_file():
        raise UserError(f"the run's model file is missing: {path}")
    stat = path.stat()
    if stat.st_size == model["size_bytes"] and stat.st_mtime == model["mtime"]:
        return
    if sha256_file(path) != model["sha256"]:
        raise UserError(
            f"the model file {path} changed since this run started (sha256 differs); "
            "start a new run instead of resuming"
        )


# -- planning -------------------------------------------------------------------------------
def plan_run(
    store: Store,
    probe_name: str,
    model: dict[str, Any] | None,
    *,
    attempts: int | None = None,
    seed: int = 0,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    prompt_mode: str = "auto",
    source: str = "generated",
    batch_size: int = 1,
    **probe_params: Any,
) -> int:
    """Store a new run with its items; return its id. Nothing is generated yet."""
    probe = get_probe(probe_name)
    params = probe.resolve_params(**probe_params)
    items = probe.items(params)
    attempts = probe.default_attempts if attempts is None else attempts
    if attempts < 1:
        raise UserError("--attempts must be at least 1")
    defaults = probe.default_generation
    generation = {
        "attempts": attempts,
        "seed": seed,
        "temperature": defaults["temperature"] if temperature is None else temperature,
        "top_p": defaults["top_p"] if top_p is None else top_p,
        "max_tokens": defaults["max_tokens"] if max_tokens is None else max_tokens,
        "top_k": DEFAULT_TOP_K,
        "min_p": DEFAULT_MIN_P,
        "prompt_mode": prompt_mode,
        # local batched decoding: recorded so a resume decodes the same way (batched texts
        # differ from one-at-a-time ones — a different attention kernel)
        "batch_size": batch_size,
    }
    if batch_size < 1:
        raise UserError("--batch must be at least 1")
    if generation["temperature"] < 0:
        raise UserError("--temperature must be ≥ 0")
    if not 0 < generation["top_p"] <= 1:
        raise UserError("--top-p must be in (0, 1]")
    if generation["max_tokens"] < 1:
        raise UserError("--max-tokens must be at least 1")
    if prompt_mode not in ("auto", "chat", "completion"):
        raise UserError("--prompt-mode must be auto, chat or completion")
    return store.create_run(
        probe=probe.name,
        probe_version=probe.version,
        model_id=model["id"] if model else None,
        params=params,
        generation=generation,
        items=[(i.key, i.prompt, i.metadata) for i in items],
        attempts_per_item=attempts,
        app_version=__version__,
        llama_cpp_version=None,
        source=source,
    )


# -- execution ------------------------------------------------------------------------------
@dataclass
class Progress:
    run_id: int
    status: str
    done: int
    total: int
    session_done: int = 0
    tokens_per_s: float = 0.0
    eta_s: float | None = None
    elapsed_s: float = 0.0
    last: dict[str, Any] | None = None
    rate_unit: str = "tokens/s"  # "sentences/s" for perplexity probes

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


class RunControl:
    """Pause, resume and cancel a run from another thread (checked between attempts).

    `cancel(now=True)` also stops the model worker, so a long generation does not have
    to finish first; the attempt in flight is simply not stored.
    """

    def __init__(self) -> None:
        self._running = threading.Event()
        self._running.set()
        self._cancelled = threading.Event()
        self._backend: Any = None

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def cancel(self, now: bool = False) -> None:
        self._cancelled.set()
        self._running.set()
        if now and self._backend is not None and hasattr(self._backend, "abort"):
            self._backend.abort()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def wait_while_paused(self, on_pause: Callable[[], None] | None = None) -> None:
        if not self._running.is_set() and on_pause is not None:
            on_pause()
        self._running.wait()


class BackendFactory(Protocol):
    def __call__(self, model: dict[str, Any], generation: dict[str, Any]) -> Backend: ...


def llama_backend_factory(model: dict[str, Any], generation: dict[str, Any]) -> Backend:
    """The default factory: llama.cpp for GGUF files, `HttpBackend` for endpoint models."""
    if model.get("kind") == "endpoint":
        return http_backend_factory(model, generation)
    from gbdesk.engine.llama_backend import LlamaCppBackend

    return LlamaCppBackend(
        model["path"],
        prompt_mode=generation.get("prompt_mode", "auto"),
        batch_size=int(generation.get("batch_size", 1)),
    )


def http_backend_factory(model: dict[str, Any], generation: dict[str, Any]) -> Backend:
    """An OpenAI-compatible endpoint (model row of kind "endpoint"); probes it first."""
    from gbdesk.engine.http_backend import HttpBackend

    return HttpBackend.from_model_row(model, prompt_mode=generation.get("prompt_mode", "auto"))


@dataclass
class RunOutcome:
    run_id: int
    status: str
    attempts_done: int
    attempts_total: int
    generated: int = 0
    error: str | None = None
    engine: dict[str, Any] = field(default_factory=dict)


def pending_attempts(store: Store, run_id: int) -> list[tuple[dict[str, Any], int]]:
    """(item row, attempt index) pairs not yet stored, in attempt-major order."""
    run = store.get_run(run_id)
    items = store.run_items(run_id)
    done = store.attempt_keys(run_id)
    return [
        (item, a)
        for a in range(run["generation"]["attempts"])
        for item in items
        if (item["item"], a) not in done
    ]


def _request(
    generation: dict[str, Any], messages: list[dict[str, str]], seed: int, **overrides: Any
) -> GenerationRequest:
    """A request with the run's generation settings (temperature, max_tokens and
    json_schema may be overridden)."""
    return GenerationRequest(
        messages=messages,
        seed=seed,
        temperature=overrides.get("temperature", generation["temperature"]),
        top_p=generation["top_p"],
        max_tokens=overrides.get("max_tokens", generation["max_tokens"]),
        top_k=generation.get("top_k", DEFAULT_TOP_K),
        min_p=generation.get("min_p", DEFAULT_MIN_P),
        json_schema=overrides.get("json_schema"),
    )


def _item_request(
    generation: dict[str, Any], probe: Any, item: dict[str, Any], seed: int
) -> GenerationRequest:
    messages = [{"role": "user", "content": item["prompt"]}]
    return _request(generation, messages, seed, json_schema=probe.request_schema(item["metadata"]))


def _store_attempt(
    store: Store,
    run_id: int,
    item: dict[str, Any],
    attempt: int,
    result: GenerationResult,
    seed: int | None,
    label: dict[str, Any],
    scores: list[dict[str, Any]] | None = None,
) -> None:
    store.add_attempt(
        run_id,
        item["item"],
        attempt,
        item["prompt"],
        result.text,
        seed=seed,
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        latency_s=result.latency_s,
        finish_reason=result.finish_reason,
        prompt_mode=result.prompt_mode,
        auto_label=label,
        scores=scores,
    )


def _asker(backend: Backend, generation: dict[str, Any], on_token: Callable[[str], None] | None):
    """`ask(messages, seed, **overrides)` for chain probes: one generation with the run's
    settings (a probe may override temperature, max_tokens and json_schema per step)."""

    def ask(messages: list[dict[str, str]], seed: int, **overrides: Any) -> GenerationResult:
        stream = overrides.pop("stream", True)
        request = _request(generation, messages, seed, **overrides)
        return backend.generate(request, on_token if stream else None)

    return ask


def _score_item(
    backend: Backend, probe: Any, item: dict[str, Any]
) -> tuple[GenerationResult, list[dict[str, Any]]]:
    """Score one block of sentences; the result summarises it as an attempt."""
    sentences = probe.sentences(item["metadata"])
    started = time.perf_counter()
    results = backend.score([s["text"] for s in sentences])
    latency = time.perf_counter() - started
    scores = [
        {**s, "n_tokens": r.n_tokens, "logprob_sum": r.logprob_sum, "ppl": r.ppl}
        for s, r in zip(sentences, results, strict=True)
    ]
    mean_ppl = sum(s["ppl"] for s in scores) / len(scores) if scores else math.nan
    summary = GenerationResult(
        text=f"{len(scores)} sentences scored, mean perplexity {mean_ppl:.2f}",
        tokens_in=sum(r.n_tokens for r in results),
        tokens_out=0,
        latency_s=latency,
        finish_reason="scored",
        prompt_mode="score",
    )
    return summary, scores


def _backend_int(backend: Backend, name: str) -> int:
    """A backend's optional positive setting (`concurrency`: requests at once;
    `batch_size`: attempts per `generate_batch` call); 1 when absent or invalid."""
    try:
        return max(1, int(getattr(backend, name, 1) or 1))
    except (TypeError, ValueError):
        return 1


def _concurrency(backend: Backend) -> int:
    return _backend_int(backend, "concurrency")


def _hold_if_paused(
    store: Store, run_id: int, control: RunControl, report: Callable[..., None], done: int
) -> None:
    """While paused: mark the run paused, wait, then mark it running again (unless the
    pause ended in a cancel)."""
    if not control.paused:
        return
    store.set_run_status(run_id, "paused")
    report("paused", session_done=done)
    control.wait_while_paused()
    if not control.cancelled:
        store.set_run_status(run_id, "running")
        report("running", session_done=done)


def _last(
    item: dict[str, Any], attempt: int, result: GenerationResult, label: dict[str, Any]
) -> dict[str, Any]:
    """What a progress report says about the attempt just stored."""
    return {
        "item": item["item"],
        "attempt": attempt,
        "prompt": item["prompt"],
        "response": result.text,
        "label": label["label"],
        "tokens_out": result.tokens_out,
    }


def _generate_concurrently(
    store: Store,
    run_id: int,
    probe: Any,
    generation: dict[str, Any],
    todo: list[tuple[dict[str, Any], int]],
    backend: Backend,
    control: RunControl,
    workers: int,
    report: Callable[..., None],
    started: float,
    tally: dict[str, float],
) -> str:
    """The run loop for generation probes on a backend with `concurrency` > 1.

    Up to `workers` requests are in flight on a thread pool, submitted in attempt-major
    order with the same per-attempt seeds as the sequential loop. Each result is stored
    (with its label) by this, the calling thread, as soon as it completes — the store's
    connection is used by one thread only. Pause and cancel stop new submissions; the
    requests in flight are waited for and stored (`cancel(now=True)` aborts them
    instead). After an engine error nothing new is submitted, what is in flight is
    stored, and the error is raised. Returns "done" or "cancelled"; `tally` counts
    attempts stored, tokens generated and seconds spent generating (wall clock, paused
    time excluded).
    """
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    pending = iter(todo)
    in_flight: dict[Future[GenerationResult], tuple[dict[str, Any], int, int]] = {}
    error: BaseException | None = None
    exhausted = False
    processed = 0
    last_beat = active_since = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gbdesk-gen")
    try:
        while True:
            if control.paused and not control.cancelled and error is None and not in_flight:
                tally["time"] += time.monotonic() - active_since
                _hold_if_paused(store, run_id, control, report, int(tally["done"]))
                active_since = time.monotonic()
                continue
            while (
                not exhausted
                and not control.paused
                and not control.cancelled
                and error is None
                and len(in_flight) < workers
            ):
                nxt = next(pending, None)
                if nxt is None:
                    exhausted = True
                    break
                item, attempt = nxt
                seed = attempt_seed(generation["seed"], item["item"], attempt)
                request = _item_request(generation, probe, item, seed)
                in_flight[pool.submit(backend.generate, request, None)] = (item, attempt, seed)
            if not in_flight:
                break
            finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for future in finished:
                item, attempt, seed = in_flight.pop(future)
                try:
                    result = future.result()
                except BaseException as exc:
                    error = error or exc
                    continue
                label = probe.label(result.text, item["metadata"])
                _store_attempt(store, run_id, item, attempt, result, seed, label)
                processed += 1
                tally["done"] += 1
                tally["tokens"] += result.tokens_out
                now_ = time.monotonic()
                if now_ - last_beat > 10:
                    store.heartbeat(run_id)
                    last_beat = now_
                busy = tally["time"] + (now_ - active_since)
                elapsed = now_ - started
                report(
                    "running",
                    session_done=int(tally["done"]),
                    tokens_per_s=tally["tokens"] / busy if busy > 0 else 0.0,
                    eta_s=elapsed / tally["done"] * (len(todo) - processed),
                    elapsed_s=elapsed,
                    rate_unit="tokens/s",
                    last=_last(item, attempt, result, label),
                )
    finally:  # nothing is in flight here unless an exception (Ctrl-C) is propagating
        tally["time"] += time.monotonic() - active_since
        pool.shutdown(wait=False, cancel_futures=True)
    if error is not None:
        raise error
    return "done" if exhausted and processed == len(todo) else "cancelled"


def _batch_size(backend: Backend) -> int:
    return _backend_int(backend, "batch_size")


def _generate_batched(
    store: Store,
    run_id: int,
    probe: Any,
    generation: dict[str, Any],
    todo: list[tuple[dict[str, Any], int]],
    backend: Backend,
    control: RunControl,
    batch_size: int,
    report: Callable[..., None],
    started: float,
    tally: dict[str, float],
) -> str:
    """The run loop for generation probes on a backend with `batch_size` > 1.

    The pending attempts, in attempt-major order with the same per-attempt seeds as the
    sequential loop, go to `backend.generate_batch` in chunks of `batch_size`; each
    result is labelled and stored as in the sequential loop. Pause and cancel take effect
    between chunks. Returns "done" or "cancelled"; `tally` counts attempts stored, tokens
    generated and seconds spent generating (wall clock per chunk).
    """
    processed = 0
    last_beat = time.monotonic()
    for start in range(0, len(todo), batch_size):
        _hold_if_paused(store, run_id, control, report, int(tally["done"]))
        if control.cancelled:
            return "cancelled"
        chunk = todo[start : start + batch_size]
        seeds = [attempt_seed(generation["seed"], item["item"], a) for item, a in chunk]
        requests = [
            _item_request(generation, probe, item, seed)
            for (item, _), seed in zip(chunk, seeds, strict=True)
        ]
        chunk_started = time.monotonic()
        results = backend.generate_batch(requests)
        tally["time"] += time.monotonic() - chunk_started
        for (item, attempt), seed, result in zip(chunk, seeds, results, strict=True):
            label = probe.label(result.text, item["metadata"])
            _store_attempt(store, run_id, item, attempt, result, seed, label)
            processed += 1
            tally["done"] += 1
            tally["tokens"] += result.tokens_out
            now_ = time.monotonic()
            if now_ - last_beat > 10:
                store.heartbeat(run_id)
                last_beat = now_
            elapsed = now_ - started
            report(
                "running",
                session_done=int(tally["done"]),
                tokens_per_s=tally["tokens"] / tally["time"] if tally["time"] > 0 else 0.0,
                eta_s=elapsed / tally["done"] * (len(todo) - processed),
                elapsed_s=elapsed,
                rate_unit="tokens/s",
                last=_last(item, attempt, result, label),
            )
    return "done"


def execute_run(
    store: Store,
    run_id: int,
    *,
    backend_factory: BackendFactory = llama_backend_factory,
    control: RunControl | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_token: Callable[[str], None] | None = None,
    on_backend: Callable[[Backend], None] | None = None,
) -> RunOutcome:
    """Generate the run's missing attempts. Safe to call again at any time."""
    control = control or RunControl()
    run = store.get_run(run_id)
    if run["source"] != "generated":
        raise UserError(f"run {run_id} was imported; there is nothing to generate")
    probe = get_probe(run["probe"])
    generation = run["generation"]
    total = run["attempts_total"]
    todo = pending_attempts(store, run_id)

    already = total - len(todo)

    def report(status: str, session_done: int = 0, **extra: Any) -> None:
        if on_progress is not None:
            on_progress(
                Progress(run_id, status, already + session_done, total, session_done, **extra)
            )

    if not todo:
        store.set_run_status(run_id, "done")
        report("done")
        return RunOutcome(run_id, "done", total, total)

    model = store.get_model(run["model_id"])
    if model.get("kind") != "endpoint":  # an endpoint has no file to check
        verify_model_file(model)
    report("loading")
    backend = backend_factory(model, generation)
    control._backend = backend
    if on_backend is not None:
        on_backend(backend)
    engine = {
        "backend": backend.info.backend,
        "model_name": backend.info.model_name,
        "prompt_mode": backend.info.prompt_mode,
        "versions": backend.info.versions,
        "settings": backend.info.settings,
        "load_time_s": backend.info.load_time_s,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    store.claim_run(run_id, engine=engine)

    rate_unit = "sentences/s" if probe.kind == "scoring" else "tokens/s"
    started = time.monotonic()
    session_done = 0
    tokens_out = 0
    gen_time = 0.0
    last_beat = started
    status = "running"
    error: str | None = None
    workers = _concurrency(backend) if probe.kind == "generation" else 1
    batched = _batch_size(backend) if probe.kind == "generation" else 1
    tally = {"done": 0, "tokens": 0, "time": 0.0}  # the concurrent loop's counts
    try:
        if batched > 1:  # llama.cpp: several sequences per decode call
            workers = 0  # neither the concurrent nor the sequential loop
            status = _generate_batched(
                store, run_id, probe, generation, todo, backend, control, batched,
                report, started, tally,
            )  # fmt: skip
        elif workers > 1:  # an endpoint that takes several requests at once
            status = _generate_concurrently(
                store, run_id, probe, generation, todo, backend, control, workers,
                report, started, tally,
            )  # fmt: skip
        for item, attempt in todo if workers == 1 else []:
            _hold_if_paused(store, run_id, control, report, session_done)
            if control.cancelled:
                status = "cancelled"
                break
            seed: int | None = attempt_seed(generation["seed"], item["item"], attempt)
            scores = None
            if probe.kind == "scoring":
                seed = None
                result, scores = _score_item(backend, probe, item)
                label = probe.label(result.text, item["metadata"])
            elif probe.kind == "chain":  # several model calls per attempt (roles → answers)
                result, label = probe.run_attempt(
                    _asker(backend, generation, on_token),
                    item["metadata"],
                    seed,
                    generation,
                    prompt=item["prompt"],
                )
            else:
                result = backend.generate(_item_request(generation, probe, item, seed), on_token)
                label = probe.label(result.text, item["metadata"])
            _store_attempt(store, run_id, item, attempt, result, seed, label, scores)
            session_done += 1
            # the rate of a scoring run counts sentences, of the others tokens
            tokens_out += len(scores) if scores is not None else result.tokens_out
            gen_time += result.latency_s
            now_ = time.monotonic()
            if now_ - last_beat > 10:
                store.heartbeat(run_id)
                last_beat = now_
            elapsed = now_ - started
            remaining = len(todo) - session_done
            report(
                "running",
                session_done=session_done,
                tokens_per_s=tokens_out / gen_time if gen_time > 0 else 0.0,
                eta_s=elapsed / session_done * remaining,
                elapsed_s=elapsed,
                rate_unit=rate_unit,
                last=_last(item, attempt, result, label),
            )
        else:
            status = "done" if workers == 1 else status
    except EngineCrashed as exc:
        if control.cancelled:
            status = "cancelled"
        else:
            status, error = "interrupted", str(exc)
    except EngineError as exc:
        status, error = "failed", str(exc)
    except BaseException as exc:  # KeyboardInterrupt, bugs: leave the run resumable
        store.set_run_status(run_id, "interrupted", error=f"{type(exc).__name__}: {exc}")
        backend.close()
        raise
    if workers != 1:
        session_done, tokens_out, gen_time = int(tally["done"]), int(tally["tokens"]), tally["time"]
    store.set_run_status(run_id, status, error=error)
    backend.close()
    done = store.count_attempts(run_id)
    elapsed = time.monotonic() - started
    report(
        status,
        session_done=done - already,
        elapsed_s=elapsed,
        tokens_per_s=tokens_out / gen_time if gen_time > 0 else 0.0,
        eta_s=0.0,
        rate_unit=rate_unit,
    )
    outcome = RunOutcome(run_id, status, done, total, session_done, error, engine)
    if error is not None:
        if status == "interrupted":
            raise EngineCrashed(
                f"{error}. Run {run_id} is saved ({done}/{total} attempts); "
                f"continue it with: gbdesk resume {run_id}"
            )
        raise EngineError(f"{error}. Run {run_id} is saved ({done}/{total} attempts).")
    return outcome


# -- estimates ------------------------------------------------------------------------------
@dataclass
class Estimate:
    generations: int
    tokens_per_s: float | None
    tokens_per_generation: float | None
    seconds: float | None
    basis: str
    unit: str = "generations"  # "sentences" for perplexity probes (tokens_per_s: sentences/s)


def measured_speed(
    store: Store, model_sha256: str | None, model_id: int | None = None
) -> tuple[float, float, int] | None:
    """(tokens/s, tokens per generation, attempts measured) over this model's stored attempts
    (a GGUF by its sha256, an endpoint by its model row), or None when it never generated
    here. Rates are per request: with concurrent requests the caller divides time by them."""
    if not model_sha256 and model_id is None:
        return None
    key, value = ("m.sha256", model_sha256) if model_sha256 else ("m.id", model_id)
    row = store.conn.execute(
        "SELECT SUM(a.tokens_out), SUM(a.latency_s), COUNT(*), AVG(a.tokens_out) "
        "FROM attempts a JOIN runs r ON r.id = a.run_id JOIN models m ON m.id = r.model_id "
        f"WHERE {key} = ? AND a.latency_s > 0 AND COALESCE(a.prompt_mode, '') != 'score'",
        (value,),
    ).fetchone()
    tokens, seconds, count, mean_tokens = row
    if not count or not seconds:
        return None
    return tokens / seconds, mean_tokens, count


def measured_scoring_speed(store: Store, model_sha256: str | None) -> tuple[float, int] | None:
    """(sentences/s, sentences measured) over this model's stored scoring blocks."""
    if not model_sha256:
        return None
    row = store.conn.execute(
        "SELECT SUM(n), SUM(latency), SUM(n) FROM (SELECT a.latency_s AS latency, "
        "(SELECT COUNT(*) FROM scores s WHERE s.attempt_id = a.id) AS n "
        "FROM attempts a JOIN runs r ON r.id = a.run_id JOIN models m ON m.id = r.model_id "
        "WHERE m.sha256 = ? AND a.prompt_mode = 'score' AND a.latency_s > 0)",
        (model_sha256,),
    ).fetchone()
    sentences, seconds, _ = row
    if not sentences or not seconds:
        return None
    return sentences / seconds, int(sentences)


def estimate_run(
    store: Store,
    probe_name: str,
    model_sha256: str | None,
    *,
    attempts: int,
    max_tokens: int,
    limit: int | None = None,
    sample: int | None = None,
    fallback_tokens_per_s: float | None = None,
    model_id: int | None = None,
    concurrency: int = 1,
    **probe_params: Any,
) -> Estimate:
    """Generations a run would make and how long they should take on this machine."""
    probe = get_probe(probe_name)
    items = probe.items(probe.resolve_params(limit=limit, sample=sample, **probe_params))
    if probe.kind == "scoring":
        sentences = sum(len(probe.sentences(i.metadata)) for i in items)
        measured = measured_scoring_speed(store, model_sha256)
        if measured is None:
            return Estimate(
                sentences,
                None,
                None,
                None,
                "scoring speed not measured yet — score a small sample first (limit a few items)",
                unit="sentences",
            )
        rate, count = measured
        return Estimate(
            sentences,
            rate,
            None,
            sentences / rate,
            f"measured on {count:,} sentences this model scored here",
            unit="sentences",
        )
    n_items = len(items)
    generations = n_items * attempts
    speed = measured_speed(store, model_sha256, model_id)
    if speed is not None:
        tps, mean_tokens, count = speed
        per_generation = min(float(mean_tokens), float(max_tokens))
        basis = f"measured on {count} earlier generations of this model"
    elif fallback_tokens_per_s:
        tps, per_generation = fallback_tokens_per_s, float(max_tokens)
        basis = "measured by a test load; assumes every answer uses max_tokens"
    else:
        return Estimate(
            generations, None, None, None, "speed not measured yet — test-load the model in Models"
        )
    seconds = generations * per_generation / tps / max(1, concurrency)
    if concurrency > 1:
        basis += f"; {concurrency} requests at a time"
    return Estimate(generations, tps, per_generation, seconds, basis)
