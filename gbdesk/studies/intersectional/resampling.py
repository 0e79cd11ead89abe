"""Intersectional SDeg on resamples of a run's groups, fast: the probe's `Resampling` and
`Ppi` capabilities (no Qt). Each item is one group, so a resample's SDeg means are sums of
the drawn groups' own SDeg values (`gbdesk.maths.resampling.Features`)."""

from __future__ import annotations

import functools
import math
from typing import Any

from gbdesk.contract import ItemResult, MetricKey
from gbdesk.contract.capabilities import Ppi, Resampling
from gbdesk.maths.resampling import Features, share
from gbdesk.studies.intersectional.questions import category_order, question_catalog
from gbdesk.studies.intersectional.stats import category_table, group_degree, group_table


def resampling(probe: Any) -> Resampling:
    """The SDeg means (overall, per category) and the unparsed share on each resample."""
    return Resampling(functools.partial(resampled_metrics, probe))


def ppi(base: Ppi) -> Ppi:
    """One group's SDeg is not tested between two runs."""
    return base.with_(paired_test_exclusion=paired_test_exclusion)


def resampled_metrics(
    probe: Any,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    w: Any,
    idx: Any = None,
) -> dict[str, Any] | None:
    """SDeg means over groups from each item's (group's) own SDeg values."""
    catalog = question_catalog(results)
    n_opts = {qid: len(q["options"]) for qid, q in catalog.items()}
    category_of = {qid: q["category"] for qid, q in catalog.items()}
    feats = Features(len(results))
    for i, result in enumerate(results):
        roles = probe.roles([result])
        table = category_table(group_table(roles, n_opts), category_of)
        for cells in table.values():
            degree = group_degree(cells)
            if not math.isnan(degree):
                feats.add(i, ("degree",), degree)
                feats.add(i, ("groups",))
            for category, value in cells.items():
                feats.add(i, ("cell", category), value)
                feats.add(i, ("cells", category))
        answers = [a for rs in roles.values() for role in rs for a in role.values()]
        feats.add(i, ("unparsed",), sum(1 for a in answers if a is None))
        feats.add(i, ("answers",), len(answers))
    col = feats.sums(w)
    out = {"sdeg_overall": share(col("degree"), col("groups"))}
    for _, category in category_order(catalog):
        out[MetricKey.of("sdeg_category", category)] = share(
            col("cell", category), col("cells", category)
        )
    out["unparsed_answers"] = share(col("unparsed"), col("answers"))
    return out


def paired_test_exclusion(metric: str) -> str | None:
    """Why one group's SDeg gets no paired test between two runs (None: tested)."""
    if MetricKey.parse(metric).family == "sdeg_group":
        return (
            "one group's value: its uncertainty comes from that item's roles, which are not "
            "paired between the runs and which resampling items cannot measure"
        )
    return None
