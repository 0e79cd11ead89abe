"""Audit a model in one go (no Qt): an honest verdict for every marked metric within a
time budget — decided where the answers decide, "not enough answers to tell" where they
do not — then the PDF report.

* **Speed, in seconds.** The model's stored speed at the width its runs decode, or a
  short burst now: `SPEED_TOKENS` tokens for as many answers at once as the runs decode
  (a local model's continuous-batching slots, an endpoint's `--concurrency`).
* **Prompt lengths.** Reading a prompt costs too (a HiringBloomberg prompt is ~2,800
  tokens: on the bundled model its reading takes longer than its answer). The burst also
  reads `PREFILL_PROMPTS` prompts of ~`PREFILL_WORDS` words the way the runs read them
  (prompt tokens per second, characters per token); a probe's prompt tokens are its first
  drawn items' characters over that. A stored speed takes these from the model's latest
  audit, else `PREFILL_PRIOR` × its generation speed (the ratio measured on the bundled
  model). Reading a long prompt costs more per token than a short one (attention); the
  plan counts it as linear, so its first look at long-prompt probes is an underestimate
  (HiringBloomberg: about half the seconds measured), set right by that look.
* **Answer lengths.** Each probe's expected answer is this model's stored answers to it,
  else the probe's documented prior (`AuditSizing.answer_tokens`: a short answer for the
  probes that ask for a letter or yes/no), else the longest it allows; after a probe's
  first look, its own measured seconds per answer.
* **Looks and verdicts.** A probe with marked metrics is run on a random draw of its
  items (`gbdesk.contract.running.draw_order`: a prefix keeps every group's share), looked at
  twice at most (`gbdesk.analysis.audit_design`, plan version 3): a first look at α₁ =
  0.0025 on max(10 items and one per group, ¼ of the even share), a final one at α₂ =
  0.0475. Each look's marked metrics get a verdict from `metric_intervals` at its level
  (`gbdesk.analysis.audit_verdicts`): the marks the interval allows, decided when one;
  an undecided one gets a forecast of the answers that would likely decide it.
* **Rounds.** First every probe's first look, cheapest first; probes whose verdicts are
  all decided stop, and so do those none of whose open verdicts has a 10 % chance of
  being decided at what their share would reach (`audit_design.futile`, judged once,
  `steps._judge_futility`); the others share the seconds left evenly (water-filling up
  to each pool, recomputed before each step) for their final look, cheapest step first.
  The step running when the budget ends is cut there (the answers under way finish and
  are kept; those still under way `DRAIN_GRACE_S` later are dropped) and is that probe's
  final look; a probe left open that got no more items has its final look on the same
  answers (`steps.closing_looks`). An audit of the earlier grid design (version 2) is not
  continued.
* **Probes without marks** (other studies' probes, in an audit of every probe) run once
  at a fixed size that fits an even share of the budget (`AuditSizing.sizes`).
* **Nothing lost.** The audit (plan, state, verdicts, run ids) is stored before anything
  runs and after every step; the same command continues it with the rest of its budget.
  One audit or run at a time per database (`gbdesk.store.jobs`). The model is loaded
  once for the whole audit.

The package, one module per concern (the pattern of `gbdesk.workflows.runs`): `budget`
(`parse_budget`, the report's reserve), `speed` (the model loaded once, `measure_speed`),
`planning` (`plan_audit`, `ProbePlan`, `AuditPlan`), `records` (the stored audit: save, get,
the unfinished one), `session` (`AuditSession`: the live plan, run handles and verdicts,
written after every step, read only to resume; `report` builds the one `AuditReport`),
`control` (a step's deadline), `steps` (growing, running and looking at a probe; the rounds),
`progress` (`AuditProgress`), `execution` (`run_audit`) and `result` (a stored audit's
report value). At its end the audit hands one typed value (`gbdesk.report.audit_report.
AuditReport`) to the PDF, the app and `--json`, which render it and recompute nothing.
Everything is imported from here as before (`from gbdesk.workflows.audit import plan_audit`).
"""

from __future__ import annotations

from gbdesk.report.audit_report import AuditReport, PlanEntry
from gbdesk.workflows.audit.budget import (
    BUDGETS,
    DRAIN_GRACE_S,
    FIXED_SHARE,
    MAX_BUDGET_S,
    MIN_STEP_S,
    REPORT_MAX_S,
    REPORT_MIN_S,
    REPORT_SHARE,
    parse_budget,
    report_reserve_s,
)
from gbdesk.workflows.audit.control import (
    StepControl,
)
from gbdesk.workflows.audit.execution import (
    run_audit,
    run_audit_report,
    write_report,
)
from gbdesk.workflows.audit.planning import (
    ORDERS,
    PROMPT_SAMPLE,
    REACH_MARGIN,
    AuditPlan,
    ItemOrders,
    ProbePlan,
    answer_tokens,
    audit_probes,
    audit_wordings,
    check_audit_wordings,
    error_statement,
    even_items,
    first_look_text,
    interval_meaning,
    plan_audit,
    projected_meaning,
    prompt_chars,
)
from gbdesk.workflows.audit.progress import (
    AuditProgress,
    step_text,
)
from gbdesk.workflows.audit.records import (
    changed_options,
    earlier_unfinished,
    get_audit,
    report_path,
    save_audit,
    unfinished_audit,
)
from gbdesk.workflows.audit.result import (
    audit_report,
    audit_result,
    stored_answers,
)
from gbdesk.workflows.audit.session import (
    VERDICT_KEYS,
    AuditSession,
    run_ids,
)
from gbdesk.workflows.audit.speed import (
    CHARS_PER_TOKEN,
    PREFILL_PRIOR,
    PREFILL_PROMPTS,
    PREFILL_WORDS,
    SPEED_MAX_S,
    SPEED_MIN_S,
    SPEED_SENTENCES,
    SPEED_SHARE,
    SPEED_TOKENS,
    SharedBackend,
    Speed,
    decoding_width,
    measure_speed,
    speed_deadline_s,
)
from gbdesk.workflows.audit.steps import (
    unmade_runs,
)

__all__ = [
    "BUDGETS",
    "CHARS_PER_TOKEN",
    "DRAIN_GRACE_S",
    "FIXED_SHARE",
    "MAX_BUDGET_S",
    "MIN_STEP_S",
    "ORDERS",
    "PREFILL_PRIOR",
    "PREFILL_PROMPTS",
    "PREFILL_WORDS",
    "PROMPT_SAMPLE",
    "REACH_MARGIN",
    "REPORT_MAX_S",
    "REPORT_MIN_S",
    "REPORT_SHARE",
    "SPEED_MAX_S",
    "SPEED_MIN_S",
    "SPEED_SENTENCES",
    "SPEED_SHARE",
    "SPEED_TOKENS",
    "VERDICT_KEYS",
    "AuditPlan",
    "AuditProgress",
    "AuditReport",
    "AuditSession",
    "ItemOrders",
    "PlanEntry",
    "ProbePlan",
    "SharedBackend",
    "Speed",
    "StepControl",
    "answer_tokens",
    "audit_probes",
    "audit_report",
    "audit_result",
    "audit_wordings",
    "changed_options",
    "check_audit_wordings",
    "decoding_width",
    "earlier_unfinished",
    "error_statement",
    "even_items",
    "first_look_text",
    "get_audit",
    "interval_meaning",
    "measure_speed",
    "parse_budget",
    "plan_audit",
    "projected_meaning",
    "prompt_chars",
    "report_path",
    "report_reserve_s",
    "run_audit",
    "run_audit_report",
    "run_ids",
    "save_audit",
    "speed_deadline_s",
    "step_text",
    "stored_answers",
    "unfinished_audit",
    "unmade_runs",
    "write_report",
]
