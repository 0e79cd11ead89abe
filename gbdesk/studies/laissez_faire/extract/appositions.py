"""Step 4: names bound to role nouns and descriptors through apposition ("Jane, a
passionate cook", "CEO Mark Thompson", "a loyal fan named Lily", "Sarah was a star
student").

In full: bind names to roles and descriptors to characters through apposition
("Jane, a passionate cook", "CEO Mark Thompson", "a loyal fan named Lily", "her brother
David", "Sarah was a star student").
"""

from __future__ import annotations

from gbdesk.studies.laissez_faire.extract.lexicon import (
    DETERMINERS,
    NOT_MODIFIERS,
    PRONOUNS,
    VERB_CUES,
)
from gbdesk.studies.laissez_faire.extract.story import NameMention, Story
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def bind_appositions(s: Story) -> None:
    """Bind names to role nouns and descriptors through apposition."""
    toks = s.toks
    for h, np in s.nps.items():
        after = s.tok(h + 1)
        named = after is not None and after.lower in ("named", "called")
        # "Max, a struggling student, …" (but "Chloe, a new employee named Ryan")
        nm = None if named else _apposition_back(s, np.start)
        if nm is None and not toks[h].poss:
            # NOUN (,|named|called|-)? NAME: "his new employee, Emma", "CEO Mark"
            j = h + 1
            link = s.tok(j)
            linked = link is not None and (link.text in ",–—-" or link.lower in ("named", "called"))
            if linked:
                j += 1
            prev = s.tok(np.start - 1)
            verb_use = np.start == h and (
                prev is not None and (prev.lower in VERB_CUES or prev.lower in PRONOUNS)
            )
            if verb_use or (not linked and np.start == h and not toks[h].cap):
                j = -1  # "to mentor Emily", "she would coach Ben": a verb
            nm = s.name_after(j) if j >= 0 else None
            if nm is not None:
                nm.np_start = np.start
        if nm is None:
            sep, before = s.tok(np.start - 1), s.tok(np.start - 2)
            if (
                sep is not None
                and sep.text in ",–—-"
                and before is not None
                and before.i in s.nps
                and not before.poss
            ):
                np.apposed_to = before.i  # "the patient, a young woman"
            continue
        np.entity, np.appositive = nm.entity, True
        e = s.entities[nm.entity]
        for r, strength in np.votes.items():
            e.role_votes[r] += strength
        if np.kind == "other":
            e.occupations += 1
        s.bind_descriptor(h, np.noun, nm.entity)


def _apposition_back(s: Story, start: int) -> NameMention | None:
    """ "NAME, a/the … NOUN" or "NAME was a … NOUN" ending right before `start`."""
    j = start - 1
    first = s.tok(start)
    if first is not None and first.lower not in DETERMINERS:
        while j >= 0 and start - j <= 3 and _plain_modifier(s, s.toks[j]):
            j -= 1  # "Jack Harlow, preeminent American actor"
        # "John, a tall, well-dressed man": adjectives separated by commas
        k = j
        while k >= 1 and start - k <= 8 and s.toks[k].text == ",":
            if not _plain_modifier(s, s.toks[k - 1]):
                break
            k -= 1
            while k >= 0 and _plain_modifier(s, s.toks[k]):
                k -= 1
        if k != j and k >= 0 and s.toks[k].lower in ("a", "an", "the"):
            j = k - 1
    t = s.tok(j)
    if t is None:
        return None
    name_end = j - 1
    prev = s.tok(j - 1)
    if prev is not None and (
        (t.lower == "been" and prev.lower in ("had", "has", "have"))
        or (t.lower in ("always", "also", "once", "still") and prev.lower in ("was", "is"))
    ):
        name_end = j - 2  # "Jeff had been a devoted fan", "Mia was always a star"
    elif not (t.text in ",–—-(" or t.lower in ("was", "is", "became", "remained")):
        return None
    nm = s.name_at.get(name_end)
    if nm is not None and not s.toks[nm.end].poss:
        return nm
    return None


def _plain_modifier(s: Story, t: Tok) -> bool:
    """A lower-case word that can only modify a noun here (not a verb or a
    function word)."""
    return (
        t.word
        and not t.cap
        and t.lower not in NOT_MODIFIERS
        and t.lower not in PRONOUNS
        and t.lower not in ("was", "is", "became", "remained")
    )
