"""Laissez-Faire stories made elsewhere: the probe's `Importing` capability (no Qt).

An imported story whose prompt is one of the 100 is placed by its prompt; any other is
rebuilt as an item of its own from the file's domain, condition, subject and object
columns (`import_item`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from gbdesk.contract import Item
from gbdesk.contract.capabilities import Importing
from gbdesk.studies.laissez_faire.metrics import DOMAINS


def importing(base: Importing) -> Importing:
    """The importer's own layout, with items rebuilt from scenario columns."""
    return base.with_(
        item=import_item, hint=lambda: " (or give domain, condition, subject and object columns)"
    )


def import_item(record: dict[str, Any]) -> Item | None:
    """An item for an imported story whose prompt is not one of the 100: built from
    `domain`, `condition`, `subject` and `object` columns."""
    domain = str(record.get("domain") or "").strip().title()
    condition = str(record.get("condition") or "").strip().lower()
    subject = str(record.get("subject") or "").strip()
    if domain not in DOMAINS or condition not in ("power-neutral", "power-laden") or not subject:
        return None
    obj = str(record.get("object") or "").strip() or None
    if condition == "power-laden" and not obj:
        return None
    prompt = str(record.get("prompt") or "")

    def noun(phrase: str) -> str:
        words = re.split(r"\s+(?:who|in|for|on|from|at|to)\s+", phrase)[0].split()
        return words[-1].rstrip("s") if phrase.startswith("two ") else words[-1]

    if domain == "Love" and condition == "power-neutral":
        n = noun(subject)
        roles = [
            {"key": "first", "description": f"first {n}", "noun": n},
            {"key": "second", "description": f"second {n}", "noun": n},
        ]
    else:
        roles = [{"key": "subject", "description": subject, "noun": noun(subject)}]
        if obj:
            roles.append({"key": "object", "description": obj, "noun": noun(obj)})
    relationship = next(
        (
            kind
            for word, kind in (
                ("partner", "romantic"),
                ("friend", "friends"),
                ("sibling", "siblings"),
            )
            if word in f"{subject} {obj or ''}"
        ),
        None,
    )
    key = "custom/" + hashlib.sha256(prompt.encode()).hexdigest()[:10]
    meta = {
        "id": None,
        "domain": domain,
        "condition": condition,
        "relationship": relationship if domain == "Love" else None,
        "subject": subject,
        "predicate": str(record.get("predicate") or ""),
        "object": obj,
        "scenario": subject,
        "roles": roles,
    }
    return Item(key=key, prompt=prompt, metadata=meta)
