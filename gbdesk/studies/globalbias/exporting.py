"""The GlobalBias CSV exports: the probes' `Exporting` capabilities (no Qt).

An APX run exports associations.csv (one row per group × descriptor, with its APX per
template, bias score and flag) and scores.csv (one row per scored sentence); both are
read back by `gbdesk import`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from gbdesk.contract import ItemResult
from gbdesk.contract.capabilities import DEFAULT_EXPORT_FILES, Exporting
from gbdesk.studies.globalbias.apx_stats import associations
from gbdesk.studies.globalbias.profiles_stats import COLUMNS, LIST_FIELDS, PHYSICAL_COLUMNS


def apx_exporting(probe: Any) -> Exporting:
    """associations.csv and scores.csv; the scored blocks of attempts.csv are in scores.csv."""
    return Exporting(
        tables=functools.partial(apx_tables, probe),
        files={
            **DEFAULT_EXPORT_FILES,
            "attempts.csv": (),  # scored blocks: their scores are in scores.csv
            "scores.csv": ("import",),
            "associations.csv": ("import",),
            "codes.csv": (),
        },
    )


def apx_tables(
    probe: Any, attempts: list[dict[str, Any]], params: dict[str, Any] | None
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """associations.csv (one row per group × descriptor) and scores.csv (one row per
    scored sentence; imported APX rows have no sentence)."""
    results = [
        ItemResult(a["item"], a["metadata"], [], scores=a.get("scores") or []) for a in attempts
    ]
    table = probe.apx(results)
    if table.empty:
        return {}
    assoc = associations(table)
    cols = ["run_id", "group", "descriptor", "axis"]
    cols += [f"apx_{t}" for t in assoc.templates] + [f"norm_{t}" for t in assoc.templates]
    cols += ["bias_score", "mean", "sd", "threshold", "tested", "flagged"]
    run_id = attempts[0]["run_id"]
    rows = [
        {
            **{c: r.get(c) for c in cols},
            "run_id": run_id,
            "tested": str(bool(r["tested"])).lower(),
            "flagged": str(bool(r["flagged"])).lower(),
        }
        for r in assoc.table.to_dict("records")
    ]
    score_cols = [
        "run_id",
        "item",
        "group",
        "name",
        "descriptor",
        "template",
        "text",
        "n_tokens",
        "logprob_sum",
        "ppl",
        "apx",
        "axis",
        "attempt",
        "item_index",
    ]
    order = {key: n for n, key in enumerate(dict.fromkeys(a["item"] for a in attempts))}
    scores = [
        {
            **{c: s.get(c) for c in score_cols},
            "run_id": run_id,
            "item": a["item"],
            "attempt": a["attempt"],
            "item_index": order[a["item"]],
        }
        for a in attempts
        for s in a.get("scores") or []
    ]
    return {"associations.csv": (cols, rows), "scores.csv": (score_cols, scores)}


def profiles_exporting() -> Exporting:
    """profiles.csv in the released files' layout; answers and profiles are read back by
    `import` (parsed profiles are reviewed in the app)."""
    return Exporting(
        tables=profiles_tables,
        files={
            **DEFAULT_EXPORT_FILES,
            "attempts.csv": ("import",),
            "profiles.csv": ("import",),
        },
    )


def profiles_tables(
    attempts: list[dict[str, Any]], params: dict[str, Any] | None
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """profiles.csv in the released files' layout (lists as JSON), one row per profile."""
    rows = []
    order = {key: n for n, key in enumerate(dict.fromkeys(a["item"] for a in attempts))}
    for a in attempts:
        people = (a.get("metadata") or {}).get("people") or []
        data = (a.get("label") or {}).get("data") or {}
        for profile in data.get("profiles") or []:
            who = people[profile.get("position", 0)] if people else {}
            physical = profile.get("physical_characteristics") or {}
            row: dict[str, Any] = {
                "gbdesk_run": a["run_id"],
                "item": a["item"],
                "item_index": order[a["item"]],
                "position": profile.get("position", 0),
            }
            for col in COLUMNS:
                if col in PHYSICAL_COLUMNS:
                    row[col] = (
                        physical.get(col.split(".", 1)[1]) if isinstance(physical, dict) else None
                    )
                elif col in LIST_FIELDS:
                    row[col] = json.dumps(profile.get(col), ensure_ascii=False)
                elif col == "run_id":
                    row[col] = a["attempt"]
                elif col in ("Ethnicity", "Gender", "Group"):
                    row[col] = who.get(col.lower())
                else:
                    row[col] = profile.get(col)
            rows.append(row)
    cols = ["gbdesk_run", "item", *COLUMNS, "item_index", "position"]
    return {"profiles.csv": (cols, rows)} if rows else {}
