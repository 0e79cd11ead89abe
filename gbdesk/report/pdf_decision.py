"""Page 1 of an audit's PDF: the decision (issue 45, item 1).

A title naming the model (its GGUF file and SHA-256, or the endpoint and the model id it
serves), the date, the budget and what was spent; one sentence of what was decided; then
one table by harm section (`report.audit_findings.decision_rows`): per marked metric its
title, probe, value, the interval to quote drawn on the A–D band strip, the verdict in
words (coloured only when decided), items, and what deciding it would take.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen

from gbdesk.maths.stats import MarkDefinition
from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.report.audit_findings import DecisionRow, decision_sentence
from gbdesk.report.audit_report import AuditReport
from gbdesk.report.pdf_layout import _Doc, e, model_name
from gbdesk.report.test_log import ModelLog, TestLog
from gbdesk.support.format import MARK_COLORS, MARK_FILLS, duration, fmt

#: the strip's size in pixels (drawn at `STRIP_PT` points wide)
STRIP_W, STRIP_H, STRIP_PT = 400, 52, 100
UNDECIDED_COLOR = "#4b5563"


def band_strip(
    marks: MarkDefinition | None,
    value: float,
    interval: tuple[float, float] | None,
    color: str = UNDECIDED_COLOR,
) -> QImage:
    """The metric's A–D bands as one strip with the value (a dot) and the interval to
    quote (a bar) over them, as the Results pane draws a marked metric."""
    image = QImage(STRIP_W, STRIP_H, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    if marks is None:
        return image
    lo_x, hi_x = marks.overall_range
    ends = [x for x in (value, *(interval or ())) if x is not None and math.isfinite(x)]
    lo_x, hi_x = min([lo_x, *ends]), max([hi_x, *ends])
    span = (hi_x - lo_x) or 1.0

    def x_of(v: float) -> float:
        return 2 + (v - lo_x) / span * (STRIP_W - 4)

    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    font = QFont("DejaVu Sans")
    font.setPixelSize(15)
    font.setBold(True)
    p.setFont(font)
    for letter, bands in marks.ranges.items():
        for a, b in bands:
            rect = QRectF(x_of(a), 4, max(1.0, x_of(b) - x_of(a)), STRIP_H - 8)
            p.fillRect(rect, QColor(MARK_FILLS[letter]))
            p.setPen(QColor(MARK_COLORS[letter]))
            if rect.width() > 14:
                p.drawText(rect.adjusted(0, 1, 0, 0), Qt.AlignmentFlag.AlignHCenter, letter)
    p.setPen(QPen(QColor("#d1d5db"), 1))
    p.drawRect(QRectF(x_of(lo_x), 4, STRIP_W - 4, STRIP_H - 8))
    y = STRIP_H - 13
    if interval is not None:
        p.setPen(QPen(QColor(color), 4))
        p.drawLine(QPointF(x_of(interval[0]), y), QPointF(x_of(interval[1]), y))
        for v in interval:
            p.drawLine(QPointF(x_of(v), y - 6), QPointF(x_of(v), y + 6))
    if math.isfinite(value):
        p.setBrush(QColor(color))
        p.setPen(QPen(QColor("white"), 2))
        p.drawEllipse(QPointF(x_of(value), y), 7, 7)
    p.end()
    return image


def identity(m: ModelLog) -> str:
    """The model as page 1 names it: its GGUF file and SHA-256, or the endpoint and the id
    of the model it serves."""
    if m.endpoint:
        return f"endpoint {m.endpoint}, served model id {m.served_model or '—'}"
    sha = f", SHA-256 {m.sha256}" if m.sha256 else ", SHA-256 not recorded"
    return f"GGUF file {m.file or '—'}{sha}"


def _title(log_: TestLog | None, audit: AuditReport, harness: str) -> str:
    """The heading: the model, its identity, the date, the budget and the time spent."""
    models = log_.models if log_ is not None else []
    name = ", ".join(model_name(m.name) for m in models) or model_name(audit.model)
    ident = "<br>".join(e(identity(m)) for m in models)
    a = log_.audit if log_ is not None else None
    when = (a.finished_at or a.created_at or "") if a is not None else ""
    date = (when or (log_.made_at if log_ else ""))[:10]
    spent = f", {duration(a.spent_s)} spent" if a is not None else ""
    answers = f", {a.answers:,} answers" if a is not None else ""
    what = f"{e(harness)} · " if harness else ""
    audit_id = f"Audit {a.audit_id} · " if a is not None else ""
    return (
        f"<h1>Gender-bias audit of {name}</h1>"
        f"<p class='mono'>{ident}</p>"
        f"<p>{audit_id}{what}{e(date)} · budget {e(audit.budget)}{spent}"
        f"{answers}</p>"
    )


HEAD = (
    "<tr><th class='d' width='27%'>Metric <span class='muted'>(probe, run)</span></th>"
    "<th class='d' width='8%'>Value</th><th class='d' width='22%'>Interval on the A–D "
    "bands</th><th class='d' width='23%'>Verdict</th><th class='d' width='8%'>Items</th>"
    "<th class='d' width='12%'>To decide</th></tr>"
)
COLUMNS = 6
#: "To decide" of an undecided verdict the audit stored no forecast for
NO_FORECAST = "—"


def _verdict_cell(row: DecisionRow) -> str:
    """The verdict in words; coloured only when decided; the study's reference mark in
    small print beside an undecided one."""
    if row.decided:
        mark = row.verdict.marks[0]
        return (
            f"<td class='d' style='background:{MARK_FILLS[mark]}'>"
            f"<b style='color:{MARK_COLORS[mark]}'>"
            f"{e(row.verdict_words())}</b></td>"
        )
    ref = row.reference_mark()
    small = f"<br><span class='muted' style='font-size:6.5pt'>{e(ref)}</span>" if ref else ""
    return f"<td class='d'>{e(row.verdict_words())}{small}</td>"


def _table_row(row: DecisionRow, marks: MarkDefinition | None, doc: _Doc) -> str:
    color = MARK_COLORS[row.verdict.marks[0]] if row.decided else UNDECIDED_COLOR
    if row.state == "not run":
        strip, value = "<span class='muted'>not run</span>", "—"
    else:
        strip = doc.image(band_strip(marks, row.value, row.interval, color), STRIP_PT)
        if row.interval is not None:
            lo, hi = row.interval
            strip += f"<br><span class='muted'>{fmt(lo, 2)} to {fmt(hi, 2)}</span>"
        value = fmt(row.value, 2) if math.isfinite(row.value) else "—"
    run = f", run {row.run_id}" if row.run_id is not None else ""
    return (
        f"<tr><td class='d'>{e(row.title)}<br><span class='muted' style='font-size:6.5pt'>"
        f"{e(row.probe_title)}{e(run)}</span></td><td class='d' nowrap>{value}</td>"
        f"<td class='d'>{strip}</td>{_verdict_cell(row)}<td class='d'>{row.items:,}</td>"
        f"<td class='d'>{e(row.more or NO_FORECAST)}</td></tr>"
    )


def decision_page(
    rows: list[DecisionRow],
    marks: dict[tuple[str, str], MarkDefinition],
    audit: AuditReport,
    log_: TestLog | None,
    doc: _Doc,
) -> None:
    """Page 1 (may run onto page 2): the title, the one sentence (the audit's own,
    `AuditReport.sentence`), the table by harm."""
    doc.add(_title(log_, audit, audit.harness_title))
    doc.add(f"<p style='font-size:11pt'><b>{e(audit.sentence or decision_sentence(rows))}</b></p>")
    body, section = [], None
    for row in rows:
        if row.section != section:
            section = row.section
            body.append(
                f"<tr><th colspan='{COLUMNS}' style='background:#e5e7eb'>{e(section)}</th></tr>"
            )
        body.append(_table_row(row, marks.get((row.probe, row.metric)), doc))
    doc.add(f"<table width='100%'>{HEAD}{''.join(body)}</table>")
    doc.add(
        "<p class='muted'>A verdict is decided when the audit's interval (valid over all its "
        "looks) lies within one mark's band and rests on at least "
        f"{MIN_ITEMS} items with a readable answer; only then is it coloured. Otherwise it "
        "says “no mark yet” and which marks the interval still allows; the study's "
        "reference mark (the best band its own 95 % interval touches) stands beside it in "
        "small print, never alone. “To decide”: "
        "the audit's forecast of the answers (and minutes, at the speed it measured) a "
        f"decision would take ({NO_FORECAST}: none stored).</p>"
    )
