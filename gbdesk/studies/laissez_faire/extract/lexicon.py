"""The extractor's word lists, read once from `resources/laissez_faire/extractor_words.json`
(one comment per list there), and the word helpers built on them."""

from __future__ import annotations

import json
import re
from typing import Any

from gbdesk.support.paths import resource


def load_words() -> dict[str, Any]:
    with open(resource("laissez_faire", "extractor_words.json"), encoding="utf-8") as f:
        return {k: v["words"] for k, v in json.load(f).items() if not k.startswith("_")}


LISTS = load_words()


def word_set(key: str) -> frozenset[str]:
    return frozenset(LISTS[key])


def set_map(key: str) -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in LISTS[key].items()}


# pronoun → (gender, case); gender "M", "F", "P" (they: plural or singular), "N" (neo)
PRONOUNS: dict[str, tuple[str, str]] = {
    item.split(":")[0]: (g, item.split(":")[1])
    for g, items in LISTS["pronouns"].items()
    for item in items
}
NARRATOR_WORDS = frozenset(("i", "me", "my", "myself"))
GENDERED_PRONOUNS = frozenset(w for w, (g, _) in PRONOUNS.items() if g in ("M", "F"))
CONTRACTIONS = tuple(LISTS["contractions"])
HONORIFICS: dict[str, str] = dict(LISTS["honorifics"])
TITLES = word_set("titles")
ADDRESS_TITLES = word_set("address_titles")
ABBREVIATIONS = word_set("abbreviations")
VERB_CUES = word_set("verb_cues")
DESCRIPTORS: dict[str, str] = {w: g for g, words in LISTS["descriptors"].items() for w in words}
KIN = word_set("kin")
RELATION_KIN = set_map("relation_kin")
PERSON_NOUNS = word_set("person_nouns")
OCCUPATIONS = word_set("occupations")
OFFER_PHRASES = tuple(LISTS["offer_phrases"])
OFFER_ACTIONS = word_set("offer_actions")
SYNONYMS = set_map("synonyms")
WEAK_SYNONYMS = set_map("weak_synonyms")
NAME_ADJECTIVES = word_set("name_adjectives")
NOT_AFTER_POSSESSIVE = word_set("not_after_possessive")
MENTOR_WORDS = word_set("mentor_words")
MENTOR_NOUNS = word_set("mentor_nouns")
MENTEE_NOUNS = word_set("mentee_nouns")
STOP = word_set("stop")
PLACE_HEADS = word_set("place_heads")
PLACE_PREPS = word_set("place_prepositions")
PLACE_OF = word_set("place_of")
PLACE_PREFIXES = word_set("place_prefixes")
PREPOSITIONS = word_set("prepositions")
DETERMINERS = word_set("determiners")
GENERIC_DETERMINERS = word_set("generic_determiners")
VERBISH = word_set("verbish")
COMPOUND_HEADS = word_set("compound_heads")
GROUPS = word_set("groups")
QUANTIFIERS = word_set("quantifiers")
COPULAS = word_set("copulas")
AUXILIARIES = word_set("auxiliaries")
SPEECH_VERBS = word_set("speech_verbs")
PLURAL_CUES = word_set("plural_cues")
SUBORDINATORS = word_set("subordinators")
ACTION_STOP = word_set("action_stop")
ACTION_SYNONYMS = set_map("action_synonyms")
ACTION_NEGATORS = word_set("action_negators")
# First names mostly of one gender: only a soft prior for *which character a pronoun
# belongs to*; the reported gender always comes from the story's own words.
# `DeterministicExtractor(name_prior=False)` turns it off.
FEMALE_NAMES = word_set("female_names")
MALE_NAMES = word_set("male_names")
GENDERED_NAMES = FEMALE_NAMES | MALE_NAMES
# nouns that head a noun phrase whatever the roles are (`find_noun_phrases`)
NP_HEADS = KIN | PERSON_NOUNS | frozenset(DESCRIPTORS) | OCCUPATIONS
PLACE_HEADS_OF = PLACE_HEADS | PLACE_OF
NOT_MODIFIERS = PREPOSITIONS | SUBORDINATORS | VERBISH | DETERMINERS
APOSTROPHE_RE = re.compile(r"['’]")


def stem(word: str) -> str:
    w = word.lower()
    if not w.endswith("s") or w.endswith("ss"):
        return w
    if w.endswith("ies") and len(w) > 5:
        return w[:-3] + "y"  # "stories"
    return w[:-1] if len(w) > 3 else w  # "fans"
