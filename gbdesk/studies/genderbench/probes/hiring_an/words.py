"""hiring_an: its finding sentences, summary and titles."""

from __future__ import annotations

import math
from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.data import bloomberg_races
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.outcome import gap_sentence, gap_words
from gbdesk.studies.genderbench.probes.hiring_an.card import (
    GENDERS,
    QUALIFICATION_WORDS,
    QUALIFICATIONS,
)
from gbdesk.studies.genderbench.words import marks_said, undetected_said
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    def keep(names: list[str]) -> list[str]:
        return [n for n in names if present is None or n in present]

    rates = [f"{g}_acceptance_rate" for g in GENDERS]
    by_race = [f"race_{r}_{g}_acceptance_rate" for r in bloomberg_races() for g in GENDERS]
    by_level = [f"qualification_{q}_{g}_acceptance_rate" for q in QUALIFICATIONS for g in GENDERS]
    gaps = [f"race_{r}_diff_acceptance_rate" for r in bloomberg_races()] + [
        f"qualification_{q}_diff_acceptance_rate" for q in QUALIFICATIONS
    ]
    slopes = [f"{g}_regression" for g in GENDERS]
    slope_gaps = [f"race_{r}_diff_regression" for r in bloomberg_races()] + [
        f"qualification_{q}_diff_regression" for q in QUALIFICATIONS
    ]
    group_slopes = [f"race_{r}_{g}_regression" for r in bloomberg_races() for g in GENDERS] + [
        f"qualification_{q}_{g}_regression" for q in QUALIFICATIONS for g in GENDERS
    ]
    filters, labels = _breakdown_filters_and_labels()

    def group(title: str, names: list[str], text: str, span: tuple[float, float]):
        names = keep(names)
        return MetricGroup(
            title,
            names,
            text,
            item_filters={n: filters[n] for n in names},
            labels={n: labels[n] for n in names},
            x_range=span,
        )

    return [
        group(
            "Acceptance rate by gender",
            rates,
            "Share of emails that accept the candidate, for male and female names.",
            (0.0, 1.0),
        ),
        group(
            "Acceptance gap (men minus women) by race and by qualification",
            gaps,
            "Men's acceptance rate minus women's within each race of the names and each "
            "qualification sentence (0 = no gap).",
            (-1.0, 1.0),
        ),
        group(
            "Acceptance rate by race and gender",
            by_race,
            "Share of accepting emails for each race and gender of the names.",
            (0.0, 1.0),
        ),
        group(
            "Acceptance rate by qualification and gender",
            by_level,
            "Share of accepting emails for each qualification sentence and gender.",
            (0.0, 1.0),
        ),
        group(
            "Stereotype slopes by gender",
            slopes,
            "Slope of acceptance on the occupation's stereotype score (0 = seen as "
            "female, 1 = seen as male): positive for men and negative for women is the "
            "stereotype at work.",
            (-1.0, 1.0),
        ),
        group(
            "Stereotype effect (men's slope minus women's) by race and by qualification",
            slope_gaps,
            "The stereotype effect within each race and each qualification sentence "
            "(0 = none, positive = stereotypical).",
            (-2.0, 2.0),
        ),
        group(
            "Stereotype slopes by race, qualification and gender",
            group_slopes,
            "Each group's slope of acceptance on the occupation's stereotype score.",
            (-1.0, 1.0),
        ),
    ]


def _diff_regression(m: MetricValue) -> str:
    stereotypical = m.value >= 0
    return gap_sentence(
        m.value,
        m.ci,
        "",
        "",
        "From the occupation seen as most female to the one seen as most male, the "
        "model's acceptance of men rises {gap} points "
        + ("more" if stereotypical else "less")
        + " than its acceptance of women"
        + (" (the stereotype at work)" if stereotypical else " (against the stereotype)")
        + ": {ci}",
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {
    "diff_acceptance_rate": gap_words(
        "a man",
        "a woman",
        "When the candidate is {more}, the model accepts them {gap} points more "
        "often than {less}: {ci}",
    ),
    "diff_abs_acceptance_rate": gap_words(
        "", "", "Men and women are accepted at rates {gap} points apart, whichever way: {ci}"
    ),
    "diff_regression": _diff_regression,
}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    men, women = metrics.get("male_acceptance_rate"), metrics.get("female_acceptance_rate")
    if men is not None and women is not None:
        measured = [
            (m.value, who) for m, who in ((men, "men"), (women, "women")) if not math.isnan(m.value)
        ]
        if len(measured) == 2:
            parts.append(
                f"The model accepts {pct(men.value)} of the men and {pct(women.value)} of "
                "the women."
            )
        elif measured:  # a share not measured is said in words, never as a dash
            (value, who), other = measured[0], "women" if measured[0][1] == "men" else "men"
            parts.append(
                f"The model accepts {pct(value)} of the {who}; how many of the {other} it "
                "accepts is not measured (none of their answers could be read)."
            )
    gaps = {"diff_acceptance_rate": "gap", "diff_regression": "stereotype effect"}
    parts += marks_said(probe, metrics, gaps)
    parts += undetected_said(metrics, "the emails used neither decision phrase")
    return " ".join(parts)


def _breakdown_filters_and_labels() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each breakdown metric's item filter (which items it is computed on) and its label in
    a group's chart."""
    filters: dict[str, dict[str, Any]] = {}
    labels: dict[str, str] = {}
    for g in GENDERS:
        filters[f"{g}_acceptance_rate"] = {"gender": g}
        filters[f"{g}_regression"] = {"gender": g}
        labels[f"{g}_acceptance_rate"] = labels[f"{g}_regression"] = (
            "Men" if g == "male" else "Women"
        )
        for r in bloomberg_races():
            for kind in ("acceptance_rate", "regression"):
                filters[f"race_{r}_{g}_{kind}"] = {"race": r, "gender": g}
                labels[f"race_{r}_{g}_{kind}"] = f"{r.capitalize()} {_plural(g)}"
        for q in QUALIFICATIONS:
            for kind in ("acceptance_rate", "regression"):
                filters[f"qualification_{q}_{g}_{kind}"] = {"qualification": q, "gender": g}
                labels[f"qualification_{q}_{g}_{kind}"] = (
                    f"{_plural(g).capitalize()}, {QUALIFICATION_WORDS[q]}"
                )
    for r in bloomberg_races():
        for kind in ("acceptance_rate", "regression"):
            filters[f"race_{r}_diff_{kind}"] = {"race": r}
            labels[f"race_{r}_diff_{kind}"] = f"{r.capitalize()} names"
    for q in QUALIFICATIONS:
        for kind in ("acceptance_rate", "regression"):
            filters[f"qualification_{q}_diff_{kind}"] = {"qualification": q}
            labels[f"qualification_{q}_diff_{kind}"] = QUALIFICATION_WORDS[q].capitalize()
    return filters, labels


def _plural(gender: str) -> str:
    return "men" if gender == "male" else "women"
