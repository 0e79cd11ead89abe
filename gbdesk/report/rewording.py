""" "Does it survive a rewording?" as report blocks (no Qt): a run's wording family
(`gbdesk.analysis.wordings`) shown metric by metric — a chart of the metric under each
wording with its interval, the range, the wording's share of the variance and the
stability sentence — and the verdicts that depend on the wording, in one line each for
the report's first page. The PDF lays the blocks out (`pdf.py`) and the Results pane shows
the same blocks (`gbdesk.ui.blocks_view`).

The headline numbers stay wording 0's (or the reported run's own): nothing here is
folded into them; the spread is shown beside them.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

from gbdesk.analysis.wordings import (
    WordingReport,
    WordingSpread,
    orders,
    wording_family,
    wording_report,
)
from gbdesk.contract import Probe, get_probe
from gbdesk.store import Store
from gbdesk.support.blocks import Block, ChartRow, Heading, IntervalChart, Paragraph
from gbdesk.support.errors import GbdeskError
from gbdesk.support.format import fmt

log = logging.getLogger(__name__)

SECTION_TITLE = "Does it survive a rewording?"

EXPLANATION = (
    "The same items asked under other wordings of the prompt (the instruction, the answer "
    "format, the order of the options; never an item's content). Each chart shows a metric "
    "under every wording with its 95 % interval; the headline numbers, findings and marks "
    "elsewhere stay each run's own (wording 0: the study's own prompt, unless the run was "
    "asked under another). Range: the "
    "largest minus the smallest value. Wording's share: of the metric's variance over a "
    "wording and a draw of items, the wording's part (a cluster bootstrap over the items "
    "every wording has); p: the bootstrap test of no wording effect. A verdict holds when "
    "every wording's interval decides the same mark, or when all the intervals overlap."
)


@dataclass
class FamilyView:
    """One wording family as the report and the Results pane show it."""

    report: WordingReport
    probe: Probe
    model: str
    #: the metrics shown: the marked ones, else the probe's headline metric
    metrics: list[str] = field(default_factory=list)

    @property
    def runs(self) -> list[int]:
        return list(self.report.family.values())

    def title(self) -> str:
        runs = ", ".join(str(r) for r in self.runs)
        return (
            f"{self.probe.card.title} — {self.model}: {len(self.report.family)} wordings "
            f"(runs {runs})"
        )

    def depends(self) -> list[WordingSpread]:
        """The shown metrics whose verdict depends on the wording."""
        return [s for s in self.report.depends_on_wording() if s.metric in self.metrics]


def shown_metrics(report: WordingReport, probe: Probe) -> list[str]:
    """The marked metrics of the family, else the probe's first headline metric (else its
    first metric)."""
    marked = [n for n, s in report.spreads.items() if s.marked and s.measured]
    if marked:
        return marked
    headline = [n for n in probe.headline_metrics if n in report.spreads]
    return headline[:1] or list(report.spreads)[:1]


def family_view(
    store: Store, run_id: int, label_mode: str = "auto", model: str = ""
) -> FamilyView | None:
    """The run's wording family compared (`wording_report`, one bootstrap), or None when
    fewer than two of its wordings have answers or it cannot be compared (logged)."""
    try:
        family = wording_family(store, run_id)
        answered = [r for r in family.values() if store.get_run(r).get("attempts_done")]
        if len(answered) < 2:
            return None
        report = wording_report(store, run_id, label_mode)
    except (GbdeskError, KeyError, ValueError) as exc:
        log.warning("run %s: no comparison of its wordings (%s)", run_id, exc)
        return None
    probe = get_probe(report.probe)
    return FamilyView(report, probe, model, shown_metrics(report, probe))


def family_views(
    store: Store, run_ids: list[int], label_mode: str, models: dict[int, str]
) -> list[FamilyView]:
    """One view per wording family among the runs (a family is compared once, however many
    of its runs are reported)."""
    views: list[FamilyView] = []
    seen: set[int] = set()
    for run_id in run_ids:
        if run_id in seen:
            continue
        view = family_view(store, run_id, label_mode, models.get(run_id, ""))
        seen.add(run_id)
        if view is not None:
            seen.update(view.runs)
            views.append(view)
    return views


def depends_lines(views: list[FamilyView]) -> list[str]:
    """For the first page: each verdict that depends on the wording, "Agrees with
    stereotypes (probe, 5 wordings): D under 1, undecided under 4" (the model too when
    the views are of several models)."""
    several = len({v.model for v in views}) > 1
    lines = []
    for view in views:
        where = view.report.probe + (f", {view.model}" if several else "")
        where += f", {len(view.report.family)} wordings"
        lines += [f"{s.title} ({where}): {s.marks_text()}" for s in view.depends()]
    return lines


def figures_text(spread: WordingSpread, items: int) -> str:
    """ "Range 0.680 across 5 wordings; wording's share of the variance 85 % (p = 0.002),
    40 items under every wording"."""
    n = len(spread.measured)
    if spread.range is None:
        return ""  # the stability sentence says it was measured under too few wordings
    text = f"Range {fmt(spread.range)} across {n} wordings"
    if spread.share is not None:
        p = spread.p_value
        test = f" (test of no wording effect p = {p:.3f})" if p is not None else ""
        text += f"; wording's share of the variance {spread.share:.0%}{test}"
    if items:
        text += f"; {items:,} items under every wording"
    return text + "."


def _chart(view: FamilyView, spread: WordingSpread) -> IntervalChart:
    """The metric under each wording of the family, with its interval and mark bands."""
    probe = view.probe
    by_wording = {v.wording: v for v in spread.values}
    rows = []
    for w in view.report.family:
        label = f"{w} {view.report.names.get(w, f'wording {w}')}"
        v = by_wording.get(w)
        if v is None:
            rows.append(ChartRow(label, math.nan, math.nan, math.nan))
            continue
        lo, hi = v.ci if v.ci is not None else (math.nan, math.nan)
        rows.append(ChartRow(label, v.value, lo, hi))
    marks = probe.mark_definitions.get(spread.metric)
    if marks is not None:
        return IntervalChart(spread.title, rows, "ci", marks.overall_range, marks)
    groups = probe.metric_groups(list(view.report.spreads))
    group = next((g for g in groups if spread.metric in g.metrics), None)
    kind = group.kind if group is not None and group.kind == "log_ratio" else "ci"
    x_range = group.plot_range(r.value for r in rows) if group is not None else (0.0, 1.0)
    return IntervalChart(spread.title, rows, kind, x_range)


def metric_blocks(view: FamilyView, name: str) -> list[Block]:
    """One metric of the family: its chart, its figures and its stability sentence."""
    spread = view.report.spreads[name]
    sentence = spread.sentence()
    style = "notice" if spread.stable is False else "normal"
    figures = figures_text(spread, view.report.items)
    return [
        _chart(view, spread),
        *([Paragraph(figures, "muted")] if figures else []),
        Paragraph(sentence[:1].upper() + sentence[1:] + ".", style),
    ]


def family_blocks(view: FamilyView, heading: bool = True) -> list[Block]:
    """A family's part of the section: a heading, then each shown metric's blocks."""
    out: list[Block] = [Heading(view.title())] if heading else []
    for name in view.metrics:
        out += metric_blocks(view, name)
    return out


def section_blocks(views: list[FamilyView]) -> list[Block]:
    """The whole section's blocks after its title: the explanation, then every family,
    then — for a probe reported on several models — whether their order holds."""
    if not views:
        return []
    out: list[Block] = [Paragraph(EXPLANATION, "muted")]
    for view in views:
        out += family_blocks(view)
    out += [Paragraph(line) for line in order_lines(views)]
    return out


def order_lines(views: list[FamilyView]) -> list[str]:
    """Per probe reported on several models and each metric shown: whether the models'
    order (lowest value first) is the same under every wording they share."""
    by_probe: dict[str, list[FamilyView]] = {}
    for view in views:
        by_probe.setdefault(view.report.probe, []).append(view)
    lines = []
    for probe, same in by_probe.items():
        models = [v.model or f"run {v.runs[0]}" for v in same]
        if len(same) < 2 or len(set(models)) < len(models):
            continue
        reports = list(zip(models, (v.report for v in same), strict=True))
        for name in same[0].metrics:
            got = orders(reports, name)
            if got["same_order"] is None:
                continue
            title = same[0].report.spreads[name].title if name in same[0].report.spreads else name
            ordered = got["order_by_wording"]
            if got["same_order"]:
                first = " < ".join(next(iter(ordered.values())))
                lines.append(
                    f"{title} ({probe}): the models' order ({first}) is the same under all "
                    f"{len(ordered)} wordings they share."
                )
            else:
                shown = "; ".join(f"wording {w}: {' < '.join(o)}" for w, o in ordered.items())
                lines.append(
                    f"{title} ({probe}): the models' order changes with the wording — {shown}."
                )
    return lines


def pane_blocks(view: FamilyView | None) -> list[Block]:
    """What the Results pane's Wordings tab shows of a run's family (every metric measured,
    the shown ones first), or a sentence when the run has no other wording."""
    if view is None:
        return [Paragraph("This run has no other wording of its prompts with answers.", "muted")]
    lines = depends_lines([view])
    out: list[Block] = [Heading(view.title())]
    if lines:
        out.append(Paragraph("Depends on the wording: " + "; ".join(lines) + ".", "notice"))
    out.append(Paragraph(EXPLANATION, "muted"))
    rest = [n for n in view.report.spreads if n not in view.metrics]
    for name in view.metrics + rest:
        out += metric_blocks(view, name)  # each chart has the metric's title
    return out


def run_family_blocks(
    store: Store, run_id: int, label_mode: str = "auto", model: str = ""
) -> dict[str, Any]:
    """For the Results pane (off the UI thread): {"family": wording → run id (empty
    without other wordings), "blocks": `pane_blocks`}."""
    view = family_view(store, run_id, label_mode, model)
    return {
        "family": dict(view.report.family) if view is not None else {},
        "blocks": pane_blocks(view),
    }


__all__ = [
    "SECTION_TITLE",
    "FamilyView",
    "depends_lines",
    "family_blocks",
    "family_view",
    "family_views",
    "pane_blocks",
    "run_family_blocks",
    "section_blocks",
    "shown_metrics",
]
