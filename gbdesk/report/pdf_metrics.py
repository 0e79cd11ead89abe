"""A run's metric table: every metric with its value, interval, p-values and mark, and
the footnotes its cells call for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gbdesk.analysis.shown import cut_ends, metric_verdict, shown_ci
from gbdesk.contract import Probe
from gbdesk.maths.stats import MetricValue
from gbdesk.maths.verdicts import MIN_ITEMS
from gbdesk.report.content import RunSection
from gbdesk.report.pdf_blocks import _mark_cell, _p_text
from gbdesk.report.pdf_layout import _Doc, e
from gbdesk.support.format import UNDEFINED_CI, UNDEFINED_VALUE, fmt, fmt_ci


@dataclass
class _Columns:
    """The columns a run's metric table has beyond metric, value, interval and n: p-values
    (with their Benjamini–Hochberg adjustment), the mark, the PPI's automatic value and
    labeller bias; each only when some metric has one."""

    p: bool
    mark: bool
    ppi: bool
    adjusted: dict[str, float]

    @classmethod
    def of(cls, section: RunSection, notes: bool) -> _Columns:
        from gbdesk.maths.stats import adjusted_p_values

        metrics = section.metrics
        with_p = any(m.p_value is not None for m in metrics.values())
        return cls(
            p=with_p,
            # an audit's appendix: no mark column (page 1 gives each verdict once)
            mark=notes and any(n in section.probe.mark_definitions for n in metrics),
            ppi=any((m.details or {}).get("kind") == "ppi" for m in metrics.values()),
            adjusted=adjusted_p_values(metrics) if with_p else {},
        )

    def head(self) -> str:
        head = "<th>Metric</th><th>Value</th><th>95 % CI</th>"
        head += "<th>Automatic only</th><th>Labeller bias</th>" if self.ppi else ""
        head += ("<th>p</th><th>p, BH-adjusted</th>" if self.p else "") + (
            "<th>Mark</th>" if self.mark else ""
        )
        return head + "<th>n</th>"


@dataclass
class _Seen:
    """The footnotes the table's cells call for: an undefined value (‡), an interval not
    shown from too few items (§), an interval cut to what the metric can be (*)."""

    undefined: bool = False
    too_few: bool = False
    cut: bool = False


def _metric_row(
    probe: Probe, name: str, m: MetricValue, cols: _Columns, notes: bool, seen: _Seen
) -> str:
    """One metric's row: its title (and meaning, with `notes`), value, interval and the
    table's other columns; `seen` learns the footnotes it calls for."""
    meaning = probe.capabilities.presentation.metric_description(name) if notes else ""
    label = f"{e(probe.capabilities.presentation.metric_title(name))}"
    if meaning:
        label += f"<br><span class='muted'>{e(meaning, 160)}</span>"
    shown = shown_ci(probe, name, m)
    cut = bool(cut_ends(probe, name, m))
    interval = fmt_ci(shown) if shown is not None else ""
    seen.cut |= cut
    value = fmt(m.value)
    if math.isnan(m.value):
        value = "—<sup>‡</sup>"
        seen.undefined = True
        interval = ""
    elif shown is None and math.isnan(m.ci[0]):
        interval = "—<sup>†</sup>"
    elif shown is None:
        interval = "—<sup>§</sup>"
        seen.too_few = True
    cells = [f"<td>{label}</td><td>{value}</td><td>{interval}{'<sup>*</sup>' if cut else ''}</td>"]
    if cols.ppi:
        d = m.details or {}
        reason = e(d.get("reason", ""))
        note = "" if d.get("valid") else f" <span class='muted'>({reason})</span>"
        cells.append(f"<td>{fmt(d.get('automatic_value'))}{note}</td><td>{fmt(d.get('bias'))}</td>")
    if cols.p:
        cells.append(f"<td>{_p_text(m.p_value)}</td><td>{_p_text(cols.adjusted.get(name))}</td>")
    if cols.mark:
        v = metric_verdict(probe, name, m)
        cells.append(_mark_cell(v, "") if v is not None else "<td></td>")
    return f"<tr>{''.join(cells)}<td>{m.n}</td></tr>"


def _footnotes(probe: Probe, metrics: dict[str, MetricValue], seen: _Seen) -> list[str]:
    """The table's footnotes, in order: why values are undefined (‡), intervals that are
    undefined (†), not shown (§) or cut (*), and which interval the table quotes."""
    footnotes = []
    if seen.undefined:
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
    if seen.too_few:
        footnotes.append(
            f"§ No interval: it would have zero width from fewer than {MIN_ITEMS} items, "
            "which is not certainty (a few answers that happen to agree)."
        )
    if seen.cut:
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
    return footnotes


def _metric_table(section: RunSection, doc: _Doc, notes: bool = True) -> None:
    """Every metric of the run by its name for people with its one-line meaning (the keys
    stay in the CSV export); p-value (with the Benjamini–Hochberg adjusted value over the
    run's tests beside it) and mark columns only when some metric has one. `notes=False`:
    only the run's own footnote (why a value is undefined); the notes every run shares are
    said once (`APPENDIX_NOTES`)."""
    metrics = section.metrics
    cols = _Columns.of(section, notes)
    seen = _Seen()
    rows = [_metric_row(section.probe, name, m, cols, notes, seen) for name, m in metrics.items()]
    title = "Metrics" if len(metrics) <= 12 else f"All {len(metrics)} metrics"
    footnotes = _footnotes(section.probe, metrics, seen)
    if not notes:
        footnotes = footnotes[:1] if seen.undefined else []
    note = (
        f"<p class='muted'>BH-adjusted: the Benjamini–Hochberg false-discovery-rate "
        f"adjustment over the run's {len(cols.adjusted)} tests; a result counts as established "
        "when the adjusted value is below 0.05.</p>"
        if cols.p and notes
        else ""
    )
    table = f"<table width='100%'><tr>{cols.head()}</tr>{''.join(rows)}</table>"
    if not notes:  # an audit's appendix: small print
        table = table.replace("<td>", "<td class='m'>").replace("<th>", "<th class='m'>")
    doc.add(
        (f"<h3>{title}</h3>{note}" if notes else "")
        + table
        + "".join(f"<p class='muted'>{e(x)}</p>" for x in footnotes)
    )
