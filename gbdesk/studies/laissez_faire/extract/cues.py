"""What the prompt says about its roles: head nouns, synonyms, modifiers and the action
words of each role (`RoleCue`), computed once per prompt."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gbdesk.studies.laissez_faire.extract.lexicon import (
    ACTION_STOP,
    ACTION_SYNONYMS,
    MENTEE_NOUNS,
    MENTOR_NOUNS,
    MENTOR_WORDS,
    PREPOSITIONS,
    RELATION_KIN,
    SYNONYMS,
    WEAK_SYNONYMS,
    stem,
)
from gbdesk.studies.laissez_faire.extract.types import RoleSpec


@dataclass(frozen=True)
class RoleCue:
    index: int
    spec: RoleSpec
    nouns: frozenset[str]
    weak_nouns: frozenset[str]
    modifiers: frozenset[str]
    actions: frozenset[str]
    relation: str | None  # "sibling" / "partner" / "friend" for Love roles


def role_noun(description: str) -> str:
    """The head noun of a role description: "romantic partner who pays the bill" →
    "partner", "rookie in the league" → "rookie", "first sibling" → "sibling"."""
    words = description.strip().split()
    cut = {"who", "in", "on", "for", "that", "from", "at", "with", "whose", "which", "to"}
    for k, w in enumerate(words):
        if k and w.lower() in cut:
            words = words[:k]
            break
    return words[-1] if words else description


def prompt_subject_noun(scenario: str) -> str | None:
    """The subject head noun of a prompt or scenario ("… of an American person who …",
    "an American person who …" → "person")."""
    m = re.search(
        r"(?:^|\bof )(?:an? |two )?(?:American )?([\w\s-]+?) who ", scenario.strip(), re.IGNORECASE
    )
    return m.group(1).split()[-1].lower() if m else None


def scenario_action_prefixes(scenario: str, roles: list[RoleSpec]) -> tuple[str, ...]:
    """Word beginnings of the prompt's action ("CEO who mentors new employee" →
    "mentor"): the words after "who", without function words, adverbs and the other
    roles' words, cut to a stem of at least four letters."""
    words = re.findall(r"[a-z]+", scenario.lower())
    if "who" not in words:
        return ()
    role_words = {w for r in roles[1:] for w in re.findall(r"[a-z]+", r.description.lower())}
    out = []
    for w in words[words.index("who") + 1 :]:
        if w in ACTION_STOP or w in role_words or w.endswith("ly") or w in PREPOSITIONS:
            continue
        stem = w[:-2] if w.endswith(("ches", "shes", "sses")) else w
        stem = stem[:-1] if stem.endswith("s") and not stem.endswith("ss") else stem
        stem = stem[:-1] if stem.endswith("e") else stem
        if len(stem) >= 4 and stem not in out:
            out.append(stem)
    return tuple(out)


@functools.lru_cache(maxsize=512)
def cached_role_cues(roles: tuple[RoleSpec, ...], scenario: str) -> tuple[RoleCue, ...]:
    """`role_cues`, once per prompt (its cues are frozen)."""
    return tuple(role_cues(list(roles), scenario))


def role_cues(roles: list[RoleSpec], scenario: str) -> list[RoleCue]:
    cues = []
    subj_noun = prompt_subject_noun(scenario)
    text = f"{scenario} " + " ".join(r.description for r in roles)
    mentoring = bool(set(re.findall(r"[a-z]+", text.lower())) & MENTOR_WORDS)
    for k, r in enumerate(roles):
        noun = (r.noun or role_noun(r.description)).lower()
        nouns = set(SYNONYMS.get(noun, frozenset())) | {noun, stem(noun)}
        weak = set(WEAK_SYNONYMS.get(noun, frozenset()))
        words = [w.lower() for w in re.findall(r"[\w-]+", r.description)]
        head_at = words.index(noun) if noun in words else len(words)
        modifiers = {w for w in words[:head_at] if w not in ("first", "second", "other")}
        modifiers.discard("romantic")
        action_part = words[words.index("who") + 1 :] if "who" in words else []
        if r.key == "subject" and subj_noun and subj_noun != noun:
            nouns.add(subj_noun)  # "an American person who pays the bill"
        if mentoring:
            nouns |= MENTOR_NOUNS if r.key == "subject" else MENTEE_NOUNS
        actions: set[str] = set()
        for w in action_part:
            if w not in ACTION_STOP:
                actions |= ACTION_SYNONYMS.get(w, frozenset({w}))
        relation = noun if noun in RELATION_KIN else None
        cues.append(
            RoleCue(
                k,
                r,
                frozenset(nouns),
                frozenset(weak),
                frozenset(modifiers),
                frozenset(actions),
                relation,
            )
        )
    return cues
