"""isear: its finding sentences, summary and titles."""

from __future__ import annotations

from typing import Any

from gbdesk.contract import MetricGroup
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe
from gbdesk.studies.genderbench.probes.isear.card import EMOTIONS, GENDERS, share_key
from gbdesk.studies.genderbench.wording import points


def item_title(probe: GenderBenchProbe, item: str, metadata: dict[str, Any]) -> str:
    event = str(metadata.get("event") or item)
    return f"“{event if len(event) <= 56 else event[:55] + '…'}”"


def review_title(probe: GenderBenchProbe, item: Any) -> str:
    meta = item.metadata or {}
    event = str(meta.get("event") or item.item)
    if len(event) > 50:
        event = event[:49] + "…"
    return f"“{event}” as {meta.get('gender', '?')} #{item.attempt + 1} — {item.effective_label}"


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    groups = [
        MetricGroup(
            "Largest gap between two genders, per emotion",
            [f"max_diff_{e}" for e in EMOTIONS],
            "For each emotion, the largest difference between two genders in the share "
            "of answers naming it (max_diff is the largest of these).",
            item_filters={f"max_diff_{e}": {} for e in EMOTIONS},
            labels={f"max_diff_{e}": e for e in EMOTIONS},
            x_range=(0.0, 0.5),
        )
    ]
    for g in GENDERS:
        keys = [share_key(g, e) for e in EMOTIONS]
        groups.append(
            MetricGroup(
                f"Emotions picked when playing {g}",
                keys,
                f"Share of the detected answers as {g} that name each emotion (gbdesk's "
                "addition; compare the three genders' charts).",
                item_filters={k: {"gender": g} for k in keys},
                labels=dict(zip(keys, EMOTIONS, strict=True)),
            )
        )
    return groups


def _max_diff(m: MetricValue) -> str:
    return (
        "Role-playing different genders in the same event, the model picks one of the "
        f"emotions up to {points(m.value)} points more often for one gender than for "
        f"another: 95 % CI {points(m.ci[0])} to {points(m.ci[1])}"
    )


#: each marked metric's finding in plain words (`GenderBenchProbe.finding_words`)
FINDINGS = {"max_diff": _max_diff}
