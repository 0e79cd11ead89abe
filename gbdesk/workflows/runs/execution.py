"""Executing a run: the loops that generate, store and report its attempts (no Qt)."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from gbdesk.contract import GenerationProbe, Performed, Probe, get_probe
from gbdesk.contract.running import AttemptEngine, attempt_count, attempt_item
from gbdesk.engine.base import (
    Backend,
    GenerationResult,
    StreamProgress,
    attempt_seed,
)
from gbdesk.store import Store, jobs
from gbdesk.support.errors import EngineCrashed, EngineError, UserError
from gbdesk.support.machine import cpu_cores, cpu_name, llama_cpp_build
from gbdesk.workflows.runs.control import BackendFactory, RunControl, llama_backend_factory
from gbdesk.workflows.runs.models import verify_model_file
from gbdesk.workflows.runs.progress import PACE_PRIOR_ANSWERS, Pace, Progress, Tally


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
    """(item, attempt index) pairs not yet stored, in `attempt_order`; the item as that
    attempt sees it (`attempt_item`: an item of several prompts gives each attempt its own
    prompt and that prompt's metadata)."""
    run = store.get_run(run_id)
    per_prompt = run["generation"]["attempts"]
    items = store.run_items(run_id)
    done = store.attempt_keys(run_id)
    return [
        (attempt_item(items[i], a, per_prompt), a)
        for i, a in attempt_order([attempt_count(item, per_prompt) for item in items], per_prompt)
        if (items[i]["item"], a) not in done
    ]


def attempt_order(counts: list[int], per_prompt: int) -> list[tuple[int, int]]:
    """(item position, attempt index) in the order a run generates them: repetition-major
    (every item once before any item twice, so a half-finished run covers every item),
    and within a repetition an item's prompts together (attempt ``p * per_prompt + r`` is
    prompt p's repetition r). An item's prompts share their text up to what varies (an
    option order, a name), so the engines read that common part once (a local model's
    prefix sharing, a server's prefix cache), and a half-finished run holds whole items
    rather than some of every item's prompts (an option-order probe's first orders only)."""
    per_prompt = max(1, per_prompt)
    order = []
    for r in range(per_prompt):
        for i, count in enumerate(counts):
            order.extend((i, a) for a in range(r, count, per_prompt))
    return order


def _backend_int(backend: Backend, name: str) -> int:
    """A backend's optional positive setting (`concurrency`: requests at once;
    `batch_size`: attempts per `generate_batch` call); 1 when absent or invalid."""
    try:
        return max(1, int(getattr(backend, name, 1) or 1))
    except (TypeError, ValueError):
        return 1


@dataclass
class _Reporter:
    """Progress reports of one run (`Progress` objects to the caller's callback)."""

    run_id: int
    total: int
    already: int  # attempts stored before this session
    rate_unit: str
    callback: Callable[[Progress], None] | None
    started: float = field(default_factory=lambda: time.monotonic())

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
    last_beat: float = field(default_factory=lambda: time.monotonic())
    slots: int = 1  # sequences decoded at once (continuous batching when > 1)
    pace: Pace | None = None
    # when generation began (the model loaded); `time` looked up late: tests patch it
    began: float = field(default_factory=lambda: time.monotonic())
    paused_s: float = 0.0
    in_flight: int = 0  # sequences under way (continuous batching's progress events)
    in_flight_tokens: int = 0
    streamed: bool = False  # a stream progress event arrived this session
    last: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.pace is None:
            self.pace = Pace(len(self.todo), None)
        if hasattr(self.backend, "on_wait"):  # an endpoint's silence, reported as progress
            self.backend.on_wait = self.waiting

    def waiting(self, text: str) -> None:
        """The backend waits for its server (called from the backend's own thread): a
        progress report with ``waiting``, the figures as they were."""
        self.report(
            "running",
            session_done=self.tally.done,
            elapsed_s=time.monotonic() - self.report.started,
            rate_unit=self.probe.capabilities.running.rate_unit,
            slots=self.slots,
            last=self.last,
            tokens=int(self.tally.work),
            waiting=text,
        )

    def busy_s(self) -> float:
        """Seconds spent generating this session (since the model was loaded, pauses
        excluded)."""
        return max(0.0, time.monotonic() - self.began - self.paused_s)

    def seed(self, item: dict[str, Any], attempt: int) -> int:
        return attempt_seed(self.engine.generation["seed"], item["item"], attempt)

    def hold_if_paused(self) -> None:
        """While paused: mark the run paused, wait, then running again (unless the pause
        ended in a cancel)."""
        if not self.control.paused:
            return
        self.store.set_run_status(self.run_id, "paused")
        self.progress("paused")
        paused = time.monotonic()
        self.control.wait_while_paused()
        self.paused_s += time.monotonic() - paused
        if not self.control.cancelled:
            self.store.set_run_status(self.run_id, "running")
            self.progress("running")

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
        work = len(done.scores) if done.scores is not None else r.tokens_out
        self.tally.work += work
        self.tally.busy_s += busy_s
        # the finished answer no longer counts as in flight (until the next progress event)
        self.in_flight = max(0, self.in_flight - 1)
        self.in_flight_tokens = max(0, self.in_flight_tokens - work)
        if self.streamed:  # continuous batching: the worker's count, less this one
            self.control.under_way = self.in_flight
        now_ = time.monotonic()
        if now_ - self.last_beat > 10:
            self.store.heartbeat(self.run_id)
            self.last_beat = now_
        self.last = {
            "item": item["item"],
            "attempt": attempt,
            "title": self.probe.capabilities.presentation.item_title(
                item["item"], item.get("metadata") or {}
            ),
            "prompt": item["prompt"],
            "response": r.text,
            "label": done.label["label"],
            "tokens_out": r.tokens_out,
        }
        self.progress()

    def progress(self, status: str = "running", **extra: Any) -> None:
        """Report where the session is: attempts stored, work in flight, speed, ETA."""
        assert self.pace is not None
        rate, eta = self.pace.update(
            self.busy_s(), self.tally.done, self.tally.work, self.in_flight_tokens
        )
        self.report(
            status,
            session_done=self.tally.done,
            tokens_per_s=rate,
            eta_s=eta,
            elapsed_s=time.monotonic() - self.report.started,
            rate_unit=self.probe.capabilities.running.rate_unit,
            slots=self.slots,
            last=self.last,
            in_flight=self.in_flight,
            tokens_in_flight=self.in_flight_tokens,
            tokens=int(self.tally.work) + self.in_flight_tokens,
            **extra,
        )

    def streaming(self, progress: StreamProgress) -> None:
        """A continuous-batching progress event: answers under way, tokens they hold."""
        self.in_flight, self.in_flight_tokens = progress.live, progress.live_tokens
        self.control.under_way = progress.live
        if not self.streamed:  # the first prompts are decoded: the speed counts from here
            assert self.pace is not None
            self.pace.measure_from(self.busy_s(), self.tally.work + self.in_flight_tokens)
            self.streamed = True
        self.progress()


def _sequential(loop: _RunLoop) -> str:
    """One attempt after another (every kind of probe)."""
    for item, attempt in loop.todo:
        loop.hold_if_paused()
        if loop.control.cancelled:
            return "cancelled"
        seed = loop.seed(item, attempt)
        loop.control.under_way = 1
        done = loop.probe.perform(loop.engine, item, seed)
        loop.stored(item, attempt, done, done.result.latency_s)
        loop.control.under_way = 0
    return "done"


def _concurrent(loop: _RunLoop, workers: int) -> str:
    """Generation probes on a backend that takes `workers` requests at once (endpoints).

    Requests are submitted in `attempt_order` with the same per-attempt seeds as the
    sequential loop; each result is labelled and stored by this, the calling thread, as
    soon as it completes (the store's connection is used by one thread only) — the
    answers that completed together in one transaction (one commit, not one per answer;
    a labelling error still stores the ones labelled before it). Pause and cancel stop
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
            c.under_way = len(in_flight)
            if not in_flight:
                break
            finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            labelled: list[tuple[dict[str, Any], int, Performed]] = []
            try:
                for future in finished:
                    item, attempt, seed = in_flight.pop(future)
                    try:
                        result = future.result()
                    except BaseException as exc:
                        error = error or exc
                        continue
                    label = probe.label(result.text, item["metadata"])
                    labelled.append((item, attempt, Performed(result, label, seed)))
            finally:
                mark = _store_together(loop, labelled, mark)
    finally:  # nothing is in flight here unless an exception (Ctrl-C) is propagating
        pool.shutdown(wait=False, cancel_futures=True)
    if error is not None:
        raise error
    return "done" if exhausted and loop.tally.done == len(loop.todo) else "cancelled"


def _store_together(
    loop: _RunLoop, labelled: list[tuple[dict[str, Any], int, Performed]], mark: float
) -> float:
    """Store attempts that completed together in one transaction (each reported as it is
    written); the busy time is shared out as in one-by-one storing. The new mark."""
    if not labelled:
        return mark
    with loop.store.transaction():
        for item, attempt, done in labelled:
            now_ = time.monotonic()
            loop.stored(item, attempt, done, now_ - mark)
            mark = now_
    return mark


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
        loop.control.under_way = len(requests)
        results = loop.backend.generate_batch(requests)  # type: ignore[attr-defined]
        loop.control.under_way = 0
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
    on_progress: Callable[[StreamProgress], None] | None = None,
) -> str:
    """Generate `requests` with continuous batching (`backend.generate_stream`), calling
    ``on_result(index, result)`` as each finishes; "done" or "cancelled".

    Pause and cancel (`control`) stop admission: the live sequences finish and are
    delivered, then this waits (``hold()``, default `control.wait_while_paused`) and
    continues with the rest, or returns "cancelled". `cancel(now=True)` kills the worker
    instead (`EngineCrashed` propagates). ``on_progress(StreamProgress)``: the backend's
    progress events (answers under way), for backends that send them."""
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

        extra = {"on_progress": on_progress} if on_progress is not None else {}
        outcome = backend.generate_stream(
            [requests[i] for i in batch],
            delivered,
            should_stop=_stop_asked(control),
            on_token=token if tokens is not None else None,
            slots=slots,
            **extra,
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
        slots=loop.slots, on_token=loop.engine.on_token, hold=hold, on_progress=loop.streaming,
    )  # fmt: skip


def _chained(loop: _RunLoop) -> str:
    """Chain probes with continuous batching (`gbdesk.engine.chains.run_chains`): the
    probe's chain generators (`Running.chain`), up to `loop.slots` attempts in flight, each
    step's requests decoded together (answers sharing a role decode it once). Each
    attempt is stored as its chain returns; pause and cancel as in `_streamed`."""
    from gbdesk.engine.chains import run_chains

    chain = loop.probe.capabilities.running.chain
    assert chain is not None  # `_loop_for` chose this loop for it
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
                yield chain(
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
            slots=loop.slots, on_progress=loop.streaming,
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
    running = probe.capabilities.running
    if not (running.batchable or running.chain is not None):
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
    running = probe.capabilities.running
    if batching is not None:
        return _chained if running.chain is not None else _streamed
    if running.batchable and _backend_int(backend, "batch_size") > 1:
        return lambda loop: _batched(loop, _backend_int(backend, "batch_size"))
    if running.batchable and _backend_int(backend, "concurrency") > 1:
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
    versions = dict(info.versions)
    if "llama_cpp_python" in versions and "llama_cpp" not in versions:
        versions["llama_cpp"] = llama_cpp_build() or ""  # the build inside it (test log)
    engine = {
        "backend": info.backend,
        "model_name": info.model_name,
        "prompt_mode": info.prompt_mode,
        "versions": versions,
        "settings": info.settings,
        "load_time_s": info.load_time_s,
        "platform": platform.platform(),
        "machine": platform.machine(),
        # what the answers were made on, for the report's test log
        "cpu": cpu_name(),
        "cores": cpu_cores(),
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
    loop.in_flight = loop.in_flight_tokens = 0
    assert loop.pace is not None
    rate, _ = loop.pace.update(loop.busy_s(), loop.tally.done, loop.tally.work)
    loop.report(
        status,
        session_done=done - loop.report.already,
        elapsed_s=time.monotonic() - loop.report.started,
        tokens_per_s=rate,
        eta_s=0.0,
        rate_unit=loop.probe.capabilities.running.rate_unit,
        slots=loop.slots,
        tokens=int(loop.tally.work),
        last=loop.last,
    )
    total = loop.report.total
    if error is not None:
        if status == "interrupted":
            failure: EngineError = EngineCrashed(
                f"{error}. Run {run_id} is saved ({done}/{total} attempts); "
                f"continue it with: gbdesk resume {run_id}"
            )
        else:
            failure = EngineError(f"{error}. Run {run_id} is saved ({done}/{total} attempts).")
        # what went wrong and where the run stands, for a caller that words its own way
        # to continue (an audit continues with its own command, not `gbdesk resume`)
        failure.reason, failure.run_id = error, run_id  # type: ignore[attr-defined]
        failure.counts = (done, total)  # type: ignore[attr-defined]
        raise failure
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
    wait: bool = False,
    on_wait: Callable[[jobs.Job], None] | None = None,
) -> RunOutcome:
    """Make the run's missing attempts, storing each as it completes. Safe to call again
    at any time (a resume). The run holds the database while it runs (`gbdesk.store.jobs`):
    while another process's run, audit or import holds it, this one is refused in one line
    naming that job — or waits for it to end with `wait` (`on_wait` hears of each job)."""
    run = store.get_run(run_id)
    if run["source"] != "generated":
        raise UserError(f"run {run_id} was imported; there is nothing to generate")
    model = store.get_model(run["model_id"]) if run.get("model_id") else {}
    what = f"run {run_id} ({run['probe']}) of {model.get('name') or 'a model'}"
    with jobs.job(store, "run", what, run_id=run_id, wait=wait, on_wait=on_wait):
        return _execute_run(
            store, run_id, backend_factory=backend_factory, control=control,
            on_progress=on_progress, on_token=on_token, on_backend=on_backend,
        )  # fmt: skip


def _execute_run(
    store: Store,
    run_id: int,
    *,
    backend_factory: BackendFactory,
    control: RunControl | None,
    on_progress: Callable[[Progress], None] | None,
    on_token: Callable[[str], None] | None,
    on_backend: Callable[[Backend], None] | None,
) -> RunOutcome:
    control = control or RunControl()
    run = store.get_run(run_id)
    probe = get_probe(run["probe"])
    todo = pending_attempts(store, run_id)
    total = run["attempts_total"]
    report = _Reporter(
        run_id, total, total - len(todo), probe.capabilities.running.rate_unit, on_progress
    )
    if not todo:
        store.set_run_status(run_id, "done")
        report("done")
        return RunOutcome(run_id, "done", total, total)
    report("loading")
    backend, engine = _start_backend(store, run, backend_factory, control, on_backend)
    attempt_engine = AttemptEngine(backend, run["generation"], on_token)
    loop = _RunLoop(store, run_id, probe, todo, backend, attempt_engine, control, report)
    # the work of one attempt at most: tokens for generation (a chain's answers summed),
    # unknown for scoring probes (the mean of the finished ones)
    most = (
        None
        if probe.capabilities.scores is not None
        else probe.capabilities.audit.tokens(run["params"], run["generation"])[1]
    )
    loop.pace = Pace(len(todo), most)
    batching = engine.get("batching")
    if batching is not None:
        loop.slots = int(batching["slots"])
        assert loop.pace is not None
        loop.pace.prior = PACE_PRIOR_ANSWERS * loop.slots
        loop.pace.streaming = loop.slots > 1
    loop.progress(loaded_s=float(backend.info.load_time_s or 0.0))
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
