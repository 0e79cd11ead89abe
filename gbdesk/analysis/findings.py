"""Findings of runs in plain sentences, most important first (no Qt).

Each probe turns its metrics into `Finding`s (`Probe.findings`); this module adds what the
core knows — the run, its model, the Benjamini–Hochberg adjusted p-value of the finding's
metric over all the run's tests — and orders findings of several runs by importance (the
shared scale documented on `Finding`), keeping each run's own order among equals.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any

from gbdesk.analysis.shown import TOO_FEW_FOR_CI, cut_ends, mark_cell, metric_verdict, shown_ci
from gbdesk.contract import Finding, Probe
from gbdesk.maths.stats import MetricValue, adjusted_p_values, p_text
from gbdesk.maths.verdicts import MIN_ITEMS, Verdict
from gbdesk.support.format import fmt_ci

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunFinding:
    """A finding with the run it comes from, its metric's verdict (a graded metric: the
    marks its interval allows beside the study's) and the items it rests on."""

    run_id: int
    model: str
    probe: str  # the probe's name (for filters)
    probe_title: str
    finding: Finding
    verdict: Verdict | None = None
    items: int | None = None  # the support of the finding's metric (`MetricValue.n`)

    @property
    def too_few(self) -> bool:
        """Rests on fewer than `MIN_ITEMS` items: said first, ranked below the others."""
        return self.items is not None and self.items < MIN_ITEMS

    @property
    def decided(self) -> bool:
        """Its colour may say a result: a decided verdict, or no mark at all from enough
        items (an undetermined or small-sample mark is never coloured as a result)."""
        if self.too_few:
            return False
        return self.verdict is None or self.verdict.decided

    @property
    def sentence(self) -> str:
        """The probe's sentence; from too few items it says so first."""
        text = self.finding.sentence
        if self.too_few and not text.lower().startswith("only "):
            n = self.items
            text = (
                f"Only {n} {'item' if n == 1 else 'items'} behind this — too few to tell "
                f"(a result needs {MIN_ITEMS}): {text}"
            )
        return text

    def detail(self, probe: Probe | None = None) -> str:
        """The numbers behind the sentence: metric, value, the interval every view shows
        (cut at what the metric can be; none from too few items), verdict, p and adjusted
        p."""
        f = self.finding
        parts = []
        if f.metric:
            parts.append(
                probe.capabilities.presentation.metric_title(f.metric) if probe else f.metric
            )
        if f.value == f.value and f.metric:
            value = f"{f.value:.3g}" if abs(f.value) >= 10 else f"{f.value:.3f}"
            m = MetricValue(f.value, f.ci, None, self.items if self.items is not None else 10**9)
            if probe is not None:
                shown = shown_ci(probe, f.metric, m)
                cut = bool(cut_ends(probe, f.metric, m))
            else:
                shown = None if math.isnan(f.ci[0]) else (f.ci[0], f.ci[1])
                cut = False
            if shown is not None:
                value += f" {fmt_ci(shown)}" + (" (cut at what the metric can be)" if cut else "")
            elif self.too_few:
                value += f" ({TOO_FEW_FOR_CI})"
            parts.append(value)
        if self.verdict is not None and self.verdict.measured:
            parts.append(mark_cell(self.verdict))
        if f.p_value is not None and f.p_value == f.p_value:
            parts.append(f"p {p_text(f.p_value)}, BH-adjusted {p_text(f.p_adj)}")
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        f = self.finding
        out = {
            "run_id": self.run_id,
            "model": self.model,
            "probe": self.probe,
            "sentence": self.sentence,
            "importance": f.importance,
            "metric": f.metric,
            "value": None if f.value != f.value else f.value,
            "ci": [None if x != x else x for x in f.ci],
            "p_value": f.p_value,
            "p_adj": f.p_adj,
            "evidence": f.evidence,
            "review_filter": f.review_filter,
            "items": self.items,
            "too_few": self.too_few,
        }
        if self.verdict is not None:
            out["verdict"] = self.verdict.to_json()
        return out


def probe_findings(
    probe: Probe,
    metrics: dict[str, MetricValue],
    extra: dict[str, Any],
    params: dict[str, Any] | None,
) -> list[Finding]:
    """The probe's findings with each tested metric's BH-adjusted p-value filled in."""
    try:
        found = probe.findings(metrics, extra or {}, params or {})
    except Exception:  # a study's bug must not hide the other findings
        log.exception("findings of %s failed", probe.name)
        return []
    adjusted = adjusted_p_values(metrics)
    out = []
    for f in found:
        if f.metric and f.p_adj is None and f.metric in adjusted:
            f = dataclasses.replace(
                f, p_adj=adjusted[f.metric], p_value=f.p_value or metrics[f.metric].p_value
            )
        out.append(f)
    return out


def ordered(findings: list[RunFinding]) -> list[RunFinding]:
    """Most important first, every finding from too few items after the measured ones;
    runs and each run's own order break ties."""
    return sorted(findings, key=lambda rf: (rf.too_few, -rf.finding.importance))


def run_findings(
    run_id: int,
    model: str,
    probe: Probe,
    metrics: dict[str, MetricValue],
    extra: dict[str, Any],
    params: dict[str, Any] | None,
) -> list[RunFinding]:
    out = []
    for f in probe_findings(probe, metrics, extra, params):
        m = metrics.get(f.metric) if f.metric else None
        out.append(
            RunFinding(
                run_id,
                model,
                probe.name,
                probe.card.title,
                f,
                verdict=metric_verdict(probe, f.metric, m) if m is not None and f.metric else None,
                items=int(m.n) if m is not None and m.n is not None else None,
            )
        )
    return out
