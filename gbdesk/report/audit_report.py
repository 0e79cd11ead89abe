"""What an audit hands its readers at its end: one typed value (issue 45, item 7).

The audit (`gbdesk.workflows.audit`) builds an `AuditReport` once, from the plan, run
handles and verdicts its session holds; the PDF (`report.pdf`), the app's audit dialog and
the Results pane it opens, and `gbdesk audit --json` (`AuditReport.to_json`) render it and
recompute nothing: page 1's rows (`rows`, `sentence`) and the plan's table are in it.

`AuditReport.from_dict` reads the dict an older caller (a test, a benchmark) hands
`export_pdf` — {"budget", "model", "speed", "note", "plan": [...], "verdicts": [...]} — into
the same value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gbdesk.report.audit_findings import DecisionRow, decision_rows, decision_sentence
from gbdesk.support.blocks import Block, Heading, MarkCells, Paragraph, Table
from gbdesk.support.format import fmt

#: the columns of the audit's verdict table as the app shows it (`decision_blocks`)
DECISION_COLUMNS = ["Metric", "Probe", "Value", "Interval", "Mark", "Verdict", "Items", "To decide"]


@dataclass(frozen=True)
class PlanEntry:
    """One probe of the audit as its report's plan table shows it."""

    probe: str
    title: str
    items: int = 0
    prompts: int = 1
    attempts: int = 1
    generations: int = 0  # answers stored in the probe's runs
    spent_s: float | None = None  # seconds its steps took
    expected: str = ""  # the time in words, when given instead of `spent_s`
    run_id: int | None = None
    runs: tuple[int, ...] = ()

    @property
    def planned(self) -> int:
        """items × prompts × attempts."""
        return self.items * self.prompts * self.attempts

    def row_json(self) -> dict[str, Any]:
        """The entry as `decision_rows` reads a plan's probe."""
        return {
            "probe": self.probe, "generations": self.generations, "run_id": self.run_id,
            "runs": list(self.runs),
        }  # fmt: skip


@dataclass(frozen=True)
class AuditReport:
    """The audit, decided: its identity, plan, verdicts and what page 1 says of them.

    ``verdicts``: `gbdesk audit --json`'s, one per marked metric (`VERDICT_KEYS`; a probe
    that never looked has its metrics "not measured"); ``rows`` and ``sentence``: page 1's
    table and its one sentence (`audit_findings.decision_rows`, `decision_sentence`) over
    the verdicts of the last looks; ``error``: `error_statement`'s keys."""

    audit_id: int | None
    status: str = "done"
    model: str = "?"
    budget: str = "?"
    speed: str = "?"  # the measured speed in words
    harness_title: str = ""
    seconds: float = 0.0  # seconds of the budget spent
    note: str = ""
    plan: tuple[PlanEntry, ...] = ()
    verdicts: tuple[dict[str, Any], ...] = ()
    rows: tuple[DecisionRow, ...] = ()
    sentence: str = ""
    error: dict[str, Any] = field(default_factory=dict)
    wordings: dict[str, Any] = field(default_factory=dict)
    report: str | None = None  # the PDF's path once written
    plan_version: int | None = None
    budget_s: float = 0.0
    created_at: str | None = None  # when the audit was planned
    finished_at: str | None = None  # when it ended (set before its PDF is written)
    left_out: tuple[str, ...] = ()  # probes the plan left out, with why

    @property
    def finished(self) -> bool:
        return self.status == "done"

    @property
    def generations(self) -> int:
        return sum(p.generations for p in self.plan)

    @property
    def runs(self) -> list[int]:
        return [p.run_id for p in self.plan if p.run_id is not None]

    def to_json(self) -> dict[str, Any]:
        """The audit as `gbdesk audit --json` prints it."""
        return {
            "audit_id": self.audit_id,
            "finished": self.finished,
            "status": self.status,
            "seconds": round(float(self.seconds), 1),
            "generations": self.generations,
            "verdicts": [dict(v) for v in self.verdicts],
            "runs": self.runs,
            "report": self.report,
            "wordings": self.wordings,
            "plan_version": self.plan_version,
            **self.error,
        }

    @classmethod
    def from_dict(cls, audit: dict[str, Any]) -> AuditReport:
        """A hand-built report dict (see the module's docstring) as the typed value."""
        plan = tuple(
            PlanEntry(
                probe=str(p["probe"]),
                title=str(p.get("title") or p["probe"]),
                items=int(p.get("items") or 0),
                prompts=int(p.get("prompts") or 1),
                attempts=int(p.get("attempts") or 1),
                generations=int(p.get("generations") or 0),
                spent_s=p.get("expected_s"),
                expected=str(p.get("expected") or ""),
                run_id=p.get("run_id"),
                runs=tuple(p.get("runs") or ()),
            )
            for p in audit.get("plan") or []
        )
        rows = tuple(decision_rows(audit))
        return cls(
            audit_id=audit.get("audit_id"),
            model=str(audit.get("model", "?")),
            budget=str(audit.get("budget", "?")),
            speed=str(audit.get("speed", "?")),
            harness_title=str(audit.get("harness_title") or ""),
            note=str(audit.get("note", "")),
            plan=plan,
            verdicts=tuple(audit.get("verdicts") or ()),
            rows=rows,
            sentence=decision_sentence(list(rows)),
            status=str(audit.get("status") or "done"),
            seconds=float(audit.get("seconds") or 0.0),
            budget_s=float(audit.get("budget_s") or 0.0),
            created_at=audit.get("created_at"),
            finished_at=audit.get("finished_at"),
            left_out=tuple(str(x) for x in audit.get("left_out") or ()),
        )


def _decision_cells(row: DecisionRow) -> list[Any]:
    """One row of page 1's table as plain cells; the mark a `MarkCells` (coloured by the
    renderer only when decided)."""
    if row.state == "not run":
        value, interval = "—", "not run"
    else:
        value = fmt(row.value, 2)
        lo_hi = row.interval
        interval = "" if lo_hi is None else f"{fmt(lo_hi[0], 2)} to {fmt(lo_hi[1], 2)}"
    mark = MarkCells((row.verdict.marks[0],)) if row.decided else MarkCells((), empty="no mark yet")
    verdict = row.verdict_words()
    if ref := row.reference_mark():
        verdict += f" ({ref})"
    run = f", run {row.run_id}" if row.run_id is not None else ""
    return [
        row.title, f"{row.probe_title}{run}", value, interval, mark, verdict,
        f"{row.items:,}", row.more or "—",
    ]  # fmt: skip


def decision_blocks(report: AuditReport) -> list[Block]:
    """Page 1 of the audit's report as report blocks (the Results pane's Audit tab): the
    one sentence, the audit's error bound, then one table per harm section — rendered from
    the value the audit handed over, nothing recomputed."""
    title = f"Audit {report.audit_id}" if report.audit_id is not None else "The audit"
    blocks: list[Block] = [
        Heading(f"{title}: {report.harness_title or 'verdicts'} · budget {report.budget}"),
        Paragraph(report.sentence),
    ]
    if statement := report.error.get("error_statement"):
        blocks.append(Paragraph(str(statement), "muted"))
    sections: dict[str, list[list[Any]]] = {}
    for row in report.rows:
        sections.setdefault(row.section, []).append(_decision_cells(row))
    for section, rows in sections.items():
        blocks.append(Table(list(DECISION_COLUMNS), rows, title=section))
    if report.report:
        blocks.append(Paragraph(f"The report: {report.report}", "mono"))
    return blocks
