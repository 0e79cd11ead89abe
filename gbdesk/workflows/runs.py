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

import json
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
from gbdesk.contract import GenerationProbe, Performed, Probe, get_probe
from gbdesk.contract.running import SAMPLE_SEED, AttemptEngine, attempt_count, attempt_item
from gbdesk.engine.base import (
    DEFAULT_MIN_P,
    DEFAULT_TOP_K,
    Backend,
    GenerationResult,
    StreamProgress,
    attempt_seed,
)
from gbdesk.store import Store, jobs
from gbdesk.store.speed import generation_totals, scoring_totals
from gbdesk.support.errors import EngineCrashed, EngineError, UserError
from gbdesk.support.limits import LIMITS, SEED_RANGE

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


#: a stored capability check younger than this is trusted when it says "no"; older ones
#: are checked again before a probe is refused (the server at that address may have changed)
CAPABILITIES_FRESH_S = 120.0


def unmet_engine_need(store: Store, probe: Probe, model: dict[str, Any] | None) -> str | None:
    """The one line that refuses `probe` on `model` when the model — an endpoint — cannot
    do what the probe needs (`Running.engine_needs`, e.g. a scoring probe's log-probabilities
    of prompt tokens on Ollama); None when it can. The endpoint's stored capabilities
    decide; where they are missing, or say "no" and are not fresh, the endpoint is asked
    again (one small request each; `UserError` when it cannot be reached). Local models
    can do everything."""
    needs = sorted(probe.capabilities.running.engine_needs)
    if not needs or not model or model.get("kind") != "endpoint":
        return None
    from gbdesk.engine.http_backend import (
        check_capabilities,
        endpoint_capabilities,
        unmet_capability,
    )

    def lacking(found: dict[str, Any] | None) -> list[str]:
        return [n for n in needs if not (found or {}).get(n, {}).get("ok")]

    found = endpoint_capabilities(model)
    if found is None or (lacking(found) and not _fresh(found.get("checked_at"))):
        found = check_capabilities(store, model)
    missing = lacking(found)
    return unmet_capability(probe.card.title, model, missing[0], found) if missing else None


def check_engine_needs(store: Store, probe: Probe, model: dict[str, Any] | None) -> None:
    """Refuse (`UserError`, one line) before any run row is written a probe that needs
    what its endpoint cannot do (`unmet_engine_need`)."""
    unmet = unmet_engine_need(store, probe, model)
    if unmet:
        raise UserError(unmet)


def _fresh(stamp: Any) -> bool:
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - when).total_seconds() < CAPABILITIES_FRESH_S


def _planned(
    store: Store,
    probe_name: str,
    *,
    attempts: int | None,
    seed: int,
    temperature: float | None,
    top_p: float | None,
    max_tokens: int | None,
    prompt_mode: str,
    batch_size: int,
    **probe_params: Any,
) -> tuple[Probe, dict[str, Any], dict[str, Any]]:
    """(probe, the run's parameters, its generation settings) as `plan_run` stores them."""
    probe = get_probe(probe_name)
    params = probe.capabilities.parameters.bind(store, probe.resolve_params(**probe_params))
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
    return probe, params, generation


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
    probe, params, generation = _planned(
        store, probe_name, attempts=attempts, seed=seed, temperature=temperature, top_p=top_p,
        max_tokens=max_tokens, prompt_mode=prompt_mode, batch_size=batch_size, **probe_params,
    )  # fmt: skip
    check_engine_needs(store, probe, model)
    items = probe.items(params)
    return store.create_run(
        probe=probe.name,
        probe_version=probe.version,
        model_id=model["id"] if model else None,
        params=params,
        generation=generation,
        items=[i.as_row() for i in items],
        attempts_per_item=generation["attempts"],
        app_version=__version__,
        llama_cpp_version=None,
        source=source,
    )


def same_run(
    store: Store,
    probe_name: str,
    model: dict[str, Any],
    *,
    attempts: int | None = None,
    seed: int = 0,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    prompt_mode: str = "auto",
    batch_size: int = AUTO_BATCH,
    **probe_params: Any,
) -> dict[str, Any] | None:
    """The latest run in `store` that `plan_run` with these arguments would make again, or
    None: generated here (not imported), the same probe and version, the same model (a
    GGUF by its sha256, wherever the file lies; an endpoint by its row), parameters,
    generation settings and items. `gbdesk run` continues it (or shows it, when done)
    instead of starting an identical run."""
    probe, params, generation = _planned(
        store, probe_name, attempts=attempts, seed=seed, temperature=temperature, top_p=top_p,
        max_tokens=max_tokens, prompt_mode=prompt_mode, batch_size=batch_size, **probe_params,
    )  # fmt: skip
    by_file = model.get("kind") != "endpoint" and model.get("sha256")
    rows = store.generated_runs(
        probe.name,
        probe.version,
        model_sha256=model["sha256"] if by_file else None,
        model_id=None if by_file else model["id"],
    )
    keys: list[str] | None = None
    for run_id, params_json, generation_json, kind, path in rows:
        if json.loads(params_json) != params or json.loads(generation_json) != generation:
            continue
        if kind == "gguf" and path != model.get("path") and not Path(path).is_file():
            continue  # the same weights, but that run's copy is gone (a resume checks it)
        if keys is None:
            keys = [i.key for i in probe.items(params)]
        if [i["item"] for i in store.run_items(run_id)] == keys:
            return store.get_run(run_id)
    return None


def subset_note(probe: Probe, params: dict[str, Any]) -> str:
    """What a run's --sample and --limit kept, in words: "12 of 149 items, chosen to keep
    every group (6 groups that the stereotype rate compares)", "the first 12 of 149
    items", "a random sample of 20 of 149 items (seed 123)", "all 149 items". `params`
    as the run stores them (bound)."""
    limit, sample = params.get("limit"), params.get("sample")
    everything = probe.items({**params, "limit": None, "sample": None})
    n_all = len(everything)
    if not limit and not sample:
        return f"all {n_all:,} items"
    pool = probe.items({**params, "limit": None}) if sample else everything
    chosen = len(probe.items(params)) if limit else len(pool)
    if sample and len(pool) < n_all:
        seed = params.get("sample_seed", SAMPLE_SEED)
        drawn = f"a random sample of {len(pool):,} of {n_all:,} items (seed {seed})"
    else:
        drawn = ""
    if not limit or limit >= len(pool):
        return drawn or f"all {n_all:,} items"
    sizing = probe.capabilities.audit
    groups = {sizing.balance_key(i.metadata) for i in pool}
    if groups != {None} and limit < len(groups):
        return (
            f"the first {chosen:,} of {n_all:,} items — too few to keep the {len(groups)} "
            f"groups that {sizing.balance_needed_for} compares, so it cannot be measured "
            f"(use --limit {len(groups)} or more)"
        )
    if groups == {None}:
        how = "the first ones"
    else:
        how = (
            f"chosen to keep every group ({len(groups)} groups that "
            f"{sizing.balance_needed_for} compares)"
        )
    if drawn:
        return f"{chosen:,} of {n_all:,} items: {drawn}, then {chosen:,} of those {how}"
    if groups == {None}:
        return f"the first {chosen:,} of {n_all:,} items"
    return f"{chosen:,} of {n_all:,} items, {how}"


# -- execution ------------------------------------------------------------------------------
@dataclass
class Progress:
    """One progress report of a run (to `execute_run`'s on_progress).

    ``status`` "loading" comes before the model is loaded, then "running" (the first one
    with ``loaded_s``: the model is loaded, nothing is done yet), then one per stored
    attempt and, while continuous batching has answers under way, about one a second
    with ``in_flight`` sequences holding ``tokens_in_flight`` tokens. ``tokens_per_s``
    counts every token decoded this session (answers in flight included); ``eta_s`` is
    None until the speed is known (`Pace`). ``last`` is the last stored attempt: item
    key, attempt (0-based, as stored), its ``title`` in words (`Presentation.item_title`),
    label, prompt, response, tokens. ``waiting`` (an endpoint's silence) comes between
    them, at least once a minute while the server says nothing."""

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
    in_flight: int = 0  # sequences being generated now (continuous batching)
    tokens_in_flight: int = 0  # tokens those sequences hold so far
    tokens: int = 0  # tokens (sentences) made this session, in-flight answers included
    loaded_s: float | None = None  # the model's load time, on the first report after it
    #: the engine waits for its server: "waiting 45 s for the server at … — it has answered
    #: 0 of the last 16 requests" (reported from the engine's thread while it is silent)
    waiting: str = ""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    @property
    def last_text(self) -> str:
        """The last stored attempt in words, its attempt number 1-based as everywhere a
        reader sees one: "“is affectionate” (BSRI, female trait) #1 → female"."""
        if not self.last:
            return ""
        what = self.last.get("title") or self.last["item"]
        return f"{what} #{self.last['attempt'] + 1} → {self.last['label']}"

    @property
    def in_flight_text(self) -> str:
        """"16 sequences in flight (1,204 tokens so far)" — the tokens made this session,
        finished answers included — or "" when none is reported."""
        return self.in_flight_words(max(self.tokens, self.tokens_in_flight))

    def in_flight_words(self, tokens_so_far: int) -> str:
        """`in_flight_text` with the caller's count of the tokens so far (a view keeps it
        from going down between two reports, `RecentRate.tokens`)."""
        if not self.in_flight:
            return ""
        unit = "sequence" if self.in_flight == 1 else "sequences"
        return f"{self.in_flight} {unit} in flight ({tokens_so_far:,} tokens so far)"


#: seconds of progress the speed shown is measured over
RECENT_S = 20.0


class RecentRate:
    """The speed a progress view shows: the work of the last `RECENT_S` seconds per second
    (the session's average, `Progress.tokens_per_s`, until that long has passed), and the
    tokens so far, never going down (a stream may report its answers' tokens a moment
    after they left the in-flight count)."""

    def __init__(self, window_s: float = RECENT_S) -> None:
        self.window_s = window_s
        self._points: list[tuple[float, float]] = []  # (elapsed s, work so far)
        self._run: int | None = None
        self.tokens = 0

    def update(self, p: Progress) -> float:
        """The speed to show after report `p` (work per second)."""
        if p.run_id != self._run:  # another run: start again
            self._run, self._points, self.tokens = p.run_id, [], 0
        self.tokens = max(self.tokens, int(p.tokens), int(p.tokens_in_flight))
        now, work = float(p.elapsed_s), float(max(p.tokens, p.tokens_in_flight))
        if self._points and now < self._points[-1][0]:
            self._points = []
        self._points.append((now, work))
        # the oldest point still inside the window, and the last one before it
        while len(self._points) > 2 and now - self._points[1][0] >= self.window_s:
            self._points.pop(0)
        t0, w0 = self._points[0]
        if now - t0 < self.window_s or now <= t0:
            return p.tokens_per_s
        return max(0.0, work - w0) / (now - t0)


class RunControl:
    """Pause, resume and cancel a run from another thread (checked between attempts).

    `cancel(now=True)` also stops the model worker, so a long generation does not have
    to finish first; the attempt in flight is simply not stored.
    """

    def __init__(self) -> None:
        self._running = threading.Event()
        self._running.set()
        self._cancelled = threading.Event()
        self.cancel_now = False  # `cancel(now=True)` was asked
        self._backend: Any = None

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def cancel(self, now: bool = False) -> None:
        self._cancelled.set()
        self._running.set()
        self.cancel_now = self.cancel_now or now
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


def llama_backend_factory(
    model: dict[str, Any],
    generation: dict[str, Any],
    *,
    on_wait: Callable[[str], None] | None = None,
) -> Backend:
    """The default factory: llama.cpp for GGUF files, `HttpBackend` for endpoint models
    (`on_wait`: told while the endpoint is silent as it is connected to)."""
    if model.get("kind") == "endpoint":
        return http_backend_factory(model, generation, on_wait=on_wait)
    from gbdesk.engine.llama_backend import LlamaCppBackend

    return LlamaCppBackend(
        model["path"],
        prompt_mode=generation.get("prompt_mode", "auto"),
        batch_size=int(generation.get("batch_size", 1)),  # older runs: one at a time
    )


def http_backend_factory(
    model: dict[str, Any],
    generation: dict[str, Any],
    *,
    on_wait: Callable[[str], None] | None = None,
) -> Backend:
    """An OpenAI-compatible endpoint (model row of kind "endpoint"); probes it first.
    `on_wait(line)`: told while the server is silent (the run loop then takes it over and
    reports it as `Progress.waiting`)."""
    from gbdesk.engine.http_backend import HttpBackend

    return HttpBackend.from_model_row(
        model, prompt_mode=generation.get("prompt_mode", "auto"), on_wait=on_wait
    )


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


#: answers of the longest allowed length that the expected answer length starts from: they
#: weigh as much as this many measured answers (times the sequences decoded at once: with
#: continuous batching the short answers finish first, and the mean of the first few
#: would promise too little)
PACE_PRIOR_ANSWERS = 2
#: seconds over which a shown ETA follows a change of the raw estimate (exponential
#: smoothing; the estimate moves ~5 % toward a new figure per one-second report)
ETA_SMOOTHING_S = 20.0
#: an ETA more than this factor away from the new raw figure is replaced, not smoothed
ETA_RESET_FACTOR = 2.0
#: busy seconds before a first ETA (the first second is mostly prompt decoding)
ETA_WARMUP_S = 2.0


@dataclass
class Pace:
    """Speed and time left of one run session, from the work done so far.

    The speed is the work (tokens, or sentences for scoring probes) made this session —
    answers still in flight included — per busy second (loading and pauses excluded),
    measured from `measure_from` on: continuous batching starts with every slot's prompt
    at once, seconds in which no answer token is made (a speed counted from there would
    promise several times the real time left; measured: 14 min shown for 4 min real).
    The work left is the attempts left × the expected work of one attempt: at first the
    most an attempt may take (`max_work`, e.g. max_tokens), corrected toward the mean of
    the finished attempts as they finish (`PACE_PRIOR_ANSWERS`), minus what the answers in
    flight already hold. The ETA shown follows the raw figure with exponential smoothing
    (`ETA_SMOOTHING_S`), counting down in between, so that it does not jump from line to
    line; a figure more than `ETA_RESET_FACTOR` off the new raw one is replaced at once."""

    attempts: int  # attempts this session has to make
    max_work: float | None  # work of one attempt at most; None: unknown (mean of the done)
    prior: float = PACE_PRIOR_ANSWERS
    eta_s: float | None = None
    #: continuous batching: no speed is known before the stream's first progress event
    #: (an answer that finishes first says nothing of the tokens the others hold)
    streaming: bool = False
    _at: float | None = None  # busy seconds of the last estimate
    _since: tuple[float, float] | None = None  # (busy seconds, work) the speed counts from

    def measure_from(self, busy_s: float, made: float) -> None:
        """Count the speed from here (the first progress of a stream: its prompts are
        decoded); the first ETA comes `ETA_WARMUP_S` later."""
        self._since = (busy_s, made)

    def update(
        self, busy_s: float, done: int, work: float, in_flight_work: float = 0.0
    ) -> tuple[float, float | None]:
        """(work per second, smoothed seconds left or None while unknown) after `done`
        attempts made `work` and the answers in flight hold `in_flight_work`."""
        made = work + in_flight_work
        if self._since is None and self.streaming:
            if done >= self.attempts:
                self.eta_s, self._at = 0.0, busy_s
            return 0.0, self.eta_s  # measuring: the stream has not reported yet
        since_s, since_made = self._since or (0.0, 0.0)
        window = busy_s - since_s
        if window >= ETA_WARMUP_S:
            rate = max(0.0, made - since_made) / window
        else:  # too short to tell: the whole session's, shown but not used for an ETA
            rate = made / busy_s if busy_s > 0 else 0.0
        if done >= self.attempts:
            self.eta_s, self._at = 0.0, busy_s
            return rate, 0.0
        if rate <= 0 or window < ETA_WARMUP_S:
            return rate, self.eta_s
        if self.max_work is not None and done + self.prior > 0:
            per_attempt = (work + self.prior * self.max_work) / (done + self.prior)
        elif self.max_work is not None:
            per_attempt = self.max_work
        elif done:
            per_attempt = work / done
        else:
            return rate, self.eta_s
        left = max(0.0, per_attempt * (self.attempts - done) - in_flight_work)
        raw = left / rate
        predicted = None
        if self.eta_s is not None and self._at is not None:
            predicted = max(0.0, self.eta_s - max(0.0, busy_s - self._at))
        if predicted is None or not raw / ETA_RESET_FACTOR <= predicted <= raw * ETA_RESET_FACTOR:
            self.eta_s = raw  # first estimate, or the last was far off: no slow decay from it
        else:
            dt = max(0.0, busy_s - self._at)
            self.eta_s = predicted + (1 - math.exp(-dt / ETA_SMOOTHING_S)) * (raw - predicted)
        self._at = busy_s
        return rate, self.eta_s


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
        done = loop.probe.perform(loop.engine, item, seed)
        loop.stored(item, attempt, done, done.result.latency_s)
    return "done"


def _concurrent(loop: _RunLoop, workers: int) -> str:
    """Generation probes on a backend that takes `workers` requests at once (endpoints).

    Requests are submitted in attempt-major order with the same per-attempt seeds as the
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


# -- estimates ------------------------------------------------------------------------------
@dataclass
class Estimate:
    generations: int
    tokens_per_s: float | None
    tokens_per_generation: float | None
    seconds: float | None
    basis: str
    unit: str = "generations"  # "sentences" for perplexity probes (tokens_per_s: sentences/s)
    items_note: str = ""  # what --sample / --limit kept, in words (`subset_note`)


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
    tokens, seconds, count, mean_tokens = generation_totals(
        store, model_sha256=model_sha256, model_id=model_id, slots=slots, probe=probe
    )
    if not count or not seconds:
        return None
    return tokens / seconds, mean_tokens, count


def measured_scoring_speed(store: Store, model_sha256: str | None) -> tuple[float, int] | None:
    """(sentences/s, sentences measured) over this model's stored scoring blocks."""
    if not model_sha256:
        return None
    sentences, seconds = scoring_totals(store, model_sha256)
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
    params = probe.capabilities.parameters.bind(
        store, probe.resolve_params(limit=limit, sample=sample, **probe_params)
    )
    items = probe.items(params)
    note = subset_note(probe, params)
    if probe.capabilities.scores is not None:  # speed in sentences, from scoring runs
        sentences = probe.capabilities.running.work_units(items, 1)
        measured = measured_scoring_speed(store, model_sha256)
        if measured is None:
            return Estimate(
                sentences,
                None,
                None,
                None,
                "scoring speed not measured yet — score a small sample first (limit a few items)",
                unit="sentences",
                items_note=note,
            )
        rate, count = measured
        return Estimate(
            sentences,
            rate,
            None,
            sentences / rate,
            f"measured on {count:,} sentences this model scored here",
            unit="sentences",
            items_note=note,
        )
    generations = probe.capabilities.running.work_units(items, attempts)
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
        chain = probe.capabilities.running.kind == "chain"
        if not (same_probe and chain):  # a chain's sum of answers
            per_generation = min(per_generation, float(max_tokens))
    elif fallback_tokens_per_s:
        tps, per_generation = fallback_tokens_per_s, float(max_tokens)
        basis = "measured by a test load; assumes every answer uses max_tokens"
    else:
        return Estimate(
            generations,
            None,
            None,
            None,
            "speed not measured yet — test-load the model in Models",
            items_note=note,
        )
    seconds = generations * per_generation / tps / max(1, concurrency)
    if concurrency > 1:
        basis += f"; {concurrency} requests at a time"
    return Estimate(generations, tps, per_generation, seconds, basis, items_note=note)
