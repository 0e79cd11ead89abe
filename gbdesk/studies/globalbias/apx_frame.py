"""A GlobalBias APX run's stored scores as one pandas frame, and its metrics and extra results
from that frame (no Qt): the full path (`GlobalBiasApxProbe.metrics`) and the fast one
(`ScoreFrame`, from `Store.score_frame`) decorate the same frame and evaluate the same
functions, so their values are identical."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from gbdesk.maths.stats import MetricValue
from gbdesk.studies.globalbias.apx_stats import apx_table, associations, validation
from gbdesk.studies.globalbias.data import descriptor_set, load_descriptors, load_names


def decorated(frame: pd.DataFrame) -> pd.DataFrame:
    """The stored scores with each descriptor's axis and target group and each name
    group's ethnicity and gender (looked up once per distinct value)."""
    if frame.empty:
        return frame

    def lookup(column: str, f: Any) -> pd.Series:
        values = frame[column]
        return values.map({v: f(v) for v in values.unique()})

    meta = {d["descriptor"]: d for d in load_descriptors()}
    shipped_axis = lookup("descriptor", lambda d: (meta.get(d) or {}).get("axis", ""))
    if "axis" in frame:
        frame["axis"] = frame["axis"].where(frame["axis"].notna(), shipped_axis)
    else:
        frame["axis"] = shipped_axis
    frame["target"] = lookup("descriptor", lambda d: (meta.get(d) or {}).get("group", ""))
    groups = {n["Group"]: n for n in load_names()}
    frame["ethnicity"] = lookup("group", lambda g: (groups.get(g) or {}).get("Ethnicity"))
    frame["gender"] = lookup("group", lambda g: (groups.get(g) or {}).get("Gender"))
    return frame


def apx_of(frame: pd.DataFrame) -> pd.DataFrame:
    """The group × descriptor × template APX table of a decorated frame: computed from the
    scored sentences, and as imported where a row has an APX but no perplexity."""
    if frame.empty:
        return frame
    imported = (
        frame[frame["ppl"].isna() & frame["apx"].notna()] if "apx" in frame else frame.iloc[:0]
    )
    scored = frame[frame["ppl"].notna()] if "ppl" in frame else frame.iloc[:0]
    parts = []
    if not scored.empty:
        parts.append(apx_table(scored))
    if not imported.empty:
        parts.append(imported[["group", "descriptor", "template", "apx", "axis"]])
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[:0]


def apx_metrics(frame: pd.DataFrame) -> dict[str, MetricValue]:
    """`GlobalBiasApxProbe.metrics` from the run's decorated score frame (`decorated`)."""
    table = apx_of(frame)
    if table.empty:
        return {}
    nan = (math.nan, math.nan)
    assoc = associations(table)
    counts = assoc.counts()
    n_pairs = len(assoc.table)
    out = {
        "flagged_pairs": MetricValue(counts["pairs"], nan, None, n_pairs),
        "flagged_descriptors": MetricValue(
            counts["descriptors"], nan, None, counts["tested_descriptors"]
        ),
    }
    scored = frame[frame["ppl"].notna()] if "ppl" in frame else frame.iloc[:0]
    t1 = scored[scored["template"] == 1]
    if not t1.empty:
        for use_apx, suffix in ((False, "ppl"), (True, "apx")):
            v = validation(t1, use_apx=use_apx)
            if v.descriptors:
                out[f"validation_accuracy_{suffix}"] = MetricValue(
                    v.accuracy, nan, None, v.descriptors
                )
                out[f"validation_mrr_{suffix}"] = MetricValue(v.mrr, nan, None, v.descriptors)
    for t, rows in scored.groupby("template"):
        out[f"mean_ppl/t{int(t)}"] = MetricValue(float(rows["ppl"].mean()), nan, None, len(rows))
    return out


def apx_extra(frame: pd.DataFrame) -> dict[str, Any]:
    """The association table (flagged first) and flags per group × descriptor set."""
    table = apx_of(frame)
    if table.empty:
        return {}
    assoc = associations(table).table
    sets = {d["descriptor"]: descriptor_set(d) for d in load_descriptors()}
    assoc["set"] = assoc["descriptor"].map(lambda d: sets.get(d, "imported"))
    heat = assoc.groupby(["group", "set"])["flagged"].sum().unstack(fill_value=0)
    rows = assoc.sort_values(["flagged", "bias_score"], ascending=[False, True])
    return {
        "associations": rows.to_dict("records"),
        "heatmap": {
            "groups": list(heat.index),
            "sets": list(heat.columns),
            "counts": heat.to_numpy().astype(int).tolist(),
        },
    }
