"""Audit a model in one go (no Qt): an honest verdict for every marked metric within a
time budget — decided where the answers decide, "not enough answers to tell" where they
do not — then the PDF report.

* **Speed, in seconds.** The model's stored speed at the width its runs decode, or a
  short burst now: `SPEED_TOKENS` tokens for as many answers at once as the runs decode
  (a local model's continuous-batching slots, an endpoint's `--concurrency`).
* **Prompt lengths.** Reading a prompt costs too (a HiringBloomberg prompt is ~2,800
  tokens: on the bundled model its reading takes longer than its answer). The burst also
  reads `PREFILL_PROMPTS` prompts of ~`PREFILL_WORDS` words the way the runs read them
  (prompt tokens per second, characters per token); a probe's prompt tokens are its first
  drawn items' characters over that. A stored speed takes these from the model's latest
  audit, else `PREFILL_PRIOR` × its generation speed (the ratio measured on the bundled
  model). Reading a long prompt costs more per token than a short one (attention); the
  plan counts it as linear, so its first look at long-prompt probes is an underestimate
  (HiringBloomberg: about half the seconds measured), set right by that look.
* **Answer lengths.** Each probe's expected answer is this model's stored answers to it,
  else the probe's documented prior (`AuditSizing.answer_tokens`: a short answer for the
  probes that ask for a letter or yes/no), else the longest it allows; after a probe's
  first look, its own measured seconds per answer.
* **Looks and verdicts.** A probe with marked metrics is run on a random draw of its
  items (`gbdesk.contract.running.draw_order`: a prefix keeps every group's share), looked at
  twice at most (`gbdesk.analysis.audit_design`, plan version 3): a first look at α₁ =
  0.005 on max(10 items and one per group, ¼ of the even share), a final one at α₂ =
  0.045. Each look's marked metrics get a verdict from `metric_intervals` at its level
  (`gbdesk.analysis.audit_verdicts`): the marks the interval allows, decided when one;
  an undecided one gets a forecast of the answers that would likely decide it.
* **Rounds.** First every probe's first look, cheapest first; probes whose verdicts are
  all decided stop; the others share the seconds left evenly (water-filling up to each
  pool, recomputed before each step) for their final look, cheapest step first. The
  step running when the budget ends is cut there (the answers under way finish and are
  kept; those still under way `DRAIN_GRACE_S` later are dropped) and is that probe's
  final look. An audit of the earlier grid design (version 2) is not continued.
* **Probes without marks** (other studies' probes, in an audit of every probe) run once
  at a fixed size that fits an even share of the budget (`AuditSizing.sizes`).
* **Nothing lost.** The audit (plan, state, verdicts, run ids) is stored before anything
  runs and after every step; the same command continues it with the rest of its budget.
  One audit or run at a time per database (`gbdesk.store.jobs`). The model is loaded
  once for the whole audit.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scipy.stats import norm

from gbdesk.analysis import audit_design
from gbdesk.analysis.audit_rounds import Track, first_round, metric_states, next_step
from gbdesk.analysis.audit_verdicts import AuditVerdict, look_verdicts
from gbdesk.analysis.results import compute_metrics, item_results
from gbdesk.contract import AuditSize, Item, Probe, get_harness, get_probe, probe_names
from gbdesk.contract.running import draw_order, wording_ids
from gbdesk.maths.sequential import Looks
from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.store import Store, audits, jobs
from gbdesk.store.speed import generation_totals
from gbdesk.support.errors import EngineError, UserError, short_repr
from gbdesk.support.format import duration
from gbdesk.workflows import runs
from gbdesk.workflows.runs import (
    RunControl,
    estimate_run,
    execute_run,
    measured_scoring_speed,
    measured_speed,
    plan_run,
)

log = logging.getLogger(__name__)

BUDGETS = {"30m": 30 * 60, "2h": 2 * 3600, "8h": 8 * 3600}
#: tokens of each answer of the speed burst
SPEED_TOKENS = 32
#: prompts read (one token answered) to measure the reading speed, and their words each
PREFILL_PROMPTS, PREFILL_WORDS = 2, 400
#: reading speed per generation speed when none was measured (bundled model, 2 cores:
#: ~780 prompt tokens/s against 185 generated tokens/s with 16 answers at once)
PREFILL_PRIOR = 4.0
#: characters per prompt token when none was measured (English text)
CHARS_PER_TOKEN = 4.0
#: items whose prompts' lengths a plan averages
PROMPT_SAMPLE = 40
#: sentences scored to measure a scoring probe's speed
SPEED_SENTENCES = 8
#: the speed test's deadline inside the budget (`speed_deadline_s`): this share of the
#: budget, within these bounds (seconds)
SPEED_SHARE, SPEED_MIN_S, SPEED_MAX_S = 0.1, 10.0, 120.0
#: the longest budget an audit plans for: a year (a longer one is a typo)
MAX_BUDGET_S = 366 * 24 * 3600
#: seconds kept for the report at the end of the budget: this share of it, within bounds
REPORT_SHARE, REPORT_MIN_S, REPORT_MAX_S = 0.04, 20.0, 120.0
#: seconds the answers under way may take to finish after the budget's end; then they are
#: dropped (the model is stopped), so that a long answer cannot overrun the budget
DRAIN_GRACE_S = 30.0
#: a step is not started with fewer seconds than this left
MIN_STEP_S = 3.0
#: share of the budget the fixed-size probes (without marks) may plan, all together
FIXED_SHARE = 0.9


def parse_budget(text: str) -> int:
    """Seconds of "30m", "2h", "8h", "1h30m", "90s" or a number of minutes."""
    t = str(text).strip().lower().replace(" ", "")
    shown = short_repr(str(text))
    if re.fullmatch(r"\d+(\.\d+)?", t):
        parts = [(t, "m")]
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|min|s)", t)
        if not parts or "".join(a + b for a, b in parts) != t:
            raise UserError(f"--budget must look like 30m, 2h, 8h or 1h30m, not {shown}")
    if any(len(v) > 12 for v, _ in parts):  # float() of 400 nines is infinity
        raise UserError(f"--budget must be at most {MAX_BUDGET_S // 3600:,}h, not {shown}")
    seconds = sum(float(v) * {"h": 3600, "m": 60, "min": 60, "s": 1}[u] for v, u in parts)
    if seconds < 1:
        raise UserError("--budget must be at least a second")
    if seconds > MAX_BUDGET_S:
        raise UserError(f"--budget must be at most {MAX_BUDGET_S // 3600:,}h, not {shown}")
    return int(seconds)


def report_reserve_s(budget_s: float) -> float:
    """Seconds kept for writing the report at the end of the budget (never more than a
    third of it)."""
    return min(REPORT_MAX_S, max(REPORT_MIN_S, REPORT_SHARE * budget_s), budget_s / 3)


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
    """Seconds the speed test may take, inside the budget: `SPEED_SHARE` of it, at least
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


# -- the plan ----------------------------------------------------------------------------------
@dataclass
class ProbePlan:
    """One probe of an audit: what it runs, what it costs, how far it got, what it says."""

    probe: str
    title: str
    marked: bool  # has marked metrics: verdicts and looks; else one fixed-size run
    attempts: int
    prompts: int  # prompts per item
    items_total: int  # every item the probe may draw (the harness's)
    answer_tokens: float
    tokens_basis: str
    seconds_per_item: float
    sizes: list[int] = field(default_factory=list)  # the looks' sizes (marked)
    fixed: dict[str, Any] | None = None  # the AuditSize of a probe without marks
    run_id: int | None = None
    items: int = 0  # items drawn so far (the run's items)
    generations: int = 0  # answers stored
    spent_s: float = 0.0
    looks: list[int] = field(default_factory=list)  # item counts of the looks so far
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # the last look's
    priority: int = 50
    template: str | None = None
    #: other wordings asked of the same drawn items (`--wordings`), and their runs
    wordings: list[int] = field(default_factory=list)
    wording_runs: dict[str, int] = field(default_factory=dict)
    #: "two-look" (plan version 3, `gbdesk.analysis.audit_design`) or "grid" (version 2:
    #: doublings with α spent as k², `gbdesk.maths.sequential`)
    design: str = "grid"
    alpha: float = audit_design.ALPHA  # each verdict's α over its looks (α/k: --family-wise)
    first_verdicts: list[dict[str, Any]] = field(default_factory=list)  # the first look's

    @property
    def grid(self) -> Looks | audit_design.TwoLooks:
        if self.design == audit_design.DESIGN:
            return audit_design.TwoLooks(tuple(self.sizes), self.alpha)
        return Looks(tuple(self.sizes))

    def first_seconds(self) -> float:
        if self.marked:
            return self.sizes[0] * self.seconds_per_item
        return float((self.fixed or {}).get("seconds") or 0.0)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbePlan:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def audit_verdicts(self) -> list[AuditVerdict]:
        return [AuditVerdict.from_json(v) for v in self.verdicts]

    def track(self) -> Track:
        states = metric_states(get_probe(self.probe), self.audit_verdicts())
        return Track(
            self.probe, self.grid, self.seconds_per_item, self.items, states,
            (self.priority, self.probe),
        )  # fmt: skip


@dataclass
class AuditPlan:
    model: dict[str, Any]
    budget_s: int
    budget: str
    speed: Speed
    probes: list[ProbePlan] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    harness: str | None = None  # the harness's name
    harness_title: str | None = None
    concurrency: int = 1
    family_wise: bool = False  # each verdict at α/k (the audit's bound α), else α

    @property
    def verdict_count(self) -> int:
        return sum(len(get_probe(p.probe).mark_definitions) for p in self.probes if p.marked)

    @property
    def first_round_s(self) -> float:
        return sum(p.first_seconds() for p in self.probes)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model.get("name"),
            "budget": self.budget,
            "budget_s": self.budget_s,
            "harness": self.harness,
            "concurrency": self.concurrency,
            "speed": self.speed.to_json(),
            "first_round_s": round(self.first_round_s, 1),
            "probes": [_plan_entry_json(p, self) for p in self.probes],
            "left_out": self.left_out,
            **error_statement(self.verdict_count, self.family_wise),
        }

    def text(self) -> str:
        """The plan for reading before anything runs."""
        what = f"{self.harness_title} on " if self.harness_title else ""
        lines = [
            f"Audit: {what}{self.model.get('name', '?')} within {self.budget}",
            f"Speed: {self.speed.basis}",
            f"Round 1 — every probe's first look, cheapest first, about "
            f"{duration(self.first_round_s)}:",
        ]
        in_order = sorted(self.probes, key=lambda p: (p.first_seconds(), p.priority, p.probe))
        for n, p in enumerate(in_order, start=1):
            lines.append(f"{n:>2}. {p.title} — {first_look_text(p)}")
        marked = [p for p in self.probes if p.marked]
        if marked:
            lines.append(
                "Then: the probes whose verdicts are still open share the rest of the budget "
                "evenly (up to each probe's pool) for one final look; a probe whose verdicts "
                "are all decided stops."
            )
            lines.append(f"If the budget were shared evenly: {_projection_text(self)}")
            stated = error_statement(self.verdict_count, self.family_wise)
            lines.append(
                "A verdict is decided only when its interval allows a single mark, from at "
                f"least {MIN_ITEMS} items. {stated['error_statement']}"
            )
        worded = [p for p in self.probes if p.wordings]
        if worded:
            lines.append(
                f"Wordings: {len(worded)} probes ask each drawn item again in "
                + ", ".join(sorted({f"{len(p.wordings)}" for p in worded}))
                + " other wordings (counted in the times above); the verdicts are the "
                "study's own wording's, and the report says which depend on the wording."
            )
        lines += [f"left out: {x}" for x in self.left_out]
        return "\n".join(lines)


def error_statement(
    verdicts: int, family_wise: bool, version: int | None = audit_design.PLAN_VERSION
) -> dict[str, Any]:
    """What the audit may say of its errors (`audit_design`): each decided verdict's bound
    and, by Bonferroni across its `verdicts`, the chance that at least one decided verdict
    is wrong; which mode ran ("per verdict", "family-wise"). An audit of an earlier
    design (plan version 2) states no bound."""
    per = audit_design.verdict_alpha(verdicts, family_wise)
    bound = audit_design.audit_bound(verdicts, per)
    mode = "family-wise" if family_wise else "per verdict"
    if version != audit_design.PLAN_VERSION:
        return {
            "error_mode": "earlier design", "verdict_alpha": None, "audit_error_bound": None,
            "error_statement": (
                f"Planned with an earlier design (plan version {version}: a grid of looks), "
                "whose looks were taken before the intervals held their level: no error bound "
                "is stated for its verdicts."
            ),
        }  # fmt: skip
    first, final = per * audit_design.FIRST_SHARE, per * (1 - audit_design.FIRST_SHARE)
    each = (
        f"Each decided verdict is wrong with probability at most {_pct(per)} ({_pct(first)} "
        f"at its first look + {_pct(final)} at its final one)"
    )
    if family_wise:
        text = (
            f"{each}: family-wise, α/{verdicts} per verdict, so the chance that at least one "
            f"decided verdict of the audit is wrong is at most {_pct(bound)} (Bonferroni)."
        )
    else:
        text = (
            f"{each}; the chance that at least one of the audit's {verdicts} verdicts is "
            f"decided wrong is at most {_pct(bound)} (Bonferroni: {verdicts} × {_pct(per)}) — "
            f"--family-wise bounds it at {_pct(audit_design.ALPHA)}."
        )
    return {
        "error_mode": mode, "verdict_alpha": round(per, 8), "audit_error_bound": round(bound, 8),
        "error_statement": text,
    }  # fmt: skip


def _pct(x: float) -> str:
    """0.05 → "5 %", 0.0045 → "0.45 %"."""
    return f"{100 * x:.3g} %"


def first_look_text(p: ProbePlan) -> str:
    per = p.attempts * p.prompts
    if not p.marked:
        fixed = p.fixed or {}
        return (
            f"{fixed.get('items', 0):,} items (no marks: one run), "
            f"about {duration(p.first_seconds())}"
        )
    return (
        f"{p.sizes[0]:,} of {p.items_total:,} items × {per} answers of ~{p.answer_tokens:.0f} "
        f"tokens ({p.tokens_basis}), about {duration(p.first_seconds())}"
    )


def even_items(plan: AuditPlan) -> dict[str, int]:
    """Items each marked probe would reach if what the budget leaves after the fixed-size
    probes were shared evenly between the marked ones (a projection for the plan)."""
    marked = [p for p in plan.probes if p.marked]
    if not marked:
        return {}
    fixed = sum(p.first_seconds() for p in plan.probes if not p.marked)
    left = max(0.0, plan.budget_s - report_reserve_s(plan.budget_s) - plan.speed.measured_s)
    share = max(0.0, left - fixed) / len(marked)
    return {
        p.probe: int(min(p.items_total, max(0.0, share / max(p.seconds_per_item, 1e-9))))
        for p in marked
    }


def _projection_text(plan: AuditPlan) -> str:
    reach = even_items(plan)
    parts = []
    for p in plan.probes:
        if not p.marked:
            continue
        n = reach.get(p.probe, 0)
        meaning = projected_meaning(p, n)
        parts.append(f"{p.probe} ~{n:,} items{f' ({meaning})' if meaning else ''}")
    return "; ".join(parts)


def projected_meaning(p: ProbePlan, n_items: int) -> str:
    """What an interval from `n_items` items of this probe could tell, in words, from its
    headline metric's a-priori half-width (`AuditSizing.precision`, at the audit's level)."""
    if n_items < 1:
        return "not reached"
    probe = get_probe(p.probe)
    params = probe.resolve_params(template=p.template, draw=max(1, n_items))
    precision = probe.capabilities.audit.precision(params, n_items, p.attempts)
    if precision is None or not math.isfinite(precision.half_width):
        return ""
    half = precision.half_width * p.grid.z / 1.959964
    words = interval_meaning(probe, precision.metric, half)
    return f"±{half:.2f}: {words}" if words else f"±{half:.2f}"


def _plan_entry_json(p: ProbePlan, plan: AuditPlan) -> dict[str, Any]:
    reach = even_items(plan).get(p.probe)
    data = p.to_json()
    data.update(
        {
            "first_look_s": round(p.first_seconds(), 1),
            "expected": duration(p.first_seconds()),
            "even_share_items": reach,
            "even_share_interval": projected_meaning(p, reach) if reach is not None else "",
        }
    )
    return data


def _mark_gap(definition: Any, a: str, b: str) -> float:
    """The smallest distance between a band of mark `a` and a band of mark `b`."""
    return min(
        max(0.0, max(lo_b - hi_a, lo_a - hi_b))
        for lo_a, hi_a in definition.ranges.get(a, ())
        for lo_b, hi_b in definition.ranges.get(b, ())
    )


def interval_meaning(probe: Probe, metric: str, half_width: float) -> str:
    """What an interval of ± `half_width` on `metric` can tell, in words, from the metric's
    mark bands (empty for a metric without marks): too wide to tell a healthy result
    (mark A) from a catastrophic one (D), only that, or enough to tell A from critical (C)."""
    definition = probe.mark_definitions.get(metric)
    if definition is None or half_width != half_width:
        return ""
    width = 2 * half_width
    a_width = min(hi - lo for lo, hi in definition.ranges.get("A", ((0.0, 0.0),)))
    if width > _mark_gap(definition, "A", "D") + a_width:
        return "too wide to tell a balanced model from a strongly biased one"
    if width > _mark_gap(definition, "A", "C"):
        return "tells a strongly biased model from a balanced one, but not a moderate bias"
    return "narrow enough to tell a moderate bias from none"


def _priority(name: str) -> tuple[int, str]:
    return get_probe(name).capabilities.audit.priority, name


def answer_tokens(store: Store, probe: Probe, model: dict[str, Any]) -> tuple[float, str]:
    """(expected tokens of one answer, where the figure comes from)."""
    endpoint = model.get("kind") == "endpoint"
    _tokens, _seconds, count, mean = generation_totals(
        store,
        model_sha256=None if endpoint else model.get("sha256"),
        model_id=model.get("id"),
        probe=probe.name,
    )
    max_tokens = float(probe.default_generation["max_tokens"])
    if count and mean is not None:
        return min(max_tokens, float(mean)), f"this model's {count:,} earlier answers"
    prior = probe.capabilities.audit.answer_tokens
    if prior is not None:
        return min(max_tokens, float(prior)), "a short answer (the probe's prior)"
    return max_tokens, "the longest answer the probe allows"


def prompt_chars(items: list[Item]) -> float:
    """Mean characters of a prompt over the first `PROMPT_SAMPLE` items drawn."""
    lengths = [
        len(text)
        for item in items[:PROMPT_SAMPLE]
        for text in ([p.text for p in item.prompts] or [item.prompt or ""])
    ]
    return sum(lengths) / len(lengths) if lengths else 0.0


class ItemOrders:
    """Each probe's items in the audit's draw order, built once per process (a probe's
    items can take seconds to build: 4,000 CV lists)."""

    def __init__(self) -> None:
        self._orders: dict[tuple[str, str | None], list[Item]] = {}
        self._lock = threading.Lock()

    def get(self, probe: Probe, template: str | None) -> list[Item]:
        key = (probe.name, template)
        with self._lock:
            if key not in self._orders:
                params = probe.resolve_params(template=template)
                items = probe.items(params)
                self._orders[key] = [items[i] for i in draw_order(probe, items)]
            return self._orders[key]


ORDERS = ItemOrders()


#: the grid of a probe's looks ends at this many times the items the whole budget would
#: buy it at the planned speed (the plan's speed and answer lengths are estimates)
REACH_MARGIN = 4


def _marked_plan(
    store: Store,
    probe: Probe,
    model: dict[str, Any],
    speed: Speed,
    template: str | None,
    budget_s: float,
    wordings: str | None = None,
) -> ProbePlan:
    items = ORDERS.get(probe, template)
    others = audit_wordings(probe, wordings)
    groups = len({probe.capabilities.audit.balance_key(i.metadata) for i in items})
    first = min(len(items), max(MIN_ITEMS, groups))
    prompts = max(1, len(items[0].prompts or ()) if items else 1)
    tokens, basis = answer_tokens(store, probe, model)
    per_item = (
        prompts * probe.default_attempts * speed.generation_seconds(prompt_chars(items), tokens)
    ) * (1 + len(others))  # every other wording asks each item again
    # looks beyond what the budget could buy would only spend α: the grid stops there
    return ProbePlan(
        probe=probe.name,
        title=probe.card.title,
        marked=True,
        attempts=probe.default_attempts,
        prompts=prompts,
        items_total=len(items),
        answer_tokens=round(tokens, 1),
        tokens_basis=basis,
        seconds_per_item=per_item,
        sizes=[first],  # the first look's size is set once the even share is known
        priority=probe.capabilities.audit.priority,
        template=template,
        wordings=others,
        design=audit_design.DESIGN,
    )


def audit_wordings(probe: Probe, wordings: str | None) -> list[int]:
    """The other wordings (not 0) of `--wordings` this probe has: all its others for
    "all", those named it has for ids; none without --wordings."""
    if not wordings:
        return []
    have = [w.id for w in probe.capabilities.parameters.wordings() if w.id]
    named = wording_ids(wordings)  # the one reading of --wordings (UserError when bad)
    return have if named is None else [w for w in have if w in named]


def audit_probes(harness: str | None, probes: list[str] | None = None) -> list[str]:
    """The probes an audit considers: a harness's, those named, or every probe."""
    if harness is not None:
        return list(get_harness(harness).probes)
    return list(probes or probe_names())


def check_audit_wordings(wordings: str | None, probes: list[str]) -> None:
    """`--wordings` as `gbdesk run` takes it (`wording_ids`), and every id named is a
    wording of at least one marked probe of the audit (a wording none has is refused in
    one line, not ignored) — checked before the speed test."""
    if not wordings:
        return
    named = wording_ids(wordings)
    if named is None:
        return
    marked = [get_probe(n) for n in probes if get_probe(n).mark_definitions]
    have = sorted({w.id for p in marked for w in p.capabilities.parameters.wordings()})
    missing = [w for w in named if w not in have]
    if missing:
        raise UserError(
            f"--wordings {wordings}: no probe of this audit has wording "
            f"{', '.join(map(str, missing))} (they have wordings {', '.join(map(str, have))}; "
            "gbdesk card PROBE lists them)"
        )


def _fixed_plan(
    store: Store, probe: Probe, model: dict[str, Any], speed: Speed, share_s: float
) -> ProbePlan | str:
    """A probe without marks at the largest of its sizes that fits `share_s` (or why it
    is left out)."""
    tokens, basis = answer_tokens(store, probe, model)
    chosen: tuple[AuditSize, int, float] | None = None
    smallest: float | None = None
    for size in probe.capabilities.audit.sizes():
        try:
            est = estimate_run(
                store, probe.name, model.get("sha256"), attempts=size.attempts,
                max_tokens=int(probe.default_generation["max_tokens"]), limit=size.limit,
                sample=size.sample, model_id=model.get("id"), **size.options,
            )  # fmt: skip
        except UserError as exc:
            log.info("audit size %s of %s skipped: %s", size, probe.name, exc)
            continue
        if est.unit == "sentences":
            rate = speed.sentences_per_s or speed.tokens_per_s / 4
            seconds = est.generations / rate
        else:
            seconds = est.generations * tokens / speed.tokens_per_s
        smallest = seconds if smallest is None else min(smallest, seconds)
        if seconds <= share_s:
            n_items = len(probe.items(probe.resolve_params(
                limit=size.limit, sample=size.sample, **size.options
            )))  # fmt: skip
            chosen = (size, n_items, seconds)
    if chosen is None:
        need = duration(smallest) if smallest is not None else "?"
        return f"{probe.card.title}: its smallest size needs {need}, more than its share"
    size, n_items, seconds = chosen
    return ProbePlan(
        probe=probe.name,
        title=probe.card.title,
        marked=False,
        attempts=size.attempts,
        prompts=1,
        items_total=n_items,
        answer_tokens=round(tokens, 1),
        tokens_basis=basis,
        seconds_per_item=seconds / max(1, n_items),
        fixed={**asdict(size), "items": n_items, "seconds": round(seconds, 1)},
        priority=probe.capabilities.audit.priority,
    )


def plan_audit(
    store: Store,
    model: dict[str, Any],
    budget_s: int,
    speed: Speed,
    probes: list[str] | None = None,
    budget_text: str | None = None,
    harness: str | None = None,
    concurrency: int = 1,
    wordings: str | None = None,
    family_wise: bool = False,
) -> AuditPlan:
    """Every probe's first look (marked probes), or fixed size (the others); see the
    module docstring. `harness`: a study's harness (`Study.harnesses`) and its
    template. `wordings` ("all" or ids): marked probes also ask each drawn item in those
    of their other wordings (docs/wordings.md); the verdicts stay wording 0's.
    `family_wise`: each verdict at α/k, so that the whole audit's bound is α."""
    check_audit_wordings(wordings, audit_probes(harness, probes))
    template = None
    plan = AuditPlan(model, budget_s, budget_text or duration(budget_s), speed)
    plan.concurrency = max(1, int(concurrency))
    if harness is not None:
        chosen = get_harness(harness)
        probes, template = list(chosen.probes), chosen.template
        plan.harness, plan.harness_title = harness, chosen.title
    names = sorted(probes or probe_names(), key=_priority)
    share = budget_s * FIXED_SHARE / max(1, len(names))
    for name in names:
        probe = get_probe(name)
        unmet = runs.unmet_engine_need(store, probe, model)
        if unmet:  # e.g. a perplexity probe on an endpoint without prompt logprobs
            plan.left_out.append(unmet)
            continue
        if probe.mark_definitions:
            plan.probes.append(
                _marked_plan(store, probe, model, speed, template, budget_s, wordings)
            )
            continue
        fixed = _fixed_plan(store, probe, model, speed, share)
        if isinstance(fixed, str):
            plan.left_out.append(fixed)
        else:
            plan.probes.append(fixed)
    plan.family_wise = bool(family_wise)
    even = even_items(plan)
    alpha = audit_design.verdict_alpha(plan.verdict_count, plan.family_wise)
    for p in plan.probes:
        if p.marked:
            p.sizes = [audit_design.first_look_size(p.sizes[0], even[p.probe], p.items_total)]
            p.alpha = alpha
    return plan


# -- storing ---------------------------------------------------------------------------------
def save_audit(store: Store, plan: AuditPlan) -> int:
    """Store the plan before anything runs; its id."""
    return audits.add_audit(
        store,
        model_id=plan.model.get("id"),
        budget_s=plan.budget_s,
        budget=plan.budget,
        plan=[p.to_json() for p in plan.probes],
        speed=plan.speed.to_json(),
        left_out=plan.left_out,
        state={
            "harness": plan.harness,
            "harness_title": plan.harness_title,
            "concurrency": plan.concurrency,
            "spent_s": plan.speed.measured_s + plan.speed.load_s,
            "steps": [],
            "version": audit_design.PLAN_VERSION,
            "family_wise": plan.family_wise,
        },
    )


def get_audit(store: Store, audit_id: int) -> dict[str, Any]:
    audit = audits.get_audit(store, audit_id)
    if audit is None:
        raise UserError(f"there is no audit {audit_id}")
    return audit


def unfinished_audit(store: Store, model_id: int | None) -> int | None:
    """The latest audit of this model that has not finished (to continue it); audits of
    an earlier design (`earlier_unfinished`) are not continued."""
    audit_id = audits.unfinished_audit(store, model_id)
    if audit_id is None:
        return None
    state = get_audit(store, audit_id).get("state") or {}
    return audit_id if state.get("version") == audit_design.PLAN_VERSION else None


def earlier_unfinished(store: Store, model_id: int | None) -> str | None:
    """One line when the model's latest unfinished audit was planned with an earlier
    design (plan version 2: the grid of doublings): it is reported as it stands and not
    continued with the two-look design; None otherwise."""
    audit_id = audits.unfinished_audit(store, model_id)
    if audit_id is None:
        return None
    version = (get_audit(store, audit_id).get("state") or {}).get("version")
    if version == audit_design.PLAN_VERSION:
        return None
    return (
        f"audit {audit_id} was planned with an earlier design (plan version {version}: a grid "
        "of looks); it is not continued with the two-look design — its answers and verdicts stay "
        "as they are — and this command plans a new audit"
    )


def changed_options(
    audit: dict[str, Any],
    budget_s: int,
    harness: str | None,
    wordings: str | None,
    family_wise: bool | None = None,
) -> list[str]:
    """What a command asks differently from the unfinished audit it would continue — its
    budget, harness or wordings — in words ("the budget 2h, not 30m"); empty when the
    same. Continuing never takes another budget or other wordings without a word."""
    state = audit.get("state") or {}
    out = []
    if int(budget_s) != int(audit["budget_s"]):
        out.append(f"the budget {duration(budget_s)}, not {audit['budget']}")
    if harness != state.get("harness"):
        out.append(f"the harness {harness or 'none'}, not {state.get('harness') or 'none'}")
    plan = [ProbePlan.from_json(p) for p in audit["plan"]]
    worded = {p.probe: p.wordings for p in plan if p.marked}
    asked = {p.probe: audit_wordings(get_probe(p.probe), wordings) for p in plan if p.marked}
    if worded != asked:
        before = sorted({w for ws in worded.values() for w in ws})
        had = f"wordings {', '.join(map(str, before))}" if before else "no other wordings"
        out.append(f"--wordings {wordings or '(none)'}, not {had}")
    was = bool(state.get("family_wise"))
    if family_wise is not None and bool(family_wise) != was:
        out.append("--family-wise" if family_wise else "no --family-wise, not --family-wise")
    return out


def report_path(store: Store, audit_id: int) -> Path:
    return Path(store.path).with_name(f"{Path(store.path).stem}-audit-{audit_id}.pdf")


# -- running -------------------------------------------------------------------------------------
@dataclass
class AuditProgress:
    """One progress report of an audit (to `run_audit`'s on_progress).

    ``status``: "step" (a probe's step starts: `step` holds from/to items and the
    expected seconds), "running" (the step's run reports: `run` is its
    `gbdesk.workflows.runs.Progress`), "look" (a look's `verdicts`), "report" (writing the
    PDF), "done", "stopped"."""

    audit_id: int
    status: str
    probe: str = ""
    run_id: int | None = None
    run: Any = None
    step: dict[str, Any] | None = None
    verdicts: list[AuditVerdict] = field(default_factory=list)
    seconds_left: float = 0.0
    steps_done: int = 0
    #: items drawn / every item the probes may draw, over the marked probes (a progress bar)
    items: int = 0
    items_total: int = 0


def step_text(step: dict[str, Any]) -> str:
    """A step's items in words, for the CLI and the app: "10 → 20 items", "10 items" (a
    first look), "the 20 items of a step left unfinished" (`_finish_open_steps`)."""
    if step.get("finishing"):
        return f"the {step['to']:,} items of a step left unfinished"
    if step["from"]:
        return f"{step['from']:,} → {step['to']:,} items"
    return f"{step['to']:,} items"


class _StepControl(RunControl):
    """The audit's control for one step: cancelled when the user stops the audit or its
    time is up (the answers under way finish and are kept); paused with the audit."""

    def __init__(self, parent: RunControl, deadline: float, clock: Callable[[], float]):
        self.parent, self.deadline, self.clock = parent, deadline, clock
        super().__init__()

    @property
    def _backend(self) -> Any:
        return self.__dict__.get("_step_backend")

    @_backend.setter
    def _backend(self, backend: Any) -> None:
        """The step's model is the audit's too: `cancel(now=True)` on the audit's control
        (the dialog's Stop when its window closes, a test's teardown) stops it at once."""
        self.__dict__["_step_backend"] = backend
        if backend is not None:
            self.parent._backend = backend
            if self.parent.cancel_now and hasattr(backend, "abort"):
                backend.abort()

    @property
    def under_way(self) -> int:  # type: ignore[override]
        return self.parent.under_way

    @under_way.setter
    def under_way(self, n: int) -> None:
        """The audit's control hears of the answers under way (its Ctrl-C says them)."""
        self.parent.under_way = n

    @property
    def cancelled(self) -> bool:  # type: ignore[override]
        return self.parent.cancelled or self._cancelled.is_set() or self.clock() >= self.deadline

    @property
    def paused(self) -> bool:  # type: ignore[override]
        return self.parent.paused

    def wait_while_paused(self, on_pause: Callable[[], None] | None = None) -> None:
        self.parent.wait_while_paused(on_pause)

    def cancel(self, now: bool = False) -> None:
        self._cancelled.set()
        if now and self._backend is not None and hasattr(self._backend, "abort"):
            self._backend.abort()

    @contextmanager
    def watched(self, grace_s: float = DRAIN_GRACE_S, every_s: float = 0.25) -> Iterator[None]:
        """While the step runs: once its deadline is `grace_s` behind and answers are still
        under way, stop the model (`cancel(now=True)`); those answers are dropped, every
        answer stored stays."""
        done = threading.Event()
        self.overran = False

        def watch() -> None:
            while not done.wait(every_s):
                if self.clock() >= self.deadline + grace_s:
                    log.info("the budget is spent: the answers under way are dropped")
                    self.overran = True
                    self.cancel(now=True)
                    return

        watcher = threading.Thread(target=watch, name="gbdesk-audit-deadline", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()


@dataclass
class _Session:
    """One `run_audit` call: what it reads and writes as the steps go."""

    store: Store
    audit_id: int
    model: dict[str, Any]
    plan: list[ProbePlan]
    state: dict[str, Any]
    backend: SharedBackend
    control: RunControl
    on_progress: Callable[[AuditProgress], None] | None
    clock: Callable[[], float]
    deadline: float
    started: float
    spent_before: float
    steps: int = 0

    def seconds_left(self) -> float:
        return max(0.0, self.deadline - self.clock())

    def emit(self, status: str, **extra: Any) -> None:
        if self.on_progress is not None:
            marked = [p for p in self.plan if p.marked]
            progress = AuditProgress(
                self.audit_id, status, seconds_left=self.seconds_left(),
                steps_done=self.steps, items=sum(p.items for p in marked),
                items_total=sum(p.items_total for p in marked), **extra,
            )  # fmt: skip
            self.on_progress(progress)

    def save(self) -> None:
        self.state["spent_s"] = self.spent_before + (self.clock() - self.started)
        audits.update_audit(
            self.store,
            self.audit_id,
            plan=[p.to_json() for p in self.plan],
            state=self.state,
        )

    def stop_now(self) -> bool:
        return self.control.cancelled or self.seconds_left() < MIN_STEP_S


def _grow(session: _Session, p: ProbePlan, probe: Probe, size: int) -> None:
    """The probe's run holds the first `size` items of its draw order: planned now (and
    its id in the audit, both or neither), or extended."""
    store = session.store
    if p.run_id is None:
        with store.transaction():
            p.run_id = plan_run(
                store, p.probe, session.model, attempts=p.attempts, template=p.template,
                draw=size,
            )  # fmt: skip
            p.items = size
            _grow_wordings(session, p, probe, size)
            session.save()
        return
    order = ORDERS.get(probe, p.template)
    params = {**store.get_run(p.run_id)["params"], "draw": size}
    with store.transaction():
        store.extend_run(p.run_id, [i.as_row() for i in order[:size]], params)
        p.items = size
        _grow_wordings(session, p, probe, size)
        session.save()


def _grow_wordings(session: _Session, p: ProbePlan, probe: Probe, size: int) -> None:
    """The runs of the probe's other wordings hold the same drawn items (in the caller's
    transaction): planned, or extended."""
    store = session.store
    for w in p.wordings:
        run_id = p.wording_runs.get(str(w))
        if run_id is None:
            p.wording_runs[str(w)] = plan_run(
                store, p.probe, session.model, attempts=p.attempts, draw=size, wording=w
            )
            continue
        params = {**store.get_run(run_id)["params"], "draw": size}
        store.extend_run(run_id, [i.as_row() for i in probe.items(params)], params)


def _advance(session: _Session, p: ProbePlan, size: int) -> bool:
    """One step of a marked probe: its run grows to `size` items and makes their answers,
    until the deadline; then a look. False when the user stopped the audit during it."""
    probe = get_probe(p.probe)
    size = min(size, p.items_total)
    session.emit(
        "step", probe=p.probe, run_id=p.run_id,
        step={"from": p.items, "to": size, "expected_s": (size - p.items) * p.seconds_per_item},
    )  # fmt: skip
    _grow(session, p, probe, size)
    _execute(session, p)
    _look(session, p, probe)
    session.save()
    return not session.control.cancelled


def _fixed(session: _Session, p: ProbePlan) -> bool:
    """A probe without marks: one run at its planned size."""
    fields = AuditSize.__dataclass_fields__
    size = AuditSize(**{k: v for k, v in (p.fixed or {}).items() if k in fields})
    session.emit(
        "step", probe=p.probe, step={"from": 0, "to": p.items_total,
                                     "expected_s": p.first_seconds()},
    )  # fmt: skip
    if p.run_id is None:
        with session.store.transaction():
            p.run_id = plan_run(session.store, p.probe, session.model, **size.plan_kwargs())
            p.items = p.items_total
            session.save()
    _execute(session, p)
    session.save()
    return not session.control.cancelled


def _execute(session: _Session, p: ProbePlan) -> None:
    """Make the run's missing answers until the step's deadline; learn the probe's seconds
    per item from it."""
    step_control = _StepControl(session.control, session.deadline, session.clock)

    def forward(progress: Any) -> None:
        session.emit("running", probe=p.probe, run_id=p.run_id, run=progress)

    started = session.clock()
    try:
        with step_control.watched():
            outcome = execute_run(
                session.store, int(p.run_id), backend_factory=session.backend.for_run,  # type: ignore[arg-type]
                control=step_control, on_progress=forward,
            )  # fmt: skip
            for run_id in p.wording_runs.values():  # the same items in the other wordings
                if step_control.cancelled:
                    break
                execute_run(
                    session.store, int(run_id), backend_factory=session.backend.for_run,
                    control=step_control, on_progress=forward,
                )  # fmt: skip
    finally:
        elapsed = session.clock() - started
        p.spent_s += elapsed
    if step_control.overran:
        session.state["dropped_at_end"] = True
    made = outcome.generated
    p.generations = outcome.attempts_done
    if made > 0:
        measured = elapsed / made * p.attempts * p.prompts
        # the first measurement replaces the prior; later ones are averaged in
        p.seconds_per_item = measured if not p.looks else 0.5 * (p.seconds_per_item + measured)
    session.steps += 1
    session.state.setdefault("steps", []).append(
        {"probe": p.probe, "items": p.items, "made": made, "seconds": round(elapsed, 1)}
    )


def _look(session: _Session, p: ProbePlan, probe: Probe, final: bool = False) -> None:
    """Every marked metric's verdict on the answers so far (see `audit_verdicts`)."""
    run = session.store.get_run(int(p.run_id))  # type: ignore[arg-type]
    results = item_results(session.store, run["id"], "auto")
    reference = compute_metrics(session.store, run["id"], "auto") if final else None
    verdicts = look_verdicts(
        probe, results, run["params"], p.grid, run["attempts_done"], reference=reference,
        items=p.items,
    )  # fmt: skip
    p.verdicts = [_with_forecast(v.to_json(), p, probe) for v in verdicts]
    if p.design == audit_design.DESIGN:
        if p.items <= p.sizes[0]:
            p.first_verdicts = p.verdicts
        else:  # the final look: a metric decided at the first look keeps that verdict
            p.verdicts = audit_design.merge_looks(p.first_verdicts, p.verdicts)
    if not final and (not p.looks or p.looks[-1] != p.items):  # a step finished later
        p.looks.append(p.items)
    session.emit("look", probe=p.probe, run_id=p.run_id, verdicts=verdicts)


def _with_forecast(v: dict[str, Any], p: ProbePlan, probe: Probe) -> dict[str, Any]:
    """An undecided verdict's "≈N more answers would likely decide it" (`more_items`,
    `more_answers`, `more_seconds`; null when decided or unknown; `forecast` in words):
    its interval narrowing as 1/√n at the design's final level (`audit_design.forecast`)."""
    v = {**v, "more_items": None, "more_answers": None, "more_seconds": None, "forecast": ""}
    v["error_bound"] = p.alpha if v.get("decided") else None
    if v.get("decided") or v.get("value") is None or None in (v.get("ci") or [None]):
        return v
    looks = p.grid
    z_now = float(norm.ppf(1 - (1 - float(v.get("level") or 0.95)) / 2))
    more = audit_design.forecast(
        probe.mark_definitions[v["metric"]], float(v["value"]), tuple(v["ci"]), z_now, looks.z,
        int(v.get("items") or 0), p.items, p.items_total,
        probe.capabilities.presentation.metric_bounds(v["metric"]),
    )  # fmt: skip
    if more is None:
        return v
    if more < 0:
        v["forecast"] = "cannot be decided within this probe's pool"
        return v
    answers = more * p.attempts * p.prompts * (1 + len(p.wordings))
    seconds = more * p.seconds_per_item
    v.update(more_items=more, more_answers=answers, more_seconds=round(seconds, 1))
    v["forecast"] = (
        f"≈{answers:,} more answers ({more:,} items, about {duration(seconds)}) would "
        "likely decide it"
    )
    return v


def _tracks(plan: list[ProbePlan]) -> dict[str, Track]:
    return {p.probe: p.track() for p in plan if p.marked}


def run_ids(p: ProbePlan) -> list[int]:
    """The runs the audit grew for a probe: its own and its other wordings'."""
    return [] if p.run_id is None else [int(p.run_id), *map(int, p.wording_runs.values())]


def _made(store: Store, p: ProbePlan) -> bool:
    """Whether every answer the probe's runs plan is made."""
    return all(
        store.count_attempts(r) >= int(store.get_run(r)["attempts_total"]) for r in run_ids(p)
    )


def _finish_open_steps(session: _Session) -> bool:
    """A step begun by an earlier session and not finished — killed, stopped, or failed
    while it ran: the plan already holds its size (stored with the run's items, both or
    neither), so the rounds would take it as done — makes its missing answers and looks
    (a probe without marks: its one run is finished). False when the user stopped it."""
    for p in session.plan:
        if p.run_id is None or _made(session.store, p):
            continue
        if session.stop_now():
            break
        session.emit(
            "step", probe=p.probe, run_id=p.run_id,
            step={"from": p.items, "to": p.items, "expected_s": 0.0, "finishing": True},
        )  # fmt: skip
        _execute(session, p)
        if p.marked:
            _look(session, p, get_probe(p.probe))
        session.save()
        if session.control.cancelled:
            return False
    return True


def unmade_runs(session: _Session) -> list[str]:
    """THE RULE of an audit's end: it is done only when every run it grew is complete, or
    was cut by the budget's end and looked at (the last look is at the run's size); the
    runs that keep it from being done, in words (empty: it may be done)."""
    spent = session.seconds_left() < MIN_STEP_S
    out = []
    for p in session.plan:
        if p.run_id is None or _made(session.store, p):
            continue
        looked = not p.marked or (p.looks and p.looks[-1] == p.items)
        if not (spent and looked):
            done = sum(session.store.count_attempts(r) for r in run_ids(p))
            total = sum(int(session.store.get_run(r)["attempts_total"]) for r in run_ids(p))
            out.append(f"{p.probe}: {done:,} of {total:,} answers made")
    return out


def _rounds(session: _Session) -> bool:
    """Steps begun earlier and not finished, first looks, fixed-size probes, then steps;
    False when the user stopped it."""
    if not _finish_open_steps(session):
        return False
    by_name = {p.probe: p for p in session.plan}
    for track, size in first_round(list(_tracks(session.plan).values())):
        if session.stop_now():
            return not session.control.cancelled
        if not _advance(session, by_name[track.probe], size):
            return False
    for p in session.plan:
        if not p.marked and p.generations == 0 and p.run_id is None:
            if session.stop_now():
                return not session.control.cancelled
            if not _fixed(session, p):
                return False
    if any(p.marked and p.design != audit_design.DESIGN for p in session.plan):
        return _grid_rounds(session)  # an audit of plan version 2 run through the API
    while not session.stop_now():
        chosen = _final_step(session)
        if chosen is None:
            break
        if not _advance(session, *chosen):
            return False
    return not session.control.cancelled


def _grid_rounds(session: _Session) -> bool:
    """The earlier design's steps (plan version 2): one grid size at a time."""
    by_name = {p.probe: p for p in session.plan}
    while not session.stop_now():
        chosen = next_step(list(_tracks(session.plan).values()), session.seconds_left())
        if chosen is None:
            break
        track, size = chosen
        if not _advance(session, by_name[track.probe], size):
            return False
    return not session.control.cancelled


def _wants_final(p: ProbePlan) -> bool:
    """A marked probe past its first look, a verdict open, its final look not taken."""
    if not p.marked or p.run_id is None or p.items < p.sizes[0] or p.items >= p.items_total:
        return False
    if len(p.sizes) > 1 and p.items >= p.sizes[1]:
        return False
    return not p.verdicts or any(not v.get("decided") for v in p.verdicts)


def _final_step(session: _Session) -> tuple[ProbePlan, int] | None:
    """The next final look (`audit_design`): the open probes share the seconds left by
    water-filling, recomputed before each step from the measured seconds per item; the
    cheapest step first. A size once fixed is kept (stored in `sizes`)."""
    todo = [p for p in session.plan if _wants_final(p)]
    fixed = [p for p in todo if len(p.sizes) > 1]
    if fixed:
        p = fixed[0]
        return p, p.sizes[1]
    if not todo:
        return None
    left = session.seconds_left()
    sizes = audit_design.final_sizes(
        {p.probe: (p.items, p.items_total, p.seconds_per_item) for p in todo}, left
    )
    p = min(todo, key=lambda q: ((sizes[q.probe] - q.items) * q.seconds_per_item, q.priority))
    for q in todo:
        if sizes[q.probe] <= q.items:  # its share buys no item: no final look
            q.sizes = [q.sizes[0], q.items]
    if sizes[p.probe] <= p.items:
        return _final_step(session)
    p.sizes = [p.sizes[0], sizes[p.probe]]
    return p, sizes[p.probe]


def run_audit(
    store: Store,
    audit_id: int,
    *,
    backend_factory: Callable[..., Any] | None = None,
    control: RunControl | None = None,
    on_progress: Callable[[AuditProgress], None] | None = None,
    report: str | Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    wait: bool = False,
    backend: SharedBackend | None = None,
) -> dict[str, Any]:
    """Run (or continue) a stored audit until its verdicts are decided or its budget is
    spent, then write its report. Returns `audit_result`'s JSON."""
    control = control or RunControl()
    audit = get_audit(store, audit_id)
    model = store.get_model(audit["model_id"]) if audit["model_id"] else {}
    what = f"audit {audit_id} of {model.get('name') or 'a model'}"
    with jobs.job(store, "audit", what, audit_id=audit_id, wait=wait):
        return _run_audit(
            store, audit, model, backend_factory, control, on_progress, report, clock, backend
        )


def _run_audit(
    store: Store,
    audit: dict[str, Any],
    model: dict[str, Any],
    backend_factory: Callable[..., Any] | None,
    control: RunControl,
    on_progress: Callable[[AuditProgress], None] | None,
    report: str | Path | None,
    clock: Callable[[], float],
    backend: SharedBackend | None,
) -> dict[str, Any]:
    audit_id = int(audit["id"])
    state = dict(audit.get("state") or {})
    plan = [ProbePlan.from_json(p) for p in audit["plan"]]
    spent = float(state.get("spent_s") or 0.0)
    now = clock()
    left = max(0.0, audit["budget_s"] - spent - report_reserve_s(audit["budget_s"]))
    shared = backend or SharedBackend(backend_factory or runs.llama_backend_factory, model)
    session = _Session(
        store, audit_id, model, plan, state, shared, control, on_progress, clock,
        deadline=now + left, started=now, spent_before=spent,
    )  # fmt: skip
    audits.update_audit(store, audit_id, status="running")
    try:
        finished = _rounds(session)
    except EngineError as exc:  # a server fault, a crashed model: what was made is kept
        session.save()
        audits.update_audit(store, audit_id, status="stopped")
        reason = getattr(exc, "reason", None)
        if reason is None:
            raise
        done, total = getattr(exc, "counts", (0, 0))
        # the audit is continued with its own command, never its run's `gbdesk resume`
        raise type(exc)(
            f"{reason}. Audit {audit_id} is saved with every answer made (run "
            f"{exc.run_id}: {done:,}/{total:,}); the same command continues it"  # type: ignore[attr-defined]
        ) from exc
    except BaseException:  # a second Ctrl-C, a bug: what was made is kept
        session.save()
        audits.update_audit(store, audit_id, status="stopped")
        raise
    finally:
        if backend is None:
            shared.close()
    if finished:
        for p in plan:  # cut by the budget before its look (killed at the end): looked at
            if p.marked and p.run_id is not None and (not p.looks or p.looks[-1] != p.items):
                _look(session, p, get_probe(p.probe))
        unmade = unmade_runs(session)
        if unmade:  # never "done" with answers unmade (`unmade_runs`)
            log.warning("audit %s is not done: %s", audit_id, "; ".join(unmade))
            finished = False
    if finished:
        for p in plan:  # the final verdicts carry the reference's own intervals and marks
            if p.marked and p.run_id is not None:
                _look(session, p, get_probe(p.probe), final=True)
    session.save()
    if not finished:
        audits.update_audit(store, audit_id, status="stopped")
        session.emit("stopped")
        return audit_result(store, audit_id, clock() - now + spent)
    session.emit("report")
    # the path stored is absolute: the report is found from wherever the app or a later
    # command runs (a relative one was relative to the folder the audit ran in)
    out = Path(os.path.abspath(report if report else report_path(store, audit_id)))
    try:
        _write_report(store, audit_id, out)
    except UserError as exc:  # a full disk, a link at the name: not done, resumable
        audits.update_audit(store, audit_id, status="stopped")
        session.emit("stopped")
        raise UserError(
            f"{exc}; audit {audit_id} is saved with every answer, not done — the same "
            "command writes its report"
        ) from exc
    audits.update_audit(
        store, audit_id, status="done", report=str(out),
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
    )  # fmt: skip
    session.save()
    session.emit("done")
    return audit_result(store, audit_id, session.state["spent_s"])


def _write_report(store: Store, audit_id: int, out: Path) -> None:
    from gbdesk.report.pdf import export_pdf

    audit = get_audit(store, audit_id)
    model = store.get_model(audit["model_id"]) if audit["model_id"] else {}
    plan = [ProbePlan.from_json(p) for p in audit["plan"]]
    verdicts = [v for p in plan for v in p.verdicts]
    decided = sum(1 for v in verdicts if v.get("decided"))
    state = audit.get("state") or {}
    audit_info = {
        "audit_id": audit_id,  # the test log's audit: its budget and what it bought
        "budget": audit["budget"],
        "model": model.get("name", "?"),
        "speed": (audit["speed"] or {}).get("basis", "?"),
        "note": (
            f"{decided} of {len(verdicts)} marked metrics decided in "
            f"{duration(float(state.get('spent_s') or 0))} of the budget {audit['budget']}. "
            + error_statement(
                len(verdicts), bool(state.get("family_wise")), state.get("version")
            )["error_statement"]
            + (" Left out: " + "; ".join(audit["left_out"]) + "." if audit["left_out"] else "")
        ),
        "plan": [
            {
                "probe": p.probe,
                "title": p.title,
                "items": p.items,
                "attempts": p.attempts,
                "generations": stored_answers(store, p),
                "expected_s": round(p.spent_s, 1),
                "run_id": p.run_id,
                "runs": [p.run_id] if p.run_id is not None else [],
            }
            for p in plan
        ],
        "verdicts": verdicts,
    }
    run_ids = [p.run_id for p in plan if p.run_id is not None]
    export_pdf(store, run_ids, out, "reviewed", audit=audit_info)


#: what `gbdesk audit --json` gives of each verdict
VERDICT_KEYS = (
    "probe", "metric", "title", "value", "ci", "marks", "decided", "verdict",
    "study_mark", "items", "generations", "ci_95", "error_bound", "more_items",
    "more_answers", "more_seconds", "forecast",
)  # fmt: skip


def audit_result(store: Store, audit_id: int, seconds: float | None = None) -> dict[str, Any]:
    """The audit as `gbdesk audit --json` prints it."""
    audit = get_audit(store, audit_id)
    plan = [ProbePlan.from_json(p) for p in audit["plan"]]
    state = audit.get("state") or {}
    made = {p.probe: stored_answers(store, p) for p in plan}
    verdicts = []
    for p in plan:
        if not p.marked:
            continue
        verdicts += [{k: v.get(k) for k in VERDICT_KEYS} for v in p.verdicts]
        if not p.verdicts:
            probe = get_probe(p.probe)
            for name in probe.mark_definitions:
                verdicts.append(
                    {
                        "probe": p.probe, "metric": name,
                        "title": probe.capabilities.presentation.metric_title(name),
                        "value": None, "ci": [None, None], "marks": [], "decided": False,
                        "verdict": "not measured", "study_mark": None, "items": 0,
                        "generations": made[p.probe], "ci_95": [None, None],
                        "error_bound": None, "more_items": None, "more_answers": None,
                        "more_seconds": None, "forecast": "",
                    }
                )  # fmt: skip
    return {
        "audit_id": audit_id,
        "finished": audit["status"] == "done",
        "status": audit["status"],
        "seconds": round(float(seconds if seconds is not None else state.get("spent_s") or 0), 1),
        "generations": sum(made.values()),
        "verdicts": verdicts,
        "runs": [p.run_id for p in plan if p.run_id is not None],
        "report": audit.get("report"),
        "wordings": _wording_results(store, plan),
        "plan_version": state.get("version"),
        **error_statement(len(verdicts), bool(state.get("family_wise")), state.get("version")),
    }


def stored_answers(store: Store, p: ProbePlan) -> int:
    """The answers stored in the probe's runs (what the audit reports: the runs' counts,
    never the plan's)."""
    return sum(store.count_attempts(r) for r in run_ids(p))


def _wording_results(store: Store, plan: list[ProbePlan]) -> dict[str, Any]:
    """Per probe asked in other wordings: its runs by wording, whether each marked
    metric's verdict holds under every wording, and the sentence."""
    from gbdesk.analysis.wordings import wording_report

    out: dict[str, Any] = {}
    for p in plan:
        if not p.wording_runs or p.run_id is None:
            continue
        report = wording_report(
            store, int(p.run_id), metrics=list(get_probe(p.probe).mark_definitions)
        )
        out[p.probe] = {
            "runs": {str(w): r for w, r in report.family.items()},
            "wording_stable": report.stable(),
            "sentences": {name: s.sentence() for name, s in report.spreads.items()},
            "depends_on_wording": [s.metric for s in report.depends_on_wording()],
        }
    return out
