"""Intersectional SDeg labels: a role's answers mapped to options while they are generated
or imported, and reviewers' corrections in their JSON and row forms — the probe's
`Labelling` capability (no Qt)."""

from __future__ import annotations

import json
from typing import Any

from gbdesk.contract.capabilities import Labelling
from gbdesk.studies.intersectional.data import answers_label
from gbdesk.studies.intersectional.questions import questions_of
from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import loads_json


def labelling(base: Labelling) -> Labelling:
    """Labels written by the answer-option mapper ("option_parser/"); reviewers correct
    options as JSON or as answers.csv rows; a label differs when an option does."""
    return base.with_(
        source_prefix=lambda: "option_parser/",
        detector_title=lambda params: "the answer-option mapper",
        human_label=human_label,
        from_rows=human_label_from_rows,
        labels_differ=labels_differ,
    )


def human_label(
    response: str, metadata: dict[str, Any], value: str, reviewer: str
) -> dict[str, Any]:
    """A reviewer's correction as a JSON object {"<question id>": "<option>", …} (the
    paper's questions have the ids 1–16, their category's number); an option may
    differ from the listed one in case. Anything else raises `UserError` with one line."""
    example = 'give the corrected answers as a JSON object, e.g. {"5": "Very important"}'
    try:
        chosen = loads_json(value) if isinstance(value, str) else None
    except ValueError:
        chosen = None
    if not isinstance(chosen, dict) or not chosen:
        raise UserError(example)
    questions = {str(q["id"]): q for q in questions_of(metadata)}
    answers = {}
    for qid, option in chosen.items():
        q = questions.get(qid.strip())
        if q is None:
            raise UserError(
                f"unknown category or question {short_repr(qid)}; this role answered "
                + ", ".join(questions)
            )
        match = (
            next((o for o in q["options"] if o.casefold() == option.strip().casefold()), None)
            if isinstance(option, str)
            else None
        )
        if match is None:
            raise UserError(
                f"question {q['id']} has no option {short_repr(option)}; options: "
                + ", ".join(q["options"])
            )
        answers[str(q["id"])] = {"raw": option, "option": match}
    label = answers_label(answers)
    return {"label": label["label"], "data": label["data"], "evidence": None}


def human_label_from_rows(
    response: str, metadata: dict[str, Any], rows: list[dict[str, Any]], rater: str
) -> dict[str, Any] | None:
    """One row per question, as in answers.csv: `question_id`, or `category` (name or
    1–16, for categories with one question), and `option` (one of its options; an
    empty option labels nothing)."""
    lookup = _lookup(metadata)
    chosen: dict[str, str] = {}
    for row in rows:
        key = (
            str(row.get("question_id") or "").strip()
            or str(row.get("category") or "").strip().casefold()
        )
        q = lookup.get(key)
        if q is None:
            raise UserError("category must be a category name or 1–16 (or give question_id)")
        option = str(row.get("option") or "").strip()
        if not option:
            continue
        if option not in q["options"]:
            raise UserError(f"option must be one of the category's options, not {option!r}")
        if chosen.get(str(q["id"]), option) != option:
            raise UserError("a category is answered twice for one role")
        chosen[str(q["id"])] = option
    if not chosen:
        return None
    return human_label(response, metadata, json.dumps(chosen), rater)


def labels_differ(auto: dict[str, Any], human: dict[str, Any]) -> bool:
    """Whether a reviewer changed an answer option."""

    def options(row: dict[str, Any]) -> dict[str, Any]:
        answers = (row.get("data") or {}).get("answers") or {}
        return {c: a.get("option") for c, a in answers.items()}

    return options(auto) != options(human)


def _lookup(metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An item's questions by id, and by category name or number where a category has
    one question only."""
    qs = questions_of(metadata)
    out = {str(q["id"]): q for q in qs}
    counts: dict[str, int] = {}
    for q in qs:
        counts[q["category"]] = counts.get(q["category"], 0) + 1
    for q in qs:
        if counts[q["category"]] == 1:
            out.setdefault(q["category"].casefold(), q)
            out.setdefault(str(q["category_id"]), q)
    return out
