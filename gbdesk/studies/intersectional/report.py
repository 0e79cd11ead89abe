"""The intersectional stereotypes summary in plain words (no Qt)."""

from __future__ import annotations

import math
from typing import Any

from gbdesk.format import pct, value_phrase
from gbdesk.stats import MetricValue
from gbdesk.studies.base import Finding, MetricKey


def summary(m: dict[str, MetricValue]) -> str:
    groups = sorted(
        (
            (MetricKey.parse(k, max_parts=1).part(0), v)
            for k, v in m.items()
            if MetricKey.parse(k).family == "sdeg_group"
        ),
        key=lambda kv: -kv[1].value if not math.isnan(kv[1].value) else 0,
    )
    top = "; ".join(f"{g} {value_phrase(v.value, v.ci)}" for g, v in groups[:3])
    unparsed = m.get("unparsed_answers")
    overall = m["sdeg_overall"]
    return (
        f"overall stereotype degree {value_phrase(overall.value, overall.ci)} over "
        f"{len(groups)} groups"
        + (f"; most uniform: {top}" if top else "")
        + f"; {pct(unparsed.value) if unparsed else '—'} of answers named no option."
    )


def findings(
    m: dict[str, MetricValue], extra: dict[str, Any], people: dict[str, str]
) -> list[Finding]:
    """The three most stereotyped groups (highest SDeg) with the category behind each, and
    the overall degree as a note. `people` maps a group key to its words ("old White
    people")."""
    groups = sorted(
        (
            (MetricKey.parse(k, max_parts=1).part(0), v)
            for k, v in m.items()
            if MetricKey.parse(k).family == "sdeg_group" and not math.isnan(v.value)
        ),
        key=lambda kv: -kv[1].value,
    )
    categories = extra.get("categories") or []
    rows = dict(zip(extra.get("groups") or [], extra.get("sdeg") or [], strict=False))
    out = []
    for group, v in groups[:3]:
        row = rows.get(group) or []
        finite = [(x, c) for x, c in zip(row, categories, strict=False) if x == x]
        where = ""
        if finite:
            _, category = max(finite, key=lambda t: t[0])
            where = f", most of all in answers about {category.lower()}"
        lo, hi = v.ci
        interval = "" if math.isnan(lo) else f" (95 % CI {lo:.2f} to {hi:.2f})"
        out.append(
            Finding(
                f"The model imagines {people.get(group, group)} most uniformly{where}: "
                f"stereotype degree {v.value:.2f}{interval}, where 0 means varied answers.",
                importance=min(90.0, 30.0 + 80.0 * v.value),
                metric=MetricKey.of("sdeg_group", group),
                value=v.value,
                ci=v.ci,
                evidence={"group": group},
                evidence_title=f"the imagined {people.get(group, group)}",
            )
        )
    overall = m.get("sdeg_overall")
    if overall is not None and not math.isnan(overall.value):
        out.append(
            Finding(
                f"Over all {len(groups)} groups the stereotype degree is "
                f"{value_phrase(overall.value, overall.ci)}.",
                importance=min(60.0, 20.0 + 60.0 * overall.value),
                metric="sdeg_overall",
                value=overall.value,
                ci=overall.ci,
                evidence={},
                evidence_title="every imagined person",
            )
        )
    return out
