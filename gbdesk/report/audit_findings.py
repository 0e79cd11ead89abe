"""An audit's verdicts as the findings of the runs it ran — the same words in the Results
pane, the PDF and `gbdesk audit` (no Qt).

An audit's verdict is the one to read for a marked metric of its runs: its interval holds
over every look the audit took, where the run's own 95 % interval does not. So a run that
an audit ran shows the audit's verdict for each marked metric the audit judged, in place of
its own finding on that metric; its other findings (notes on few items, undetected answers)
stay.
"""

from __future__ import annotations

from typing import Any

from gbdesk.analysis.audit_verdicts import AuditVerdict
from gbdesk.analysis.findings import RunFinding
from gbdesk.contract import Finding
from gbdesk.store import Store, audits


def audit_findings(store: Store, run_id: int, model: str, probe: Any) -> dict[str, Any] | None:
    """The verdicts of the audit that ran `run_id` as findings, one per marked metric —
    the same words as the audit's report and `gbdesk audit` — or None: no audit ran it.
    An audit's verdict is the one to read: its interval holds over every look the audit
    took, where the run's own 95 % interval does not."""
    found = audits.audit_verdicts_of_run(store, run_id)
    if found is None:
        return None
    audit_id, raw = found
    verdicts = [AuditVerdict.from_json(v) for v in raw]
    out = []
    for v, entry in zip(verdicts, raw, strict=True):
        interval = ""
        if v.verdict.measured and all(x == x for x in v.ci):
            interval = f" (audit interval {v.ci[0]:.2f} to {v.ci[1]:.2f}, {v.items:,} items)"
        importance = {"A": 10.0, "B": 40.0, "C": 70.0, "D": 90.0}.get(v.verdict.mark or "", 5.0)
        finding = Finding(
            f"Audit {audit_id}'s verdict on {v.title}: {v.verdict.words()}{interval}"
            + (f"; {entry['forecast']}." if entry.get("forecast") else "."),
            importance=importance + 1.0,
            metric=v.metric,
            value=v.value,
            ci=v.ci,
            evidence={},
            evidence_title="every item's answers",
        )
        out.append(
            RunFinding(run_id, model, probe.name, probe.card.title, finding, v.verdict, v.items)
        )
    return {"audit_id": audit_id, "verdicts": verdicts, "findings": out}


def with_audit(findings: list[RunFinding], audit: dict[str, Any] | None) -> list[RunFinding]:
    """The run's findings with the audit's (`audit_findings`) in place of its own on the
    metrics the audit judged (neither a word nor a colour contradicts the audit); the run's
    findings unchanged when no audit ran it."""
    if audit is None:
        return findings
    judged = {v.metric for v in audit["verdicts"]}
    return audit["findings"] + [f for f in findings if f.finding.metric not in judged]
