"""One run's sections: its detail in a report of runs (`_section`: charts, tables,
metrics, review), its compact section in an audit's appendix A.
"""

from __future__ import annotations

from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.report.content import ReportData, RunSection, labels_used
from gbdesk.report.pdf_blocks import _block
from gbdesk.report.pdf_layout import _Doc, e, model_name
from gbdesk.report.pdf_metrics import _metric_table
from gbdesk.support.blocks import Paragraph, Table
from gbdesk.support.format import fmt

#: fewer reviews of a label than this: its precision and recall get a caution
FEW_REVIEWED = 20


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


def _run_appendix(data: ReportData, doc: _Doc) -> None:
    """Appendix A of an audit: one compact section per run."""
    doc.add("<h2 style='page-break-before: always'>Appendix A: the runs</h2>")
    doc.add(f"<p class='muted'>{e(APPENDIX_NOTES.format(min_items=MIN_ITEMS))}</p>")
    from gbdesk.report.groups import METHOD

    if any(s.groups for s in data.runs):
        doc.add(f"<p class='muted'>Group tables: {e(METHOD)}</p>")
    for section in data.runs:
        _compact_section(section, doc, data.label_mode, cut_note(section, data))
