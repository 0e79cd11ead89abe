"""Audit a model in one go (no Qt): plan every probe's size to fit a time budget from the
model's measured speed, run the probes one after another, finish with the report.

* **Speed.** Generation speed is this model's stored attempts (`runs.measured_speed`) or,
  when it never generated here, a short measurement: one 32-token answer after loading it
  (`measure_speed`). The load time is added once per probe run. Scoring probes use the
  model's stored scoring speed, else 8 scored sentences.
* **Plan.** Each probe offers sizes, smallest first (`Probe.audit_sizes`); `estimate_run`
  times each (× `Probe.audit_tokens`' requests per attempt for chained questions). Every
  probe starts at its smallest size, in `audit_priority` order, while the budget allows —
  a probe whose smallest size no longer fits is left out and said so; then the probes are
  enlarged one step at a time, round-robin in priority order, while the total stays within
  the budget. Each planned probe states the interval it should reach
  (`Probe.audit_precision`).
* **Resumable.** The audit (plan, budget, run ids) is stored in the `audits` table before
  anything runs, and every run id the moment its run is planned; `run_audit` on a stored
  audit continues its unfinished run and plans the rest (a crash, a kill or Stop loses at
  most the attempt in progress).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gbdesk.store import Store, audits
from gbdesk.studies import get_harness, get_probe, probe_names
from gbdesk.studies.base import AuditSize, Probe, ScoringProbe
from gbdesk.support.errors import UserError, short_repr
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
SPEED_TOKENS = 32
SPEED_SENTENCES = 8
#: share of the budget the plan may fill (the rest absorbs estimate errors)
FILL = 0.9


#: The longest budget an audit plans for: a year (a longer one is a typo, and its seconds
#: would not fit the plan's integers).
MAX_BUDGET_S = 366 * 24 * 3600


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


# -- speed ------------------------------------------------------------------------------------
@dataclass
class Speed:
    tokens_per_s: float
    tokens_per_generation: float | None  # measured mean; None: assume max_tokens
    load_s: float
    sentences_per_s: float | None
    basis: str
    #: tokens/s of `batch_slots` answers decoded at once (continuous batching), measured
    #: now; None when not measured (an endpoint, a stored speed, one slot)
    batched_tokens_per_s: float | None = None
    batch_slots: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def rate_for(self, concurrent: int) -> float:
        """Tokens/s of a run that keeps `concurrent` answers in flight: the one-answer rate
        and the batched one, linearly between them (batched decoding on a CPU gains less
        with each further sequence; the plan errs towards taking longer)."""
        if not self.batched_tokens_per_s or self.batch_slots <= 1 or concurrent <= 1:
            return self.tokens_per_s
        batched = max(self.batched_tokens_per_s, self.tokens_per_s)
        share = (min(concurrent, self.batch_slots) - 1) / (self.batch_slots - 1)
        return self.tokens_per_s + share * (batched - self.tokens_per_s)


def measure_speed(
    store: Store,
    model: dict[str, Any],
    backend_factory: Callable[..., Any] | None = None,
    scoring: bool = True,
) -> Speed:
    """This model's speed: from its stored attempts where it has some, else measured now
    (one short answer, and `SPEED_SENTENCES` scored sentences when `scoring`)."""
    from gbdesk.engine.base import GenerationRequest

    stored = measured_speed(store, model.get("sha256"), model.get("id"))
    scored = measured_scoring_speed(store, model.get("sha256"))
    need_generation = stored is None
    need_scoring = scoring and scored is None and model.get("kind", "gguf") == "gguf"
    load_s, tps, per_gen = 2.0, 0.0, None
    batched, slots = None, 1
    sentences_per_s = scored[0] if scored else None
    basis = []
    if stored is not None:
        tps, per_gen, count = stored
        basis.append(f"{tps:.0f} tokens/s over {count:,} earlier generations of this model")
    if need_generation or need_scoring:
        started = time.perf_counter()
        factory = backend_factory or runs.llama_backend_factory
        backend = factory(model, {"prompt_mode": "auto", "batch_size": 1})
        try:
            load_s = time.perf_counter() - started
            if need_generation:
                result = backend.generate(
                    GenerationRequest(
                        messages=[
                            {"role": "user", "content": "Describe a teacher in a few words."}
                        ],
                        seed=1,
                        max_tokens=SPEED_TOKENS,
                    )
                )
                tps = result.tokens_out / result.latency_s if result.latency_s > 0 else 0.0
                basis.append(
                    f"{tps:.0f} tokens/s measured now ({result.tokens_out} tokens); assumes "
                    "every answer is as long as the probe allows"
                )
                batched, slots = _batched_speed(backend, model)
                if batched:
                    basis.append(f"{batched:.0f} tokens/s with {slots} answers at once")
            if need_scoring:
                texts = [f"Sentence number {i} about a person at work." for i in range(8)]
                t0 = time.perf_counter()
                try:
                    backend.score(texts)
                    sentences_per_s = len(texts) / max(1e-6, time.perf_counter() - t0)
                    basis.append(f"{sentences_per_s:.0f} sentences/s scored now")
                except Exception as exc:  # an endpoint without scoring
                    log.info("scoring speed not measured: %s", exc)
        finally:
            backend.close()
    if tps <= 0:
        raise UserError("could not measure the model's speed (it generated nothing)")
    basis.append(f"loading takes {load_s:.1f} s per probe")
    return Speed(tps, per_gen, load_s, sentences_per_s, "; ".join(basis), batched, slots)


#: most answers decoded at once while measuring the batched speed (more costs seconds)
SPEED_SLOTS = 8


def _batched_speed(backend: Any, model: dict[str, Any]) -> tuple[float | None, int]:
    """(tokens/s, answers at once) of a short continuous-batching burst, as the audit's runs
    decode (`generate_stream`); (None, 1) for a backend without it or a single slot."""
    from gbdesk.engine.base import GenerationRequest

    slots = min(SPEED_SLOTS, _audit_slots(model, SPEED_TOKENS) or 1)
    if slots <= 1 or not hasattr(backend, "generate_stream"):
        return None, 1
    requests = [
        GenerationRequest(
            messages=[{"role": "user", "content": f"Describe person number {i} in a few words."}],
            seed=i + 1,
            max_tokens=SPEED_TOKENS,
        )
        for i in range(slots)
    ]
    tokens = 0

    def done(_index: int, result: Any) -> None:
        nonlocal tokens
        tokens += int(result.tokens_out)

    started = time.perf_counter()
    try:
        backend.generate_stream(requests, done, slots=slots)
    except Exception as exc:  # the plan falls back to the one-answer speed
        log.warning("batched speed not measured: %s", exc)
        return None, 1
    wall = time.perf_counter() - started
    return (tokens / wall if wall > 0 and tokens else None), slots


# -- plan ---------------------------------------------------------------------------------------
@dataclass
class PlannedProbe:
    probe: str
    title: str
    size: AuditSize
    items: int
    attempts: int
    generations: int  # attempts to make (sentences for scoring probes)
    unit: str
    seconds: float
    precision: str = ""
    half_width: float | None = None
    precision_metric: str | None = None
    run_id: int | None = None
    precision_title: str = ""  # the metric's name for people
    meaning: str = ""  # what the interval can tell, in words (`interval_meaning`)

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "title": self.title,
            "items": self.items,
            "attempts": self.attempts,
            "generations": self.generations,
            "unit": self.unit,
            "expected_s": round(self.seconds, 1),
            "expected": duration(self.seconds),
            "interval_half_width": self.half_width,
            "interval_metric": self.precision_metric,
            "precision": self.precision,
            "interval_metric_title": self.precision_title,
            "interval_meaning": self.meaning,
            "size": asdict(self.size),
            "run_id": self.run_id,
        }


@dataclass
class AuditPlan:
    model: dict[str, Any]
    budget_s: int
    budget: str
    speed: Speed
    probes: list[PlannedProbe] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    harness: str | None = None  # the harness's title when the audit runs one

    @property
    def expected_s(self) -> float:
        return sum(p.seconds for p in self.probes)

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.probes]

    def text(self) -> str:
        """The plan for reading before it starts."""
        what = f"{self.harness} on " if self.harness else ""
        lines = [
            f"Audit: {what}{self.model.get('name', '?')} within {self.budget} "
            f"(planned {duration(self.expected_s)}; {self.speed.basis})",
        ]
        for n, p in enumerate(self.probes, start=1):
            per = "attempt" if p.attempts == 1 else "attempts"
            prompts = p.generations // max(1, p.items * p.attempts) if p.unit != "sentences" else 1
            each = f" × {prompts} prompts" if prompts > 1 else ""
            lines.append(f"{n:>2}. {p.title}")
            plural = "s" if p.items != 1 else ""
            lines.append(
                f"    {p.items:,} item{plural}{each} × {p.attempts} {per} = {p.generations:,} "
                f"{p.unit}, about {duration(p.seconds)}"
            )
            lines.append(f"    interval: {_precision_short(p)}")
        lines += [f"left out: {x}" for x in self.left_out]
        return "\n".join(lines)


def _precision_short(p: PlannedProbe) -> str:
    if p.half_width is None:
        return p.precision or "—"
    text = f"±{p.half_width:.2f} on {p.precision_title or p.precision_metric}"
    return f"{text}: {p.meaning}" if p.meaning else text


def _audit_slots(model: dict[str, Any], max_tokens: int) -> int | None:
    """Sequences a local model will decode at once in the audit's runs (they use automatic
    continuous batching: `LlamaCppBackend.stream_slots`), None for an endpoint."""
    path = model.get("path")
    if model.get("kind", "gguf") != "gguf" or not path or not Path(path).is_file():
        return None
    from gbdesk.engine.slots import choose_slots

    return choose_slots(path, n_ctx_seq=max_tokens + 512)[0]


def _size_seconds(
    store: Store, probe_name: str, size: AuditSize, model: dict[str, Any], speed: Speed
) -> tuple[int, int, str, float]:
    """(items, work units, unit, seconds) of one probe size on this model."""
    probe = get_probe(probe_name)
    max_tokens = int(probe.default_generation["max_tokens"])
    params = probe.resolve_params(limit=size.limit, sample=size.sample, **size.options)
    items = probe.items(params)
    n_items = len(items)
    if isinstance(probe, ScoringProbe):
        est = estimate_run(
            store,
            probe_name,
            model.get("sha256"),
            attempts=size.attempts,
            max_tokens=max_tokens,
            limit=size.limit,
            sample=size.sample,
            **size.options,
        )
        rate = est.tokens_per_s or speed.sentences_per_s or speed.tokens_per_s / 4
        return n_items, est.generations, "sentences", est.generations / rate + speed.load_s
    requests, tokens, _extra_prompt = probe.audit_tokens(
        params, {**probe.default_generation, "max_tokens": max_tokens}
    )
    slots = _audit_slots(model, max_tokens)
    in_flight = min(probe.work_units(items, size.attempts), slots or 1)
    est = estimate_run(
        store,
        probe_name,
        model.get("sha256"),
        attempts=size.attempts,
        max_tokens=max_tokens,
        limit=size.limit,
        sample=size.sample,
        fallback_tokens_per_s=speed.rate_for(in_flight),
        model_id=model.get("id"),
        slots=slots,
        **size.options,
    )
    if est.seconds is None:
        seconds = est.generations * max_tokens / speed.rate_for(in_flight)
    else:
        seconds = est.seconds
    # a chain's follow-up questions: `requests` answers of up to `tokens` per attempt
    per_attempt = max(1.0, requests * tokens / max_tokens)
    return n_items, est.generations, "generations", seconds * per_attempt + speed.load_s


#: item counts a harness's probe may be cut to (below its own size), smallest first
HARNESS_ITEM_STEPS = (5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def harness_sizes(probe: Probe, template: str | None) -> list[AuditSize]:
    """The sizes an audit of a harness may run a probe at, smallest first: seeded subsets
    of the harness's items that keep every group the probe compares (`balanced_subset`;
    the smallest has one item of each group), each with the harness's attempts, then the
    harness's own size (every item of the preset)."""
    options = {"template": template} if template else {}
    items = probe.items(probe.resolve_params(**options))
    groups = len({probe.balance_key(i.metadata) for i in items})
    smallest = max(1, groups)
    limits = [smallest, *(n for n in HARNESS_ITEM_STEPS if n > smallest)]
    sizes = [
        AuditSize(probe.default_attempts, limit=n, options=options)
        for n in limits
        if n < len(items)
    ]
    return [*sizes, AuditSize(probe.default_attempts, options=options)]


def plan_audit(
    store: Store,
    model: dict[str, Any],
    budget_s: int,
    speed: Speed,
    probes: list[str] | None = None,
    budget_text: str | None = None,
    harness: str | None = None,
) -> AuditPlan:
    """The largest sizes that fit the budget (see the module docstring). `harness`: the
    probes of a study's harness (`Study.harnesses`) with its template, each sized up to
    the harness's own size (`harness_sizes`)."""
    template = None
    if harness is not None:
        chosen_harness = get_harness(harness)
        probes, template = list(chosen_harness.probes), chosen_harness.template
    names = sorted(probes or probe_names(), key=lambda n: (get_probe(n).audit_priority, n))
    plan = AuditPlan(model, budget_s, budget_text or duration(budget_s), speed)
    if harness is not None:
        plan.harness = chosen_harness.title
    limit = budget_s * FILL
    ladders: dict[str, list[tuple[AuditSize, tuple[int, int, str, float]]]] = {}
    for name in names:
        ladder = []
        probe = get_probe(name)
        unmet = runs.unmet_engine_need(store, probe, model)
        if unmet:  # e.g. a perplexity probe on an endpoint without prompt logprobs
            plan.left_out.append(unmet)
            continue
        sizes = probe.audit_sizes() if harness is None else harness_sizes(probe, template)
        for size in sizes:
            try:
                ladder.append((size, _size_seconds(store, name, size, model, speed)))
            except UserError as exc:  # e.g. a sample larger than the probe
                log.info("audit size %s of %s skipped: %s", size, name, exc)
        if ladder:
            ladders[name] = ladder
    chosen: dict[str, int] = {}
    total = 0.0
    for name in names:
        if name not in ladders:
            continue
        seconds = ladders[name][0][1][3]
        if total + seconds <= limit:
            chosen[name] = 0
            total += seconds
        else:
            plan.left_out.append(
                f"{get_probe(name).card.title}: its smallest size needs "
                f"{duration(seconds)} and the budget has {duration(max(0, limit - total))} left"
            )
    grew = True
    while grew:
        grew = False
        for name in list(chosen):
            step = chosen[name] + 1
            if step >= len(ladders[name]):
                continue
            extra = ladders[name][step][1][3] - ladders[name][chosen[name]][1][3]
            if total + extra <= limit:
                chosen[name] = step
                total += extra
                grew = True
    for name, step in chosen.items():
        probe = get_probe(name)
        size, (n_items, work, unit, seconds) = ladders[name][step]
        params = probe.resolve_params(limit=size.limit, sample=size.sample, **size.options)
        precision = probe.audit_precision(params, n_items, size.attempts)
        meaning = (
            _interval_meaning(probe, precision, ladders[name][step + 1 :])
            if precision is not None
            else ""
        )
        plan.probes.append(
            PlannedProbe(
                probe=name,
                title=probe.card.title,
                size=size,
                items=n_items,
                attempts=size.attempts,
                generations=work,
                unit=unit,
                seconds=seconds,
                precision=precision.method if precision else "",
                half_width=(
                    None
                    if precision is None or precision.half_width != precision.half_width
                    else round(precision.half_width, 4)
                ),
                precision_metric=precision.metric if precision else None,
                precision_title=probe.metric_title(precision.metric) if precision else "",
                meaning=meaning,
            )
        )
    return plan


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


def _interval_meaning(
    probe: Probe,
    precision: Any,
    larger: list[tuple[AuditSize, tuple[int, int, str, float]]],
) -> str:
    """"±0.44: too wide to tell … — 200 items (about 1 h 10 min) would reach ±0.07"."""
    words = interval_meaning(probe, precision.metric, precision.half_width)
    if not words or words.startswith("narrow"):
        return words
    for size, (n_items, _work, _unit, seconds) in larger:
        params = probe.resolve_params(limit=size.limit, sample=size.sample, **size.options)
        better = probe.audit_precision(params, n_items, size.attempts)
        if better is None:
            break
        if interval_meaning(probe, better.metric, better.half_width).startswith("narrow") or (
            size is larger[-1][0]
        ):
            return (
                f"{words} — {n_items:,} items (about {duration(seconds)} for this probe) "
                f"would reach ±{better.half_width:.2f}"
            )
    return words


# -- storing and running ----------------------------------------------------------------------
def save_audit(store: Store, plan: AuditPlan) -> int:
    """Store the plan before anything runs; its id."""
    return audits.add_audit(
        store,
        model_id=plan.model.get("id"),
        budget_s=plan.budget_s,
        budget=plan.budget,
        plan=plan.to_json(),
        speed=plan.speed.to_json(),
        left_out=plan.left_out,
    )


def get_audit(store: Store, audit_id: int) -> dict[str, Any]:
    audit = audits.get_audit(store, audit_id)
    if audit is None:
        raise UserError(f"there is no audit {audit_id}")
    return audit


def unfinished_audit(store: Store, model_id: int | None) -> int | None:
    """The latest audit of this model that has not finished (to continue it)."""
    return audits.unfinished_audit(store, model_id)


def report_path(store: Store, audit_id: int) -> Path:
    return Path(store.path).with_name(f"{Path(store.path).stem}-audit-{audit_id}.pdf")


@dataclass
class AuditProgress:
    audit_id: int
    step: int  # 0-based index of the probe running
    steps: int
    probe: str
    run_id: int | None
    run: Any = None  # the run's gbdesk.workflows.runs.Progress
    status: str = "running"  # "running", "report", "done"


def run_audit(
    store: Store,
    audit_id: int,
    *,
    backend_factory: Callable[..., Any] | None = None,
    control: RunControl | None = None,
    on_progress: Callable[[AuditProgress], None] | None = None,
    report: str | Path | None = None,
) -> dict[str, Any]:
    """Run (or continue) a stored audit to its report: {"plan", "runs", "report"}."""
    control = control or RunControl()
    audit = get_audit(store, audit_id)
    model = store.get_model(audit["model_id"]) if audit["model_id"] else None
    plan = audit["plan"]
    audits.update_audit(store, audit_id, status="running")
    steps = len(plan)
    for step, entry in enumerate(plan):
        if control.cancelled:
            audits.update_audit(store, audit_id, status="stopped", plan=plan)
            return {"plan": plan, "runs": _runs(plan), "report": None, "audit_id": audit_id}
        if entry.get("run_id") is None:  # the run and its id in the audit: both or neither
            size = AuditSize(**entry["size"])
            with store.transaction():
                entry["run_id"] = plan_run(store, entry["probe"], model, **size.plan_kwargs())
                audits.update_audit(store, audit_id, plan=plan)
        run = store.get_run(entry["run_id"])
        if on_progress:
            on_progress(AuditProgress(audit_id, step, steps, entry["probe"], entry["run_id"]))
        if run["status"] == "done":
            continue

        def forward(p: Any, _step: int = step, _entry: dict[str, Any] = entry) -> None:
            if on_progress:
                on_progress(
                    AuditProgress(audit_id, _step, steps, _entry["probe"], _entry["run_id"], p)
                )

        outcome = execute_run(
            store,
            entry["run_id"],
            backend_factory=backend_factory or runs.llama_backend_factory,
            control=control,
            on_progress=forward,
        )
        if outcome.status != "done":
            audits.update_audit(store, audit_id, status="stopped")
            return {"plan": plan, "runs": _runs(plan), "report": None, "audit_id": audit_id}
    if on_progress:
        on_progress(AuditProgress(audit_id, steps, steps, "", None, status="report"))
    from gbdesk.report.pdf import export_pdf

    out = Path(report) if report else report_path(store, audit_id)
    audit_info = {
        "budget": audit["budget"],
        "model": (model or {}).get("name", "?"),
        "speed": (audit["speed"] or {}).get("basis", "?"),
        "note": (
            f"Planned {duration(sum(p['expected_s'] for p in plan))} of the budget "
            f"{audit['budget']}; sizes chosen by gbdesk's audit planner."
            + (" Left out: " + "; ".join(audit["left_out"]) + "." if audit["left_out"] else "")
        ),
        "plan": [{**p, "runs": [p["run_id"]]} for p in plan],
    }
    export_pdf(store, _runs(plan), out, "reviewed", audit=audit_info)
    audits.update_audit(
        store,
        audit_id,
        status="done",
        report=str(out),
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
    )
    if on_progress:
        on_progress(AuditProgress(audit_id, steps, steps, "", None, status="done"))
    return {"plan": plan, "runs": _runs(plan), "report": str(out), "audit_id": audit_id}


def _runs(plan: list[dict[str, Any]]) -> list[int]:
    return [int(p["run_id"]) for p in plan if p.get("run_id") is not None]
