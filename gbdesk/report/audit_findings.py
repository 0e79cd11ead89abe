"""An audit's verdicts as the findings of the runs it ran — the same words in the Results
pane, the PDF and `gbdesk audit` (no Qt).

An audit's verdict is the one to read for a marked metric of its runs: its interval holds
over every look the audit took, where the run's own 95 % interval does not. So a run that
an audit ran shows the audit's verdict for each marked metric the audit judged, in place of
its own finding on that metric; its other findings (notes on few items, undetected answers)
stay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gbdesk.analysis.audit_verdicts import AuditVerdict
from gbdesk.analysis.findings import RunFinding
from gbdesk.analysis.shown import shown_ci
from gbdesk.contract import Finding, get_probe, metric_sections
from gbdesk.maths.stats import MARK_MEANINGS, MetricValue
from gbdesk.maths.verdicts import MIN_ITEMS, Verdict, marks_phrase
from gbdesk.store import Store, audits
from gbdesk.support.format import duration


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
        ref = (
            f"; reference mark {v.verdict.study_mark}"
            if v.verdict.study_mark and not v.verdict.decided
            else ""
        )
        finding = Finding(
            f"Audit {audit_id}'s verdict on {v.title}: {undecided_words(v.verdict)}"
            f"{interval}{ref}"
            + (f"; {more}." if (more := more_text(entry, v.verdict.decided)) else "."),
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


# -- page 1: the decision -------------------------------------------------------------------
#: the heading of the marked metrics no harness places in a harm section
OTHER_MEASURES = "Other marked metrics (in none of the harm sections)"


@dataclass(frozen=True)
class DecisionRow:
    """One marked metric on the report's first page: its verdict in words, the interval to
    quote (the audit's, cut at what the metric can be), and what deciding it would take."""

    section: str  # the harm section's title (`Harness.sections`), or `OTHER_MEASURES`
    probe: str
    probe_title: str
    metric: str
    title: str
    value: float
    interval: tuple[float, float] | None  # the interval to quote; None: no interval
    verdict: Verdict
    state: str  # "decided", "undetermined", "not measured", "not run"
    items: int
    run_id: int | None
    more: str  # "≈120 more answers (≈4 min at this speed)", "cannot be decided …", ""

    @property
    def decided(self) -> bool:
        return self.state == "decided"

    def verdict_words(self) -> str:
        """The verdict in words, no letter first when undecided (`undecided_words`)."""
        if self.state == "not run":
            return "not run: the budget ended before this probe's first look"
        return undecided_words(self.verdict)

    def reference_mark(self) -> str:
        """The study's reference mark, for small print beside an undecided verdict ("" if none)."""
        if self.decided or not self.verdict.study_mark:
            return ""
        return f"reference mark {self.verdict.study_mark}"


def undecided_words(v: Verdict) -> str:
    """A verdict in words with no letter first unless decided: "D (catastrophic)";
    "no mark yet: A to C still possible"; "no mark yet: only 6 items (a verdict needs
    10)"; "not measured"."""
    if not v.measured:
        return "not measured: no readable answer yet"
    if v.decided:
        return v.words()
    if v.too_few:
        item = "item" if v.items == 1 else "items"
        return f"no mark yet: only {v.items} {item} (a verdict needs {MIN_ITEMS})"
    return f"no mark yet: {marks_phrase(v.marks)} still possible"


def more_text(entry: dict[str, Any], decided: bool) -> str:
    """What deciding an undecided verdict would take, in a few words for a table cell:
    "≈474 more answers (≈4 h 11 min at this speed)" from the audit's forecast
    (`more_answers`, `more_seconds`), "cannot be decided within this probe's items" where
    the forecast says so (`decidable` False of earlier audits); "" when decided or when the
    audit gave no forecast (too few items to tell)."""
    if decided:
        return ""
    if entry.get("decidable") is False or "cannot be decided" in str(entry.get("forecast")):
        return "cannot be decided within this probe's items"
    answers = entry.get("more_answers")
    if not isinstance(answers, (int, float)) or answers <= 0:
        return ""
    text = f"≈{round(answers):,} more answers"
    seconds = entry.get("more_seconds")
    if isinstance(seconds, (int, float)) and math.isfinite(seconds):
        minutes = max(1, round(float(seconds) / 60))
        took = f"{minutes} min" if minutes < 60 else duration(float(seconds))
        text += f" (≈{took} at this speed)"
    if entry.get("stopped") == "futile":
        text += "; stopped early: unlikely within this budget"
    return text


def _row(entry: dict[str, Any], section: str, run_id: int | None, ran: bool) -> DecisionRow:
    probe = get_probe(entry["probe"])
    metric = entry["metric"]
    items = int(entry.get("items") or 0)
    v = Verdict(metric, tuple(entry.get("marks") or ()), entry.get("study_mark"), items)
    value = entry.get("value")
    ci = entry.get("ci") or [None, None]
    interval = None
    if value is not None and None not in ci:
        m = MetricValue(float(value), (float(ci[0]), float(ci[1])), None, items)
        interval = shown_ci(probe, metric, m)
    state = v.state if ran or v.measured else "not run"
    return DecisionRow(
        section=section, probe=probe.name, probe_title=probe.card.title, metric=metric,
        title=entry.get("title") or probe.capabilities.presentation.metric_title(metric),
        value=math.nan if value is None else float(value), interval=interval, verdict=v,
        state=state, items=items, run_id=run_id, more=more_text(entry, v.decided),
    )  # fmt: skip


def decision_rows(
    audit: dict[str, Any], answered: dict[str, int] | None = None
) -> list[DecisionRow]:
    """Every marked metric of every probe the audit planned, by harm section (in the
    harnesses' order, then `OTHER_MEASURES`): its verdict (`audit["verdicts"]`) or "not
    run" for a probe that never ran. `answered`: answers stored per probe (default: the
    plan's `generations`)."""
    sections = metric_sections()
    found = {(v["probe"], v["metric"]): v for v in audit.get("verdicts") or []}
    rows = []
    for p in audit.get("plan") or []:
        name = p.get("probe")
        probe = get_probe(name)
        made = (answered or {}).get(name, int(p.get("generations") or 0))
        run_id = p.get("run_id") or (p.get("runs") or [None])[0]
        for metric in probe.mark_definitions:
            entry = found.pop((name, metric), None) or {"probe": name, "metric": metric}
            rows.append(
                _row(entry, sections.get((name, metric), (0, OTHER_MEASURES))[1], run_id, made > 0)
            )
    for entry in found.values():  # a verdict of a probe the plan does not name
        key = (entry["probe"], entry["metric"])
        ran = bool(entry.get("generations") or entry.get("items") or entry.get("marks"))
        rows.append(_row(entry, sections.get(key, (0, OTHER_MEASURES))[1], None, ran))
    first: dict[str, int] = {}
    for i, title in sorted(sections.values()):
        first.setdefault(title, i)
    end = len(sections)
    return sorted(
        rows,
        key=lambda r: (first.get(r.section, end), sections.get((r.probe, r.metric), (end,))[0]),
    )


def decision_sentence(rows: list[DecisionRow]) -> str:
    """What the audit decided, in one sentence: "3 of 27 verdicts decided, all D
    (catastrophic): A, B and C; 24 need more answers." (and how many probes never ran)."""
    decided = [r for r in rows if r.decided]
    text = f"{len(decided)} of {len(rows)} verdicts decided"
    if decided:
        marks = sorted({r.verdict.marks[0] for r in decided})
        names = ", ".join(f"{r.title} ({r.verdict.marks[0]})" for r in decided)
        if len(marks) == 1:
            text += f", all {marks[0]} ({MARK_MEANINGS[marks[0]]}): " + ", ".join(
                r.title for r in decided
            )
        else:
            text += f": {names}"
    waiting = [r for r in rows if r.state == "undetermined"]
    unmeasured = [r for r in rows if r.state == "not measured"]
    not_run = [r for r in rows if r.state == "not run"]
    rest = []
    if waiting:
        rest.append(f"{len(waiting)} need{'s' if len(waiting) == 1 else ''} more answers")
    if unmeasured:
        rest.append(f"{len(unmeasured)} not measured (no readable answer)")
    if not_run:
        probes = len({r.probe for r in not_run})
        rest.append(
            f"{len(not_run)} not run ({probes} probe{'s' if probes != 1 else ''} the budget "
            "did not reach)"
        )
    return text + ("; " + "; ".join(rest) if rest else "") + "."


#: audit.csv: one row per marked metric of every audit that ran the exported runs
AUDIT_CSV_COLUMNS = [
    "audit_id", "section", "probe", "metric", "title", "run_id", "state", "value",
    "interval_low", "interval_high", "ci_low", "ci_high", "level", "marks_allowed",
    "decided", "verdict", "reference_mark", "items", "generations", "more_items",
    "more_answers", "more_seconds", "to_decide",
]  # fmt: skip


def stored_audit_view(record: dict[str, Any]) -> dict[str, Any]:
    """A stored audit (`store.audits.get_audit`) as `decision_rows` reads it: its plan's
    probes and the verdicts of their last looks."""
    plan = [p for p in record.get("plan") or [] if isinstance(p, dict)]
    return {"plan": plan, "verdicts": [v for p in plan for v in p.get("verdicts") or []]}


def audit_csv_rows(store: Store, run_ids: list[int]) -> list[dict[str, Any]]:
    """audit.csv's rows: every marked metric of each audit that ran one of `run_ids`
    (probes that never ran included, as "not run"), with its interval, the marks it
    allows, whether it is decided, its items and the audit's forecast of what deciding
    it would take."""
    ids = []
    for run_id in run_ids:
        found = audits.audit_verdicts_of_run(store, run_id)
        if found is not None and found[0] not in ids:
            ids.append(found[0])
    out = []
    for audit_id in ids:
        record = audits.get_audit(store, audit_id)
        if record is None:
            continue
        view = stored_audit_view(record)
        raw = {(v.get("probe"), v.get("metric")): v for v in view["verdicts"]}
        for r in decision_rows(view):
            entry = raw.get((r.probe, r.metric), {})
            ci = entry.get("ci") or [None, None]
            lo, hi = r.interval if r.interval is not None else ("", "")
            out.append(
                {
                    "audit_id": audit_id, "section": r.section, "probe": r.probe,
                    "metric": r.metric, "title": r.title, "run_id": r.run_id or "",
                    "state": r.state, "value": "" if r.value != r.value else r.value,
                    "interval_low": lo, "interval_high": hi,
                    "ci_low": "" if ci[0] is None else ci[0],
                    "ci_high": "" if ci[1] is None else ci[1],
                    "level": entry.get("level", ""), "marks_allowed": "".join(r.verdict.marks),
                    "decided": int(r.decided), "verdict": r.verdict_words(),
                    "reference_mark": r.verdict.study_mark or "", "items": r.items,
                    "generations": entry.get("generations", 0),
                    "more_items": _cell(entry.get("more_items")),
                    "more_answers": _cell(entry.get("more_answers")),
                    "more_seconds": _cell(entry.get("more_seconds")),
                    "to_decide": r.more,
                }
            )  # fmt: skip
    return out


def _cell(x: Any) -> Any:
    return "" if x is None else x


def budget_warning(
    budget: str, available_s: float, first_looks: list[tuple[bool, float]], needed_s: float
) -> str:
    """The sentence the dialog and `gbdesk audit` print before Start when the budget cannot
    give every probe its first look ("" when it can): "With 30m on this machine 8 of 14
    probes will not run and no verdict can be decided; about 6 h 37 min are needed for
    every probe's first look." `first_looks`: (marked, seconds) per probe, `available_s`:
    the budget's seconds left for answers, `needed_s`: every first look's seconds."""
    spent, reached, marked_reached = 0.0, 0, 0
    for marked, seconds in sorted(first_looks, key=lambda x: x[1]):  # cheapest first
        if spent + seconds > available_s:
            break
        spent += seconds
        reached += 1
        marked_reached += int(marked)
    missing = len(first_looks) - reached
    if missing <= 0:
        return ""
    none = (
        " and no verdict can be decided"
        if not marked_reached and any(m for m, _ in first_looks)
        else ""
    )
    return (
        f"With {budget} on this machine {missing} of {len(first_looks)} probes will not "
        f"run{none}; about {duration(needed_s)} are needed for every probe's first look "
        "(more to decide the verdicts)."
    )


def plan_budget_warning(plan: Any, reserve_s: float) -> str:
    """`budget_warning` for an audit plan (`workflows.audit.AuditPlan`): what its budget
    leaves after the report's reserve (`reserve_s`). Planning — loading the model and
    measuring its speed — is not counted: the budget's clock starts once the plan is made."""
    available = plan.budget_s - reserve_s
    looks = [(bool(p.marked), float(p.first_seconds())) for p in plan.probes]
    return budget_warning(plan.budget, available, looks, float(plan.first_round_s))
