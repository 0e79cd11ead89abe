"""The audit under way: one session holds its live plan, run handles and verdicts.

`AuditSession.resume` reads the stored audit once (its plan, state, budget and status); from
then on the steps (`steps`) change the session's plan in memory and `save` writes it after
every step — a checkpoint, read back only by the next `resume` (a restarted audit). At the
end `report` builds the one `AuditReport` the PDF, the app and `--json` render.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.report.audit_findings import decision_rows, decision_sentence
from gbdesk.report.audit_report import AuditReport, PlanEntry
from gbdesk.store import Store, audits
from gbdesk.support.format import duration
from gbdesk.workflows.audit.budget import MIN_STEP_S, report_reserve_s
from gbdesk.workflows.audit.planning import ProbePlan, error_statement
from gbdesk.workflows.audit.progress import AuditProgress
from gbdesk.workflows.audit.records import get_audit
from gbdesk.workflows.audit.speed import SharedBackend
from gbdesk.workflows.runs import RunControl, llama_backend_factory

#: what `gbdesk audit --json` gives of each verdict
VERDICT_KEYS = (
    "probe", "metric", "title", "value", "ci", "marks", "decided", "verdict",
    "study_mark", "items", "generations", "ci_95", "error_bound", "more_items",
    "more_answers", "more_seconds", "forecast", "stopped",
)  # fmt: skip


@dataclass
class AuditSession:
    """One audit as it runs: the stored audit read once, then held and written back."""

    store: Store
    audit_id: int
    model: dict[str, Any]
    plan: list[ProbePlan]
    state: dict[str, Any]
    backend: SharedBackend | None
    control: RunControl
    on_progress: Callable[[AuditProgress], None] | None
    clock: Callable[[], float]
    deadline: float
    started: float
    spent_before: float
    steps: int = 0
    #: the stored audit's own fields, read once (`resume`)
    budget: str = "?"
    budget_s: int = 0
    speed: dict[str, Any] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    status: str = "planned"
    report_file: str | None = None
    created_at: str | None = None
    finished_at: str | None = None

    @classmethod
    def resume(
        cls,
        store: Store,
        audit_id: int,
        *,
        backend: SharedBackend | None = None,
        backend_factory: Callable[..., Any] | None = None,
        control: RunControl | None = None,
        on_progress: Callable[[AuditProgress], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> AuditSession:
        """The stored audit as a session: its plan, state and the seconds of its budget
        left (after what earlier sessions spent and the report's reserve)."""
        record = get_audit(store, audit_id)
        model = store.get_model(record["model_id"]) if record["model_id"] else {}
        state = dict(record.get("state") or {})
        spent = float(state.get("spent_s") or 0.0)
        now = clock()
        left = max(0.0, record["budget_s"] - spent - report_reserve_s(record["budget_s"]))
        if backend is None and backend_factory is not None:
            backend = SharedBackend(backend_factory, model)
        return cls(
            store, int(record["id"]), model, [ProbePlan.from_json(p) for p in record["plan"]],
            state, backend, control or RunControl(), on_progress, clock, deadline=now + left,
            started=now, spent_before=spent, budget=str(record["budget"]),
            budget_s=int(record["budget_s"]), speed=dict(record.get("speed") or {}),
            left_out=list(record.get("left_out") or []), status=str(record["status"]),
            report_file=record.get("report"), created_at=record.get("created_at"),
            finished_at=record.get("finished_at"),
        )  # fmt: skip

    def shared(self) -> SharedBackend:
        """The model every run of the session uses (made at the first use)."""
        if self.backend is None:
            self.backend = SharedBackend(llama_backend_factory, self.model)
        return self.backend

    def seconds_left(self) -> float:
        return max(0.0, self.deadline - self.clock())

    def spent_s(self) -> float:
        return self.spent_before + (self.clock() - self.started)

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
        """The checkpoint: the plan (sizes, runs, looks, verdicts) and state as they are."""
        self.state["spent_s"] = self.spent_s()
        audits.update_audit(
            self.store,
            self.audit_id,
            plan=[p.to_json() for p in self.plan],
            state=self.state,
        )

    def set_status(self, status: str, **extra: Any) -> None:
        audits.update_audit(self.store, self.audit_id, status=status, **extra)
        self.status = status
        if "report" in extra:
            self.report_file = extra["report"]
        if extra.get("finished_at"):
            self.finished_at = extra["finished_at"]

    def stop_now(self) -> bool:
        return self.control.cancelled or self.seconds_left() < MIN_STEP_S

    # -- the end: one report value --------------------------------------------------------
    def answers(self, p: ProbePlan) -> int:
        """The answers stored in the probe's runs (what the audit reports: the runs' counts,
        never the plan's)."""
        return sum(self.store.count_attempts(r) for r in run_ids(p))

    def report(self, seconds: float | None = None) -> AuditReport:
        """The audit as its readers get it, from what the session holds: the plan table,
        page 1's rows and sentence (over the last looks' verdicts), `--json`'s verdicts."""
        made = {p.probe: self.answers(p) for p in self.plan}
        looked = [v for p in self.plan for v in p.verdicts]
        spent = float(self.state.get("spent_s") or 0)
        family_wise, version = bool(self.state.get("family_wise")), self.state.get("version")
        decided = sum(1 for v in looked if v.get("decided"))
        left_out = " Left out: " + "; ".join(self.left_out) + "." if self.left_out else ""
        note = (
            f"{decided} of {len(looked)} marked metrics decided in {duration(spent)} of the "
            f"budget {self.budget}. "
            + error_statement(len(looked), family_wise, version)["error_statement"]
            + left_out
        )
        plan = tuple(
            PlanEntry(
                probe=p.probe, title=p.title, items=p.items, prompts=p.prompts or 1,
                attempts=p.attempts, generations=made[p.probe], spent_s=round(p.spent_s, 1),
                run_id=p.run_id, runs=(p.run_id,) if p.run_id is not None else (),
            )
            for p in self.plan
        )  # fmt: skip
        rows = tuple(decision_rows({"plan": [e.row_json() for e in plan], "verdicts": looked}))
        verdicts = json_verdicts(self.plan, made)
        return AuditReport(
            audit_id=self.audit_id, status=self.status, model=str(self.model.get("name", "?")),
            budget=self.budget, speed=str(self.speed.get("basis", "?")),
            harness_title=str(self.state.get("harness_title") or ""),
            seconds=float(seconds if seconds is not None else spent), note=note, plan=plan,
            verdicts=tuple(verdicts), rows=rows, sentence=decision_sentence(list(rows)),
            error=error_statement(len(verdicts), family_wise, version),
            wordings=wording_results(self.store, self.plan), report=self.report_file,
            plan_version=version, budget_s=float(self.budget_s), created_at=self.created_at,
            finished_at=self.finished_at, left_out=tuple(self.left_out),
        )  # fmt: skip


def run_ids(p: ProbePlan) -> list[int]:
    """The runs the audit grew for a probe: its own and its other wordings'."""
    return [] if p.run_id is None else [int(p.run_id), *map(int, p.wording_runs.values())]


def json_verdicts(plan: list[ProbePlan], made: dict[str, int]) -> list[dict[str, Any]]:
    """`--json`'s verdicts: every marked metric of every marked probe (`VERDICT_KEYS`); a
    probe that never looked has its metrics "not measured"."""
    verdicts: list[dict[str, Any]] = []
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
                        "more_seconds": None, "forecast": "", "stopped": "",
                    }
                )  # fmt: skip
    return verdicts


def wording_results(store: Store, plan: list[ProbePlan]) -> dict[str, Any]:
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
