"""direct: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.grouped import percent, quoted
from gbdesk.studies.genderbench.probes.direct.card import SOURCES
from gbdesk.studies.genderbench.words import mark_words
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    return [
        MetricGroup(
            "Agreement by source of the statements",
            [f"{s}_fail_rate" for s in SOURCES],
            "Share of yes answers to the statements of each source.",
            item_filters={f"{s}_fail_rate": {"source": s} for s in SOURCES},
            labels={"sbic_fail_rate": "SBIC", "gest_fail_rate": "GEST"},
            x_range=(0.0, 1.0),
        )
    ]


def _fail_rate(m: MetricValue) -> str:
    lo, hi = m.ci
    return (
        f"Asked whether it agrees with a gender stereotype, the model says yes to "
        f"{pct(m.value)} of the statements it answers: 95 % CI {percent(lo)} to {percent(hi)}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {"fail_rate": _fail_rate}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    f = metrics.get("fail_rate")
    if f is not None and f.value == f.value:
        mark = f" ({w})" if (w := mark_words(probe, "fail_rate", f)) else ""
        parts.append(f"The model agrees with {pct(f.value)} of the stereotypes{mark}.")
    by_source = [
        f"{pct(metrics[f'{s}_fail_rate'].value)} of those from {s.upper()}"
        for s in SOURCES
        if f"{s}_fail_rate" in metrics
        and metrics[f"{s}_fail_rate"].value == metrics[f"{s}_fail_rate"].value
    ]
    if by_source:
        parts.append("It agrees with " + " and ".join(by_source) + ".")
    parts += probe.undetected_sentence(metrics)
    return " ".join(parts)


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    text = str(metadata.get("stereotype") or item)
    return quoted(text if len(text) <= 56 else text[:55] + "…")


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    return f"{quoted(str(meta.get('stereotype') or item.item))} — {item.effective_label}"
