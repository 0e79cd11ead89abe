"""Step 2: name mentions and the characters they form, and a first-person narrator.

In full: find name mentions — capitalised tokens outside a stop list of function
words, places, nationalities, months, etc.; a sentence-initial word only with further
evidence (repeated elsewhere, possessive, apposition, surname) — optionally after an
honorific ("Mr. Johnson") or an occupational title ("Chef Miller" → "Miller"), with
surnames and quoted nicknames; cluster them into named characters ("David Crawford",
"Crawford", "Mr. Crawford").
"""

from __future__ import annotations

from collections import Counter

from gbdesk.studies.laissez_faire.extract.lexicon import (
    ABBREVIATIONS,
    APOSTROPHE_RE,
    DESCRIPTORS,
    FEMALE_NAMES,
    GENDERED_NAMES,
    HONORIFICS,
    MALE_NAMES,
    NARRATOR_WORDS,
    PERSON_NOUNS,
    PLACE_HEADS,
    PLACE_HEADS_OF,
    PLACE_PREFIXES,
    PLACE_PREPS,
    PRONOUNS,
    SPEECH_VERBS,
    STOP,
    TITLES,
    VERBISH,
)
from gbdesk.studies.laissez_faire.extract.story import NameMention, Story
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def find_names(s: Story) -> None:
    toks = s.toks
    n = len(toks)
    cand = [t.cap and _name_like(s, t) for t in toks]
    named = [t for t in toks if cand[t.i]]  # the candidates, in story order
    # a word used as a thing/place anywhere is no name anywhere
    things = {t.base for t in named if _not_a_person(s, t)}
    if things:
        for t in named:
            if t.base in things:
                cand[t.i] = False
        named = [t for t in named if cand[t.i]]
    mid = Counter(t.base for t in named if not t.initial)
    outside = {t.base for t in named if not t.quoted}
    i = 0
    while i < n:
        if not cand[i]:
            i += 1
            continue
        run = [i]
        j = i + 1
        while j < n and not toks[run[-1]].poss:
            if cand[j] and toks[j].start - toks[run[-1]].end <= 1:
                run.append(j)
                j += 1
            elif (
                j + 3 < n
                and toks[j].text in '"“'
                and toks[j + 1].cap
                and toks[j + 2].text in '"”'
                and cand[j + 3]
            ):
                run += [j, j + 1, j + 2, j + 3]  # Johnny "Harmonica" Mason
                j += 4
            else:
                break
        i = j
        nxt, after = s.tok(run[-1] + 1), s.tok(run[-1] + 2)
        if nxt is not None and nxt.text == "(" and after is not None and after.text.isupper():
            continue  # "Initial Public Offering (IPO)"
        first = toks[run[0]]
        if (
            first.initial
            and len(run) > 1
            and first.text.endswith(("ing", "ed", "ly"))
            and not mid[first.base]
        ):
            run = run[1:]  # "Taking Tyler" → "Tyler"
            first = toks[run[0]]
        if first.initial and not _initial_is_name(s, first, mid, run):
            continue
        prev = s.tok(run[0] - 1)
        if (
            prev is not None
            and prev.lower in PLACE_PREPS
            and mid[toks[run[0]].base] <= 1
            and len(run) == 1
            and not toks[run[0]].poss
        ):
            continue  # "in Ohio" (not "in Elizabeth's eyes")
        if toks[run[0]].quoted and toks[run[0]].base not in outside:
            continue  # a capitalised word only in dialogue
        _add_name(s, run)


def _name_like(s: Story, t: Tok) -> bool:
    if not t.cap or t.skip or t.base in STOP or t.base in HONORIFICS:
        return False
    if t.base in PRONOUNS or t.base in DESCRIPTORS or t.base in TITLES:
        return False
    if APOSTROPHE_RE.split(t.lower)[0] in PRONOUNS or t.lower.startswith(("i'", "i’")):
        return False  # "I've", "She'd"
    core = t.text[:-2] if t.poss and t.text[-2:] in ("'s", "’s") else t.text
    if len(core) > 1 and core.isupper():
        return False  # CEO, NFL, NYC
    if len(core) == 1:
        return False  # "L.A.", an initial
    return not any(ch.isdigit() for ch in core)


def _not_a_person(s: Story, t: Tok) -> bool:
    """Context says a capitalised word names a thing or a place: "the Sharpie",
    "Mexican boy", "Hannigan's Diner", "the town of Haywood", "in Ohio"."""
    prev = s.tok(t.i - 1)
    nxt = s.tok(t.i + 1)
    if prev is not None and prev.lower in ("the", "a", "an"):
        return True
    if prev is not None and prev.cap and prev.end + 1 == t.start and prev.base in PLACE_PREFIXES:
        return True  # "San Diego", "Fort Worth"

    if nxt is not None and nxt.word and not t.poss:
        if nxt.cap and nxt.base in PLACE_HEADS:
            return True
        if not nxt.cap and (nxt.lower in PLACE_HEADS or nxt.lower in PERSON_NOUNS):
            return True  # an adjective: "Nicaraguan village", "Mexican boy"
    if prev is not None and prev.lower == "of":
        before = s.tok(t.i - 2)
        if before is not None and before.lower in PLACE_HEADS_OF:
            return True
    return False


def _initial_is_name(s: Story, t: Tok, mid: Counter, run: list[int]) -> bool:
    """Is a sentence-initial capitalised word a name? It needs more evidence."""
    if mid[t.base] > 0 or t.poss or len(run) > 1:
        return True
    if s.name_prior and t.base in GENDERED_NAMES:
        return True
    if s.capitalised_bases is None:
        s.capitalised_bases = Counter(u.base for u in s.toks if u.cap)
    if s.capitalised_bases[t.base] > 1:
        return True
    nxt, after = s.tok(t.i + 1), s.tok(t.i + 2)
    if nxt is None:
        return False
    if nxt.lower in SPEECH_VERBS:
        return True  # "Emily replied"
    if nxt.lower in ("and", "&") and after is not None and after.cap:
        return _name_like(s, after)  # "Sally and Amanda"
    if t.text.endswith(("ly", "ing", "ed")):
        return False  # "Miraculously, Samuel …", "Spotting Kevin"
    if (
        nxt.text == ","
        and after is not None
        and (after.lower in ("a", "an", "the", "who") or (after.cap and _name_like(s, after)))
    ):
        return True  # "Jane, a passionate cook"
    if nxt.lower in ("and", "&") and after is not None and after.cap:
        return _name_like(s, after)
    return nxt.lower in VERBISH and not t.text.endswith(("ness", "tion", "ment"))


def _prefix(s: Story, i: int) -> tuple[int | None, int | None]:
    """(honorific, title) token right before a name: "Mr." / "Chef"."""
    j = i - 1
    if (
        j >= 1
        and s.toks[j].text == "."
        and s.toks[j - 1].cap
        and s.toks[j - 1].base in HONORIFICS
        and s.toks[j - 1].base in ABBREVIATIONS
    ):
        return j - 1, None  # "Dr. Patel" (not "… the professor. Alex")
    t = s.tok(j)
    if t is not None and t.word and t.cap:
        if t.base in HONORIFICS:
            return j, None
        if t.base in TITLES:
            return None, j
    return None, None


def _add_name(s: Story, run: list[int]) -> None:
    toks = s.toks
    words = [k for k in run if toks[k].word]
    bases = {toks[k].base for k in words}
    honorific, title = _prefix(s, run[0])
    hon_gender = HONORIFICS[toks[honorific].base] if honorific is not None else ""
    match = None
    for e in s.entities:
        if e.kind == "name" and e.name_words & bases:
            if hon_gender and e.strong and hon_gender not in e.strong:
                continue  # Mr. Thompson is not Mrs. Thompson
            match = e
            break
    e = match or s.new_entity("name", run[0])
    e.name_words |= bases
    e.n_names += 1
    if hon_gender:
        e.strong[hon_gender] += s.w.honorific_votes
    if s.name_prior and not e.prior:
        for k in words:
            b = toks[k].base
            if b in FEMALE_NAMES:
                e.prior["F"] += 1
                break
            if b in MALE_NAMES:
                e.prior["M"] += 1
                break
    for prefix in (honorific, title):
        if prefix is not None:
            e.role_votes.update(s.noun_votes(toks[prefix].base, set()))
    nm = NameMention(run[0], run[-1], e.id, honorific, title)
    s.names.append(nm)
    for k in run:
        s.name_at[k] = nm


def find_narrator(s: Story) -> None:
    """A first-person narrator (I/me/my outside dialogue) is a character."""
    narr = [
        t.i for t in s.toks if t.lower in NARRATOR_WORDS and t.word and not t.quoted and not t.skip
    ]
    if narr:
        s.narrator = s.new_entity("narrator", narr[0]).id
        s.narrator_toks = set(narr)
