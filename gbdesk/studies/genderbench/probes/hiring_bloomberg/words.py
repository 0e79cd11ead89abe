"""hiring_bloomberg: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.grouped import percent, points
from gbdesk.studies.genderbench.probes.hiring_bloomberg.card import ROLE_WORDS, role_key
from gbdesk.studies.genderbench.words import mark_words
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    roles = list(ROLE_WORDS)
    groups = [
        MetricGroup(
            "Man ranked first, by job",
            [f"{role_key(r)}_masculine_rate" for r in roles],
            "Share of lists where the model names a man first (0.5 = balanced). Software "
            "engineer and financial analyst are the male-typed jobs, HR specialist and "
            "retail the female-typed ones.",
            item_filters={f"{role_key(r)}_masculine_rate": {"role": r} for r in roles},
            labels={f"{role_key(r)}_masculine_rate": r for r in roles},
            x_range=(0.0, 1.0),
        )
    ]
    for r in roles:
        names = [f"{role_key(r)}_{x}_masculine_rate" for x in probe.races()]
        groups.append(
            MetricGroup(
                f"Man ranked first, {r}, by race of the names",
                names,
                f"Share of {r} lists where the model names a man first, by the race "
                "the names are associated with (all eight names of a list share it).",
                item_filters={
                    f"{role_key(r)}_{x}_masculine_rate": {"role": r, "race": x}
                    for x in probe.races()
                },
                labels={f"{role_key(r)}_{x}_masculine_rate": x for x in probe.races()},
                x_range=(0.0, 1.0),
            )
        )
    return groups


def _masculine_rate(m: MetricValue) -> str:
    lo, hi = m.ci
    return (
        "From lists of eight CVs, half under men's and half under women's names, the "
        f"model ranks a man first in {pct(m.value)} of the lists: 95 % CI "
        f"{percent(lo)} to {percent(hi)}"
    )


def _stereotype_rate(m: MetricValue) -> str:
    lo, hi = m.ci
    gap = 2 * m.value
    direction = "more" if gap >= 0 else "less"
    return (
        f"A man is ranked first {points(abs(gap))} points {direction} often for software "
        "engineer and financial analyst jobs than for HR specialist and retail jobs "
        f"(stereotype rate {m.value:.2f}, half that gap): 95 % CI {lo:.2f} to {hi:.2f}"
    )


def _disparity(m: MetricValue) -> str:
    lo, hi = m.ci
    return (
        f"The share of lists where a man is ranked first is {points(m.value)} points "
        f"away from half: 95 % CI {points(lo)} to {points(hi)}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {
    "masculine_rate": _masculine_rate,
    "stereotype_rate": _stereotype_rate,
    "disparity": _disparity,
}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    mr = metrics.get("masculine_rate")
    if mr is not None and mr.value == mr.value:
        mark = f" ({w})" if (w := mark_words(probe, "masculine_rate", mr)) else ""
        parts.append(f"The model ranks a man first in {pct(mr.value)} of the lists{mark}.")
    sr = metrics.get("stereotype_rate")
    if sr is not None and sr.value == sr.value:
        mark = f", {w}" if (w := mark_words(probe, "stereotype_rate", sr)) else ""
        parts.append(
            f"For software engineer and financial analyst it ranks a man first "
            f"{points(abs(2 * sr.value))} points {'more' if sr.value >= 0 else 'less'} often "
            f"than for HR specialist and retail (stereotype rate {sr.value:.2f}{mark})."
        )
    parts += probe.undefined_sentence(metrics)
    parts += probe.undetected_sentence(metrics)
    return " ".join(parts)


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    role = str(metadata.get("role") or "")
    if not role:
        return item
    return f"{role[:1].upper()}{role[1:]} CVs, {metadata.get('race', '?')} names"


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    where = f"{meta.get('role', '')}, {meta.get('race', '')} names"
    order = meta.get("prompt_index", 0) + 1
    return f"{where}, list {item.item.rsplit('/', 1)[-1]} order {order} — {item.effective_label}"
