"""Planning and executing runs (no Qt).

A run is a probe × model × parameters. `plan_run` stores the run and its items;
`execute_run` generates the attempts that are not stored yet, writing each one (with
its automatic label) the moment it completes, reporting progress to a callback and
honouring pause and cancel between attempts. Running it again after a crash, a
cancel or a kill continues where the store left off: the UNIQUE (run, item,
attempt) key makes every write idempotent and per-attempt seeds make the texts
independent of the order and the session they are generated in.

Attempts are generated repetition-major (every item once, then every item again …) so
that a half-finished run already covers every item; an item's several prompts go
together (`attempt_order`: they share their text up to what varies, which the engines
then read once).

Local models decode with continuous batching by default (`_streamed`, `_chained`: several
attempts live in the worker, each stored as it finishes and replaced by the next); the
run's ``batch_size`` (0 automatic, N, or 1 for one at a time) and the count used (the
engine settings' ``batching``) are kept with the run, so a resume decodes the same way.

The package, one module per concern: `models` (the model a run uses), `planning`
(`plan_run` and the checks before it), `progress` (what a run reports: `Progress`, `Pace`),
`control` (pause and cancel: `RunControl`; the backend factories), `execution`
(`execute_run` and its loops) and `estimates` (`estimate_run`). Everything is imported
from here as before (`from gbdesk.workflows.runs import plan_run`).
"""

from gbdesk.workflows.runs.control import (
    BackendFactory,
    RunControl,
    http_backend_factory,
    llama_backend_factory,
)
from gbdesk.workflows.runs.estimates import (
    Estimate,
    estimate_run,
    measured_scoring_speed,
    measured_speed,
)
from gbdesk.workflows.runs.execution import (
    NEW_TEXT,
    RunOutcome,
    execute_run,
    pending_attempts,
    stream_requests,
)
from gbdesk.workflows.runs.models import resolve_model, verify_model_file
from gbdesk.workflows.runs.planning import (
    AUTO_BATCH,
    CAPABILITIES_FRESH_S,
    RUN_STATUSES,
    check_engine_needs,
    check_generation,
    plan_run,
    same_run,
    subset_note,
    unmet_engine_need,
)
from gbdesk.workflows.runs.progress import (
    ETA_RESET_FACTOR,
    ETA_SMOOTHING_S,
    ETA_WARMUP_S,
    PACE_PRIOR_ANSWERS,
    RECENT_S,
    Pace,
    Progress,
    RecentRate,
    Tally,
)

__all__ = [
    "AUTO_BATCH",
    "CAPABILITIES_FRESH_S",
    "ETA_RESET_FACTOR",
    "ETA_SMOOTHING_S",
    "ETA_WARMUP_S",
    "NEW_TEXT",
    "PACE_PRIOR_ANSWERS",
    "RECENT_S",
    "RUN_STATUSES",
    "BackendFactory",
    "Estimate",
    "Pace",
    "Progress",
    "RecentRate",
    "RunControl",
    "RunOutcome",
    "Tally",
    "check_engine_needs",
    "check_generation",
    "estimate_run",
    "execute_run",
    "http_backend_factory",
    "llama_backend_factory",
    "measured_scoring_speed",
    "measured_speed",
    "pending_attempts",
    "plan_run",
    "resolve_model",
    "same_run",
    "stream_requests",
    "subset_note",
    "unmet_engine_need",
    "verify_model_file",
]
