"""`gbdesk audit`: a model audited in one go (plan to a time budget, run, report)."""

from __future__ import annotations

import sys

from gbdesk.cli._common import _emit, _open_store, _ProgressPrinter
from gbdesk.support.errors import UserError


def cmd_audit(args) -> int:
    from gbdesk.workflows.audit import (
        get_audit,
        measure_speed,
        parse_budget,
        plan_audit,
        run_audit,
        save_audit,
        unfinished_audit,
    )
    from gbdesk.workflows.runs import resolve_model

    budget_s = parse_budget(args.budget)
    with _open_store(args.db, writes=True) as store:
        model = resolve_model(store, args.model)
        audit_id = None if args.new or args.plan_only else unfinished_audit(store, model["id"])
        if audit_id is not None:
            audit = get_audit(store, audit_id)
            print(
                f"[audit {audit_id}] continuing the unfinished audit of {model['name']} "
                f"(budget {audit['budget']}; --new plans another)",
                file=sys.stderr,
            )
        else:
            print(f"measuring the speed of {model['name']}…", file=sys.stderr, flush=True)
            speed = measure_speed(store, model)
            plan = plan_audit(
                store, model, budget_s, speed, budget_text=args.budget, harness=args.harness
            )
            if args.plan_only:
                _emit(args, {"plan": plan.to_json(), "runs": [], "report": None}, plan.text())
                return 0
            print(plan.text(), file=sys.stderr, flush=True)
            if not plan.probes:
                raise UserError(
                    f"the budget {args.budget} fits no probe on this model; give it more time"
                )
            audit_id = save_audit(store, plan)
        printer = _ProgressPrinter()

        def progress(p) -> None:
            if p.run is not None:
                printer(p.run)
            elif p.status == "running":
                print(
                    f"[audit {audit_id}] probe {p.step + 1}/{p.steps}: {p.probe} (run {p.run_id})",
                    file=sys.stderr,
                    flush=True,
                )
            elif p.status == "report":
                print(f"[audit {audit_id}] writing the report…", file=sys.stderr, flush=True)

        try:
            result = run_audit(store, audit_id, on_progress=progress, report=args.report)
        except KeyboardInterrupt:
            print(
                f"\ninterrupted; audit {audit_id} is saved — the same command continues it",
                file=sys.stderr,
            )
            return 130
    payload = {"plan": result["plan"], "runs": result["runs"], "report": result["report"]}
    payload["audit_id"] = audit_id
    text = (
        f"audit {audit_id}: runs {', '.join(map(str, result['runs']))}; report: {result['report']}"
        if result["report"]
        else f"audit {audit_id} stopped; the same command continues it"
    )
    _emit(args, payload, text)
    return 0
