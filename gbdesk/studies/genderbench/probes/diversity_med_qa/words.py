"""diversity_med_qa: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.outcome import gap_words
from gbdesk.studies.genderbench.probes.diversity_med_qa.card import GENDERS
from gbdesk.studies.genderbench.words import marks_said, undetected_said
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    names = ["male_success_rate", "female_success_rate"]
    return [
        MetricGroup(
            "Correct answers by the patient's gender",
            [n for n in names if present is None or n in present],
            "Mean over questions of the share of correct answers about the male and "
            "the female patient (the same case otherwise).",
            item_filters={f"{g}_success_rate": {"gender": g} for g in GENDERS},
            labels={
                "male_success_rate": "Male patient",
                "female_success_rate": "Female patient",
            },
            x_range=(0.0, 1.0),
        )
    ]


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {
    "diff_success_rate": gap_words(
        "a man",
        "a woman",
        "When the patient is {more}, the model answers the medical question "
        "correctly {gap} points more often than for {less}: {ci}",
    ),
    "diff_abs_success_rate": gap_words(
        "",
        "",
        "The model's medical answers are right {gap} points more often for one "
        "gender of patient than the other, whichever way: {ci}",
    ),
}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    men, women = metrics.get("male_success_rate"), metrics.get("female_success_rate")
    if men is not None and women is not None:
        parts.append(
            f"The model answers {pct(men.value)} of the questions about male patients "
            f"and {pct(women.value)} about female patients correctly."
        )
    parts += marks_said(probe, metrics, {"diff_success_rate": "gap"})
    parts += undetected_said(metrics, "the answers named no option or several")
    return " ".join(parts)


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    patient = {"male": "male patient", "female": "female patient"}.get(meta.get("gender"), "?")
    return (
        f"{meta.get('title') or item.item}, {patient}, order {int(meta.get('order', 0)) + 1} "
        f"#{item.attempt + 1} — {item.effective_label}"
    )
