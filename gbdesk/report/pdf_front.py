"""What the report says across its runs: page 1 (unfinished runs, findings, the
verdict table), the studies' own reports, comparisons, wordings, an audit's plan and
the notes said once.
"""

from __future__ import annotations

from typing import Any

from gbdesk.analysis.shown import metric_verdict
from gbdesk.contract import get_probe
from gbdesk.maths.stats import MARK_MEANINGS
from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.report.content import ReportData, labels_used
from gbdesk.report.pdf_blocks import _block, _mark_cell, _p_text
from gbdesk.report.pdf_layout import _Doc, e, model_name
from gbdesk.report.pdf_sections import cut_note
from gbdesk.report.rewording import SECTION_TITLE, section_blocks
from gbdesk.support.format import MARK_COLORS, duration, fmt


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
