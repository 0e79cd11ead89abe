"""The report's blocks laid out as HTML (`_block`: headings, paragraphs, tables,
charts — the same for every study) and the cells they share (a verdict's mark, a
p-value).
"""

from __future__ import annotations

import math
from typing import Any

from gbdesk.analysis.shown import mark_cell
from gbdesk.maths.stats import MARK_MEANINGS
from gbdesk.maths.verdicts import Verdict
from gbdesk.report.pdf_charts import ci_chart, curves_chart
from gbdesk.report.pdf_layout import _Doc, e
from gbdesk.support.blocks import (
    Block,
    CurveChart,
    Heading,
    IntervalChart,
    MarkCells,
    Paragraph,
    Table,
)
from gbdesk.support.format import MARK_COLORS, MARK_FILLS, RUN_COLORS


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


def _p_text(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "—"
    return "&lt; .001" if p < 0.001 else f"{p:.3f}"


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
