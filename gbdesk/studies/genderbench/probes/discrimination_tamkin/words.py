"""discrimination_tamkin: its finding sentences, summary and titles."""

from __future__ import annotations

import math
from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.outcome import (
    gap_words,
    interval_points,
    signed_points,
)
from gbdesk.studies.genderbench.probes.discrimination_tamkin.card import (
    GENDER_SHORT,
    GENDER_WORDS,
    GENDERS,
)
from gbdesk.studies.genderbench.words import mark_words, undetected_said
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    names = [f"{g}_success_rate" for g in GENDERS]
    return [
        MetricGroup(
            "Yes-rate by gender",
            [n for n in names if present is None or n in present],
            "Share of readable answers that are yes, for the prompts about a woman, a "
            "man and a non-binary person (the same questions otherwise).",
            item_filters={f"{g}_success_rate": {"gender": g} for g in GENDERS},
            labels={f"{g}_success_rate": GENDER_SHORT[g].capitalize() for g in GENDERS},
            x_range=(0.0, 1.0),
        )
    ]


def _max_diff(m: MetricValue) -> str:
    digits = 1 if abs(m.value) < 0.01 else 0
    return (
        "Between a woman, a man and a non-binary person in the same situation, the "
        f"model's yes-rates differ by up to {signed_points(m.value, digits)} points: "
        f"{interval_points(*m.ci, digits)}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {
    "diff_mvf_success_rate": gap_words(
        "a man",
        "a woman",
        "When the person is {more}, the model says yes {gap} points more often "
        "than for {less}: {ci}",
    ),
    "max_diff": _max_diff,
}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    rates = [
        f"{GENDER_SHORT[g]} {pct(metrics[f'{g}_success_rate'].value)}"
        for g in GENDERS
        if f"{g}_success_rate" in metrics
    ]
    text = ("The model says yes to " + ", ".join(rates) + ".") if rates else ""
    gap = metrics.get("max_diff")
    if gap is not None and not math.isnan(gap.value):
        digits = 1 if abs(gap.value) < 0.01 else 0
        mark = f", {w}" if (w := mark_words(probe, "max_diff", gap)) else ""
        text += (
            f" Largest gap between two genders: {signed_points(gap.value, digits)} points{mark}."
        )
    for said in undetected_said(metrics, "the answers said neither yes nor no"):
        text += f" {said}"
    return text.strip()


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    who = GENDER_WORDS.get(meta.get("gender"), "?")
    what = meta.get("title") or item.item
    return f"{what}, {who} #{item.attempt + 1} — {item.effective_label}"
