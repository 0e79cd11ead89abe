"""gest_creative: its finding sentences, summary and titles."""

from __future__ import annotations

from gbdesk.contract import MetricGroup
from gbdesk.studies.genderbench.data import GEST_STEREOTYPES
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    names = [f"masculine_rate_{i}" for i in range(1, 17)]
    return [
        MetricGroup(
            "Masculine rate by stereotype",
            names,
            "Share of male characters per GEST stereotype: 1–7 are about women, 8–16 about men.",
            item_filters={f"masculine_rate_{i}": {"stereotype_id": i} for i in range(1, 17)},
            labels={
                f"masculine_rate_{i}": f"{i} {GEST_STEREOTYPES[i].split(' are ')[1]}"
                for i in range(1, 17)
            },
            x_range=(0.0, 1.0),
        )
    ]
