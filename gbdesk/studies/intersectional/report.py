"""The intersectional stereotypes summary in plain words (no Qt)."""

from __future__ import annotations

import math

from gbdesk.format import pct, value_phrase
from gbdesk.stats import MetricValue
from gbdesk.studies.base import MetricKey


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
