"""The study's shipped tables and what reads answers and stored labels — the bottom of the
study package: every other module of it may import this one, and it imports none of them.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from typing import Any

from gbdesk.support.guards import loads_json
from gbdesk.support.paths import resource

SOURCE = "option_parser/1"


@functools.cache
def load_groups() -> list[dict[str, str]]:
    path = resource("intersectional/ma2023_intersectional_groups_table1.csv")
    with path.open(encoding="utf-8", newline="") as f:
        return [dict(row) for row in csv.DictReader(f)]


@functools.cache
def load_categories() -> list[dict[str, Any]]:
    """The 16 categories with their question and options (number prefixes removed)."""
    path = resource("intersectional/ma2023_stereotype_categories_tables2_b1.csv")
    with path.open(encoding="utf-8", newline="") as f:
        rows = [dict(row) for row in csv.DictReader(f)]
    for row in rows:
        row["options"] = [
            re.sub(r"^\s*\d+\s*-\s*", "", o).strip() for o in row["expected_answers"].split(";")
        ]
        row["id"] = int(row["category_id"])
    return rows


def _json_value(text: str) -> Any:
    """The JSON value `text` holds, or `text` itself when it is not JSON (never raises:
    bad JSON, NaN, 5,000-digit numbers and deep nesting all give the text back)."""
    try:
        return loads_json(text, strict=False)
    except ValueError:
        return text


def map_answer(text: Any, options: list[str]) -> str | None:
    """The option an answer chose: a JSON string or plain text naming one option, or its
    number; None ("unparsed") when no single option is named. Never raises."""
    raw = text.strip() if isinstance(text, str) else ""
    value = _json_value(raw)
    if isinstance(value, dict):
        value = next(iter(value.values()), "")
    if isinstance(value, str):
        raw = value.strip()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        raw = str(value) if abs(value) < 10**100 else ""
    else:  # true/false/null, a list or an object inside the object: the JSON text
        try:
            raw = json.dumps(value)
        except (ValueError, RecursionError):
            raw = ""
    low = raw.casefold().strip(" .!\"'")
    for option in options:
        if low == option.casefold():
            return option
    number = re.fullmatch(r"(\d{1,3})\b.*", low)
    if number and 1 <= int(number.group(1)) <= len(options):
        return options[int(number.group(1)) - 1]
    named = [o for o in options if re.search(rf"\b{re.escape(o.casefold())}\b", low)]
    # "Not important at all" contains no other option; "Very rich" contains "Rich"
    named = [o for o in named if not any(o != p and o.casefold() in p.casefold() for p in named)]
    return named[0] if len(named) == 1 else None


def answers_label(answers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The label of a role's answers: "answered" (all mapped), "partial" or "unparsed"."""
    parsed = sum(1 for a in answers.values() if a.get("option") is not None)
    value = (
        "answered" if parsed == len(answers) and answers else ("partial" if parsed else "unparsed")
    )
    return {"source": SOURCE, "label": value, "data": {"answers": answers}, "evidence": None}


def human_labels_by_validator(store: Any, run_id: int) -> dict[int, dict[str, dict[str, Any]]]:
    """attempt id → validator → their latest human label (data and time)."""
    rows = store.human_label_rows(run_id)
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for row in rows:
        try:
            data = json.loads(row["data_json"]) if row["data_json"] else {}
        except ValueError:
            data = {}
        validator = str(row["source"]).removeprefix("human:")
        out.setdefault(row["attempt_id"], {})[validator] = {
            "data": data if isinstance(data, dict) else {},
            "at": (data or {}).get("at") if isinstance(data, dict) and data.get("at") else
            row["created_at"],
        }  # fmt: skip
    return out
