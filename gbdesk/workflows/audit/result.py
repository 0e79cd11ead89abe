"""An audit's report value read back from the store (`audit_result`, `audit_report`): a
stored audit resumed as a session, not run, and reported (see `session.AuditSession`)."""

from __future__ import annotations

from typing import Any

from gbdesk.report.audit_report import AuditReport
from gbdesk.store import Store
from gbdesk.workflows.audit.planning import ProbePlan
from gbdesk.workflows.audit.session import VERDICT_KEYS, AuditSession, run_ids

__all__ = ["VERDICT_KEYS", "audit_report", "audit_result", "stored_answers"]


def audit_report(store: Store, audit_id: int, seconds: float | None = None) -> AuditReport:
    """The stored audit's report value (as its PDF and `--json` give it)."""
    return AuditSession.resume(store, audit_id).report(seconds)


def audit_result(store: Store, audit_id: int, seconds: float | None = None) -> dict[str, Any]:
    """The audit as `gbdesk audit --json` prints it."""
    return audit_report(store, audit_id, seconds).to_json()


def stored_answers(store: Store, p: ProbePlan) -> int:
    """The answers stored in the probe's runs (what the audit reports: the runs' counts,
    never the plan's)."""
    return sum(store.count_attempts(r) for r in run_ids(p))
