"""`gbdesk audit`: a model audited in one go — a verdict for every marked metric within a
time budget, then the PDF report."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from gbdesk.cli._common import Interrupts, _emit, _holding, _open_store, _ProgressPrinter
from gbdesk.support.errors import UserError
from gbdesk.support.format import display_name, duration


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _model(store, args) -> dict[str, Any]:
    """The audited model's row; an endpoint's row remembers --concurrency."""
    from gbdesk.workflows.runs import resolve_model

    model = resolve_model(store, args.model)
    if args.concurrency is not None:
        if model.get("kind") != "endpoint":
            raise UserError(
                "--concurrency is for a model behind a server (--model http://HOST/v1#MODEL); "
                "a local model decodes several answers at once by itself"
            )
        from gbdesk.engine.http import register_endpoint

        meta = json.loads(model.get("metadata_json") or "{}")
        model = register_endpoint(
            store,
            model["path"],
            meta.get("endpoint_model") or model.get("file_name") or model["name"],
            api_key_env=meta.get("api_key_env"),
            concurrency=args.concurrency,
        )
    return model


class _Printer:
    """The audit's progress on stderr: each step, the run's own progress lines, each
    look's verdicts."""

    def __init__(self, audit_id: int) -> None:
        self.audit_id = audit_id
        self.run = _ProgressPrinter()

    def __call__(self, p: Any) -> None:
        head = f"[audit {self.audit_id}]"
        if p.status == "running" and p.run is not None:
            self.run(p.run)
        elif p.status == "step" and p.step:
            from gbdesk.workflows.audit import step_text

            s = p.step
            _say(
                f"{head} {p.probe}: {step_text(s)}, about {duration(s['expected_s'])} "
                f"({duration(p.seconds_left)} of the budget left)"
            )
        elif p.status == "look":
            for v in p.verdicts:
                _say(f"{head}   {_verdict_line(v.to_json())}")
        elif p.status == "report":
            _say(f"{head} writing the report…")


def _verdict_line(v: dict[str, Any]) -> str:
    """ "PROBE · Stereotypical answers when wrong: 0.21 (audit interval 0.05 to 0.44) — no
    mark yet: B or C still possible (40 items; reference mark B)": no letter first unless
    decided (`audit_findings.undecided_words`)."""
    from gbdesk.maths.verdicts import Verdict
    from gbdesk.report.audit_findings import more_text, undecided_words

    value, ci = v.get("value"), v.get("ci") or [None, None]
    if value is None:
        why = "not measured" if v.get("generations") else "not run"
        return f"{v['probe']} · {v.get('title') or v['metric']}: {why}"
    interval = (
        f" (audit interval {ci[0]:.2f} to {ci[1]:.2f})" if None not in ci and v.get("items") else ""
    )
    items = int(v.get("items") or 0)
    verdict = Verdict(v["metric"], tuple(v.get("marks") or ()), v.get("study_mark"), items)
    gb = v.get("study_mark")
    ref = f"; reference mark {gb}" if gb and not verdict.decided else ""
    more = more_text(v, verdict.decided)
    return (
        f"{v['probe']} · {v.get('title') or v['metric']}: {value:.2f}{interval} — "
        f"{undecided_words(verdict)} ({items:,} items{ref}){f'; {more}' if more else ''}"
    )


def _verdict_table(report: Any) -> str:
    """The audit's end on stdout, from its report value (`AuditReport`): the sentence
    page 1 prints, each verdict, the error bound, the report's path."""
    state = "finished" if report.finished else "stopped (the same command continues it)"
    lines = [
        f"audit {report.audit_id} {state}, {report.generations:,} answers in "
        f"{duration(report.seconds)}: {report.sentence}",
    ]
    lines += [f"  {_verdict_line(v)}" for v in report.verdicts]
    if report.error.get("error_statement"):
        lines.append(f"{report.error['error_statement']} (mode: {report.error.get('error_mode')})")
    if report.report:
        lines.append(f"report: {report.report}")
    return "\n".join(lines)


def _continuing(store, model: dict[str, Any], audit_id: int, budget_s: float, args) -> None:
    """An unfinished audit to continue: refused when this command asks other options."""
    from gbdesk.workflows.audit import changed_options, get_audit

    audit = get_audit(store, audit_id)
    changed = changed_options(audit, budget_s, args.harness, args.wordings, args.family_wise)
    if changed:
        raise UserError(
            f"audit {audit_id} of {display_name(model['name'])} is unfinished, and "
            "this command "
            f"asks {'; '.join(changed)} — give its own options to continue it, "
            "or add --new to plan another"
        )
    spent = float((audit.get("state") or {}).get("spent_s") or 0)
    _say(
        f"[audit {audit_id}] continuing the unfinished audit of "
        f"{display_name(model['name'])} "
        f"(budget {audit['budget']}, {duration(spent)} spent; --new plans another)"
    )


def _planned(store, model: dict[str, Any], shared: Any, budget_s: float, args) -> int | None:
    """A new audit: the model's speed measured, the plan made and saved (its id); None
    with --plan-only, once the plan is printed."""
    from gbdesk.workflows.audit import measure_speed, plan_audit, save_audit, speed_deadline_s

    deadline = speed_deadline_s(budget_s)
    _say(
        f"measuring the speed of {display_name(model['name'])} (at most "
        f"{duration(deadline)}; planning is not counted in the budget)…"
    )
    concurrency = args.concurrency or 1
    planning = time.monotonic()
    speed = measure_speed(
        store, model, shared, concurrency=concurrency, deadline_s=deadline,
    )  # fmt: skip
    plan = plan_audit(
        store, model, budget_s, speed, budget_text=args.budget,
        harness=args.harness, concurrency=concurrency, wordings=args.wordings,
        family_wise=args.family_wise,
    )  # fmt: skip
    _say(f"planned in {duration(time.monotonic() - planning)}; the budget's clock starts now")
    if args.plan_only:
        _emit(args, {"plan": plan.to_json(), "runs": [], "report": None}, plan.text())
        return None
    _say(plan.text())
    warning = plan.budget_warning()
    if warning:
        _say(f"note: {warning}")
    if not plan.probes:
        raise UserError(f"the budget {args.budget} fits no probe on this model; give it more time")
    return save_audit(store, plan)


def _interrupted(audit_id: int) -> int:
    _say(f"interrupted; audit {audit_id} is saved — the same command continues it")
    return 130


def cmd_audit(args) -> int:
    from gbdesk.workflows import runs
    from gbdesk.workflows.audit import (
        SharedBackend,
        audit_probes,
        check_audit_wordings,
        earlier_unfinished,
        parse_budget,
        run_audit_report,
        unfinished_audit,
    )

    budget_s = parse_budget(args.budget)
    # --wordings is checked before anything is measured (the harness's probes have them?)
    check_audit_wordings(args.wordings, audit_probes(args.harness))
    with (
        _open_store(args.db, writes=True) as store,
        _holding(store, args, "audit", "an audit"),
    ):
        model = _model(store, args)
        audit_id = None if args.new or args.plan_only else unfinished_audit(store, model["id"])
        if audit_id is None and not (args.new or args.plan_only):
            earlier = earlier_unfinished(store, model["id"])
            if earlier:
                _say(f"[audit] {earlier}")
        shared = SharedBackend(runs.llama_backend_factory, model)
        try:
            if audit_id is not None:
                _continuing(store, model, audit_id, budget_s, args)
            else:
                audit_id = _planned(store, model, shared, budget_s, args)
                if audit_id is None:  # --plan-only: the plan printed, nothing run
                    return 0
            control = runs.RunControl()
            try:
                with Interrupts(control) as stop:
                    result = run_audit_report(
                        store, audit_id, control=control, on_progress=_Printer(audit_id),
                        report=args.report, backend=shared,
                    )  # fmt: skip
            except KeyboardInterrupt:
                return _interrupted(audit_id)
        finally:
            shared.close()
    _emit(args, result.to_json(), _verdict_table(result))
    if stop.asked:  # Ctrl-C: stopped as asked, resumable — 130, as for `gbdesk run`
        return _interrupted(audit_id)
    return 0
