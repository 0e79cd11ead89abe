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

from gbdesk.maths.stats import MetricValue, adjusted_p_values, p_text
from gbdesk.studies import Finding, Probe
from gbdesk.support.format import ci_cells

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunFinding:
    """A finding with the run it comes from."""

    run_id: int
    model: str
    probe: str  # the probe's name (for filters)
    probe_title: str
    finding: Finding

    @property
    def sentence(self) -> str:
        return self.finding.sentence

    def detail(self, probe: Probe | None = None) -> str:
        """The numbers behind the sentence: metric, value, interval, p and adjusted p."""
        f = self.finding
        parts = []
        if f.metric:
            parts.append(probe.metric_title(f.metric) if probe else f.metric)
        if f.value == f.value and f.metric:
            value = f"{f.value:.3g}" if abs(f.value) >= 10 else f"{f.value:.3f}"
            if not math.isnan(f.ci[0]):
                bounds = probe.metric_bounds(f.metric) if probe else None
                shown, cut = ci_cells(f.ci, bounds)
                value += f" {shown}" + (" (cut at what the metric can be)" if cut else "")
            parts.append(value)
        if f.p_value is not None and f.p_value == f.p_value:
            parts.append(f"p {p_text(f.p_value)}, BH-adjusted {p_text(f.p_adj)}")
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        f = self.finding
        return {
            "run_id": self.run_id,
            "model": self.model,
            "probe": self.probe,
            "sentence": f.sentence,
            "importance": f.importance,
            "metric": f.metric,
            "value": None if f.value != f.value else f.value,
            "ci": [None if x != x else x for x in f.ci],
            "p_value": f.p_value,
            "p_adj": f.p_adj,
            "evidence": f.evidence,
            "review_filter": f.review_filter,
        }


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
    """Most important first; runs and each run's own order break ties."""
    return sorted(findings, key=lambda rf: -rf.finding.importance)


def run_findings(
    run_id: int,
    model: str,
    probe: Probe,
    metrics: dict[str, MetricValue],
    extra: dict[str, Any],
    params: dict[str, Any] | None,
) -> list[RunFinding]:
    return [
        RunFinding(run_id, model, probe.name, probe.card.title, f)
        for f in probe_findings(probe, metrics, extra, params)
    ]
