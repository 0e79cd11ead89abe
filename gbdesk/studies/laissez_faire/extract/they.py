"""Step 6, third-person plural pronouns given to one character: "their lawyer", the sole
character of a story that never says he or she, a they-form next to one ungendered
character."""

from __future__ import annotations

from gbdesk.studies.laissez_faire.extract.lexicon import (
    GROUPS,
    PLURAL_CUES,
    QUANTIFIERS,
    RELATION_KIN,
)
from gbdesk.studies.laissez_faire.extract.story import Story
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def singular_they(s: Story, t: Tok, base: str) -> int | None:
    """ "their lawyer" in a story of a lawyer and a defendant: a singular they that
    owns the other role's noun."""
    if base != "their" or len(s.cues) != 2:
        return None
    for j in range(t.i + 1, min(t.i + 4, len(s.toks))):
        np = s.nps.get(j)
        if np is not None and np.kind == "role" and np.entity in s.role_of:
            other = 1 - s.role_of[np.entity]
            return s.role_entity.get(other)
        if (
            np is not None
            and np.kind == "kin"
            and 0 in s.role_entity
            and s.entities[s.role_entity[0]].kind == "np"
            and any(c.relation and np.noun in RELATION_KIN[c.relation] for c in s.cues)
        ):
            return s.role_entity[0]  # "Their romantic partner's eyes"
        if not s.toks[j].word:
            break
    return None


def lone_they(s: Story, t: Tok) -> int | None:
    """In a one-character story that never says he or she, "they" is the character
    unless a plural group ("the customers", "people") came between."""
    if len(s.cues) != 1 or 0 not in s.role_entity or s.gendered_pronouns:
        return None
    ent = s.role_entity[0]
    last = max((m.tok for m in s.mentions if m.entity == ent), default=None)
    if last is None or t.sent - s.toks[last].sent > 2:
        return None
    for j in range(last + 1, t.i):
        u = s.toks[j]
        if u.word and not u.cap and (u.lower in GROUPS or _plural_noun(s, j)):
            return None
    return ent


def local_singular_they(s: Story, t: Tok, case: str) -> int | None:
    """ "… mentored the prodigy, nurturing their talents": a they-form is one
    character's when exactly one character without gendered words is mentioned
    earlier in its sentence (not the clause subject, for "them"), and the sentence has
    no plural cue ("together", "both") nor a plural group in between."""
    if t.quoted or not s.w.singular_they or s.love_pair:
        return None  # a Love pair's "their" is the couple's
    sent_toks = [u for u in s.sentence(t.sent) if u.word]
    if any(u.lower in PLURAL_CUES for u in sent_toks):
        return None
    for u in sent_toks:  # "Sam and Lily's passion grew, turning their …"
        nxt = s.tok(u.i + 1)
        if (
            u.i in s.name_at
            and nxt is not None
            and nxt.lower in ("and", "&")
            and (nxt.i + 1) in s.name_at
        ):
            return None
    before = [m for m in s.mentions if m.sent == t.sent and m.tok < t.i]
    if not before:
        return None
    clause_start = s.clause_start(t.i)
    clause_subject = next((m.entity for m in before if m.tok >= clause_start and m.subject), None)
    cands: set[int] = set()
    for m in before:
        e = s.entities[m.entity]
        if m.entity == s.narrator or e.strong or e.prior or e.weak:
            continue
        if case == "obj" and m.entity == clause_subject:
            continue
        cands.add(m.entity)
    gendered = {m.entity for m in before} - cands
    if len(cands) != 1 or (case == "subj" and gendered):
        return None
    (ent,) = cands
    s.local_they.add(t.i)
    last = max(m.tok for m in before if m.entity == ent)
    for j in range(last + 1, t.i):
        u = s.toks[j]
        if u.word and not u.cap and (u.lower in GROUPS or _plural_noun(s, j)):
            return None
    return ent


def _plural_noun(s: Story, j: int) -> bool:
    """A word that looks like a plural noun after a determiner or quantifier."""
    w = s.toks[j].lower
    prev = s.tok(j - 1)
    return (
        w.endswith("s")
        and not w.endswith(("ss", "us", "is"))
        and prev is not None
        and (prev.lower in QUANTIFIERS or prev.poss)
    )
