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

Local models decode with continuous batching by default (`_streamed`, `_chained`: several
attempts live in the worker, each stored as it finishes and replaced by the next); the
run's ``batch_size`` (0 automatic, N, or 1 for one at a time) and the count used (the
engine settings' ``batching``) are kept with the run, so a resume decodes the same way.
"""

from __future__ import annotations

import math
import numbers
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from gbdesk import __version__
from gbdesk.engine.base import (
    DEFAULT_MIN_P,
    DEFAULT_TOP_K,
    Backend,
    GenerationResult,
    attempt_seed,
)
from gbdesk.errors import EngineCrashed, EngineError, UserError
from gbdesk.limits import LIMITS, SEED_RANGE
from gbdesk.store import Store
from gbdesk.studies import get_probe
from gbdesk.studies.base import (
    AttemptEngine,
    ChainProbe,
    GenerationProbe,
    Performed,
    Probe,
    ScoringProbe,
    attempt_count,
    attempt_item,
)

# `plan_run(batch_size=AUTO_BATCH)`: continuous batching, sequences at once chosen from the
# model's size and the free memory when the run starts (`gbdesk.engine.slots`)
AUTO_BATCH = 0

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
def _whole_in(value: Any, flag: str, low: int, high: int) -> None:
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not whole or not low <= value <= high:
        raise UserError(f"{flag} must be a whole number from {low:,} to {high:,}")


def _finite_number(value: Any, flag: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise UserError(f"{flag} must be a finite number")
    return float(value)


def check_generation(generation: dict[str, Any]) -> None:
    """Refuse generation settings out of range (the CLI's argument types check the same,
    earlier): NaN or infinite numbers would be stored as invalid JSON and sizes beyond
    `LIMITS` are typos."""
    _whole_in(generation["attempts"], "--attempts", 1, LIMITS["attempts"])
    _whole_in(generation["batch_size"], "--batch", 0, LIMITS["batch_size"])
    _whole_in(generation["max_tokens"], "--max-tokens", 1, LIMITS["max_tokens"])
    _whole_in(generation["seed"], "--seed", *SEED_RANGE)
    if _finite_number(generation["temperature"], "--temperature") < 0:
        raise UserError("--temperature must be ≥ 0")
    if not 0 < _finite_number(generation["top_p"], "--top-p") <= 1:
        raise UserError("--top-p must be in (0, 1]")
    if generation["prompt_mode"] not in ("auto", "chat", "completion"):
        raise UserError("--prompt-mode must be auto, chat or completion")


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
    batch_size: int = AUTO_BATCH,
    **probe_params: Any,
) -> int:
    """Store a new run with its items; return its id. Nothing is generated yet."""
    probe = get_probe(probe_name)
    params = probe.bind(store, probe.resolve_params(**probe_params))
    attempts = probe.default_attempts if attempts is None else attempts
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
        # local decoding: 0 continuous batching with an automatic sequence count (the
        # default), N > 1 with N sequences, 1 one attempt at a time. Recorded so a resume
        # decodes the same way (batched texts differ from one-at-a-time ones — other
        # arithmetic settings — but not between batch sizes)
        "batch_size": batch_size,
    }
    check_generation(generation)
    items = probe.items(params)
    return store.create_run(
        probe=probe.name,
        probe_version=probe.version,
        model_id=model["id"] if model else None,
        params=params,
        generation=generation,
        items=[i.as_row() for i in items],
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
    slots: int = 1  # sequences decoded at once (continuous batching when > 1)

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
        batch_size=int(generation.get("batch_size", 1)),  # older runs: one at a time
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
    """(item, attempt index) pairs not yet stored, in attempt-major order; the item as
    that attempt sees it (`attempt_item`: an item of several prompts gives each attempt
    its own prompt and that prompt's metadata)."""
    run = store.get_run(run_id)
    per_prompt = run["generation"]["attempts"]
    items = store.run_items(run_id)
    done = store.attempt_keys(run_id)
    counts = [attempt_count(item, per_prompt) for item in items]
    return [
        (attempt_item(item, a, per_prompt), a)
        for a in range(max(counts, default=0))
        for item, count in zip(items, counts, strict=True)
        if a < count and (item["item"], a) not in done
    ]


def _backend_int(backend: Backend, name: str) -> int:
    """A backend's optional positive setting (`concurrency`: requests at once;
    `batch_size`: attempts per `generate_batch` call); 1 when absent or invalid."""
    try:
        return max(1, int(getattr(backend, name, 1) or 1))
    except (TypeError, ValueError):
        return 1


@dataclass
class Tally:
    """What this session of a run did: attempts stored, work produced (tokens, or
    sentences for scoring probes) and seconds the model spent on it."""

    done: int = 0
    work: float = 0.0
    busy_s: float = 0.0

    @property
    def rate(self) -> float:
        return self.work / self.busy_s if self.busy_s > 0 else 0.0


@dataclass
class _Reporter:
    """Progress reports of one run (`Progress` objects to the caller's callback)."""

    run_id: int
    total: int
    already: int  # attempts stored before this session
    rate_unit: str
    callback: Callable[[Progress], None] | None
    started: float = field(default_factory=time.monotonic)

    def __call__(self, status: str, session_done: int = 0, **extra: Any) -> None:
        if self.callback is not None:
            done = self.already + session_done
            self.callback(Progress(self.run_id, status, done, self.total, session_done, **extra))


@dataclass
class _RunLoop:
    """Everything a run loop needs; `stored` writes one attempt and reports progress."""

    store: Store
    run_id: int
    probe: Probe
    todo: list[tuple[dict[str, Any], int]]
    backend: Backend
    engine: AttemptEngine
    control: RunControl
    report: _Reporter
    tally: Tally = field(default_factory=Tally)
    last_beat: float = field(default_factory=time.monotonic)
    slots: int = 1  # sequences decoded at once (continuous batching when > 1)

    def seed(self, item: dict[str, Any], attempt: int) -> int:
        return attempt_seed(self.engine.generation["seed"], item["item"], attempt)

    def hold_if_paused(self) -> None:
        """While paused: mark the run paused, wait, then running again (unless the pause
        ended in a cancel)."""
        if not self.control.paused:
            return
        self.store.set_run_status(self.run_id, "paused")
        self.report("paused", session_done=self.tally.done)
        self.control.wait_while_paused()
        if not self.control.cancelled:
            self.store.set_run_status(self.run_id, "running")
            self.report("running", session_done=self.tally.done)

    def stored(self, item: dict[str, Any], attempt: int, done: Performed, busy_s: float) -> None:
        r = done.result
        self.store.add_attempt(
            self.run_id, item["item"], attempt, item["prompt"], r.text, seed=done.seed,
            tokens_in=r.tokens_in, tokens_out=r.tokens_out, latency_s=r.latency_s,
            finish_reason=r.finish_reason, prompt_mode=r.prompt_mode, auto_label=done.label,
            scores=done.scores,
        )  # fmt: skip
        self.tally.done += 1
        # the rate of a scoring run counts sentences, of the others tokens
        self.tally.work += len(done.scores) if done.scores is not None else r.tokens_out
        self.tally.busy_s += busy_s
        now_ = time.monotonic()
        if now_ - self.last_beat > 10:
            self.store.heartbeat(self.run_id)
            self.last_beat = now_
        elapsed = now_ - self.report.started
        self.report(
            "running",
            session_done=self.tally.done,
            tokens_per_s=self.tally.rate,
            eta_s=elapsed / self.tally.done * (len(self.todo) - self.tally.done),
            elapsed_s=elapsed,
            rate_unit=self.probe.rate_unit,
            slots=self.slots,
            last={
                "item": item["item"],
                "attempt": attempt,
                "prompt": item["prompt"],
                "response": r.text,
                "label": done.label["label"],
                "tokens_out": r.tokens_out,
            },
        )


def _sequential(loop: _RunLoop) -> str:
    """One attempt after another (every kind of probe)."""
    for item, attempt in loop.todo:
        loop.hold_if_paused()
        if loop.control.cancelled:
            return "cancelled"
        seed = loop.seed(item, attempt)
        done = loop.probe.perform(loop.engine, item, seed)
        loop.stored(item, attempt, done, done.result.latency_s)
    return "done"


def _concurrent(loop: _RunLoop, workers: int) -> str:
    """Generation probes on a backend that takes `workers` requests at once (endpoints).

    Requests are submitted in attempt-major order with the same per-attempt seeds as the
    sequential loop; each result is stored by this, the calling thread, as soon as it
    completes (the store's connection is used by one thread only). Pause and cancel stop
    new submissions; what is in flight is waited for and stored (`cancel(now=True)`
    aborts it instead). After an engine error nothing new is submitted, what is in
    flight is stored, and the error is raised. Busy time is wall clock, pauses excluded.
    """
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    probe = cast(GenerationProbe, loop.probe)
    pending = iter(loop.todo)
    in_flight: dict[Future[GenerationResult], tuple[dict[str, Any], int, int]] = {}
    error: BaseException | None = None
    exhausted = False
    mark = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gbdesk-gen")
    try:
        while True:
            c = loop.control
            if c.paused and not c.cancelled and error is None and not in_flight:
                loop.hold_if_paused()
                mark = time.monotonic()
                continue
            while not (exhausted or c.paused or c.cancelled or error) and len(in_flight) < workers:
                nxt = next(pending, None)
                if nxt is None:
                    exhausted = True
                    break
                item, attempt = nxt
                seed = loop.seed(item, attempt)
                request = probe.request(loop.engine, item, seed)
                in_flight[pool.submit(loop.backend.generate, request, None)] = (item, attempt, seed)
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
                now_ = time.monotonic()
                loop.stored(item, attempt, Performed(result, label, seed), now_ - mark)
                mark = now_
    finally:  # nothing is in flight here unless an exception (Ctrl-C) is propagating
        pool.shutdown(wait=False, cancel_futures=True)
    if error is not None:
        raise error
    return "done" if exhausted and loop.tally.done == len(loop.todo) else "cancelled"


def _batched(loop: _RunLoop, batch_size: int) -> str:
    """Generation probes on a local backend decoding `batch_size` attempts at once: the
    pending attempts go to `backend.generate_batch` in chunks (same per-attempt seeds as
    the sequential loop); each result is stored as in the sequential loop. Pause and
    cancel take effect between chunks; busy time is each chunk's wall clock."""
    probe = cast(GenerationProbe, loop.probe)
    for start in range(0, len(loop.todo), batch_size):
        loop.hold_if_paused()
        if loop.control.cancelled:
            return "cancelled"
        chunk = loop.todo[start : start + batch_size]
        seeds = [loop.seed(item, a) for item, a in chunk]
        requests = [
            probe.request(loop.engine, item, seed)
            for (item, _), seed in zip(chunk, seeds, strict=True)
        ]
        began = time.monotonic()
        results = loop.backend.generate_batch(requests)  # type: ignore[attr-defined]
        busy = time.monotonic() - began
        for (item, attempt), seed, result in zip(chunk, seeds, results, strict=True):
            label = probe.label(result.text, item["metadata"])
            loop.stored(item, attempt, Performed(result, label, seed), busy)
            busy = 0.0  # the chunk's time counts once
    return "done"


# A text passed to `execute_run`'s on_token that starts with this character begins the
# text of another sequence (continuous batching streams one sequence at a time: the most
# recently admitted one, whose text so far comes in one piece).
NEW_TEXT = "\f"


def _stop_asked(control: RunControl) -> Callable[[], bool]:
    return lambda: control.paused or control.cancelled


def _stream_tokens(on_token: Callable[[str], None] | None) -> Callable[[int, str], None] | None:
    """`generate_stream`'s (index, text) token callback as the run's on_token(text)."""
    if on_token is None:
        return None
    current: list[int | None] = [None]

    def emit(index: int, text: str) -> None:
        if index != current[0]:
            current[0] = index
            text = NEW_TEXT + text
        on_token(text)

    return emit


def stream_requests(
    backend: Any,
    requests: list[Any],
    on_result: Callable[[int, GenerationResult], None],
    control: RunControl,
    *,
    slots: int | None = None,
    on_token: Callable[[str], None] | None = None,
    hold: Callable[[], None] | None = None,
) -> str:
    """Generate `requests` with continuous batching (`backend.generate_stream`), calling
    ``on_result(index, result)`` as each finishes; "done" or "cancelled".

    Pause and cancel (`control`) stop admission: the live sequences finish and are
    delivered, then this waits (``hold()``, default `control.wait_while_paused`) and
    continues with the rest, or returns "cancelled". `cancel(now=True)` kills the worker
    instead (`EngineCrashed` propagates)."""
    remaining = list(range(len(requests)))
    tokens = _stream_tokens(on_token)
    while remaining:
        if control.paused and not control.cancelled:
            (hold or control.wait_while_paused)()
        if control.cancelled:
            return "cancelled"
        batch = remaining

        def delivered(j: int, result: GenerationResult, batch: list[int] = batch) -> None:
            on_result(batch[j], result)

        def token(j: int, text: str, batch: list[int] = batch) -> None:
            assert tokens is not None
            tokens(batch[j], text)

        outcome = backend.generate_stream(
            [requests[i] for i in batch],
            delivered,
            should_stop=_stop_asked(control),
            on_token=token if tokens is not None else None,
            slots=slots,
        )
        remaining = [batch[j] for j in outcome.not_started]
    return "done"


def _streamed(loop: _RunLoop) -> str:
    """Generation probes with continuous batching (`stream_requests`): up to `loop.slots`
    attempts decode together and a finished one is stored at once and replaced by the
    next (same per-attempt seeds as the sequential loop; the texts do not depend on the
    slot count, the order or a pause). Busy time is wall clock between stored attempts,
    pauses excluded."""
    probe = cast(GenerationProbe, loop.probe)
    todo = loop.todo
    seeds = [loop.seed(item, a) for item, a in todo]
    requests = [
        probe.request(loop.engine, item, seed) for (item, _), seed in zip(todo, seeds, strict=True)
    ]
    mark = [time.monotonic()]

    def on_result(i: int, result: GenerationResult) -> None:
        item, attempt = todo[i]
        label = probe.label(result.text, item["metadata"])
        now_ = time.monotonic()
        loop.stored(item, attempt, Performed(result, label, seeds[i]), now_ - mark[0])
        mark[0] = now_

    def hold() -> None:
        loop.hold_if_paused()
        mark[0] = time.monotonic()

    return stream_requests(
        loop.backend, requests, on_result, loop.control,
        slots=loop.slots, on_token=loop.engine.on_token, hold=hold,
    )  # fmt: skip


def _chained(loop: _RunLoop) -> str:
    """Chain probes with continuous batching (`gbdesk.engine.chains.run_chains`): the
    probe's `attempt_chain` generators, up to `loop.slots` attempts in flight, each
    step's requests decoded together (answers sharing a role decode it once). Each
    attempt is stored as its chain returns; pause and cancel as in `_streamed`."""
    from gbdesk.engine.chains import run_chains

    probe = cast(ChainProbe, loop.probe)
    todo = loop.todo
    seeds = [loop.seed(item, a) for item, a in todo]
    remaining = list(range(len(todo)))
    while remaining:
        loop.hold_if_paused()
        if loop.control.cancelled:
            return "cancelled"
        batch = remaining
        mark = [time.monotonic()]

        def chains(batch: list[int] = batch) -> Any:
            for i in batch:
                item = todo[i][0]
                yield probe.attempt_chain(
                    loop.engine.request,
                    item["metadata"],
                    seeds[i],
                    loop.engine.generation,
                    prompt=item["prompt"],
                )

        def on_done(j: int, value: Any, batch: list[int] = batch, mark: list[float] = mark) -> None:
            i = batch[j]
            item, attempt = todo[i]
            result, label = value
            now_ = time.monotonic()
            loop.stored(item, attempt, Performed(result, label, seeds[i]), now_ - mark[0])
            mark[0] = now_

        outcome = run_chains(
            loop.backend, chains(), on_done, should_stop=_stop_asked(loop.control),
            slots=loop.slots,
        )  # fmt: skip
        finished = set(outcome.completed)
        remaining = [i for j, i in enumerate(batch) if j not in finished]
    return "done"


def _batching(backend: Backend, probe: Probe, run: dict[str, Any]) -> dict[str, Any] | None:
    """How a local backend batches this run's attempts (recorded with the run's engine
    settings), or None: one at a time. A backend's ``batch_size`` of 1 means one at a
    time; 0 (automatic) or N > 1 continuous batching where the probe allows it. A resumed
    automatic run keeps the sequence count it had (within the memory free now)."""
    size = getattr(backend, "batch_size", 1)
    if size == 1 or not hasattr(backend, "generate_stream"):
        return None
    if not (probe.batchable or (isinstance(probe, ChainProbe) and probe.chain_batchable)):
        return None
    before = (run.get("engine") or {}).get("batching") or {}
    prefer = before.get("slots") if size == 0 else None
    slots, why = backend.stream_slots(  # type: ignore[attr-defined]
        max_tokens=int(run["generation"].get("max_tokens") or 300), prefer=prefer
    )
    return {
        "mode": "continuous",
        "requested": "auto" if size == 0 else int(size),
        "slots": int(slots),
        "reason": why,
    }


def _loop_for(
    probe: Probe, backend: Backend, batching: dict[str, Any] | None
) -> Callable[[_RunLoop], str]:
    """Continuous batching, chunked batches or concurrent requests where the probe and
    backend allow them; otherwise one attempt after another."""
    if batching is not None:
        return _chained if isinstance(probe, ChainProbe) else _streamed
    if probe.batchable and _backend_int(backend, "batch_size") > 1:
        return lambda loop: _batched(loop, _backend_int(backend, "batch_size"))
    if probe.batchable and _backend_int(backend, "concurrency") > 1:
        return lambda loop: _concurrent(loop, _backend_int(backend, "concurrency"))
    return _sequential


def _start_backend(
    store: Store,
    run: dict[str, Any],
    factory: BackendFactory,
    control: RunControl,
    on_backend: Callable[[Backend], None] | None,
) -> tuple[Backend, dict[str, Any]]:
    """Load the run's model (checking that its file did not change) and claim the run."""
    model = store.get_model(run["model_id"])
    if model.get("kind") != "endpoint":  # an endpoint has no file to check
        verify_model_file(model)
    backend = factory(model, run["generation"])
    control._backend = backend
    if on_backend is not None:
        on_backend(backend)
    info = backend.info
    batching = _batching(backend, get_probe(run["probe"]), run)
    engine = {
        "backend": info.backend,
        "model_name": info.model_name,
        "prompt_mode": info.prompt_mode,
        "versions": info.versions,
        "settings": info.settings,
        "load_time_s": info.load_time_s,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    if batching is not None:
        engine["batching"] = batching
    store.claim_run(run["id"], engine=engine)
    return backend, engine


def _finish(loop: _RunLoop, status: str, error: str | None, engine: dict[str, Any]) -> RunOutcome:
    """Record the final status, close the engine, report, and raise an engine failure
    (with how to continue) after the run was saved."""
    store, run_id = loop.store, loop.run_id
    store.set_run_status(run_id, status, error=error)
    loop.backend.close()
    done = store.count_attempts(run_id)
    loop.report(
        status,
        session_done=done - loop.report.already,
        elapsed_s=time.monotonic() - loop.report.started,
        tokens_per_s=loop.tally.rate,
        eta_s=0.0,
        rate_unit=loop.probe.rate_unit,
    )
    total = loop.report.total
    if error is not None and status == "interrupted":
        raise EngineCrashed(
            f"{error}. Run {run_id} is saved ({done}/{total} attempts); "
            f"continue it with: gbdesk resume {run_id}"
        )
    if error is not None:
        raise EngineError(f"{error}. Run {run_id} is saved ({done}/{total} attempts).")
    return RunOutcome(run_id, status, done, total, loop.tally.done, None, engine)


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
    """Make the run's missing attempts, storing each as it completes. Safe to call again
    at any time (a resume)."""
    control = control or RunControl()
    run = store.get_run(run_id)
    if run["source"] != "generated":
        raise UserError(f"run {run_id} was imported; there is nothing to generate")
    probe = get_probe(run["probe"])
    todo = pending_attempts(store, run_id)
    total = run["attempts_total"]
    report = _Reporter(run_id, total, total - len(todo), probe.rate_unit, on_progress)
    if not todo:
        store.set_run_status(run_id, "done")
        report("done")
        return RunOutcome(run_id, "done", total, total)
    report("loading")
    backend, engine = _start_backend(store, run, backend_factory, control, on_backend)
    attempt_engine = AttemptEngine(backend, run["generation"], on_token)
    loop = _RunLoop(store, run_id, probe, todo, backend, attempt_engine, control, report)
    batching = engine.get("batching")
    if batching is not None:
        loop.slots = int(batching["slots"])
    error: str | None = None
    try:
        status = _loop_for(probe, backend, batching)(loop)
    except EngineCrashed as exc:
        status, error = ("cancelled", None) if control.cancelled else ("interrupted", str(exc))
    except EngineError as exc:
        status, error = "failed", str(exc)
    except BaseException as exc:  # KeyboardInterrupt, bugs: leave the run resumable
        store.set_run_status(run_id, "interrupted", error=f"{type(exc).__name__}: {exc}")
        backend.close()
        raise
    return _finish(loop, status, error, engine)


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
    store: Store,
    model_sha256: str | None,
    model_id: int | None = None,
    *,
    slots: int | None = None,
    probe: str | None = None,
) -> tuple[float, float, int] | None:
    """(tokens/s, tokens per generation, attempts measured) over this model's stored attempts
    (a GGUF by its sha256, an endpoint by its model row), or None when it never generated
    here. Rates are per request: with concurrent requests the caller divides time by them.

    `slots` keeps the runs decoded with that many sequences at once (1: one at a time;
    continuous batching records its count with the run, and an attempt's latency is its
    share of the batch's time, so the rate is the batch's throughput); `probe` keeps one
    probe's runs (its answers' length)."""
    if not model_sha256 and model_id is None:
        return None
    key, value = ("m.sha256", model_sha256) if model_sha256 else ("m.id", model_id)
    where, args = [f"{key} = ?"], [value]
    if slots is not None:
        decoded = "json_extract(r.engine_json, '$.batching.slots')"
        if int(slots) <= 1:
            where.append(f"({decoded} IS NULL OR {decoded} <= 1)")
        else:
            where.append(f"{decoded} = ?")
            args.append(int(slots))
    if probe is not None:
        where.append("r.probe = ?")
        args.append(probe)
    row = store.conn.execute(
        "SELECT SUM(a.tokens_out), SUM(a.latency_s), COUNT(*), AVG(a.tokens_out) "
        "FROM attempts a JOIN runs r ON r.id = a.run_id JOIN models m ON m.id = r.model_id "
        f"WHERE {' AND '.join(where)} AND a.latency_s > 0 "
        "AND COALESCE(a.prompt_mode, '') != 'score'",
        args,
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
    slots: int | None = None,
    **probe_params: Any,
) -> Estimate:
    """Generations a run would make and how long they should take on this machine.

    `slots`: sequences a local model decodes at once (`LlamaCppBackend.stream_slots`; 1
    or None: one at a time). The speed is this model's measured at that count on this
    probe when there is such a measurement, else at that count on any probe, else any."""
    probe = get_probe(probe_name)
    params = probe.resolve_params(limit=limit, sample=sample, **probe_params)
    items = probe.items(probe.bind(store, params))
    if isinstance(probe, ScoringProbe):  # speed in sentences, from scoring runs
        sentences = probe.work_units(items, 1)
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
    generations = probe.work_units(items, attempts)
    speed, basis = None, ""
    at = f" with {slots} sequences at once" if slots and slots > 1 else ""
    tiers = [
        ({"probe": probe.name}, f"of this probe{at}"),
        ({}, f"of this model{at}"),
    ]
    if slots is not None:
        tiers = [({"slots": slots, **kw}, what) for kw, what in tiers]
        tiers.append(({}, "of this model (other batch sizes)"))
    else:
        tiers = [({}, "of this model")]
    for kw, what in tiers:
        speed = measured_speed(store, model_sha256, model_id, **kw)
        if speed is not None:
            basis = f"measured on {speed[2]:,} earlier generations {what}"
            same_probe = "probe" in kw
            break
    if speed is not None:
        tps, mean_tokens, count = speed
        per_generation = float(mean_tokens)
        if not (same_probe and isinstance(probe, ChainProbe)):  # a chain's sum of answers
            per_generation = min(per_generation, float(max_tokens))
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
