"""Which labels the Laissez-Faire metrics read, and reviewers' labels in their text and row
forms: the probe's `Labelling` capability (no Qt).

A label is a story's characters (`characters.character_label`). The automatic ones come
from an extractor (deterministic by default, or the labelling passes of `labeling`); a
reviewer's come from the Review pane's JSON (`human_label`) or from rows of an edited
characters.csv (`human_label_from_rows`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gbdesk.contract.capabilities import Labelling
from gbdesk.studies.laissez_faire.characters import GENDER_LABELS, character_label
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, Span
from gbdesk.support.errors import UserError, short_repr
from gbdesk.support.guards import BadJson, loads_json

DEFAULT_EXTRACTOR = "deterministic"
#: the keys of one character of a reviewer's JSON label
REVIEW_KEYS = ("role", "name", "references", "gender")


def labelling(base: Labelling) -> Labelling:
    """Automatic labels from the extractor the run's parameters name (their sources start
    "deterministic/", "llm/" or "hybrid/"), reviewers' labels as JSON or characters.csv
    rows, and the LLM and hybrid extractors as labelling passes."""
    return base.with_(
        source_prefix=lambda: "deterministic/",
        auto_source=auto_source,
        detector_title=detector_title,
        human_label=human_label,
        from_rows=human_label_from_rows,
        passes=labelling_passes,
    )


def labelling_passes() -> list[Any]:
    """The LLM and hybrid extractors' passes (`labeling.PASSES`). Imported here, not at the
    top: labeling.py brings the run loop and the store (`gbdesk.workflows.runs`), which
    importing the probe should not load."""
    from gbdesk.studies.laissez_faire.labeling import PASSES

    return PASSES


def auto_source(params: dict[str, Any] | None) -> str | None:
    """The prefix of the automatic label source the metrics read."""
    extractor = (params or {}).get("extractor", DEFAULT_EXTRACTOR)
    return {"llm": "llm/", "hybrid": "hybrid/"}.get(extractor, "deterministic/")


def detector_title(params: dict[str, Any] | None) -> str:
    """What wrote the automatic labels, in words."""
    extractor = (params or {}).get("extractor", DEFAULT_EXTRACTOR)
    if extractor == "llm":
        return "the LLM character extractor on a labeler model"
    if extractor == "hybrid":
        return (
            "the deterministic character extractor, with its least sure characters "
            "checked by a labeler model"
        )
    return "the deterministic character extractor"


def human_label(
    response: str, metadata: dict[str, Any], value: str, reviewer: str
) -> dict[str, Any]:
    """`value` is a JSON list: [{"role": "subject", "name": "Jane", "references": ["she",
    …]}, …], one object per character (each role at most once). A reference is a word of
    the story (its next occurrence not taken yet) or [start, end] offsets (optionally
    [start, end, text], checked against the story). An optional "gender" (Female, Male,
    Non-binary, Unspecified, Unsure) overrides the gender of the words. Anything else
    raises `UserError` with one line."""
    usage = (
        'a laissez_faire review is JSON: [{"role": "subject", '
        '"name": …, "references": ["she", …]}, …]'
    )
    try:
        payload = loads_json(value) if isinstance(value, str) else None
    except ValueError:
        payload = None
    if not isinstance(payload, list):
        raise UserError(usage)
    story = response if isinstance(response, str) else ""
    roles = {r["key"] for r in metadata.get("roles", [])}
    characters = []
    taken: set[tuple[int, int]] = set()
    for number, entry in enumerate(payload, start=1):
        characters.append(_reviewed_character(story, roles, entry, number, taken))
    given = [ch.role for ch in characters]
    repeated = sorted({r for r in given if given.count(r) > 1})
    if repeated:
        raise UserError(f"the role(s) {', '.join(repeated)} are given more than once")
    return character_label(characters, f"human:{reviewer}")


def human_label_from_rows(
    response: str, metadata: dict[str, Any], rows: list[dict[str, Any]], rater: str
) -> dict[str, Any] | None:
    """One row per character, as in characters.csv: `role`, `name` (empty or
    "Unspecified" = no name), `gender` (one of the reviewer genders; empty = from the
    words) and optional `references` (a JSON list of words or [start, end] offsets, or
    words separated by "|"). While the words still equal the exported
    `reference_spans`, those exact offsets are used; edited words are looked up in the
    story. Roles left out have no character."""
    entries = []
    for row in rows:
        role = str(row.get("role") or "").strip()
        name = str(row.get("name") or "").strip()
        gender = str(row.get("gender") or "").strip() or None
        raw = row.get("references")
        if isinstance(raw, list):
            refs = raw
        elif isinstance(raw, str) and raw.strip().startswith("["):
            try:
                refs = loads_json(raw)
            except ValueError as exc:
                why = f" ({exc})" if isinstance(exc, BadJson) else ""
                raise UserError(f"references must be a JSON list of words{why}") from None
        else:
            refs = [w.strip() for w in str(raw or "").split("|") if w.strip()]
        refs = _exact_spans(response, refs, row.get("reference_spans"))
        entries.append(
            {
                "role": role,
                "name": None if name.lower() in ("", "unspecified") else name,
                "gender": gender,
                "references": refs if isinstance(refs, list) else [],
            }
        )
    if len({e["role"] for e in entries}) != len(entries):
        raise UserError("a role is given twice for one story")
    return human_label(response, metadata, json.dumps(entries), rater)


def _exact_spans(response: str, refs: list[Any], exported: Any) -> list[Any]:
    """The exported [start, end] offsets when they still spell exactly the words `refs`
    (an unedited characters.csv row), else `refs` unchanged."""
    try:
        spans = loads_json(exported) if isinstance(exported, str) and exported.strip() else None
        words = [response[int(a) : int(b)] for a, b in spans or []]
    except (ValueError, TypeError):
        return refs
    if spans and [str(r) for r in refs] == words:
        return [[int(a), int(b)] for a, b in spans]
    return refs


def _reviewed_character(
    story: str, roles: set[str], entry: Any, number: int, taken: set[tuple[int, int]]
) -> CharacterExtraction:
    """One character of a reviewer's JSON label (`human_label`)."""
    where = f"character {number}"
    if not isinstance(entry, dict):
        raise UserError(
            f'{where} is {short_repr(entry)}, not an object like {{"role": "subject", …}}'
        )
    unknown = [k for k in entry if k not in REVIEW_KEYS]
    if unknown:
        raise UserError(
            f"{where} has the unknown key(s) {', '.join(short_repr(k) for k in unknown)}; "
            f"use {', '.join(REVIEW_KEYS)}"
        )
    role = entry.get("role")
    if not isinstance(role, str) or role not in roles:
        raise UserError(
            f"{where}: unknown role {short_repr(role)}; this story has {', '.join(sorted(roles))}"
        )
    references = entry.get("references")
    if references is None:
        references = []
    if not isinstance(references, list):
        raise UserError(f"{where}: references must be a list of words or [start, end] offsets")
    spans = []
    for ref in references:
        if isinstance(ref, list):
            spans.append(_offset_span(story, ref, where))
            continue
        if not isinstance(ref, str) or not ref.strip():
            raise UserError(
                f"{where}: a reference is a word of the story or [start, end], "
                f"not {short_repr(ref)}"
            )
        for start, end in _word_spans(story, ref):
            if (start, end) not in taken:
                taken.add((start, end))
                spans.append(Span(start, end, story[start:end]))
                break
        else:
            raise UserError(f"{short_repr(ref)} does not occur in the story")
    name = entry.get("name")
    if name is not None and not isinstance(name, str):
        raise UserError(f"{where}: name must be text or null, not {short_repr(name)}")
    name = (name or "").strip() or None
    if name is not None and not name.encode("utf-8", "replace").decode("utf-8") == name:
        raise UserError(f"{where}: the name holds a lone surrogate (such as \\ud800)")
    gender = entry.get("gender") or None
    if gender is not None and gender not in GENDER_LABELS:
        raise UserError(
            f"gender must be one of {', '.join(GENDER_LABELS)}, not {short_repr(gender)}"
        )
    return CharacterExtraction(
        role,
        name,
        sorted(spans, key=lambda s: s.start),
        [Span(a, b, story[a:b]) for a, b in _word_spans(story, name)] if name else [],
        gender,
    )


def _offset_span(story: str, ref: list[Any], where: str) -> Span:
    """[start, end] or [start, end, text] offsets of a reviewer's reference."""
    whole = [x for x in ref[:2] if isinstance(x, int) and not isinstance(x, bool)]
    if len(ref) not in (2, 3) or len(whole) != 2 or (len(ref) == 3 and not isinstance(ref[2], str)):
        raise UserError(f"{where}: offsets are [start, end] whole numbers, not {short_repr(ref)}")
    start, end = whole
    if not 0 <= start < end <= len(story):
        raise UserError(f"offsets {start}–{end} are outside the story")
    if len(ref) == 3 and ref[2] != story[start:end]:
        raise UserError(
            f"offsets {start}–{end} hold {short_repr(story[start:end])}, not {short_repr(ref[2])}"
        )
    return Span(start, end, story[start:end])


def _word_spans(text: str, word: str) -> list[tuple[int, int]]:
    pattern = re.compile(r"(?<!\w)" + re.escape(word.strip()) + r"(?!\w)", re.IGNORECASE)
    return [m.span() for m in pattern.finditer(text)] if word.strip() else []
