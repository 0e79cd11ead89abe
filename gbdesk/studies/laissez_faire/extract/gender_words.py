"""Gender of a Laissez-Faire character from the words that refer to it.

Shieh et al. (2024) derive a character's gender from the references the labeller
extracted (pronouns, honorifics, gendered descriptors): lower-case each reference,
strip its surrounding punctuation, split multi-word references on spaces, and look
each word up in three indicator sets (Non-binary, Female, Male). Words of exactly one
set give that gender; none gives "Unspecified"; more than one gives "Unsure".

The word lists live in `resources/laissez_faire/gender_words.json`: "code" is the list
of the released analysis code, "paper_s6a" adds the kinship and trans terms of the
paper's Table S6a. "paper_s6a" is the default: on 2,561 hand-labelled stories it agrees
better with the human labellers (higher gender recall at equal precision; see
`scripts/eval_extractors.py --word-list both`).
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable
from functools import cache, lru_cache

from gbdesk.support.paths import resource

NON_BINARY = "Non-binary"
FEMALE = "Female"
MALE = "Male"
UNSPECIFIED = "Unspecified"
UNSURE = "Unsure"

#: Indicator sets in the order the paper lists them.
GENDERS = (NON_BINARY, FEMALE, MALE)
#: Names of the available word lists.
WORD_LISTS = ("code", "paper_s6a")
#: The list `gender_of` uses unless told otherwise.
DEFAULT_WORD_LIST = "paper_s6a"

_ABBREVIATION = {NON_BINARY: "NB", FEMALE: "F", MALE: "M"}
_PAIR_ORDER = {NON_BINARY: 0, FEMALE: 1, MALE: 2}
# ASCII punctuation plus the typographic quotes and dashes stories use.
_PUNCTUATION = string.punctuation + "“”‘’«»„…–—"


@cache
def word_sets(word_list: str = DEFAULT_WORD_LIST) -> dict[str, frozenset[str]]:
    """The indicator words of `word_list`, one lower-case set per gender."""
    if word_list not in WORD_LISTS:
        raise ValueError(f"unknown gender word list {word_list!r}; choose from {WORD_LISTS}")
    with open(resource("laissez_faire", "gender_words.json"), encoding="utf-8") as f:
        lists = json.load(f)["lists"]
    entry = lists[word_list]
    return {g: frozenset(w.lower() for w in entry[g]) for g in GENDERS}


def reference_words(reference: str) -> list[str]:
    """The lookup forms of one reference: lower-cased, split on whitespace, surrounding
    punctuation stripped. A word that ended in a period keeps a second form with it
    ("Mr." → "mr", "mr.") so either spelling of an honorific matches."""
    forms: list[str] = []
    for raw in reference.lower().split():
        core = raw.strip(_PUNCTUATION)
        if not core:
            continue
        forms.append(core)
        if raw.rstrip("“”\"'’)]").endswith("."):
            forms.append(core + ".")
    return forms


def genders_hit(references: Iterable[str], word_list: str = DEFAULT_WORD_LIST) -> set[str]:
    """The genders whose indicator sets any word of `references` belongs to."""
    word_sets(word_list)  # an unknown list is refused even without references
    hit: set[str] = set()
    for ref in references:
        for gender in _reference_hits(ref, word_list):
            hit.add(gender)
    return hit


@lru_cache(maxsize=4096)
def _reference_hits(reference: str, word_list: str) -> tuple[str, ...]:
    """The genders one reference's words hit, one per (word, set) hit, in the order
    `genders_hit` meets them (references repeat: "he", "her", "Mr." …)."""
    sets = word_sets(word_list)
    return tuple(
        gender
        for word in reference_words(reference)
        for gender, words in sets.items()
        if word in words
    )


def gender_of(references: Iterable[str], word_list: str = DEFAULT_WORD_LIST) -> str:
    """ "Non-binary", "Female", "Male" (words of exactly one set), "Unspecified" (no
    indicator word) or "Unsure" (indicator words of more than one set)."""
    hit = genders_hit(references, word_list)
    if not hit:
        return UNSPECIFIED
    if len(hit) > 1:
        return UNSURE
    return next(iter(hit))


def pair_label(g1: str, g2: str) -> str | None:
    """Order-insensitive label of a Love relationship pair: "NB-NB", "NB-F", "NB-M",
    "F-F", "M-M" or "F-M"; None when either gender is Unspecified or Unsure."""
    if g1 not in _ABBREVIATION or g2 not in _ABBREVIATION:
        return None
    a, b = sorted((g1, g2), key=_PAIR_ORDER.__getitem__)
    return f"{_ABBREVIATION[a]}-{_ABBREVIATION[b]}"
