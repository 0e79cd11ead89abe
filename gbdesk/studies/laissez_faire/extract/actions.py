"""Who does the prompt's action ("pays the bill", "mentors"), and who speaks an offer
("Let me get this"): evidence for assigning roles (step 5)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from gbdesk.studies.laissez_faire.extract.lexicon import (
    ACTION_NEGATORS,
    OFFER_ACTIONS,
    OFFER_PHRASES,
    PRONOUNS,
    SPEECH_VERBS,
    stem,
)
from gbdesk.studies.laissez_faire.extract.story import Story
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def action_agent(s: Story) -> int | None:
    """The named character doing the subject role's action ("pays the bill"): for
    each action word, the nearest name before it in its sentence (or, weaker, the
    first one after it: "When the check came, Marcus grabbed it"); a pronoun in
    between makes the agent unknown."""
    if not s.cues or not s.cues[0].actions:
        return None
    votes = action_stats(s, s.cues[0].actions, ())["votes"]
    description = set(re.findall(r"[a-z]+", s.cues[0].spec.description.lower()))
    if s.w.offer_vote and description & OFFER_ACTIONS:
        for ent, n in offer_speakers(s).items():
            votes[ent] += s.w.offer_vote * n  # "Let me get this one," she said
    if not votes:
        return None
    ranked = votes.most_common(2)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _is_action(s: Story, t: Tok, words: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    return (
        t.word
        and not t.skip
        and (t.lower in words or stem(t.lower) in words or t.lower.startswith(prefixes))
    )


def action_stats(s: Story, words: frozenset[str], prefixes: tuple[str, ...]) -> dict[str, Any]:
    """Who does an action and to whom. For each action word (in `words`, or starting
    with one of `prefixes`): its agent — the nearest name before it in its sentence
    in subject position, or a subject pronoun's one named character of that gender
    (weight 1), else the first such one after it (weight 0.5) — and its patient, a
    name within three words after it ("mentored Emily"). Returns "votes" (entity →
    weighted agent count), "agents" (agents in story order), "patients" (entity →
    count)."""
    votes: Counter = Counter()
    patients: Counter = Counter()
    agents: list[int] = []
    n_toks = max(1, len(s.toks))
    for t in s.toks:
        if not (t.word and not t.skip):
            continue
        if not _is_action(s, t, words, prefixes):
            continue
        if any(
            u.lower in ACTION_NEGATORS for u in s.toks[max(0, t.i - 3) : t.i] if u.sent == t.sent
        ):
            continue  # "she had left her wallet at home"
        before = range(t.i - 1, -1, -1)
        after = range(t.i + 1, len(s.toks))
        for scan, weight in ((before, 1.0), (after, 0.5)):
            agent = None
            for j in scan:
                u = s.toks[j]
                if u.sent != t.sent:
                    break
                pg, pc = PRONOUNS.get(u.lower, ("", ""))
                if pc == "subj":
                    # a pronoun subject: the one named character of its gender
                    agent = s.only_named_of_gender(pg)
                    break
                nm = s.name_at.get(j)
                if (
                    nm is not None
                    and not u.quoted
                    and not s.toks[nm.end].poss
                    and s.subject_position(s.np_start_of_name(nm))
                ):
                    agent = nm.entity
                    break
            if agent is not None:
                if agent >= 0:  # later events weigh more: the story's last word
                    votes[agent] += weight * (1.0 + s.w.action_recency * t.i / n_toks)
                    agents.append(agent)
                break
        for j in range(t.i + 1, min(t.i + 4, len(s.toks))):
            u = s.toks[j]
            if u.sent != t.sent or u.text in ".;!?":
                break
            nm = s.name_at.get(j)
            if nm is not None and nm.start == j and not u.quoted:
                patients[nm.entity] += 1
                break
    return {"votes": votes, "agents": agents, "patients": patients}


def offer_speakers(s: Story) -> Counter:
    """Entity → number of quotations in which it offers ("Let me get this",
    "Allow me", "my treat"): the speaker named right after the quotation ("…,"
    said Mark; "…," she said → the one named character of her gender) or, else,
    the subject before it in its sentence (Mark whispered, "…")."""
    out: Counter = Counter()
    toks = s.toks
    k = 0
    while k < len(toks):
        if not toks[k].quoted:
            k += 1
            continue
        j = k
        while j < len(toks) and toks[j].quoted:
            j += 1
        text = " ".join(t.lower for t in toks[k:j] if t.word).replace("’", "'")
        padded = f" {text} "
        if any(f" {p} " in padded for p in OFFER_PHRASES):
            speaker = _speaker_near(s, k, j)
            if speaker is not None and speaker >= 0:
                out[speaker] += 1
        k = j
    return out


def _speaker_near(s: Story, first: int, after: int) -> int | None:
    """The speaker of the quotation toks[first:after] (see `offer_speakers`): the
    subject before it when a speech verb introduces it (Mark whispered, "…"); else a
    name or subject pronoun next to a speech verb right after it ("…," said Mark /
    Mark said / she whispered); else the subject before it when a comma or colon
    introduces it."""
    toks = s.toks
    intro = s.tok(first - 1)
    while intro is not None and not intro.word and intro.text in "\"“'‘":
        intro = s.tok(intro.i - 1)
    spoken = intro is not None and (
        intro.lower in SPEECH_VERBS
        or (
            intro.text in ",:" and (v := s.tok(intro.i - 1)) is not None and v.lower in SPEECH_VERBS
        )
    )
    if spoken:
        return _subject_before(s, intro)
    j = after
    while j < len(toks) and not toks[j].word and not toks[j].quoted and j < after + 2:
        j += 1
    for a, b in ((j, j + 1), (j + 1, j)):  # NAME said / said NAME
        ta, tb = s.tok(a), s.tok(b)
        if ta is None or tb is None or ta.quoted or tb.quoted:
            continue
        if tb.lower not in SPEECH_VERBS:
            continue
        nm = s.name_at.get(a)
        if nm is not None and nm.start == a and not toks[nm.end].poss:
            return nm.entity
        pg, pc = PRONOUNS.get(ta.lower, ("", ""))
        if pc == "subj":
            return s.only_named_of_gender(pg)
    if intro is not None and intro.text in ",:":
        return _subject_before(s, intro)
    return None


def _subject_before(s: Story, intro: Tok) -> int | None:
    """The nearest name (not a possessor) or subject pronoun before `intro` in its
    sentence, outside quotations."""
    for k in range(intro.i, -1, -1):
        u = s.toks[k]
        if u.sent != intro.sent or u.quoted:
            break
        nm = s.name_at.get(k)
        if nm is not None and not s.toks[nm.end].poss:
            return nm.entity
        pg, pc = PRONOUNS.get(u.lower, ("", ""))
        if pc == "subj":
            return s.only_named_of_gender(pg)
    return None
