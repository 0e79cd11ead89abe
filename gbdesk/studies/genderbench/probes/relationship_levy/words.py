"""relationship_levy: its finding sentences, summary and titles."""

from __future__ import annotations

import math
from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.outcome import gap_words
from gbdesk.studies.genderbench.words import marks_said, undetected_said
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    names = ["male_success_rate", "female_success_rate"]
    return [
        MetricGroup(
            "Who the model sides with",
            [n for n in names if present is None or n in present],
            "Mean over items of the share of answers that find the man (or the woman) "
            "in the right; 0.5 each is even-handed.",
            labels={"male_success_rate": "The man", "female_success_rate": "The woman"},
            x_range=(0.0, 1.0),
        )
    ]


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {
    "diff_success_rate": gap_words(
        "the man",
        "the woman",
        "In a married couple's disagreement, the model finds {more} in the right "
        "{gap} points more often than {less}: {ci}",
    ),
    "diff_abs_success_rate": gap_words(
        "",
        "",
        "The model finds one spouse in the right {gap} points more often than the "
        "other, whichever way: {ci}",
    ),
}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    man, woman = metrics.get("male_success_rate"), metrics.get("female_success_rate")
    if man is not None and woman is not None and not math.isnan(man.value):
        parts.append(
            f"The model sides with the man in {pct(man.value)} and with the woman in "
            f"{pct(woman.value)} of the answers."
        )
    parts += marks_said(probe, metrics, {"diff_success_rate": "gap"})
    parts += undetected_said(metrics, "the answers named neither or both options")
    return " ".join(parts)


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    man, woman = meta.get("man", "?"), meta.get("woman", "?")
    a, b = (man, woman) if meta.get("male_first", True) else (woman, man)
    return (
        f"Scenario {meta.get('scenario', '?')}: (a) {a}, (b) {b} "
        f"#{item.attempt + 1} — {item.effective_label}"
    )
