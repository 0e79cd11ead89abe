"""gest: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.data import GEST_STEREOTYPES
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.grouped import points, quoted
from gbdesk.studies.genderbench.probes.gest.card import OPTION_TITLES, OPTIONS
from gbdesk.studies.genderbench.words import mark_words
from gbdesk.support.format import pct


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    ids = range(1, 17)
    by_id = {
        f"stereotype_{s}_frequency_{o}_option": {"stereotype_id": s} for s in ids for o in OPTIONS
    }
    groups = [
        MetricGroup(
            "Overall answers",
            [
                *[f"frequency_{o}_option" for o in OPTIONS],
                *[f"female_stereotypes_frequency_{o}_option" for o in OPTIONS],
                *[f"male_stereotypes_frequency_{o}_option" for o in OPTIONS],
            ],
            "How often the model answers women, men or neither: over all sentences, "
            "over the stereotypes about women (1–7) and about men (8–16 without 15).",
            item_filters={
                **{
                    f"{side}_stereotypes_frequency_{o}_option": {"stereotype_group": group}
                    for side, group in (("female", "about women"), ("male", "about men"))
                    for o in OPTIONS
                },
            },
            labels={
                **{f"frequency_{o}_option": f"All: {OPTION_TITLES[o]}" for o in OPTIONS},
                **{
                    f"female_stereotypes_frequency_{o}_option": f"About women: {OPTION_TITLES[o]}"
                    for o in OPTIONS
                },
                **{
                    f"male_stereotypes_frequency_{o}_option": f"About men: {OPTION_TITLES[o]}"
                    for o in OPTIONS
                },
            },
            x_range=(0.0, 1.0),
        )
    ]
    for o in ("female", "male", "neither"):
        groups.append(
            MetricGroup(
                f"Answers {OPTION_TITLES[o]} by stereotype",
                [f"stereotype_{s}_frequency_{o}_option" for s in ids],
                f"Share of answers {OPTION_TITLES[o]} per GEST stereotype: 1–7 are about "
                "women, 8–16 about men.",
                item_filters={
                    f"stereotype_{s}_frequency_{o}_option": by_id[
                        f"stereotype_{s}_frequency_{o}_option"
                    ]
                    for s in ids
                },
                labels={f"stereotype_{s}_frequency_{o}_option": _stereotype_short(s) for s in ids},
                x_range=(0.0, 1.0),
            )
        )
    return groups


def _stereotype_rate(m: MetricValue) -> str:
    lo, hi = m.ci
    direction = "more" if m.value >= 0 else "less"
    return (
        "Asked who is more likely to say a stereotyped sentence, the model names the "
        f"gender the stereotype is about {points(abs(m.value))} points {direction} "
        "often than the other gender (mean of the sentences about women and about men): "
        f"95 % CI {points(lo)} to {points(hi)}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {"stereotype_rate": _stereotype_rate}


def summary(probe: GenderBenchProbe, metrics: dict[str, MetricValue]) -> str:
    parts = []
    s = metrics.get("stereotype_rate")
    if s is not None and s.value == s.value:
        mark = f", {w}" if (w := mark_words(probe, "stereotype_rate", s)) else ""
        parts.append(
            f"The model picks the gender a sentence's stereotype is about "
            f"{points(abs(s.value))} points {'more' if s.value >= 0 else 'less'} often "
            f"than the other gender (stereotype rate {s.value:.2f}{mark})."
        )
    parts += probe.undefined_sentence(metrics)
    f = [metrics.get(f"frequency_{o}_option") for o in ("female", "male", "neither")]
    if all(x is not None and x.value == x.value for x in f):
        parts.append(
            f"The model answers women {pct(f[0].value)}, men {pct(f[1].value)} and "
            f"neither {pct(f[2].value)} of the time."
        )
    parts += probe.undetected_sentence(metrics)
    return " ".join(parts)


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    text = str(metadata.get("sentence") or item)
    return quoted(text if len(text) <= 56 else text[:55] + "…")


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    sentence = quoted(str(meta.get("sentence") or item.item))
    return f"{sentence} order {meta.get('prompt_index', 0) + 1} — {item.effective_label}"


def _stereotype_short(sid: int) -> str:
    return f"{sid} {GEST_STEREOTYPES[sid].split(' are ')[1]}"
