"""Characters as the study stores them, and the shipped prompts and codebook — the helpers
the probe, its flat facts, its labelling passes and its report share. It imports none of
those modules, so that none of them has to import the probe for a helper.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from gbdesk.studies.laissez_faire.extract.gender_words import DEFAULT_WORD_LIST
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, RoleSpec
from gbdesk.support.paths import resource

GENDER_ABBREV = {"Female": "F", "Male": "M", "Non-binary": "NB"}
#: what a reviewer may set as a character's gender (`metrics.GENDERS` and the undecided two)
GENDER_LABELS = ("Female", "Male", "Non-binary", "Unspecified", "Unsure")
#: the label of a story too long for the deterministic extractor (`LaissezFaireProbe.label`)
TOO_LONG = "too long to label"
NO_NAME = "(no name)"  # a character's name when raters compare names

# Honorifics and titles: a name that starts with one is a surname (no first name).
FORMAL_PREFIXES = {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor"}
CASUAL_TITLES = {"chef", "nurse", "coach"}
# Capitalised words the paper's code removes from names (common false positives and
# the "invalid names" of its Table 4 analysis).
NOT_NAMES = {
    "young boy",
    "young girl",
    "young child",
    "young man",
    "young woman",
    "she",
    "he",
    "her",
    "him",
    "they",
    "them",
    "woman",
    "man",
    "girl",
    "boy",
    "the",
    "veteran",
    "manager",
    "ceo",
    "alaska",
    "america",
    "big",
    "brainy",
    "brazilian",
    "brilliant",
    "brit",
    "british",
    "brother",
    "chief",
    "chinese",
    "dad",
    "doc",
    "doctor",
    "earnest",
    "elderly",
    "homeless",
    "honey",
    "i",
    "immaculate",
    "japanese",
    "junior",
    "korean",
    "liberty",
    "lieutenant",
    "lil",
    "lil'",
    "little",
    "madame",
    "mama",
    "midnight",
    "mom",
    "older",
    "prestigious",
    "professor",
    "sis",
    "sister",
    "young",
    "younger",
}


@cache
def load_prompts() -> list[dict[str, Any]]:
    return json.loads(resource("laissez_faire", "prompts.json").read_text("utf-8"))["prompts"]


@cache
def load_codebook() -> dict[str, Any]:
    """The default stereotype codebook (resources/laissez_faire/codebook.json)."""
    data = json.loads(resource("laissez_faire", "codebook.json").read_text("utf-8"))
    return {"codes": data["codes"], "origin": data["origin"], "provenance": data["provenance"]}


def roles_of(metadata: dict[str, Any]) -> list[RoleSpec]:
    return [RoleSpec(r["key"], r["description"], r["noun"]) for r in metadata.get("roles", [])]


def first_name(name: str | None) -> str | None:
    """The first name of an extracted name, or None (unnamed, a surname after an
    honorific, or a common false positive)."""
    if not name:
        return None
    cleaned = name.strip().strip(".,;:!?\"'()[]")
    if not cleaned or cleaned.lower() in NOT_NAMES or cleaned.lower() == "unspecified":
        return None
    tokens = cleaned.split()
    head = tokens[0].lower().rstrip(".")
    if head in FORMAL_PREFIXES:
        return None
    if head in CASUAL_TITLES and len(tokens) > 1:
        tokens = tokens[1:]
    first = tokens[0].strip(".,;:!?\"'")
    if not first or first.lower() in NOT_NAMES or not first[0].isalpha():
        return None
    return first.title() if first.isupper() else first


def condition_of(condition: str, role: str) -> str:
    if condition == "power-neutral":
        return "Baseline"
    return "Dominant" if role == "subject" else "Subordinate"


def metadata_scenario(metadata: dict[str, Any]) -> str:
    subject, predicate, obj = (metadata.get(k) or "" for k in ("subject", "predicate", "object"))
    return " ".join(x for x in (subject, "who", predicate, obj) if x)


def character_gender(ch: CharacterExtraction, word_list: str = DEFAULT_WORD_LIST) -> str:
    """A reviewer's explicit gender if given, otherwise the gender of the referring words."""
    from gbdesk.studies.laissez_faire.extract.gender_words import gender_of

    return ch.gender or gender_of(ch.reference_words, word_list)


def characters_from_data(data: dict[str, Any]) -> list[CharacterExtraction]:
    return [CharacterExtraction.from_json(c) for c in (data or {}).get("characters", [])]


def character_label(characters: list[CharacterExtraction], source: str) -> dict[str, Any]:
    """A label row for extracted characters: summary, data and highlight evidence."""

    parts, evidence = [], []
    for ch in characters:
        gender = character_gender(ch)
        parts.append(
            f"{ch.role}: {GENDER_ABBREV.get(gender, gender)}" + (f" ({ch.name})" if ch.name else "")
        )
        evidence += [[s.start, s.end, ch.role] for s in ch.references]
        evidence += [[s.start, s.end, f"{ch.role}:name"] for s in ch.name_spans]
    return {
        "source": source,
        "label": "; ".join(parts) or "no characters",
        "data": {"characters": [c.to_json() for c in characters]},
        "evidence": evidence,
    }
