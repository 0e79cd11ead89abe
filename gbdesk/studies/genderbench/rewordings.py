"""Other wordings of GenderBench's prompts (issue 32: does a verdict survive a rewording?).

Each probe's wordings are data, `resources/genderbench/wordings/<probe>.json`
(`{"probe": name, "wordings": [{"id", "name", "kind", "template", "note", "read_as"?,
"option_order"?}, …]}`); wording 0 is 1.1.0's own (the `genderbench-1.1` preset) and is
not in the file. How the wordings were written: `resources/genderbench/wordings/README.md`.

A wording that asks for another answer format names, in `read_as`, a regular expression
per answer the probe's evaluator knows (e.g. ``{"yes": "\\bagree\\b", "no": "disagree"}``):
the answer is read as that answer when exactly one expression matches, else as nothing
(undetected), and the probe's own evaluator then reads the word (`read_answer`).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from pathlib import Path
from typing import Any

from gbdesk.contract import Wording
from gbdesk.support.errors import UserError
from gbdesk.support.paths import resource

log = logging.getLogger(__name__)

#: what a wording may change (`Wording.kind`, joined by "+")
KINDS = ("instruction", "format", "order")


def wordings_path(probe_name: str) -> Path:
    return Path(resource("genderbench", "wordings", f"{probe_name}.json"))


@functools.cache
def probe_wordings(probe_name: str, published_template: str) -> tuple[Wording, ...]:
    """Wording 0 (1.1.0's template) and the probe's other wordings from its file (only
    wording 0 when it has no file)."""
    first = Wording(0, "GenderBench 1.1.0", template=published_template, note="1.1.0's own prompt")
    path = wordings_path(probe_name)
    if not path.is_file():
        return (first,)
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    found = [first]
    for n, row in enumerate(data["wordings"], start=1):
        wording = Wording(
            id=int(row["id"]),
            name=str(row["name"]),
            kind=str(row["kind"]),
            template=str(row["template"]),
            note=str(row.get("note", "")),
            read_as=dict(row["read_as"]) if row.get("read_as") else None,
            option_order=tuple(row["option_order"]) if row.get("option_order") else None,
        )
        if wording.id != n:
            raise ValueError(f"{path}: wording {wording.id} out of order (expected {n})")
        if any(k not in KINDS for k in wording.kind.split("+")):
            raise ValueError(f"{path}: wording {n} has kind {wording.kind!r} (one of {KINDS})")
        for pattern in (wording.read_as or {}).values():
            re.compile(pattern)
        found.append(wording)
    return tuple(found)


def wording_by_id(wordings: tuple[Wording, ...] | list[Wording], wording: int) -> Wording:
    """The wording with this id (a clear error naming the ones there are)."""
    for w in wordings:
        if w.id == wording:
            return w
    have = ", ".join(str(w.id) for w in wordings)
    raise UserError(f"there is no wording {wording} (this probe has wordings {have})")


def read_answer(response: str, read_as: dict[str, str]) -> tuple[str, list[list[Any]]]:
    """The answer word `read_as` reads in a response ("" when no expression or several
    match) and the spans [start, end, word] of every match, for the review pane."""
    spans: list[list[Any]] = []
    matched = []
    for word, pattern in read_as.items():
        hits = list(re.finditer(pattern, response))
        if hits:
            matched.append(word)
            spans += [[m.start(), m.end(), word] for m in hits]
    return (matched[0] if len(matched) == 1 else ""), sorted(spans)
