"""Step 3: noun phrases of the roles ("the CEO", "his new employee", synonyms), generic
person nouns ("a young woman") and kinship terms ("his sister").

In full: find noun phrases of the roles ("the CEO", "his new employee", synonyms
such as "chef" for cook or "recruit" for employee), generic person nouns ("a young
woman", "the stranger") and kinship terms ("his sister").
"""

from __future__ import annotations

from gbdesk.studies.laissez_faire.extract.lexicon import (
    COMPOUND_HEADS,
    DESCRIPTORS,
    DETERMINERS,
    HONORIFICS,
    KIN,
    NAME_ADJECTIVES,
    NP_HEADS,
    OCCUPATIONS,
    PERSON_NOUNS,
    PREPOSITIONS,
    PRONOUNS,
    SUBORDINATORS,
    VERBISH,
    stem,
)
from gbdesk.studies.laissez_faire.extract.story import NounPhrase, Story


def find_noun_phrases(s: Story) -> None:
    """Role nouns, person nouns and kinship terms heading a noun phrase."""
    for t in s.toks:
        if not t.word or t.skip or t.i in s.name_at or t.i in s.narrator_toks:
            continue
        if t.base in HONORIFICS:
            continue
        noun = t.base
        if noun not in NP_HEADS and noun not in s.cue_nouns:
            continue  # no role noun, person noun, kinship term or occupation
        if not t.poss and noun.endswith("s") and stem(noun) != noun:
            continue  # plural: "fans", "students"
        votes = noun in s.cue_nouns and s.noun_votes(noun, set())
        is_kin = noun in KIN
        is_person = noun in PERSON_NOUNS or noun in DESCRIPTORS
        is_other = noun in OCCUPATIONS
        if not (votes or is_kin or is_person or is_other):
            continue
        nxt = s.tok(t.i + 1)
        if nxt is not None and nxt.word and not t.poss and not nxt.cap:
            # a modifier, not the head: "fan events", "student body", "star student"
            if nxt.base in COMPOUND_HEADS or s.noun_votes(stem(nxt.base), set()):
                continue
            if nxt.base in PERSON_NOUNS or nxt.base in KIN:
                continue
        if nxt is not None and nxt.i in s.name_at and t.cap:
            continue  # "Nurse Emily" is handled with the name
        start, mods = _np_left(s, t.i)
        votes = s.noun_votes(noun, mods)
        kind = "role" if votes else ("kin" if is_kin else "person" if is_person else "other")
        s.nps[t.i] = NounPhrase(t.i, start, mods, noun, kind, votes)


def _np_left(s: Story, i: int) -> tuple[int, set[str]]:
    """Start token (the determiner or possessor, if any) and modifiers of the noun
    phrase headed by token `i`. Without a determiner only words that are surely
    modifiers ("young", "American", a role word, a hyphenated compound) count."""
    mods: list[str] = []
    j = i - 1
    while j >= 0 and i - j <= 5:
        t = s.toks[j]
        if not t.word:
            break
        if t.lower in DETERMINERS or t.poss:
            return j, set(mods)
        if (
            t.lower in PREPOSITIONS
            or t.lower in SUBORDINATORS
            or t.lower in VERBISH
            or t.lower in PRONOUNS
            or j in s.name_at
        ):
            break
        mods.append(t.lower)
        j -= 1
    # no determiner: keep the modifiers next to the head that are surely modifiers
    keep = 0
    for w in mods:
        if (
            w in NAME_ADJECTIVES
            or "-" in w
            or w == "american"
            or any(w in c.nouns or w in c.modifiers for c in s.cues)
        ):
            keep += 1
        else:
            break
    return i - keep, set(mods[:keep])
