"""What an audit reports as it runs (`AuditProgress`) and a step in words (`step_text`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gbdesk.analysis.audit_verdicts import AuditVerdict


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
