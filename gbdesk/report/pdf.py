"""The PDF report, written with Qt's own PDF writer (fully offline).

Layout only: the content comes from `content.build_report`. Every text that came
from a model, a file or a user goes through `e` (HTML-escaped, control and bidirectional
characters shown as <U+XXXX>) or `_label` (charts), so a generation containing markup or
a right-to-left override cannot change the report. Charts are painted with QPainter
(no plotting library, no network).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QPen,
)

from gbdesk.analysis.shown import (
    cut_ends,
    mark_cell,
    metric_verdict,
    shown_ci,
)
from gbdesk.contract import get_probe
from gbdesk.maths.stats import MARK_MEANINGS, MarkDefinition
from gbdesk.maths.verdicts import MIN_ITEMS, Verdict
from gbdesk.report.audit_report import AuditReport
from gbdesk.report.content import (
    ReportData,
    RunSection,
    build_report,
    chat_template,
    configuration,
    labels_used,
)
from gbdesk.report.pdf_layout import CSS, _Doc, _fit, _label, e, ensure_gui_app, model_name
from gbdesk.report.pdf_layout import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from gbdesk.report.pdf_layout import _has_glyph as _has_glyph
from gbdesk.report.pdf_layout import drawable as drawable
from gbdesk.report.rewording import SECTION_TITLE, section_blocks
from gbdesk.store import Store
from gbdesk.support.atomic import check_pdf, refuse_link, write_bytes
from gbdesk.support.blocks import (
    Block,
    CurveChart,
    Heading,
    IntervalChart,
    MarkCells,
    Paragraph,
    Table,
)
from gbdesk.support.errors import UserError
from gbdesk.support.format import (
    MARK_COLORS,
    MARK_FILLS,
    RUN_COLORS,
    UNDEFINED_CI,
    UNDEFINED_VALUE,
    duration,
    fmt,
    fmt_ci,
    log2_or_nan,
    ratio_ticks,
)


# -- charts -------------------------------------------------------------------------------
def ci_chart(
    rows: list[tuple[str, float, float, float, str]],
    marks: MarkDefinition | None,
    x_range: tuple[float, float],
    title: str,
    width: int = 1400,
    row_height: int = 46,
    log: bool = False,
) -> QImage:
    """Rows of (label, value, lo, hi, colour) as points with interval bars over the bands.

    With `log`, values are ratios drawn on a log2 axis whose ticks read as ratios, with a
    dashed parity line at 1."""
    rows = [(_label(label), v, lo, hi, c) for label, v, lo, hi, c in rows]
    title = _label(title, 200)
    if log:
        rows = [
            (label, log2_or_nan(v), log2_or_nan(lo), log2_or_nan(hi), c)
            for label, v, lo, hi, c in rows
        ]
    font = QFont("DejaVu Sans")
    font.setPixelSize(22)
    label_width = max([0, *(QFontMetrics(font).horizontalAdvance(r[0]) for r in rows)])
    left, right, top, bottom = min(max(200, label_width + 30), width // 2), 40, 56, 52
    height = top + bottom + row_height * max(1, len(rows))
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    lo_x, hi_x = x_range
    values = [v for _, val, lo, hi, _ in rows for v in (val, lo, hi) if not math.isnan(v)]
    if values:
        lo_x, hi_x = min(lo_x, min(values)), max(hi_x, max(values))
    span = (hi_x - lo_x) or 1.0
    plot_w = width - left - right

    def x_of(v: float) -> float:
        return left + (v - lo_x) / span * plot_w

    p.setFont(font)
    p.setPen(QColor("#111827"))
    p.drawText(QRectF(0, 6, width, 40), Qt.AlignmentFlag.AlignHCenter, _fit(title, font, width))
    plot_rect = QRectF(left, top, plot_w, height - top - bottom)
    if marks is not None:
        small = QFont(font)
        small.setPixelSize(18)
        small.setBold(True)
        for letter, bands in marks.ranges.items():
            for a, b in bands:
                rect = QRectF(x_of(a), plot_rect.top(), x_of(b) - x_of(a), plot_rect.height())
                p.fillRect(rect, QColor(MARK_FILLS[letter]))
                p.setFont(small)
                p.setPen(QColor(MARK_COLORS[letter]))
                p.drawText(
                    QRectF(rect.left(), plot_rect.top() + 2, rect.width(), 22),
                    Qt.AlignmentFlag.AlignHCenter,
                    letter,
                )
    p.setPen(QPen(QColor("#9ca3af"), 1))
    p.drawRect(plot_rect)
    # ticks
    p.setFont(font)
    if log:
        ticks = ratio_ticks(lo_x, hi_x)
    else:
        ticks = [(lo_x + span * i / 5, f"{lo_x + span * i / 5:.2f}") for i in range(6)]
    for v, text in ticks:
        x = x_of(v)
        p.setPen(QPen(QColor("#e5e7eb"), 1))
        p.drawLine(QPointF(x, plot_rect.top()), QPointF(x, plot_rect.bottom()))
        p.setPen(QColor("#374151"))
        p.drawText(
            QRectF(x - 60, plot_rect.bottom() + 6, 120, 30),
            Qt.AlignmentFlag.AlignHCenter,
            text,
        )
    if log and lo_x <= 0 <= hi_x:
        p.setPen(QPen(QColor("#6b7280"), 2, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(x_of(0), plot_rect.top()), QPointF(x_of(0), plot_rect.bottom()))
    for i, (label, val, lo, hi, color) in enumerate(rows):
        y = top + row_height * (i + 0.5) + 10
        p.setPen(QColor("#111827"))
        p.drawText(
            QRectF(8, y - 16, left - 20, 32),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            label,
        )
        if math.isnan(val):
            continue
        pen = QPen(QColor(color), 4)
        p.setPen(pen)
        if not (math.isnan(lo) or math.isnan(hi)):
            p.drawLine(QPointF(x_of(lo), y), QPointF(x_of(hi), y))
            for v in (lo, hi):
                p.drawLine(QPointF(x_of(v), y - 9), QPointF(x_of(v), y + 9))
        p.setBrush(QColor(color))
        p.setPen(QPen(QColor("white"), 2))
        p.drawEllipse(QPointF(x_of(val), y), 9, 9)
    p.end()
    return image


def _mark_cell(v: Verdict | None, text: str) -> str:
    """A cell with a verdict: coloured only when decided (one mark allowed, from enough
    items); otherwise the study's mark and the marks the interval allows, uncoloured."""
    if v is None or not v.measured:
        why = "" if v is None else f" <span class='muted'>{e(mark_cell(v))}</span>"
        return f"<td>{e(text)}{why}</td>"
    if v.decided:
        mark = v.marks[0]
        return (
            f"<td style='background:{MARK_FILLS[mark]}'>{e(text or MARK_MEANINGS[mark])} "
            f"<b style='color:{MARK_COLORS[mark]}'>{mark}</b></td>"
        )
    sep = "<br>" if text else ""
    return f"<td>{e(text)}{sep}<span class='muted'>{e(mark_cell(v))}</span></td>"


def _verdict(data: ReportData, doc: _Doc) -> None:
    """One row per graded metric, one column per model (the metrics outnumber the models:
    a harness has dozens, which side by side would not fit a page)."""
    columns, rows = data.verdict()
    if not columns:
        return
    heads = []
    for row in rows:
        runs = ", ".join(str(r) for r in row["runs"])
        open_runs = [
            f"run {s.run_id} {s.unfinished}"
            for s in data.runs
            if s.run_id in row["runs"] and s.unfinished
        ]
        warning = f"<br><span class='notice'>{e('; '.join(open_runs))}</span>" if open_runs else ""
        heads.append(
            f"<th>{model_name(row['model'])}<br><span class='muted'>run {e(runs)}</span>"
            f"{warning}</th>"
        )
    body = []
    for probe, metric in columns:
        cells = []
        what = get_probe(probe)
        for row in rows:
            if (probe, metric) in row["cells"]:
                run_id, m = row["cells"][(probe, metric)]
                v = metric_verdict(what, metric, m)
                cells.append(_mark_cell(v, f"{fmt(m.value, 2)} (run {run_id})"))
            elif set(row["runs"]) & {s.run_id for s in data.runs if s.probe.name == probe}:
                cells.append("<td class='muted'>no answers yet</td>")
            else:
                cells.append("<td class='muted'>not run</td>")
        body.append(
            f"<tr><td>{e(what.capabilities.presentation.metric_title(metric))}<br>"
            "<span class='muted'>"
            f"{e(what.card.title)}</span></td>{''.join(cells)}</tr>"
        )
    doc.add(
        "<h2>Verdict</h2><table width='100%'><tr><th>Metric</th>"
        f"{''.join(heads)}</tr>{''.join(body)}</table>"
    )
    legend = ", ".join(
        f"<b style='color:{MARK_COLORS[k]}'>{k}</b> {v}" for k, v in MARK_MEANINGS.items()
    )
    doc.add(
        f"<p class='muted'>Marks: {legend}. A mark is coloured only when it is decided: its "
        f"95 % interval lies within one band and rests on at least {MIN_ITEMS} items. "
        "Otherwise the cell gives the grading study's own mark (the best band the interval "
        "touches) and every mark the interval allows, uncoloured: not enough answers to "
        "tell.</p>"
    )


def _study_reports(data: ReportData, doc: _Doc) -> None:
    """The studies' reports over the report's runs (e.g. a benchmark's harm sections)."""
    for report in data.study_reports:
        title = report.title
        blocks = report.blocks
        if data.audit and report.summary:  # page 1 gave every verdict: marks and tables
            title, blocks = f"{title}: the study's own summary", report.summary
        doc.add(f"<h2 style='page-break-before: always'>{e(title)}</h2>")
        for block in blocks:
            _block(block, doc)


def _p_text(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "—"
    return "&lt; .001" if p < 0.001 else f"{p:.3f}"


def _metric_table(section: RunSection, doc: _Doc, notes: bool = True) -> None:
    """Every metric of the run by its name for people with its one-line meaning (the keys
    stay in the CSV export); p-value (with the Benjamini–Hochberg adjusted value over the
    run's tests beside it) and mark columns only when some metric has one. `notes=False`:
    only the run's own footnote (why a value is undefined); the notes every run shares are
    said once (`APPENDIX_NOTES`)."""
    from gbdesk.maths.stats import adjusted_p_values

    metrics = section.metrics
    probe = section.probe
    with_p = any(m.p_value is not None for m in metrics.values())
    adjusted = adjusted_p_values(metrics) if with_p else {}
    # an audit's appendix: no mark column (page 1 gives each verdict once)
    with_mark = notes and any(n in probe.mark_definitions for n in metrics)
    with_ppi = any((m.details or {}).get("kind") == "ppi" for m in metrics.values())
    rows = []
    cut_any = undefined_any = too_few_any = False
    for name, m in metrics.items():
        meaning = probe.capabilities.presentation.metric_description(name) if notes else ""
        label = f"{e(probe.capabilities.presentation.metric_title(name))}"
        if meaning:
            label += f"<br><span class='muted'>{e(meaning, 160)}</span>"
        shown = shown_ci(probe, name, m)
        cut = bool(cut_ends(probe, name, m))
        interval = fmt_ci(shown) if shown is not None else ""
        cut_any |= cut
        value = fmt(m.value)
        if math.isnan(m.value):
            value = "—<sup>‡</sup>"
            undefined_any = True
            interval = ""
        elif shown is None and math.isnan(m.ci[0]):
            interval = "—<sup>†</sup>"
        elif shown is None:
            interval = "—<sup>§</sup>"
            too_few_any = True
        cells = [
            f"<td>{label}</td><td>{value}</td><td>{interval}{'<sup>*</sup>' if cut else ''}</td>"
        ]
        if with_ppi:
            d = m.details or {}
            reason = e(d.get("reason", ""))
            note = "" if d.get("valid") else f" <span class='muted'>({reason})</span>"
            cells.append(
                f"<td>{fmt(d.get('automatic_value'))}{note}</td><td>{fmt(d.get('bias'))}</td>"
            )
        if with_p:
            cells.append(f"<td>{_p_text(m.p_value)}</td><td>{_p_text(adjusted.get(name))}</td>")
        if with_mark:
            v = metric_verdict(probe, name, m)
            cells.append(_mark_cell(v, "") if v is not None else "<td></td>")
        rows.append(f"<tr>{''.join(cells)}<td>{m.n}</td></tr>")
    head = "<th>Metric</th><th>Value</th><th>95 % CI</th>"
    head += "<th>Automatic only</th><th>Labeller bias</th>" if with_ppi else ""
    head += ("<th>p</th><th>p, BH-adjusted</th>" if with_p else "") + (
        "<th>Mark</th>" if with_mark else ""
    )
    title = "Metrics" if len(metrics) <= 12 else f"All {len(metrics)} metrics"
    footnotes = []
    if undefined_any:
        why = probe.capabilities.presentation.why_undefined
        reasons = sorted(
            {why(n, metrics) or UNDEFINED_VALUE for n, m in metrics.items()
             if math.isnan(m.value)}
        )  # fmt: skip
        footnotes.append("‡ " + "; ".join(reasons) + ".")
    if any(
        math.isnan(m.ci[0]) and not math.isnan(m.value) and shown_ci(probe, n, m) is None
        for n, m in metrics.items()
    ):
        footnotes.append(f"† {UNDEFINED_CI}.")
    if too_few_any:
        footnotes.append(
            f"§ No interval: it would have zero width from fewer than {MIN_ITEMS} items, "
            "which is not certainty (a few answers that happen to agree)."
        )
    if cut_any:
        footnotes.append(
            "* The interval is shown within what the metric can be (e.g. 0–100 % for a "
            "share): the bootstrap's normal fit reached past it, as it does with few items "
            "(the CSV has both). The marks are the study's, from the uncut interval."
        )
    held = [n for n, m in metrics.items() if m.ci_shown is not None]
    if held:
        own = "; ".join(
            f"{probe.capabilities.presentation.metric_title(n)} {fmt_ci(metrics[n].ci)}"
            for n in held
            if n in probe.mark_definitions and not math.isnan(metrics[n].ci[0])
        )
        footnotes.append(
            "95 % CI: the interval to quote, which holds its level near the bounds and at a "
            "gap of 0 (docs/metrics.md); verdicts decide on it. The study's own interval "
            "(its bootstrap), from which its mark comes, is in the CSV (ci_low, ci_high)"
            + (f": {own}." if own else ".")
        )
    if not notes:
        footnotes = footnotes[:1] if undefined_any else []
    note = (
        f"<p class='muted'>BH-adjusted: the Benjamini–Hochberg false-discovery-rate "
        f"adjustment over the run's {len(adjusted)} tests; a result counts as established "
        "when the adjusted value is below 0.05.</p>"
        if with_p and notes
        else ""
    )
    table = f"<table width='100%'><tr>{head}<th>n</th></tr>{''.join(rows)}</table>"
    if not notes:  # an audit's appendix: small print
        table = table.replace("<td>", "<td class='m'>").replace("<th>", "<th class='m'>")
    doc.add(
        (f"<h3>{title}</h3>{note}" if notes else "")
        + table
        + "".join(f"<p class='muted'>{e(x)}</p>" for x in footnotes)
    )


#: fewer reviews of a label than this: its precision and recall get a caution
FEW_REVIEWED = 20


def _unfinished(data: ReportData, doc: _Doc) -> None:
    """Page 1, before anything else: which runs are not complete (their findings, marks
    and numbers cover only the attempts made so far)."""
    notes = [f"run {s.run_id} ({e(s.probe.card.title)}): {e(s.unfinished)}" for s in data.runs
             if s.unfinished]  # fmt: skip
    if notes:
        doc.add(
            "<p class='notice'><b>Unfinished "
            + ("runs" if len(notes) > 1 else "run")
            + "</b> — "
            + "; ".join(notes)
            + ". Their findings, marks and numbers below cover only what was generated so far "
            "and may change when the run is completed (gbdesk resume RUN).</p>"
        )


def _depends_on_wording(data: ReportData, doc: _Doc) -> None:
    """Page 1, before the findings: the verdicts that change with the wording of the
    prompts (the findings and numbers are the reported runs' own wording's)."""
    lines = data.depends_on_wording()
    if lines:
        doc.add(
            f"<p class='notice'><b>Depends on the wording:</b> {e('; '.join(lines))}. The "
            "findings and numbers below are the reported runs' own wording's; see "
            f"“{e(SECTION_TITLE)}”.</p>"
        )


def _wordings(data: ReportData, doc: _Doc) -> None:
    """The reported runs' wording families: each shown metric under every wording."""
    blocks = section_blocks(data.wordings)
    if not blocks:
        return
    doc.add(f"<h2 style='page-break-before: always'>{e(SECTION_TITLE)}</h2>")
    for block in blocks:
        _block(block, doc)


def _findings(data: ReportData, doc: _Doc, limit: int = 12) -> None:
    """Page 1: one plain sentence per finding, most important first, with its numbers and
    where the evidence is."""
    found = data.findings()
    if not found:
        return
    items = []
    for f in found[:limit]:
        section = next(s for s in data.runs if s.run_id == f.run_id)
        detail = f.detail(section.probe)
        where = f"run {f.run_id}, {model_name(f.model)}, {e(f.probe_title)}"
        if section.unfinished:
            where = f"<b class='notice'>{e(section.unfinished)}</b> · " + where
        if f.finding.evidence is not None:
            where += f"; evidence: {e(f.finding.evidence_title or 'the run’s items')}"
        mark = ""
        imp = f.finding.importance
        if imp >= 30 and f.decided:  # an undecided mark is never coloured as a result
            color = MARK_COLORS["D" if imp >= 85 else "C" if imp >= 60 else "B"]
            mark = f"<b style='color:{color}'>●</b> "
        elif not f.decided:
            mark = "<span class='muted'>○</span> "
        items.append(
            f"<li>{mark}{e(f.sentence)}<br><span class='muted'>{e(detail)}"
            f"{' · ' if detail else ''}{where}</span></li>"
        )
    rest = "".join(
        f"<li>{'○ ' if not f.decided else ''}{e(f.sentence)} <span class='muted'>(run "
        f"{f.run_id}, {e(f.probe_title)})</span></li>"
        for f in found[limit:]
    )  # every finding is in the report: the later ones in one line each
    more = (
        f"<p class='muted'>{len(found) - limit} further findings, less important or from "
        f"fewer items:</p><ol start='{limit + 1}'>{rest}</ol>"
        if rest
        else ""
    )
    compared = "".join(
        f"<li>{e(line)}</li>" for c in data.comparisons for line in c.summary().splitlines()
    )
    if compared:
        more += f"<p><b>Comparisons</b> (paired, item by item):</p><ul>{compared}</ul>"
    doc.add(f"<h2>Findings</h2><ol>{''.join(items)}</ol>{more}")


def _comparisons(data: ReportData, doc: _Doc) -> None:
    """Paired comparisons (B − A over the same items): what is established, then a table."""
    if not data.comparisons:
        return
    doc.add("<h2 style='page-break-before: always'>Comparisons</h2>")
    doc.add(
        "<p class='muted'>Runs of the same probe compared item by item: a paired bootstrap "
        "over the items both runs share (1,000 resamples) gives each metric's difference "
        "B − A a 95 % interval and a p-value; Benjamini–Hochberg over each comparison's "
        "tested metrics. A difference is established when the adjusted p is below 0.05 and "
        "the interval excludes 0.</p>"
    )
    for c in data.comparisons:
        probe = get_probe(c.probe)
        doc.add(
            f"<h3>{e(probe.card.title)}: run {c.run_b} (B: {model_name(c.model_b)}) against run "
            f"{c.run_a} (A: {model_name(c.model_a)}), {c.items} items paired</h3>"
        )
        for w in c.warnings:
            doc.add(f"<p class='notice'>{e(w)}</p>")
        doc.add("".join(f"<p><b>{e(line)}</b></p>" for line in c.summary().splitlines()))
        rows = []
        for m in c.metrics.values():
            if m.tested:
                cells = (
                    f"<td>[{fmt(m.ci[0])}, {fmt(m.ci[1])}]</td><td>{_p_text(m.p)}</td>"
                    f"<td>{_p_text(m.p_adj)}</td>"
                )
            else:
                cells = f"<td colspan='3' class='muted'>not tested: {e(m.reason or '')}</td>"
            style = " style='background:#e0f2fe'" if m.established else ""
            rows.append(
                f"<tr{style}><td>{e(m.title or m.name)}</td><td>{fmt(m.a)}</td>"
                f"<td>{fmt(m.b)}</td><td>{fmt(m.diff)}</td>{cells}</tr>"
            )
        doc.add(
            "<table width='100%'><tr><th>Metric</th><th>A</th><th>B</th><th>B − A</th>"
            "<th>95 % CI</th><th>p</th><th>p, BH-adjusted</th></tr>"
            f"{''.join(rows)}</table>"
        )


def _seconds(s: Any) -> str:
    return duration(float(s)) if isinstance(s, (int, float)) else ""


def _audit(data: ReportData, doc: _Doc) -> None:
    """The plan and budget of the audit the report ends: per probe its items × prompts ×
    attempts, the answers made, the time it took and its run."""
    audit = data.audit
    if audit is None:
        return
    rows = []
    for p in audit.plan:
        rows.append(
            f"<tr><td>{e(p.title)}</td>"
            f"<td>{p.items:,} × {p.prompts} × {p.attempts} = "
            f"{p.planned:,}</td><td>{p.generations:,}</td>"
            f"<td>{e(p.expected or _seconds(p.spent_s))}</td>"
            f"<td>{e(', '.join(str(r) for r in p.runs) or 'not run')}</td></tr>"
        )
    doc.add(
        f"<h2>Audit plan</h2><p>Budget {e(audit.budget)} on "
        f"{model_name(audit.model)}; measured speed {e(audit.speed)}. "
        f"{e(audit.note)}</p>"
        "<table width='100%'><tr><th class='d' width='40%'>Probe</th>"
        "<th class='d' width='28%'>Items × prompts × attempts = answers</th><th class='d' "
        "width='12%'>Answers made</th><th class='d' width='12%'>Time spent</th><th "
        f"class='d' width='8%'>Run</th></tr>{''.join(rows).replace('<td>', '<td class=d>')}"
        "</table>"
    )


def curves_chart(curves: dict[str, dict[str, Any]], title: str, width: int = 1400) -> QImage:
    """Racialized subordination ratio (log2 axis) against the likelihood threshold."""
    title = _label(title, 200)
    height, left, right, top, bottom = 620, 110, 260, 56, 70
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    series = {
        key: [(t, log2_or_nan(r)) for t, r in zip(c["thresholds"], c["ratios"], strict=True)]
        for key, c in curves.items()
    }
    ys = [y for pts in series.values() for _, y in pts if not math.isnan(y)]
    lo_y, hi_y = (min([-1.0, *ys]), max([1.0, *ys])) if ys else (-1.0, 1.0)
    plot = QRectF(left, top, width - left - right, height - top - bottom)

    def pt(t: float, y: float) -> QPointF:
        return QPointF(
            plot.left() + t / 100 * plot.width(),
            plot.bottom() - (y - lo_y) / (hi_y - lo_y) * plot.height(),
        )

    font = QFont("DejaVu Sans")
    font.setPixelSize(22)
    p.setFont(font)
    p.setPen(QColor("#111827"))
    p.drawText(QRectF(0, 6, width, 40), Qt.AlignmentFlag.AlignHCenter, _fit(title, font, width))
    p.setPen(QPen(QColor("#9ca3af"), 1))
    p.drawRect(plot)
    for k, text in ratio_ticks(lo_y, hi_y):
        y = pt(0, k).y()
        p.setPen(QPen(QColor("#6b7280"), 2, Qt.PenStyle.DashLine) if k == 0 else QColor("#e5e7eb"))
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
        p.setPen(QColor("#374151"))
        p.drawText(
            QRectF(0, y - 15, left - 10, 30),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            text,
        )
    for t in range(0, 101, 20):
        p.drawText(
            QRectF(pt(t, lo_y).x() - 40, plot.bottom() + 6, 80, 30),
            Qt.AlignmentFlag.AlignHCenter,
            f"{t} %",
        )
    p.drawText(
        QRectF(plot.left(), plot.bottom() + 34, plot.width(), 30),
        Qt.AlignmentFlag.AlignHCenter,
        "name likelihood threshold",
    )
    for i, (key, pts) in enumerate(series.items()):
        color = QColor(RUN_COLORS[i % len(RUN_COLORS)])
        p.setPen(QPen(color, 3))
        prev = None
        for t, y in pts:
            cur = None if math.isnan(y) else pt(t, y)
            if prev is not None and cur is not None:
                p.drawLine(prev, cur)
            prev = cur
        p.drawText(
            QRectF(plot.right() + 12, top + 30 * i, right - 14, 28),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            _label(key),
        )
    p.end()
    return image


def _cell(cell: Any) -> str:
    """A table cell; mark letters in their colours."""
    if isinstance(cell, MarkCells):
        if not cell.letters:
            return f"<td class='muted'>{e(cell.empty)}</td>"
        parts = []
        for i, m in enumerate(cell.letters):
            if cell.is_decided(i):
                parts.append(
                    f"<b style='color:{MARK_COLORS[m]};background:{MARK_FILLS[m]}'>"
                    f"&nbsp;{m}&nbsp;</b>"
                )
            else:  # the study's letter with what the interval allows, uncoloured
                parts.append(f"<span class='muted'>{e(cell.letter_text(i))}</span>")
        return f"<td>{' '.join(parts)}</td>"
    return f"<td>{e(cell)}</td>"


#: a paragraph's style as HTML attributes ("mono": a digest, its spaces kept)
PARAGRAPH_STYLES = {
    "muted": " class='muted'",
    "notice": " class='notice'",
    "mono": " class='mono' style='white-space: pre-wrap'",
}


def _block(block: Block, doc: _Doc) -> None:
    """Lay out one report block (the same for every study)."""
    if isinstance(block, Heading):
        doc.add(f"<h3>{e(block.text)}</h3>")
    elif isinstance(block, Paragraph):
        style = PARAGRAPH_STYLES.get(block.style, "")
        doc.add(f"<p{style}>{e(block.text)}</p>")
    elif isinstance(block, Table):
        if block.title:
            doc.add(f"<h3>{e(block.title)}</h3>")
        if block.caption:
            doc.add(f"<p class='muted'>{e(block.caption)}</p>")
        if block.rows:
            head = "".join(f"<th>{e(c)}</th>" for c in block.columns)
            body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in block.rows)
            width = " width='100%'" if len(block.columns) > 2 else ""
            doc.add(f"<table{width}><tr>{head}</tr>{body}</table>")
    elif isinstance(block, IntervalChart):
        rows = [(r.label, r.value, r.lo, r.hi, RUN_COLORS[0]) for r in block.rows]
        if block.marks is not None:
            image = ci_chart(rows, block.marks, block.x_range, block.title, row_height=60)
        else:
            log = block.kind == "log_ratio"
            image = ci_chart(
                rows, None, block.x_range, block.title, log=log, row_height=40 if log else 46
            )
        doc.add(f"<p>{doc.image(image, 440)}</p>")
    elif isinstance(block, CurveChart):
        image = curves_chart(
            {
                k: {"thresholds": [x for x, _ in pts], "ratios": [y for _, y in pts]}
                for k, pts in block.series.items()
            },
            block.title,
        )
        doc.add(f"<p>{doc.image(image, 440)}</p>")


def _section(section: RunSection, doc: _Doc, label_mode: str) -> None:
    """One run's detail: its charts, tables, every metric and its review."""
    probe = section.probe
    doc.add(
        f"<h2 style='page-break-before: always'>Run {section.run_id}: "
        f"{e(probe.card.title)} — {model_name(section.model_label)}</h2>"
    )
    if section.is_default_model:
        from gbdesk.engine.default_model import TINY_MODEL_NOTICE

        doc.add(f"<p class='notice'>{e(TINY_MODEL_NOTICE)}</p>")
    if section.no_answers:
        doc.add(
            f"<p class='notice'><b>No answers yet</b> — run {section.run_id} "
            f"({e(section.run.get('status') or 'created')}) has 0 of "
            f"{int(section.run.get('attempts_total') or 0):,} "
            f"{e(probe.capabilities.running.unit)} made, so nothing is measured: no chart, "
            f"no metric, no mark. {e(probe.card.measures)}</p>"
        )
        return
    doc.add(
        f"<p class='muted'>Numbers from {e(labels_used(section, label_mode))}. "
        f"{e(probe.card.measures)}</p>"
    )
    for block in section.blocks:
        _block(block, doc)
    _metric_table(section, doc)
    _review(section, doc)


def _review(section: RunSection, doc: _Doc) -> None:
    """The run's detector quality and what a person reviewed."""
    probe = section.probe
    if not probe.capabilities.review.reviewable:
        return  # e.g. perplexities: no detector to review
    review = section.review
    doc.add("<h3>Detector quality and review</h3>")
    if review.label_accuracy is not None:  # measured on the random sample, or says none was
        doc.add(f"<p><b>Label accuracy.</b> {e(review.label_accuracy.text)}</p>")
    summary = probe.capabilities.review.quality_summary(review.quality) if review.reviewed else None
    if summary:
        doc.add(
            f"<p>{review.reviewed:,} of {review.attempts:,} stories were reviewed by a person "
            f"and {review.corrected:,} corrected. {e(summary)} Labels by "
            f"{e(section.detector_words)}.</p>"
        )
    elif review.reviewed:
        per = "".join(
            f"<tr><td>{e(label)}</td><td>{fmt(v['precision'], 2)} "
            f"<span class='muted'>(n = {v.get('predicted', 0)})</span></td>"
            f"<td>{fmt(v['recall'], 2)} <span class='muted'>(n = {v['support']})</span></td></tr>"
            for label, v in review.per_label.items()
        )
        few = [
            label
            for label, v in review.per_label.items()
            if min(v.get("support") or 0, v.get("predicted") or 0) < FEW_REVIEWED
        ]
        caution = (
            f"<p class='notice'>Fewer than {FEW_REVIEWED} reviewed generations for "
            f"{e(', '.join(few))}: their precision and recall rest on so few reviews that one "
            "more review can move them by several points — review more before citing them.</p>"
            if few
            else ""
        )
        doc.add(
            f"<p>{review.reviewed:,} of {review.attempts:,} generations were reviewed by a "
            f"person; {review.corrected:,} labels were corrected (agreement "
            f"{fmt(review.accuracy, 2)}). Precision and recall of "
            f"{e(section.detector_words)} against the human labels (n: the reviewed "
            "generations each figure rests on — those the detector gave the label, for "
            "precision; those a person gave it, for recall):</p>"
            "<table><tr><th>Label</th><th>Precision</th><th>Recall</th>"
            f"</tr>{per}</table>{caution}"
        )
    else:
        doc.add(
            f"<p>No generation of this run was reviewed; all {review.attempts:,} labels "
            f"are {e(section.detector_words)}'s.</p>"
        )


#: the notes every run of an audit's appendix shares, said once before its sections
APPENDIX_NOTES = (
    "One section per run: every metric with its 95 % interval (the interval to quote, which "
    "holds its level near the bounds and at a gap of 0 — docs/metrics.md; cut within what "
    "the metric can be; none from fewer than {min_items} items, where it would have zero "
    "width), the p-values with their Benjamini–Hochberg adjustment over the run's tests "
    "(established below 0.05), the groups' rates and impact ratios where the probe decides "
    "about people, and what a person reviewed. The study's own intervals (its bootstrap), "
    "from which its reference marks come, are in the CSV export (ci_low, ci_high). Page 1's "
    "verdicts are the audit's, on its interval valid over all its looks."
)


def cut_note(section: RunSection, data: ReportData) -> str:
    """An audit's run that is not complete, in the audit's words: "16 of 745 answers made,
    cut by the budget" (the audit ran to its end) or "…, stopped" (it was stopped); ""
    when complete."""
    if not section.unfinished:
        return ""
    run = section.run
    done, total = int(run.get("attempts_done") or 0), int(run.get("attempts_total") or 0)
    log_ = data.test_log
    ended = log_ is not None and log_.audit is not None and log_.audit.status == "done"
    why = "cut by the budget" if ended else "stopped"
    return f"{done:,} of {total:,} {section.probe.capabilities.running.unit} made, {why}"


def _compact_section(section: RunSection, doc: _Doc, label_mode: str, cut: str = "") -> None:
    """A run of an audit's appendix: its heading, its tables (group tables included), every
    metric, and the review when a person reviewed some of its labels."""
    probe = section.probe
    unfinished = f" <span class='notice'>({e(cut)})</span>" if cut else ""
    doc.add(
        f"<h3>Run {section.run_id}: {e(probe.card.title)} — "
        f"{model_name(section.model_label)}{unfinished}</h3>"
    )
    if section.no_answers:
        doc.add(f"<p class='muted'>No answers: nothing is measured. {e(probe.card.measures)}</p>")
        return
    doc.add(f"<p class='muted'>{e(probe.card.measures)}</p>")
    after_table = False
    for block in section.blocks:
        if isinstance(block, Table) or (isinstance(block, Paragraph) and after_table):
            _block(block, doc)
        after_table = isinstance(block, Table)
    _metric_table(section, doc, notes=False)
    if section.review.reviewed:
        _review(section, doc)


def _common_notes(data: ReportData, rows: list[Any], doc: _Doc) -> None:
    """What applies to every probe of an audit, said once after page 1's table: the
    labels, the demo model, the verdicts from few items, the runs cut by the budget, the
    verdicts that depend on the wording."""
    from gbdesk.engine.default_model import TINY_MODEL_NOTICE

    notes = []
    reviewed = sum(s.review.reviewed for s in data.runs)
    answers = sum(s.review.attempts for s in data.runs)
    if not reviewed:
        notes.append(
            f"Every number comes from automatic labels (each probe's own detector, named in "
            f"the test log); none of the {answers:,} answers was reviewed by a person."
        )
    else:
        notes.append(
            "Labels: "
            + "; ".join(f"run {s.run_id}: {labels_used(s, data.label_mode)}" for s in data.runs)
            + "."
        )
    if any(s.is_default_model for s in data.runs):
        notes.append(TINY_MODEL_NOTICE)
    few = [r for r in rows if r.verdict.too_few]
    if few:
        notes.append(
            f"{len(few)} verdict{'s rest' if len(few) != 1 else ' rests'} on fewer than "
            f"{MIN_ITEMS} items with a readable answer: “no mark yet”, whatever the interval "
            "says."
        )
    cut_runs = [f"run {s.run_id} ({s.probe.card.title}: {cut_note(s, data)})"
                for s in data.runs if s.unfinished]  # fmt: skip
    if cut_runs:
        notes.append(
            "Not every planned answer was made: " + "; ".join(cut_runs) + ". Their numbers "
            "cover the answers made; the audit's own command (gbdesk audit with the same "
            "model and harness) continues a stopped audit."
        )
    lines = data.depends_on_wording()
    if lines:
        notes.append(f"Depends on the wording: {'; '.join(lines)} (see “{SECTION_TITLE}”).")
    doc.add("<h2>Notes that apply to every probe</h2><ul>"
            + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")  # fmt: skip


def _run_appendix(data: ReportData, doc: _Doc) -> None:
    """Appendix A of an audit: one compact section per run."""
    doc.add("<h2 style='page-break-before: always'>Appendix A: the runs</h2>")
    doc.add(f"<p class='muted'>{e(APPENDIX_NOTES.format(min_items=MIN_ITEMS))}</p>")
    from gbdesk.report.groups import METHOD

    if any(s.groups for s in data.runs):
        doc.add(f"<p class='muted'>Group tables: {e(METHOD)}</p>")
    for section in data.runs:
        _compact_section(section, doc, data.label_mode, cut_note(section, data))


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


def _cards(data: ReportData, doc: _Doc) -> None:
    doc.add("<h2 style='page-break-before: always'>Probe cards</h2>")
    seen = set()
    for section in data.runs:
        probe = section.probe
        if probe.name in seen:
            continue
        seen.add(probe.name)
        card = probe.card
        harms = "".join(f"<li>{e(h)}</li>" for h in card.harms)
        limits = "".join(f"<li>{e(x)}</li>" for x in card.limitations)
        doc.add(
            f"<h3>{e(card.title)} ({e(probe.name)})</h3><p>{e(card.measures)}</p>"
            f"<p><b>Harms</b></p><ul>{harms}</ul><p><b>Method.</b> {e(card.method)}</p>"
            f"<p><b>Data.</b> {e(card.data_source)} <b>Size.</b> {e(card.size)} "
            f"<b>Licence.</b> {e(card.licence)}</p>"
            f"<p><b>Limitations</b></p><ul>{limits}</ul>"
            f"<p class='muted'>{e(card.citation)}</p>"
        )


def _card_table(data: ReportData, doc: _Doc) -> None:
    """An audit's probe cards in one table: what each probe measures, its data, licence
    and citation (the whole cards: `gbdesk probes --card`)."""
    seen, rows = set(), []
    for section in data.runs:
        probe = section.probe
        if probe.name in seen:
            continue
        seen.add(probe.name)
        card = probe.card
        rows.append(
            f"<tr><td class='m'><b>{e(card.title)}</b><br><span class='muted'>"
            f"{e(card.citation)}</span></td><td class='m'>{e(card.measures)}</td>"
            f"<td class='m'>{e(card.data_source)} <span class='muted'>{e(card.licence)}"
            "</span></td></tr>"
        )
    doc.add(
        "<h2 style='page-break-before: always'>Probe cards</h2><p class='muted'>Each "
        "probe's card in one line; its harms, method and limitations: gbdesk probes --card "
        "PROBE.</p><table width='100%'><tr><th class='m' width='30%'>Probe "
        "<span class='muted'>(citation)</span></th><th class='m' width='42%'>Measures</th>"
        f"<th class='m' width='28%'>Data, licence</th></tr>{''.join(rows)}</table>"
    )


def _audit_appendix(data: ReportData, doc: _Doc) -> None:
    """An audit's appendix B: each model's chat template once, the datasets (each run's
    settings, seeds and versions are in the test log)."""
    doc.add("<h2 style='page-break-before: always'>Appendix B: templates and datasets</h2>")
    seen = set()
    for section in data.runs:
        template = chat_template(section)
        if not template or section.model_label in seen:
            continue
        seen.add(section.model_label)
        doc.add(
            f"<p><b>Chat template of {model_name(section.model_label)}</b> (from the GGUF "
            f"file)</p><pre class='mono'>{e(template, 20_000, 'the model file')}</pre>"
        )
    _datasets(data, doc, small=True)


def _glossary(doc: _Doc) -> None:
    from gbdesk.support.glossary import GLOSSARY

    rows = "".join(
        f"<tr><th width='18%'>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in GLOSSARY.items()
    )
    doc.add(f"<h2>Glossary</h2><table width='100%'>{rows}</table>")


def _appendix(data: ReportData, doc: _Doc) -> None:
    doc.add("<h2 style='page-break-before: always'>Appendix: configuration</h2>")
    for section in data.runs:
        rows = "".join(
            f"<tr><th width='28%'>{e(k)}</th><td>{e(v)}</td></tr>"
            for k, v in configuration(section)
        )
        doc.add(f"<h3>Run {section.run_id}</h3><table width='100%'>{rows}</table>")
        template = chat_template(section)
        if template:
            doc.add(
                "<p><b>Chat template</b> (from the GGUF file)</p>"
                f"<pre class='mono'>{e(template, 20_000, 'the model file')}</pre>"
            )
    _datasets(data, doc)


def _datasets(data: ReportData, doc: _Doc, small: bool = False) -> None:
    """The datasets shipped with gbdesk: title, source, licence (`small`: small print)."""
    if data.datasets:
        rows = "".join(
            f"<tr><td>{e(d.get('title', k))}</td><td>{e(d.get('source', ''))}</td>"
            f"<td>{e(d.get('licence', ''))}</td></tr>"
            for k, d in data.datasets.items()
        )
        table = f"<tr><th>Dataset</th><th>Source</th><th>Licence</th></tr>{rows}"
        if small:
            table = table.replace("<td>", "<td class='m'>").replace("<th>", "<th class='m'>")
        doc.add(f"<h3>Datasets shipped with gbdesk</h3><table width='100%'>{table}</table>")


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


def _print(data: ReportData, doc: _Doc, out: Path, models: str) -> Path:
    """Lay out and print the document to `out` (whole or not at all)."""
    doc.doc.setDefaultStyleSheet(CSS)
    font = QFont("DejaVu Sans")
    font.setPointSizeF(9)
    font.setFeature(QFont.Tag("liga"), 0)  # a digest or SHA-256 copies as printed ("ff", not "ﬀ")
    doc.doc.setDefaultFont(font)
    doc.doc.setHtml("<html><body>" + "".join(doc.parts) + "</body></html>")
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setTitle(_label(f"gbdesk bias audit — {models}", 200))
    writer.setCreator(f"gbdesk {data.app_version}")
    _attach_digest(data, writer)
    writer.setResolution(300)
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4),
            QPageLayout.Orientation.Portrait,
            QMarginsF(16, 14, 16, 14),
            QPageLayout.Unit.Millimeter,
        )
    )
    doc.doc.print_(writer)
    del writer  # ends the PDF (its trailer) in the buffer
    buffer.close()
    data_bytes = bytes(buffer.data().data())
    if not data_bytes:
        raise UserError(f"could not lay out the PDF for {out}")
    return write_bytes(out, data_bytes, check=check_pdf)


#: the sign-off after the test log: the reviewer's conclusion, then who signs
SIGN_OFF = (
    "<h2 style='page-break-before: always'>Sign-off</h2><p>Reviewer's conclusion (what the "
    "audit shows about this model, and what it does not):</p><table width='100%'><tr><td>"
    + "&nbsp;<br>"
    * 9
    + "</td></tr>"
    "</table><p></p><table width='100%'><tr><th width='22%'></th><th width='26%'>Name</th>"
    "<th width='20%'>Role</th><th width='12%'>Date</th><th width='20%'>Signature</th></tr>"
    + "".join(
        f"<tr><td>{who}</td><td>&nbsp;<br>&nbsp;</td><td></td><td></td><td></td></tr>"
        for who in ("Reviewer responsible", "Second reviewer", "Approved by")
    )
    + "</table>"
)


def _test_log(data: ReportData, doc: _Doc) -> None:
    """The final section: the dated test log (`report.test_log`), then the sign-off."""
    from gbdesk.report.test_log import log_blocks

    if data.test_log is None:
        return
    doc.add("<h2 style='page-break-before: always'>Test log</h2>")
    for block in log_blocks(data.test_log):
        _block(block, doc)
    doc.add(SIGN_OFF)


def _attach_digest(data: ReportData, writer: QPdfWriter) -> None:
    """The digest of the report's data (`report.digest`) as the PDF's attachment, read back
    by `gbdesk verify` (pypdf: `PdfReader(path).attachments`)."""
    from PySide6.QtCore import QByteArray

    from gbdesk.report.digest import ATTACHMENT

    if data.digest is None:
        return
    audit = data.audit.audit_id if data.audit is not None else None
    manifest = data.digest.manifest_bytes(
        gbdesk=data.app_version, made_at=data.created_at, audit_id=audit
    )
    writer.addFileAttachment(ATTACHMENT, QByteArray(manifest), "application/json")


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
