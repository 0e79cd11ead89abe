"""The plan of an audit (`plan_audit`): per probe its first look's size, its cost in
seconds and the looks' error levels (`ProbePlan`, `AuditPlan`), before anything runs."""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from gbdesk.analysis import audit_design
from gbdesk.analysis.audit_rounds import Track, metric_states
from gbdesk.analysis.audit_verdicts import AuditVerdict
from gbdesk.contract import AuditSize, Item, Probe, get_harness, get_probe, probe_names
from gbdesk.contract.running import draw_order, wording_ids
from gbdesk.maths.sequential import Looks
from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.report.audit_findings import budget_warning
from gbdesk.store import Store
from gbdesk.store.speed import generation_totals
from gbdesk.support.errors import UserError
from gbdesk.support.format import duration
from gbdesk.workflows import runs
from gbdesk.workflows.audit.budget import FIXED_SHARE, report_reserve_s
from gbdesk.workflows.audit.speed import Speed
from gbdesk.workflows.runs import (
    estimate_run,
)

log = logging.getLogger(__name__)

#: items whose prompts' lengths a plan averages
PROMPT_SAMPLE = 40


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
    #: the first look's share of α; a plan stored before it was recorded had 0.1 (α₁ =
    #: 0.005), and keeps it when continued, so that its two looks still sum to α
    first_share: float = 0.1
    #: "futile": stopped after its first look, its open verdicts unlikely to be decided
    #: with its share of the budget (`audit_design.futile`); "" otherwise
    stopped: str = ""

    @property
    def grid(self) -> Looks | audit_design.TwoLooks:
        if self.design == audit_design.DESIGN:
            return audit_design.TwoLooks(tuple(self.sizes), self.alpha, self.first_share)
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

    def budget_warning(self) -> str:
        """The sentence said before Start when the budget cannot give every probe its
        first look (`audit_findings.budget_warning`; "" when it can): what the budget
        leaves after the report's reserve — planning is not counted in it."""
        available = self.budget_s - report_reserve_s(self.budget_s)
        looks = [(bool(p.marked), float(p.first_seconds())) for p in self.probes]
        return budget_warning(self.budget, available, looks, float(self.first_round_s))

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
                "are all decided stops, and so does one whose open verdicts each have less "
                f"than a {round(100 * audit_design.FUTILE_CHANCE)} % chance of being decided "
                "with its share (its share goes to the others)."
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
    left = max(0.0, plan.budget_s - report_reserve_s(plan.budget_s))  # planning not counted
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
        first_share=audit_design.FIRST_SHARE,
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
