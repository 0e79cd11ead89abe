"""The audit's steps on its session (`AuditSession`): a probe's run grown, its answers made,
looked at; the rounds that choose the next step (first looks, fixed-size probes, final
looks); and the rule of the audit's end (`unmade_runs`)."""

from __future__ import annotations

import logging
from typing import Any

from scipy.stats import norm

from gbdesk.analysis import audit_design
from gbdesk.analysis.audit_rounds import Track, first_round, next_step
from gbdesk.analysis.audit_verdicts import look_verdicts
from gbdesk.analysis.results import compute_metrics, item_results, open_run
from gbdesk.contract import AuditSize, Probe, get_probe
from gbdesk.store import Store
from gbdesk.support.format import duration
from gbdesk.workflows.audit.budget import MIN_STEP_S
from gbdesk.workflows.audit.control import StepControl
from gbdesk.workflows.audit.planning import ORDERS, ProbePlan
from gbdesk.workflows.audit.session import AuditSession, run_ids
from gbdesk.workflows.runs import (
    execute_run,
    plan_run,
)

log = logging.getLogger(__name__)


def _grow(session: AuditSession, p: ProbePlan, probe: Probe, size: int) -> None:
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


def _grow_wordings(session: AuditSession, p: ProbePlan, probe: Probe, size: int) -> None:
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


def _advance(session: AuditSession, p: ProbePlan, size: int) -> bool:
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


def _fixed(session: AuditSession, p: ProbePlan) -> bool:
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


def _execute(session: AuditSession, p: ProbePlan) -> None:
    """Make the run's missing answers until the step's deadline; learn the probe's seconds
    per item from it."""
    step_control = StepControl(session.control, session.deadline, session.clock)

    def forward(progress: Any) -> None:
        session.emit("running", probe=p.probe, run_id=p.run_id, run=progress)

    started = session.clock()
    try:
        with step_control.watched():
            outcome = execute_run(
                session.store, int(p.run_id), backend_factory=session.shared().for_run,  # type: ignore[arg-type]
                control=step_control, on_progress=forward,
            )  # fmt: skip
            for run_id in p.wording_runs.values():  # the same items in the other wordings
                if step_control.cancelled:
                    break
                execute_run(
                    session.store, int(run_id), backend_factory=session.shared().for_run,
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


def _look(session: AuditSession, p: ProbePlan, probe: Probe, final: bool = False) -> None:
    """Every marked metric's verdict on the answers so far (see `audit_verdicts`)."""
    run = open_run(session.store, int(p.run_id))  # type: ignore[arg-type]  # once, for all below
    results = item_results(session.store, run, "auto")
    reference = compute_metrics(session.store, run, "auto") if final else None
    verdicts = look_verdicts(
        probe, results, run.params, p.grid, run.row["attempts_done"], reference=reference,
        items=p.items,
    )  # fmt: skip
    p.verdicts = [_with_forecast(v.to_json(), p, probe) for v in verdicts]
    if p.design == audit_design.DESIGN:
        if not p.grid.is_final(p.items):
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
    v["stopped"] = p.stopped
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


def _made(store: Store, p: ProbePlan) -> bool:
    """Whether every answer the probe's runs plan is made."""
    return all(
        store.count_attempts(r) >= int(store.get_run(r)["attempts_total"]) for r in run_ids(p)
    )


def _finish_open_steps(session: AuditSession) -> bool:
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


def unmade_runs(session: AuditSession) -> list[str]:
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


def _rounds(session: AuditSession) -> bool:
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


def _grid_rounds(session: AuditSession) -> bool:
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
    if p.stopped:
        return False
    if len(p.sizes) > 1 and p.items >= p.sizes[1]:
        return False
    return not p.verdicts or any(not v.get("decided") for v in p.verdicts)


def _final_step(session: AuditSession) -> tuple[ProbePlan, int] | None:
    """The next final look (`audit_design`): the open probes share the seconds left by
    water-filling, recomputed before each step from the measured seconds per item; the
    cheapest step first. A size once fixed is kept (stored in `sizes`)."""
    if not session.state.get("futility_judged"):
        _judge_futility(session)
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


def _judge_futility(session: AuditSession) -> None:
    """Once, after the first looks: an open probe each of whose open verdicts has less
    than `audit_design.FUTILE_CHANCE` of being decided at the items its share of the
    seconds left reaches (`audit_design.decide_chance`; the share among *all* open
    probes) stops, leaving its share to the others. Stopping never makes a verdict wrong,
    and each probe is judged on its own answers alone (docs/audit.md)."""
    todo = [p for p in session.plan if _wants_final(p) and len(p.sizes) == 1]
    if todo:
        z = todo[0].grid.z  # the final look's z (every probe of an audit has the same split)
        reach = audit_design.final_sizes(
            {p.probe: (p.items, p.items_total, p.seconds_per_item) for p in todo},
            session.seconds_left(),
        )
        for p in todo:
            probe = get_probe(p.probe)
            chances = audit_design.open_chances(
                probe.mark_definitions, probe.capabilities.presentation.metric_bounds,
                p.verdicts, p.items, reach[p.probe], z,
            )  # fmt: skip
            if audit_design.futile(chances):
                p.stopped = "futile"
                p.verdicts = [{**v, "stopped": p.stopped} for v in p.verdicts]
                log.info("audit: %s stops after its first look (chances %s at %d items)",
                         p.probe, chances, reach[p.probe])  # fmt: skip
    session.state["futility_judged"] = True
    session.save()


def closing_looks(session: AuditSession) -> None:
    """At the audit's end, a probe left open whose share or pool bought no items beyond
    its first look gets its final look (α₂) on the same answers (`audit_design.TwoLooks`
    (n, n)): the budget and the pool, not its answers, decided that it had no more."""
    for p in session.plan:
        if (
            p.marked and p.design == audit_design.DESIGN and p.run_id is not None
            and not p.stopped and (len(p.sizes) == 1 or p.sizes[1] <= p.sizes[0])
            and any(not v.get("decided") for v in p.verdicts)
        ):  # fmt: skip
            p.sizes = [p.sizes[0], p.items]
