"""The stored audit (`gbdesk.store.audits`): saving a plan, reading an audit, the model's
unfinished audit, what a command asks differently, where its report goes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gbdesk.analysis import audit_design
from gbdesk.contract import get_probe
from gbdesk.store import Store, audits
from gbdesk.support.errors import UserError
from gbdesk.support.format import duration
from gbdesk.workflows.audit.planning import AuditPlan, ProbePlan, audit_wordings


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
            # the budget's clock starts once the plan is made: measuring the speed and
            # loading the model (planning) are not counted in it, only kept as a figure
            "spent_s": 0.0,
            "planning_s": round(plan.speed.measured_s + plan.speed.load_s, 1),
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
