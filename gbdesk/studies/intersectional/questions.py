"""The question bank: per stereotype category, questions with their expected answers (no Qt).

The paper (§3, Appendix B) wrote several questions per category, each with a fixed set of
expected answers, and published one example per category (Table B1). The bank starts with
those 16 examples (ids "1"–"16", the category's number) and takes questions a user writes.
It is data: read from and written to CSV or JSON (`read_bank`, `write_bank`).

A question is a dict: ``id`` (text, unique in the bank), ``category_id`` (1–16),
``category`` (its name), ``question``, ``options`` (the expected answers, in order, at
least two, all different) and ``source`` ("paper" or "user").

CSV columns: ``question_id`` (optional: new ids are made), ``category`` (a name or 1–16),
``question``, ``expected_answers`` (answers separated by ";", an optional "1 - " before
each is dropped, as Table B1 writes them) or ``options`` (a JSON list), optional ``source``.
JSON: a list of such objects, or {"questions": [...]}.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gbdesk.contract import ItemResult
from gbdesk.studies.intersectional.data import load_categories
from gbdesk.support.errors import UserError
from gbdesk.support.guards import loads_json

FIELDS = ("question_id", "category_id", "category", "question", "expected_answers", "source")


def paper_bank() -> list[dict[str, Any]]:
    """The 16 example questions of Table B1 (ids "1"–"16")."""
    return [
        {
            "id": str(c["id"]),
            "category_id": c["id"],
            "category": c["category"],
            "question": c["example_question"],
            "options": list(c["options"]),
            "source": "paper",
        }
        for c in load_categories()
    ]


def category_lookup() -> dict[str, dict[str, Any]]:
    """Category by its name (any case) or number."""
    out: dict[str, dict[str, Any]] = {}
    for c in load_categories():
        out[c["category"].casefold()] = c
        out[str(c["id"])] = c
    return out


def find_category(value: Any) -> dict[str, Any] | None:
    """The category a cell names (its name in any case, or 1–16), or None."""
    return category_lookup().get(re.sub(r"\s+", " ", str(value or "")).strip().casefold())


def split_answers(text: str) -> list[str]:
    """ "1 - Never; 2 - Sometimes" → ["Never", "Sometimes"]."""
    return [re.sub(r"^\s*\d+\s*-\s*", "", o).strip() for o in str(text).split(";") if o.strip()]


def _options(record: dict[str, Any]) -> Any:
    options = record.get("options")
    if isinstance(options, str) and options.strip().startswith("["):
        try:
            options = loads_json(options)
        except ValueError:
            return None
    if options in (None, "") and record.get("expected_answers") not in (None, ""):
        options = split_answers(str(record["expected_answers"]))
    return options


def check_bank(records: list[tuple[int, dict[str, Any]]], where: str) -> list[dict[str, Any]]:
    """Questions from (line, record) pairs, all or nothing: every bad line is listed in one
    `UserError`."""
    from gbdesk.contract.importing import line_list, refuse

    bad: dict[str, list[int]] = {}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, record in records:
        category = find_category(record.get("category") or record.get("category_id"))
        question = str(record.get("question") or "").strip()
        options = _options(record)
        qid = str(record.get("question_id") or record.get("id") or "").strip()
        problem = None
        if category is None:
            problem = "name no category (a name or 1–16)"
        elif not question:
            problem = "have no question"
        elif (
            not isinstance(options, list)
            or len(options) < 2
            or not all(isinstance(o, str) and o.strip() for o in options)
        ):
            problem = "have fewer than two expected answers (expected_answers: 'A; B; C')"
        elif len({o.strip().casefold() for o in options}) != len(options):
            problem = "repeat an expected answer"
        elif qid and qid in seen:
            problem = "repeat a question_id"
        if problem:
            bad.setdefault(problem, []).append(number)
            continue
        assert category is not None and isinstance(options, list)
        if qid:
            seen.add(qid)
        source = str(record.get("source") or "").strip() or "user"
        out.append(
            {
                "id": qid,
                "category_id": category["id"],
                "category": category["category"],
                "question": question,
                "options": [o.strip() for o in options],
                "source": source if source in ("paper", "user") else "user",
            }
        )
    refuse(where, [f"{line_list(lines)} {problem}" for problem, lines in bad.items()])
    if not out:
        raise UserError(f"nothing imported from {where}: it holds no question")
    n = 1
    for q in out:  # ids for questions without one
        if not q["id"]:
            while f"u{n}" in seen:
                n += 1
            q["id"] = f"u{n}"
            seen.add(q["id"])
    return out


def read_bank(path: str | Path) -> list[dict[str, Any]]:
    """A bank from a CSV or JSON file (see the module's description)."""
    from gbdesk.contract.importing import read_rows

    p = Path(path)
    if p.suffix.lower() == ".json":
        try:
            data = loads_json(p.read_text(encoding="utf-8-sig"))
        except FileNotFoundError:
            raise UserError(f"file not found: {p}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"{p} is not a JSON file: {exc}") from None
        if isinstance(data, dict):
            data = data.get("questions")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise UserError(f"{p} holds no list of questions (objects)")
        return check_bank([(n, r) for n, r in enumerate(data, start=1)], str(p))
    return check_bank(read_rows(p), str(p))


def write_bank(bank: list[dict[str, Any]], path: str | Path) -> Path:
    """Write the bank as JSON (a .json path) or CSV (anything else)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() == ".json":
        from gbdesk.support.atomic import write_text

        write_text(p, json.dumps({"questions": bank}, ensure_ascii=False, indent=2))
        return p
    from gbdesk.support.csvfile import write_table

    write_table(
        p,
        list(FIELDS),
        (
            {
                "question_id": q["id"],
                "category_id": q["category_id"],
                "category": q["category"],
                "question": q["question"],
                "expected_answers": "; ".join(
                    f"{i} - {o}" for i, o in enumerate(q["options"], start=1)
                ),
                "source": q.get("source", "user"),
            }
            for q in bank
        ),
    )
    return p


def by_category(bank: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """category name → its questions, in bank order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for q in bank:
        out.setdefault(q["category"], []).append(q)
    return out


def question_seed(question: dict[str, Any], position: int) -> int:
    """The seed offset of a question's answer: the paper's questions keep their category
    number (as gbdesk always used), others 100 + their position in the item."""
    qid = str(question.get("id", ""))
    return int(qid) if qid.isdigit() and len(qid) <= 4 else 100 + position


# -- the questions of an item and of a run ----------------------------------------------
def questions_of(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The questions an item's roles answer: its own (dicts, or ids of the paper's
    questions), else the paper's 16 (runs made before question banks)."""
    paper = {q["id"]: q for q in paper_bank()}
    listed = metadata.get("questions")
    if not listed:
        return list(paper.values())
    out = []
    for q in listed:
        if isinstance(q, dict):
            out.append(q)
        elif str(q) in paper:
            out.append(paper[str(q)])
    return out


def question_catalog(results: Iterable[ItemResult]) -> dict[str, dict[str, Any]]:
    """question id → question (with its category and options) over a run's items."""
    catalog: dict[str, dict[str, Any]] = {}
    for r in results:
        for q in questions_of(r.metadata):
            catalog.setdefault(str(q["id"]), q)
    return catalog


def category_order(catalog: dict[str, dict[str, Any]]) -> list[tuple[int, str]]:
    """(category number, name) of the categories asked, in Table 2's order."""
    return sorted({(int(q["category_id"]), q["category"]) for q in catalog.values()})
