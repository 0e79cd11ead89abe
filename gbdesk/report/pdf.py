"""The PDF report, written with Qt's own PDF writer (fully offline).

Layout only: the content comes from `content.build_report`. Every text that came
from a model, a file or a user goes through `e` (HTML-escaped, control and bidirectional
characters shown as <U+XXXX>) or `_label` (charts), so a generation containing markup or
a right-to-left override cannot change the report. Charts are painted with QPainter
(no plotting library, no network).

The modules by job, beside this one: `pdf_layout` (style sheet, escaping, the document,
printing), `pdf_charts`, `pdf_blocks` (the study blocks and shared cells), `pdf_metrics`
(a run's metric table), `pdf_sections` (a run's section, an audit's run appendix),
`pdf_front` (page 1 and what spans the runs), `pdf_decision` (an audit's page 1),
`pdf_appendix` (cards, glossary, configuration, test log, sign-off); here the report put
together in its order (`render_pdf`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gbdesk.contract import get_probe
from gbdesk.report.audit_report import AuditReport
from gbdesk.report.content import ReportData, build_report, labels_used
from gbdesk.report.pdf_appendix import SIGN_OFF as SIGN_OFF
from gbdesk.report.pdf_appendix import (
    _appendix,
    _audit_appendix,
    _card_table,
    _cards,
    _glossary,
    _test_log,
)
from gbdesk.report.pdf_blocks import PARAGRAPH_STYLES as PARAGRAPH_STYLES
from gbdesk.report.pdf_blocks import _block as _block
from gbdesk.report.pdf_charts import ci_chart as ci_chart
from gbdesk.report.pdf_charts import curves_chart as curves_chart
from gbdesk.report.pdf_front import (
    _audit,
    _common_notes,
    _comparisons,
    _depends_on_wording,
    _findings,
    _study_reports,
    _unfinished,
    _verdict,
    _wordings,
)
from gbdesk.report.pdf_layout import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from gbdesk.report.pdf_layout import _Doc as _Doc
from gbdesk.report.pdf_layout import _has_glyph as _has_glyph
from gbdesk.report.pdf_layout import _print, e, ensure_gui_app, model_name
from gbdesk.report.pdf_layout import drawable as drawable
from gbdesk.report.pdf_metrics import _metric_table as _metric_table
from gbdesk.report.pdf_sections import APPENDIX_NOTES as APPENDIX_NOTES
from gbdesk.report.pdf_sections import FEW_REVIEWED as FEW_REVIEWED
from gbdesk.report.pdf_sections import _run_appendix
from gbdesk.report.pdf_sections import _section as _section
from gbdesk.report.pdf_sections import cut_note as cut_note
from gbdesk.store import Store
from gbdesk.support.atomic import refuse_link
from gbdesk.support.errors import UserError


def _audit_body(data: ReportData, doc: _Doc) -> None:
    """An audit's report: page 1 the decision, the notes said once, the plan, the
    studies' own summaries, comparisons and wordings, then the runs in an appendix."""
    from gbdesk.report.pdf_decision import decision_page

    audit = data.audit
    assert audit is not None
    rows = list(audit.rows)  # the audit's own: rendered, not re-derived
    marks = {(r.probe, r.metric): get_probe(r.probe).mark_definitions.get(r.metric) for r in rows}
    decision_page(rows, marks, audit, data.test_log, doc)  # type: ignore[arg-type]
    _common_notes(data, rows, doc)
    _audit(data, doc)
    _study_reports(data, doc)
    _comparisons(data, doc)
    _wordings(data, doc)
    _run_appendix(data, doc)


def render_pdf(data: ReportData, path: str | Path) -> Path:
    """The report as the PDF file `path`, whole or not at all (`gbdesk.support.atomic`:
    laid out in memory, written to a temporary file in the folder, re-opened and its pages
    counted, then renamed into place; a name that is a link is refused)."""
    ensure_gui_app()
    out = Path(path)
    if out.exists() and out.is_dir():
        raise UserError(f"--pdf must name a file, and {out} is a folder")
    refuse_link(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = _Doc()
    models = ", ".join(data.models)
    if data.audit:
        _audit_body(data, doc)
        _card_table(data, doc)
        _glossary(doc)
        _audit_appendix(data, doc)
    else:
        _runs_body(data, doc)
        _cards(data, doc)
        _glossary(doc)
        _appendix(data, doc)
    _test_log(data, doc)
    return _print(data, doc, out, models)


def _runs_body(data: ReportData, doc: _Doc) -> None:
    """A report of runs (no audit): the findings first, the verdict table, the studies'
    reports, comparisons and wordings, then every run."""
    doc.add(
        f"<h1>gbdesk bias audit</h1><p class='muted'>"
        f"{', '.join(model_name(m) for m in data.models)} · generated "
        f"{e(data.created_at)} by gbdesk {e(data.app_version)} · "
        + "; ".join(f"run {s.run_id}: {e(labels_used(s, data.label_mode))}" for s in data.runs)
        + "</p>"
    )
    _unfinished(data, doc)
    _depends_on_wording(data, doc)
    _findings(data, doc)
    doc.add("<h2>Summary</h2>" + "".join(f"<p>{e(s)}</p>" for s in data.summary()))
    _verdict(data, doc)
    _study_reports(data, doc)
    _comparisons(data, doc)
    _wordings(data, doc)
    for section in data.runs:
        _section(section, doc, data.label_mode)


def export_pdf(
    store: Store,
    run_ids: list[int],
    path: str | Path,
    label_mode: str = "reviewed",
    audit: AuditReport | dict[str, Any] | None = None,
) -> Path:
    """The report of `run_ids` as a PDF; `audit`: the audit it ends (its `AuditReport`, or
    a hand-built dict `AuditReport.from_dict` reads)."""
    return render_pdf(build_report(store, run_ids, label_mode, audit=audit), path)
