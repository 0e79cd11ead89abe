"""The model loaded once for the whole audit (`SharedBackend`) and how fast it answers, as
the audit's runs will ask it (`Speed`, `measure_speed`: the stored speed or a short burst)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gbdesk.store import Store, audits
from gbdesk.support.errors import EngineError, UserError
from gbdesk.workflows import runs
from gbdesk.workflows.runs import (
    measured_scoring_speed,
    measured_speed,
)

log = logging.getLogger(__name__)

#: tokens of each answer of the speed burst
SPEED_TOKENS = 32
#: prompts read (one token answered) to measure the reading speed, and their words each
PREFILL_PROMPTS, PREFILL_WORDS = 2, 400
#: reading speed per generation speed when none was measured (bundled model, 2 cores:
#: ~780 prompt tokens/s against 185 generated tokens/s with 16 answers at once)
PREFILL_PRIOR = 4.0
#: characters per prompt token when none was measured (English text)
CHARS_PER_TOKEN = 4.0
#: sentences scored to measure a scoring probe's speed
SPEED_SENTENCES = 8
#: the speed test's deadline inside the budget (`speed_deadline_s`): this share of the
#: budget, within these bounds (seconds)
SPEED_SHARE, SPEED_MIN_S, SPEED_MAX_S = 0.1, 10.0, 120.0


# -- the model, loaded once --------------------------------------------------------------------
class SharedBackend:
    """One loaded model for every run of an audit: `factory(model, generation)` makes it at
    the first call; each run gets it through `for_run`, whose `close` leaves it open;
    `close` closes it for good."""

    def __init__(self, factory: Callable[..., Any], model: dict[str, Any]):
        self.factory, self.model = factory, model
        self.backend: Any = None
        self.load_s = 0.0

    def get(self) -> Any:
        if self.backend is not None and getattr(self.backend, "aborted", False) is True:
            self.close()  # stopped at the budget's end or by Stop: a fresh one if needed
        if self.backend is None:
            started = time.perf_counter()
            self.backend = self.factory(self.model, {"prompt_mode": "auto", "batch_size": 0})
            self.load_s = time.perf_counter() - started
        return self.backend

    def for_run(self, _model: dict[str, Any], _generation: dict[str, Any]) -> Any:
        return _Borrowed(self.get())

    def close(self) -> None:
        if self.backend is not None:
            try:
                self.backend.close()
            finally:
                self.backend = None


class _Borrowed:
    """A shared backend as one run sees it: everything but `close`."""

    def __init__(self, backend: Any):
        object.__setattr__(self, "_backend", backend)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def __setattr__(self, name: str, value: Any) -> None:
        """Set on the model (e.g. the run's `on_wait` for a silent server)."""
        setattr(self._backend, name, value)

    def close(self) -> None:
        """The audit closes the model at its end, not each run."""


# -- speed ---------------------------------------------------------------------------------------
@dataclass
class Speed:
    """How fast the model answers, as the audit's runs will ask it."""

    tokens_per_s: float  # generated tokens per second with `width` answers under way
    width: int  # answers decoded at once (continuous batching) or requests in flight
    load_s: float
    basis: str
    sentences_per_s: float | None = None  # scoring probes
    measured_s: float = 0.0  # seconds the measurement took now (0: a stored speed)
    prompt_tokens_per_s: float | None = None  # prompt tokens read per second
    chars_per_token: float = CHARS_PER_TOKEN  # prompt characters per prompt token

    def reading_rate(self) -> float:
        """Prompt tokens read per second (measured, else `PREFILL_PRIOR` × generating)."""
        return self.prompt_tokens_per_s or PREFILL_PRIOR * self.tokens_per_s

    def generation_seconds(self, prompt_chars: float, answer_tokens: float) -> float:
        """Seconds of one answer's share of the model: reading its prompt, writing it."""
        prompt_tokens = prompt_chars / max(self.chars_per_token, 0.5)
        return prompt_tokens / self.reading_rate() + answer_tokens / self.tokens_per_s

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Speed:
        data = dict(data or {})
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def decoding_width(model: dict[str, Any], concurrency: int = 1) -> int:
    """Answers the audit's runs have under way at once: an endpoint's requests in flight,
    a local model's continuous-batching slots (`choose_slots`)."""
    if model.get("kind") == "endpoint":
        return max(1, int(concurrency))
    path = model.get("path")
    if not path or not Path(path).is_file():
        return 1
    from gbdesk.engine.slots import choose_slots

    return max(1, choose_slots(path, n_ctx_seq=300 + 512)[0])


def speed_deadline_s(budget_s: float) -> float:
    """Seconds the speed test may take (planning: not counted in the budget, whose clock
    starts once the plan is made, but bounded by it): `SPEED_SHARE` of it, at least
    `SPEED_MIN_S`, at most `SPEED_MAX_S` and a quarter of the budget. A model (a server
    that drips its replies, a stuck one) that gives no whole answer by then is stopped."""
    return min(budget_s / 4, SPEED_MAX_S, max(SPEED_MIN_S, SPEED_SHARE * budget_s))


class _BurstDeadline:
    """The speed test's deadline (`speed_deadline_s`): the model is stopped (`abort`) when
    it is reached, and the answers that came by then make the measurement."""

    def __init__(self, backend: Any, seconds: float | None):
        self.backend, self.seconds, self.expired = backend, seconds, False
        self.timer: threading.Timer | None = None

    def __enter__(self) -> _BurstDeadline:
        if self.seconds is not None and hasattr(self.backend, "abort"):
            self.timer = threading.Timer(self.seconds, self._expire)
            self.timer.daemon = True
            self.timer.start()
        return self

    def _expire(self) -> None:
        self.expired = True
        log.info("the speed test reached its deadline of %.0f s: the model is stopped",
                 self.seconds)  # fmt: skip
        self.backend.abort()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if self.timer is not None:
            self.timer.cancel()
        if isinstance(exc, KeyboardInterrupt) and hasattr(self.backend, "abort"):
            self.backend.abort()  # Ctrl-C: stop the model now, wait for nothing
            return False
        # a model stopped at the deadline fails what was under way: what came is kept
        return self.expired and isinstance(exc, EngineError)


def measure_speed(
    store: Store,
    model: dict[str, Any],
    backend: SharedBackend | None = None,
    *,
    concurrency: int = 1,
    scoring: bool = False,
    deadline_s: float | None = None,
) -> Speed:
    """The model's speed at the width the audit decodes: its stored answers at that
    width, or a burst of `width` answers of `SPEED_TOKENS` tokens now (seconds); the
    scoring speed too when `scoring` (stored, or `SPEED_SENTENCES` scored now).
    `deadline_s` (`speed_deadline_s`): the whole measurement's limit; the model is stopped
    then, and a model that gave nothing to measure by then (no whole answer; a local
    model: no token either) is refused in one line."""
    width = decoding_width(model, concurrency)
    endpoint = model.get("kind") == "endpoint"
    stored = measured_speed(
        store, model.get("sha256"), model.get("id"), slots=None if endpoint else width
    )
    scored = measured_scoring_speed(store, model.get("sha256")) if scoring else None
    started = time.perf_counter()
    basis: list[str] = []
    tps: float | None = None
    reading: tuple[float, float] | None = None
    if stored is not None:
        tps, _, count = stored
        if endpoint:  # stored rates are per request
            tps *= width
        basis.append(f"{tps:,.0f} tokens/s over {count:,} earlier answers of this model")
        reading = _stored_reading(store, model)
    need_scoring = scoring and scored is None
    if tps is None or need_scoring:
        shared = backend or SharedBackend(runs.llama_backend_factory, model)
        try:
            loaded = shared.get()
            with _BurstDeadline(loaded, deadline_s) as limit:
                if tps is None:
                    tps = _burst(loaded, width)
                    what = "requests in flight" if endpoint else "answers at once"
                    basis.append(f"{tps:,.0f} tokens/s measured now with {width} {what}")
                    reading = _reading_burst(loaded, width, endpoint)
                    if reading is not None:
                        basis.append(f"prompts read at {reading[0]:,.0f} tokens/s")
                if need_scoring:
                    scored = _scoring_burst(loaded)
                    if scored is not None:
                        basis.append(f"{scored[0]:,.0f} sentences/s scored now")
            if limit.expired and not tps:
                raise UserError(
                    f"the model gave no whole answer within the speed test's {deadline_s:.0f} s "
                    f"(of the budget); is it stuck or overloaded? Nothing was planned"
                )
        finally:
            if backend is None:
                shared.close()
        load_s = shared.load_s
    else:
        load_s = 0.0
    if not tps or tps <= 0:
        raise UserError("could not measure the model's speed (it generated nothing)")
    speed = Speed(
        float(tps), width, load_s, "; ".join(basis),
        scored[0] if scored else None, time.perf_counter() - started - load_s,
    )  # fmt: skip
    if reading is not None:
        speed.prompt_tokens_per_s, speed.chars_per_token = reading
    return speed


def _stored_reading(store: Store, model: dict[str, Any]) -> tuple[float, float] | None:
    """(prompt tokens/s, characters per token) the model's latest audit measured."""
    for earlier in audits.latest_speeds(store, model.get("id")):
        rate = (earlier or {}).get("prompt_tokens_per_s")
        if rate:
            return float(rate), float(earlier.get("chars_per_token") or CHARS_PER_TOKEN)
    return None


def _speed_requests(n: int) -> list[Any]:
    from gbdesk.engine.base import GenerationRequest

    return [
        GenerationRequest(
            messages=[{"role": "user", "content": f"Describe person {i + 1} in a sentence."}],
            seed=i + 1,
            max_tokens=SPEED_TOKENS,
        )
        for i in range(n)
    ]


def _burst(backend: Any, width: int) -> float:
    """Generated tokens per second of `width` short answers at once (continuous batching
    for a local model, concurrent requests for an endpoint); the answers that came before
    the model was stopped (`_BurstDeadline`) count, over the time until then. A local
    model's stream also reports the tokens it holds about once a second: stopped before
    any answer was whole (a busy machine), those tokens make the measurement."""
    from concurrent.futures import as_completed

    requests = _speed_requests(width)
    tokens = 0
    started = time.perf_counter()
    wall = [0.0]
    progressed = [0, 0.0]  # tokens the stream reported, seconds until that report

    def counted(result: Any) -> None:
        nonlocal tokens
        tokens += int(result.tokens_out)
        wall[0] = time.perf_counter() - started

    def progress(p: Any) -> None:
        progressed[:] = [int(p.tokens), time.perf_counter() - started]

    try:
        if hasattr(backend, "generate_stream") and width > 1:
            backend.generate_stream(
                requests, lambda _i, r: counted(r), slots=width, on_progress=progress
            )
        elif width > 1:
            pool = ThreadPoolExecutor(width, thread_name_prefix="gbdesk-speed")
            try:  # not `with`: its exit would wait for answers a Ctrl-C gave up on
                for future in as_completed([pool.submit(backend.generate, r) for r in requests]):
                    counted(future.result())
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        else:
            counted(backend.generate(requests[0]))
    except EngineError:
        if not getattr(backend, "aborted", False) or not (tokens or progressed[0]):
            raise
        if progressed[0] > tokens and progressed[1] > 0:  # stopped mid-answers
            log.info("speed test stopped before its answers were whole: %d tokens in %.1f s",
                     progressed[0], progressed[1])  # fmt: skip
            return progressed[0] / progressed[1]
    return tokens / wall[0] if wall[0] > 0 else 0.0


#: sentences of the reading burst's prompts (plain English, of an everyday length)
_READING_TEXT = (
    "The candidate worked for six years as an analyst at a regional bank.",
    "She led a small team that reviewed loans and wrote monthly reports.",
    "Before that he studied economics and spent a summer at a shipping firm.",
    "They speak two languages and enjoy hiking with friends at the weekend.",
    "The manager asked the group to compare the offers and choose one by Friday.",
)


def _reading_requests(n: int) -> list[Any]:
    """`n` prompts of ~`PREFILL_WORDS` words, different from their first word (no prefix
    of one is shared with another), each answered with one token."""
    from gbdesk.engine.base import GenerationRequest

    out = []
    for i in range(n):
        words: list[str] = [f"Document {i + 1}."]
        k = i
        while len(words) < PREFILL_WORDS:
            words.extend(_READING_TEXT[k % len(_READING_TEXT)].split())
            k += i + 2
        text = " ".join(words)
        out.append(GenerationRequest(
            messages=[{"role": "user", "content": text}], seed=i + 1, max_tokens=1
        ))  # fmt: skip
    return out


def _reading_burst(backend: Any, width: int, endpoint: bool) -> tuple[float, float] | None:
    """(prompt tokens read per second, characters per prompt token), the prompts read the
    way the runs read them (continuous batching, or requests in flight for an endpoint,
    whose rate counts `width` at once); None when it cannot be measured."""
    requests = _reading_requests(PREFILL_PROMPTS)
    results: list[Any] = []
    started = time.perf_counter()
    try:
        if hasattr(backend, "generate_stream") and width > 1:
            backend.generate_stream(
                requests, lambda _i, r: results.append(r), slots=min(width, len(requests))
            )
        else:
            results = [backend.generate(r) for r in requests]
    except Exception as exc:  # a server that refuses max_tokens=1: the prior stands
        log.info("reading speed not measured: %s", exc)
        return None
    wall = time.perf_counter() - started
    tokens = sum(int(getattr(r, "tokens_in", 0) or 0) for r in results)
    if tokens <= 0 or wall <= 0:
        return None
    chars = sum(len(r.messages[-1]["content"]) for r in requests)
    rate = tokens / wall * (width if endpoint else 1)
    return rate, chars / tokens


def _scoring_burst(backend: Any) -> tuple[float, int] | None:
    texts = [f"Sentence number {i} about a person at work." for i in range(SPEED_SENTENCES)]
    started = time.perf_counter()
    try:
        backend.score(texts)
    except Exception as exc:  # an endpoint without scoring: the plan leaves such probes out
        log.info("scoring speed not measured: %s", exc)
        return None
    return len(texts) / max(1e-6, time.perf_counter() - started), len(texts)
