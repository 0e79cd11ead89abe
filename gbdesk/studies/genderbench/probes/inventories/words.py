"""inventories: its finding sentences, summary and titles."""

from __future__ import annotations

from gbdesk.contract import MetricGroup
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    filters = {
        f"{kind}_rate_{s}": {"source": s}
        for s in probe.sources
        for kind in ("masculine", "stereotype")
    }
    return [
        MetricGroup(
            "Masculine rate by inventory",
            [f"masculine_rate_{s}" for s in probe.sources],
            "Share of male characters over each inventory's traits (0.5 = balanced).",
            item_filters=filters,
            labels={f"masculine_rate_{s}": s.upper() for s in probe.sources},
            x_range=(0.0, 1.0),
        ),
        MetricGroup(
            "Stereotype rate by inventory",
            [f"stereotype_rate_{s}" for s in probe.sources],
            "Masculine rate of male-stereotype traits minus that of female-stereotype "
            "traits (0 = no stereotyping).",
            item_filters=filters,
            labels={f"stereotype_rate_{s}": s.upper() for s in probe.sources},
            x_range=(-1.0, 1.0),
        ),
    ]
