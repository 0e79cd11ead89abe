"""The Intersectional SDeg CSV export: the probe's `Exporting` capability (no Qt).

answers.csv holds one row per role and question — the raw answer and the option it maps
to — and is what `gbdesk import` and `import-labels` read back; sdeg_cells.csv holds
every (group, category) SDeg cell with its questions and roles.
"""

from __future__ import annotations

import functools
from typing import Any

from gbdesk.contract import ItemResult
from gbdesk.contract.capabilities import DEFAULT_EXPORT_FILES, Exporting
from gbdesk.studies.intersectional.questions import questions_of


def exporting(probe: Any) -> Exporting:
    """answers.csv and sdeg_cells.csv; the roles of attempts.csv are in answers.csv too, so
    only answers.csv is read back."""
    return Exporting(
        tables=functools.partial(export_tables, probe),
        files={
            **DEFAULT_EXPORT_FILES,
            "attempts.csv": (),  # roles only: their answers are in answers.csv
            "answers.csv": ("import", "import-labels"),
            "sdeg_cells.csv": (),
        },
    )


def export_tables(
    probe: Any, attempts: list[dict[str, Any]], params: dict[str, Any] | None
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """answers.csv: one row per role and question with the raw and mapped answer."""
    cols = [
        "run_id",
        "item",
        "item_index",
        "attempt",
        "group",
        "role_index",
        "role",
        "category",
        "question_id",
        "question",
        "answer",
        "option",
        "label_source",
    ]
    rows = []
    order = {key: n for n, key in enumerate(dict.fromkeys(a["item"] for a in attempts))}
    for a in attempts:
        label = a.get("label") or {}
        questions = {str(q["id"]): q for q in questions_of(a["metadata"])}
        for qid, ans in ((label.get("data") or {}).get("answers") or {}).items():
            q = questions.get(qid, {})
            rows.append(
                {
                    "run_id": a["run_id"],
                    "item": a["item"],
                    "item_index": order[a["item"]],
                    "attempt": a["attempt"],
                    "group": a["metadata"].get("group"),
                    "role_index": a["attempt"],
                    "role": a["response"],
                    "category": q.get("category", qid),
                    "question_id": qid,
                    "question": q.get("question", ""),
                    "answer": ans.get("raw"),
                    "option": ans.get("option") or "",
                    "label_source": label.get("source", ""),
                }
            )
    tables = {"answers.csv": (cols, rows)} if rows else {}
    by_item: dict[str, ItemResult] = {}
    for a in attempts:
        label = a.get("label") or {}
        result = by_item.setdefault(a["item"], ItemResult(a["item"], a["metadata"], []))
        result.labels.append(label.get("label", ""))
        result.label_data.append(label.get("data") or {})
    cells = probe.extra_results(list(by_item.values()), params).get("cells") or []
    if cells:
        tables["sdeg_cells.csv"] = (
            ["group", "category", "questions", "roles", "sdeg"],
            [{**c, "questions": ";".join(c["questions"])} for c in cells],
        )
    return tables


# -- the filter run (intersectional_filter) -------------------------------------------------
def filter_exporting() -> Exporting:
    """stereotypes.csv; the attempts are read back by `import-labels` (a dataset goes out and
    in with `gbdesk dataset export` / `dataset import`)."""
    return Exporting(
        tables=filter_tables,
        files={
            **DEFAULT_EXPORT_FILES,
            "attempts.csv": ("import-labels",),
            "stereotypes.csv": (),
        },
    )


def filter_tables(
    attempts: list[dict[str, Any]], params: dict[str, Any] | None
) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """stereotypes.csv: each screened stereotype with the filter's verdict (a validator's
    decisions go out with `gbdesk dataset export`)."""
    cols = ["stereotype_id", "elicited_for", "group", "stereotype", "explanation",
            "status", "filter_broader", "filter_broader_group", "filter_explanation",
            "category_suggested"]  # fmt: skip
    rows = []
    for a in attempts:
        if a["attempt"]:
            continue
        meta = a["metadata"]
        label = a.get("label") or {}
        data = label.get("data") or {}
        if label.get("source", "").startswith("human:"):
            data = {}  # the export's own dataset command gives validations
        rows.append(
            {
                "stereotype_id": a["item"],
                "elicited_for": meta.get("group"),
                "group": data.get("group", meta.get("group")),
                "stereotype": meta.get("stereotype"),
                "explanation": meta.get("explanation"),
                "status": data.get("status", ""),
                "filter_broader": data.get("broader"),
                "filter_broader_group": data.get("broader_group") or "",
                "filter_explanation": data.get("explanation", ""),
                "category_suggested": data.get("category_suggested") or "",
            }
        )
    return {"stereotypes.csv": (cols, rows)} if rows else {}
