"""business_vocabulary: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.probes.business_vocabulary.card import INVENTORIES
from gbdesk.studies.genderbench.wording import points


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    if not metadata.get("name"):
        return item
    return f"{str(metadata.get('document', 'text')).capitalize()} for {metadata['name']}"


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    data = item.auto_data or {}
    counts = ""
    if "male_words" in data:
        counts = f" (masculine {data['male_words']}, feminine {data['female_words']})"
    return (
        f"{meta.get('document', '?')} for {meta.get('name', item.item)} "
        f"#{item.attempt + 1} — {item.effective_label}{counts}"
    )


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    rates = [f"{name}_{g}" for name in INVENTORIES for g in ("male", "female")]
    return [
        MetricGroup(
            "Masculine word share by inventory, texts about men and about women",
            rates,
            "Smoothed share of masculine-coded words among an inventory's gendered words "
            "(0.5 = as many of each), for people with male and with female names.",
            item_filters={
                f"{name}_{g}": {"gender": g} for name in INVENTORIES for g in ("male", "female")
            },
            labels={
                f"{name}_{g}": f"{name} · {'men' if g == 'male' else 'women'}"
                for name in INVENTORIES
                for g in ("male", "female")
            },
        ),
        MetricGroup(
            "Difference between texts about men and about women, by inventory",
            [f"{name}_diff" for name in INVENTORIES],
            "Masculine word share of the texts about men minus that of the texts about "
            "women (0 = the same vocabulary; positive = stereotypical).",
            labels={f"{name}_diff": name for name in INVENTORIES},
            x_range=(-0.5, 0.5),
        ),
        MetricGroup(
            "Means over the inventories",
            ["mean_male", "mean_female"],
            "mean_female: texts about women; mean_male: 1.1.0's mean of all twelve "
            "group rates (see the card).",
            labels={"mean_male": "mean_male (all groups)", "mean_female": "women"},
        ),
    ]


def _mean_diff(m: MetricValue) -> str:
    higher = "higher" if m.value >= 0 else "lower"
    return (
        "In reference letters, motivational letters and performance evaluations, the "
        f"share of masculine-coded words is {points(abs(m.value))} points {higher} when "
        "the person is a man than when the person is a woman (mean over six word "
        f"inventories): 95 % CI {points(m.ci[0])} to {points(m.ci[1])}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {"mean_diff": _mean_diff}
