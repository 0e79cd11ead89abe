"""jobs_lum: its finding sentences, summary and titles."""

from __future__ import annotations

from gbdesk.contract import MetricGroup
from gbdesk.studies.genderbench.gb_probe import GenderBenchProbe


def breakdown_groups(probe: GenderBenchProbe, present: set[str] | None) -> list[MetricGroup]:
    return [
        MetricGroup(
            "Correlation with human stereotype ratings",
            ["correlation"],
            "Pearson correlation of each occupation's masculine rate with its rated "
            "stereotype (0 = none, 1 = perfectly stereotypical).",
            x_range=(-1.0, 1.0),
        )
    ]
