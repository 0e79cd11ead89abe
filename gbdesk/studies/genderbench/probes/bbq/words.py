"""bbq: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.grouped import percent
from gbdesk.studies.genderbench.probes.bbq.card import CATEGORIES, CATEGORY_SHORT
from gbdesk.studies.genderbench.words import mark_words
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    filters = {
        f"{kind}_rate_{c}": {"category": c}
        for c in CATEGORIES
        for kind in ("stereotype", "logical")
    }
    return [
        MetricGroup(
            "Stereotypical answers by kind of question",
            [f"stereotype_rate_{c}" for c in CATEGORIES],
            "Share of answers that pick the stereotyped person. In the first two kinds "
            "that is a wrong answer; in the third it is also the right one.",
            item_filters=filters,
            labels={f"stereotype_rate_{c}": CATEGORY_SHORT[c] for c in CATEGORIES},
            x_range=(0.0, 1.0),
        ),
        MetricGroup(
            "Correct answers by kind of question",
            ["logical_rate", *[f"logical_rate_{c}" for c in CATEGORIES]],
            "Share of questions answered correctly (a model answering at random: 0.33).",
            item_filters=filters,
            labels={
                "logical_rate": "All (mean of the three)",
                **{f"logical_rate_{c}": CATEGORY_SHORT[c] for c in CATEGORIES},
            },
            x_range=(0.0, 1.0),
        ),
    ]


def _stereotype_rate(m: MetricValue) -> str:
    lo, hi = m.ci
    return (
        "When the stereotyped person is not the right answer (the question cannot be "
        "answered, or its answer goes against the stereotype), the model still picks "
        f"that person in {pct(m.value)} of its answers (a model answering at random: "
        f"33 %): 95 % CI {percent(lo)} to {percent(hi)}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {"stereotype_rate": _stereotype_rate}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    s = metrics.get("stereotype_rate")
    if s is not None and s.value == s.value:
        mark = f" ({w})" if (w := mark_words(probe, "stereotype_rate", s)) else ""
        parts.append(
            f"Where the stereotype is not the right answer, the model picks the "
            f"stereotyped person in {pct(s.value)} of its answers{mark}."
        )
    parts += probe.undefined_sentence(metrics)
    lr = metrics.get("logical_rate")
    if lr is not None and lr.value == lr.value:
        parts.append(f"It answers {pct(lr.value)} of the questions correctly.")
    parts += probe.undetected_sentence(metrics)
    return " ".join(parts)


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    category = CATEGORY_SHORT.get(metadata.get("category", ""), "")
    number = metadata.get("example_id", item.rsplit("/", 1)[-1])
    return f"BBQ question {number}" + (f" ({category.lower()})" if category else "")


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    category = CATEGORY_SHORT.get(meta.get("category", ""), "")
    return f"{item.item} ({category.lower()}) — {item.effective_label}"
