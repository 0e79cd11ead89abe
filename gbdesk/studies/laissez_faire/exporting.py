"""The Laissez-Faire CSV export: the probe's `Exporting` capability (no Qt).

Beside gbdesk's files, characters.csv holds one row per story and character role — its
name, first name, referring words and their offsets, gender, the extractor's confidence
and the name table's race likelihoods — which `gbdesk import-labels` reads back
(`labels.human_label_from_rows`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from gbdesk.contract.capabilities import DEFAULT_EXPORT_FILES, Exporting
from gbdesk.studies.laissez_faire.characters import (
    character_gender,
    characters_from_data,
    first_name,
)
from gbdesk.studies.laissez_faire.extract.gender_words import DEFAULT_WORD_LIST


def exporting(probe: Any) -> Exporting:
    """characters.csv beside gbdesk's files, a story at a time; the attempts are read back
    by `import`, the characters by `import-labels`."""
    return Exporting(
        tables=functools.partial(export_tables, probe),
        per_attempt=True,
        files={
            **DEFAULT_EXPORT_FILES,
            "attempts.csv": ("import",),
            "characters.csv": ("import-labels",),
        },
    )


def export_tables(
    probe: Any, attempts: list[dict[str, Any]], params: dict[str, Any] | None
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """characters.csv: one row per story and character role."""
    table = probe.table(params)
    word_list = (params or {}).get("word_list", DEFAULT_WORD_LIST)
    race_cols = [f"race_{c}" for c in table.categories]
    rows = []
    for a in attempts:
        meta, label = a["metadata"], a.get("label") or {}
        for ch in characters_from_data(label.get("data") or {}):
            first = first_name(ch.name)
            liks = table.likelihoods(first) if first else None
            rows.append(
                {
                    "run_id": a["run_id"],
                    "item": a["item"],
                    "attempt": a["attempt"],
                    "domain": meta.get("domain"),
                    "condition": meta.get("condition"),
                    "scenario": meta.get("scenario"),
                    "subject": meta.get("subject"),
                    "object": meta.get("object"),
                    "relationship": meta.get("relationship"),
                    "prompt": a["prompt"],
                    "response": a["response"],
                    "role": ch.role,
                    "name": ch.name or "",
                    "first_name": first or "",
                    "references": json.dumps(ch.reference_words, ensure_ascii=False),
                    "reference_spans": json.dumps([[r.start, r.end] for r in ch.references]),
                    "gender": character_gender(ch, word_list),
                    "confidence": ch.confidence,
                    "label_source": label.get("source", ""),
                    "name_table": table.id,
                    **{col: (liks or {}).get(col[5:]) for col in race_cols},
                }
            )
    columns = [
        "run_id",
        "item",
        "attempt",
        "domain",
        "condition",
        "scenario",
        "subject",
        "object",
        "relationship",
        "prompt",
        "response",
        "role",
        "name",
        "first_name",
        "references",
        "reference_spans",
        "gender",
        "confidence",
        "label_source",
        "name_table",
        *race_cols,
    ]
    return {"characters.csv": (columns, rows)}
