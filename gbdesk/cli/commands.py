"""Which function runs each built-in subcommand (the studies' own are in
`parser.STUDY_COMMANDS`)."""

from __future__ import annotations

from gbdesk.cli.audit import cmd_audit
from gbdesk.cli.catalogue import cmd_card, cmd_items, cmd_models, cmd_probes
from gbdesk.cli.imports import cmd_import, cmd_import_labels
from gbdesk.cli.labels import cmd_agreement, cmd_code, cmd_label, cmd_review, cmd_sample
from gbdesk.cli.results import cmd_compare, cmd_export, cmd_metrics, cmd_wordings
from gbdesk.cli.runs import cmd_jobs, cmd_resume, cmd_run, cmd_runs
from gbdesk.cli.selftest import cmd_selftest
from gbdesk.cli.verify import cmd_verify

COMMANDS = {
    "probes": cmd_probes,
    "card": cmd_card,
    "items": cmd_items,
    "models": cmd_models,
    "run": cmd_run,
    "runs": cmd_runs,
    "jobs": cmd_jobs,
    "resume": cmd_resume,
    "metrics": cmd_metrics,
    "wordings": cmd_wordings,
    "compare": cmd_compare,
    "audit": cmd_audit,
    "export": cmd_export,
    "verify": cmd_verify,
    "selftest": cmd_selftest,
    "import": cmd_import,
    "import-labels": cmd_import_labels,
    "sample": cmd_sample,
    "review": cmd_review,
    "label": cmd_label,
    "code": cmd_code,
    "agreement": cmd_agreement,
}
