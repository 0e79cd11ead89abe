"""The `audits` table: an audit's plan is stored before anything runs and updated as its
probes run, so a restarted audit continues where it stopped (`gbdesk.workflows.audit` decides what
the plan holds; this module only keeps it).

The table's JSON columns (plan, speed, left-out probes) are written and read here, so the
callers deal in Python values.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gbdesk.store._tables import inserted_id

if TYPE_CHECKING:
    from gbdesk.store.db import Store

#: the columns `get_audit` returns, the JSON ones under their decoded names
_COLUMNS = (
    "id",
    "model_id",
    "budget_s",
    "budget",
    "plan",
    "speed",
    "left_out",
    "status",
    "report",
    "created_at",
    "finished_at",
    "state",
)


def add_audit(
    store: Store,
    *,
    model_id: int | None,
    budget_s: float,
    budget: str,
    plan: Any,
    speed: Any,
    left_out: Any,
    state: Any = None,
) -> int:
    """Store a planned audit (status 'planned') in its own transaction; its id."""
    with store.transaction():
        cur = store.conn.execute(
            "INSERT INTO audits (model_id, budget_s, budget, plan_json, speed_json, "
            "left_out_json, status, created_at, state_json) VALUES (?, ?, ?, ?, ?, ?, "
            "'planned', datetime('now'), ?)",
            (
                model_id,
                budget_s,
                budget,
                json.dumps(plan),
                json.dumps(speed),
                json.dumps(left_out),
                json.dumps(state),
            ),
        )
    return inserted_id(cur)


def get_audit(store: Store, audit_id: int) -> dict[str, Any] | None:
    """The audit's row (plan, speed and left_out decoded), or None when there is none."""
    row = store.conn.execute(
        "SELECT id, model_id, budget_s, budget, plan_json, speed_json, left_out_json, status, "
        "report, created_at, finished_at, state_json FROM audits WHERE id = ?",
        (audit_id,),
    ).fetchone()
    if row is None:
        return None
    audit = dict(zip(_COLUMNS, row, strict=True))
    for k in ("plan", "speed", "left_out", "state"):
        audit[k] = json.loads(audit[k] or "null")
    return audit


def latest_speeds(store: Store, model_id: int | None) -> list[dict[str, Any]]:
    """The speeds measured by this model's audits, latest first."""
    rows = store.conn.execute(
        "SELECT speed_json FROM audits WHERE model_id IS ? ORDER BY id DESC LIMIT 20",
        (model_id,),
    ).fetchall()
    return [json.loads(r[0]) for r in rows if r[0]]


def unfinished_audit(store: Store, model_id: int | None) -> int | None:
    """The latest audit of this model (None: of no model) not done yet, to continue it."""
    row = store.conn.execute(
        "SELECT id FROM audits WHERE model_id IS ? AND status != 'done' ORDER BY id DESC LIMIT 1",
        (model_id,),
    ).fetchone()
    return int(row[0]) if row else None


def latest_unfinished(store: Store) -> int | None:
    """The latest audit of any model not done yet (offered when the app opens)."""
    row = store.conn.execute(
        "SELECT id FROM audits WHERE status != 'done' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return int(row[0]) if row else None


def update_audit(
    store: Store,
    audit_id: int,
    *,
    status: str | None = None,
    plan: list[dict[str, Any]] | None = None,
    report: str | None = None,
    finished_at: str | None = None,
    state: dict[str, Any] | None = None,
) -> None:
    """Change an audit's status, plan (its probes' run ids as they start), report path or
    finishing time, in one transaction; the arguments left None keep their value. One fixed
    statement: no column name ever comes from a caller."""
    with store.transaction():
        store.conn.execute(
            "UPDATE audits SET status = COALESCE(?, status), "
            "plan_json = COALESCE(?, plan_json), report = COALESCE(?, report), "
            "finished_at = COALESCE(?, finished_at), state_json = COALESCE(?, state_json) "
            "WHERE id = ?",
            (
                status,
                None if plan is None else json.dumps(plan),
                report,
                finished_at,
                None if state is None else json.dumps(state),
                audit_id,
            ),
        )


def audit_verdicts_of_run(store: Store, run_id: int) -> tuple[int, list[dict[str, Any]]] | None:
    """(audit id, the verdicts of its last look) of the audit that ran `run_id` (the latest
    such audit), or None when no audit ran it."""
    rows = store.conn.execute("SELECT id, plan_json FROM audits ORDER BY id DESC").fetchall()
    for audit_id, plan_json in rows:
        plan = json.loads(plan_json or "null")
        if not isinstance(plan, list):
            continue
        for entry in plan:
            if isinstance(entry, dict) and entry.get("run_id") == run_id:
                return int(audit_id), list(entry.get("verdicts") or [])
    return None
