"""Step 6: the left-to-right pass — record each mention and resolve each pronoun as it
comes (noun phrases of bystanders and kin, they-forms, the antecedent choice).

In full: resolve pronouns left to right against a salience model (recency,
subject position, parallelism, the protagonist) with gender agreement (honorifics and
descriptors; then, unless `name_prior=False`, a lexicon of common gendered first names;
then earlier pronouns), binding constraints (an object pronoun is not its own clause's
subject, a reflexive is, a possessive does not own its own character: "his employee,
Emma"), and cataphora ("Bright star of his class, Alex …"). Third-person plural
pronouns are given to one character only when the story uses them for one ("their
lawyer" in a story about a defendant; the sole character of a single-role story that
never says "he" or "she"); a plural "they" stays unassigned; a pronoun whose gender
every candidate contradicts goes to a new character of a free role (two unnamed
partners, "she … he") or to nobody; optionally a learned model decides between two named
role characters of the same gender when the rules are unsure.
"""

from __future__ import annotations

from gbdesk.studies.laissez_faire.extract.antecedents import choose
from gbdesk.studies.laissez_faire.extract.lexicon import (
    CONTRACTIONS,
    DESCRIPTORS,
    GENERIC_DETERMINERS,
    NOT_AFTER_POSSESSIVE,
    PRONOUNS,
    RELATION_KIN,
    stem,
)
from gbdesk.studies.laissez_faire.extract.story import NounPhrase, Story
from gbdesk.studies.laissez_faire.extract.they import local_singular_they, lone_they, singular_they
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def resolve(s: Story) -> None:
    """Left-to-right pass: record mentions, resolve pronouns as they come."""
    bystanders: dict[str, int] = {}
    for t in s.toks:
        if not t.word or t.skip:
            continue
        i = t.i
        nm = s.name_at.get(i)
        if nm is not None:
            if nm.start == i:
                start = s.np_start_of_name(nm)
                embedded = s.toks[nm.end].poss
                subject = not embedded and (s.subject_position(start) or s.verb_follows(nm.end))
                s.mention(i, nm.entity, subject, embedded, "name")
                if embedded and s.subject_position(start):
                    s.mentions[-1].topic = True
            continue
        if i in s.narrator_toks:
            s.mention(i, s.narrator, t.lower == "i", t.lower == "my", "narrator")
            continue
        np = s.nps.get(i)
        if np is not None:
            _noun_phrase_mention(s, np, bystanders)
            continue
        base = t.lower
        if base.endswith(CONTRACTIONS):
            for c in CONTRACTIONS:
                if base.endswith(c):
                    base = base[: -len(c)]
        if base in PRONOUNS:
            _resolve_pronoun(s, t, base)


def _noun_phrase_mention(s: Story, np: NounPhrase, bystanders: dict[str, int]) -> None:
    ent = np.entity
    if np.appositive:
        return  # the adjacent name is the mention
    if np.apposed_to is not None:
        ent = s.nps[np.apposed_to].entity
        if ent is not None:
            np.entity = ent
            s.bind_descriptor(np.head, np.noun, ent)
            return
    if ent is None and np.kind == "kin":
        ent = _kin_entity(s, np)
    elif ent is None and np.kind == "person":
        if s.toks[np.head].quoted and np.start == np.head:
            return  # a vocative in dialogue: "Sir, your dish …"
        if _generic(s, np):
            return  # "each person", "patient after patient": nobody in particular
        start = s.tok(np.start)
        definite = start is not None and start.lower == "the"
        if definite and np.noun in bystanders:
            ent = bystanders[np.noun]
        elif (described := _undescribed_role_entity(s, np)) is not None:
            ent = described
        else:
            ent = _open_role_entity(s, np.head, np.noun)
            bystanders[np.noun] = ent
        s.bind_descriptor(np.head, np.noun, ent)
    if ent is None:
        return
    np.entity = ent
    embedded = s.toks[np.head].poss
    subject = not embedded and s.subject_position(np.start)
    s.mention(np.head, ent, subject, embedded, "np")


def _undescribed_role_entity(s: Story, np: NounPhrase) -> int | None:
    """ "… awaited the new hire. An ambitious young man entered": an indefinite
    person noun phrase, when every role has a character, describes the one unnamed
    role character that nothing has gendered yet."""
    start = s.toks[np.start]
    if start.lower not in ("a", "an") or len(s.role_entity) < len(s.cues):
        return None
    if s.toks[np.head].quoted or not s.subject_position(np.start):
        return None
    cands = [
        ent
        for ent in s.role_entity.values()
        if s.entities[ent].kind == "np"
        and s.entities[ent].head
        and not (s.entities[ent].strong or s.entities[ent].weak)
    ]
    return cands[0] if len(cands) == 1 else None


def _generic(s: Story, np: NounPhrase) -> bool:
    """ "each person", "every patient", "patient after patient"."""
    start = s.toks[np.start]
    if start.lower in GENERIC_DETERMINERS:
        return True
    nxt, after = s.tok(np.head + 1), s.tok(np.head + 2)
    prev, before = s.tok(np.start - 1), s.tok(np.start - 2)
    return (
        nxt is not None
        and nxt.lower == "after"
        and after is not None
        and stem(after.lower) == np.noun
    ) or (
        prev is not None
        and prev.lower == "after"
        and before is not None
        and stem(before.lower) == np.noun
    )


def _open_role_entity(s: Story, i: int, noun: str) -> int:
    """A person noun phrase ("the frail stranger"): the character of a role that
    has none yet, else a bystander."""
    for r in range(len(s.cues)):
        if r not in s.role_entity:
            e = s.new_entity("np", i, noun)
            s.set_role(r, e.id)
            return e.id
    return s.new_entity("np", i, noun).id


def _kin_entity(s: Story, np: NounPhrase) -> int | None:
    """ "his sister": the other member of the story's relationship, or a bystander
    ("his father")."""
    owner_tok = s.tok(np.start)
    owner = None
    if owner_tok is not None and owner_tok.i != np.head:
        if owner_tok.i in s.name_at and owner_tok.poss:
            owner = s.name_at[owner_tok.i].entity
        elif owner_tok.poss and owner_tok.i in s.nps:
            owner = s.nps[owner_tok.i].entity  # "the man's girlfriend"
        elif owner_tok.i in s.resolved:
            owner = s.resolved[owner_tok.i]
        elif owner_tok.lower == "my":
            owner = s.narrator if owner_tok.i in s.narrator_toks else _speaker(s, owner_tok)
    rel = [c.index for c in s.cues if c.relation and np.noun in RELATION_KIN[c.relation]]
    if owner is not None and rel and owner in s.role_of:
        others = [r for r in rel if r != s.role_of[owner]]
        if others:
            r = others[0]
            if r not in s.role_entity:
                s.set_role(r, s.new_entity("np", np.head, np.noun).id)
            ent = s.role_entity[r]
            s.bind_descriptor(np.head, np.noun, ent)
            return ent
    if np.noun in DESCRIPTORS:
        e = s.new_entity("np", np.head, np.noun)  # a bystander: "his father"
        e.strong[DESCRIPTORS[np.noun]] += s.w.honorific_votes
        return e.id
    return None


def _speaker(s: Story, tok: Tok) -> int | None:
    """The named speaker of the quotation holding `tok` ("…," said John)."""
    for j in range(tok.i + 1, min(len(s.toks), tok.i + 80)):
        u = s.toks[j]
        if u.word and not u.quoted:
            for k in (j, j + 1):
                if k in s.name_at:
                    return s.name_at[k].entity
            return None
    return None


def _resolve_pronoun(s: Story, t: Tok, base: str) -> None:
    gender, case = PRONOUNS[base]
    if gender == "P":
        ent = singular_they(s, t, base)
        if ent is None:
            ent = lone_they(s, t)
        if ent is None:
            ent = local_singular_they(s, t, case)
        if ent is not None:
            _record(s, t, ent, gender, case)
        return
    if case == "objposs":
        nxt = s.tok(t.i + 1)
        is_obj = nxt is None or not nxt.word or nxt.lower in NOT_AFTER_POSSESSIVE
        case = "obj" if is_obj else "poss"
    elif case == "posspro":
        case = "obj"
    ent = choose(s, t, gender, case)
    if ent is None:
        ent = _unseen_role_entity(s, t)
    if ent is not None:
        _record(s, t, ent, gender, case)


def _unseen_role_entity(s: Story, t: Tok) -> int | None:
    """A pronoun with no character before or after it ("She strummed her guitar …" in
    a story that never names its musician): the first role still without one."""
    if t.quoted:
        return None
    for r in range(len(s.cues)):
        if r not in s.role_entity:
            e = s.new_entity("np", t.i, "")
            s.set_role(r, e.id)
            return e.id
    return None


def _record(s: Story, t: Tok, ent: int, gender: str, case: str) -> None:
    s.resolved[t.i] = ent
    e = s.entities[ent]
    if gender in "MFN":
        e.weak[gender] += 1
    s.mention(t.i, ent, case == "subj", case == "poss", "pron")
