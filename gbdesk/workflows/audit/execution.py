"""Running a stored audit to its end: `run_audit` (see the package's docstring)."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.report.audit_report import AuditReport
from gbdesk.store import Store, jobs
from gbdesk.support.errors import EngineError, UserError
from gbdesk.workflows import runs
from gbdesk.workflows.audit.progress import AuditProgress
from gbdesk.workflows.audit.records import get_audit, report_path
from gbdesk.workflows.audit.session import AuditSession
from gbdesk.workflows.audit.speed import SharedBackend
from gbdesk.workflows.audit.steps import _look, _rounds, closing_looks, unmade_runs
from gbdesk.workflows.runs import RunControl

log = logging.getLogger(__name__)


def run_audit(
    store: Store,
    audit_id: int,
    *,
    backend_factory: Callable[..., Any] | None = None,
    control: RunControl | None = None,
    on_progress: Callable[[AuditProgress], None] | None = None,
    report: str | Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    wait: bool = False,
    backend: SharedBackend | None = None,
) -> dict[str, Any]:
    """Run (or continue) a stored audit until its verdicts are decided or its budget is
    spent, then write its report. Returns its `AuditReport` as `--json` prints it."""
    return run_audit_report(
        store, audit_id, backend_factory=backend_factory, control=control,
        on_progress=on_progress, report=report, clock=clock, wait=wait, backend=backend,
    ).to_json()  # fmt: skip


def run_audit_report(
    store: Store,
    audit_id: int,
    *,
    backend_factory: Callable[..., Any] | None = None,
    control: RunControl | None = None,
    on_progress: Callable[[AuditProgress], None] | None = None,
    report: str | Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    wait: bool = False,
    backend: SharedBackend | None = None,
) -> AuditReport:
    """`run_audit`, returning the typed report value the PDF was rendered from."""
    record = get_audit(store, audit_id)  # the job's name; the session reads it in the job
    model = store.get_model(record["model_id"]) if record["model_id"] else {}
    what = f"audit {audit_id} of {model.get('name') or 'a model'}"
    with jobs.job(store, "audit", what, audit_id=audit_id, wait=wait):
        session = AuditSession.resume(
            store, audit_id, backend=backend,
            backend_factory=None if backend else (backend_factory or runs.llama_backend_factory),
            control=control, on_progress=on_progress, clock=clock,
        )  # fmt: skip
        return _run(session, report, own_backend=backend is None)


def _run(session: AuditSession, report: str | Path | None, own_backend: bool) -> AuditReport:
    audit_id, store = session.audit_id, session.store
    session.set_status("running")
    try:
        finished = _rounds(session)
    except EngineError as exc:  # a server fault, a crashed model: what was made is kept
        session.save()
        session.set_status("stopped")
        reason = getattr(exc, "reason", None)
        if reason is None:
            raise
        done, total = getattr(exc, "counts", (0, 0))
        # the audit is continued with its own command, never its run's `gbdesk resume`
        raise type(exc)(
            f"{reason}. Audit {audit_id} is saved with every answer made (run "
            f"{exc.run_id}: {done:,}/{total:,}); the same command continues it"  # type: ignore[attr-defined]
        ) from exc
    except BaseException:  # a second Ctrl-C, a bug: what was made is kept
        session.save()
        session.set_status("stopped")
        raise
    finally:
        if own_backend:
            session.shared().close()
    if finished:
        for p in session.plan:  # cut by the budget before its look (killed at the end)
            if p.marked and p.run_id is not None and (not p.looks or p.looks[-1] != p.items):
                _look(session, p, get_probe(p.probe))
        unmade = unmade_runs(session)
        if unmade:  # never "done" with answers unmade (`unmade_runs`)
            log.warning("audit %s is not done: %s", audit_id, "; ".join(unmade))
            finished = False
    if finished:
        closing_looks(session)  # an open probe that got no more items: its final look
        for p in session.plan:  # the final verdicts carry the reference's own intervals
            if p.marked and p.run_id is not None:
                _look(session, p, get_probe(p.probe), final=True)
    session.save()
    if not finished:
        session.set_status("stopped")
        session.emit("stopped")
        return session.report(session.spent_s())
    session.emit("report")
    # the path stored is absolute: the report is found from wherever the app or a later
    # command runs (a relative one was relative to the folder the audit ran in)
    out = Path(os.path.abspath(report if report else report_path(store, audit_id)))
    # the PDF's test log says when the audit ended and that it is done: it is written last
    ended = datetime.now(timezone.utc).isoformat(timespec="seconds")
    value = dataclasses.replace(session.report(), status="done", finished_at=ended)
    try:
        write_report(store, value, out)
    except UserError as exc:  # a full disk, a link at the name: not done, resumable
        session.set_status("stopped")
        session.emit("stopped")
        raise UserError(
            f"{exc}; audit {audit_id} is saved with every answer, not done — the same "
            "command writes its report"
        ) from exc
    session.set_status("done", report=str(out), finished_at=ended)
    session.save()
    session.emit("done")
    return dataclasses.replace(
        value, status=session.status, report=session.report_file,
        seconds=float(session.state["spent_s"]),
    )  # fmt: skip


def write_report(store: Store, value: AuditReport, out: Path) -> None:
    """The audit's PDF, rendered from its report value (nothing recomputed)."""
    from gbdesk.report.pdf import export_pdf

    export_pdf(store, value.runs, out, "reviewed", audit=value)
