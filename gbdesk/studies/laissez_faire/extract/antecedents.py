"""Step 6, the choice of a gendered pronoun's antecedent: salience of the recent
mentions, the clause's subjects and binding constraints, gender agreement, then the rules'
best candidate (or the learned model's where the rules are unsure); cataphora when nothing
comes before."""

from __future__ import annotations

import itertools
from bisect import bisect_left
from dataclasses import dataclass

from gbdesk.studies.laissez_faire.extract.lexicon import COPULAS, NAME_ADJECTIVES
from gbdesk.studies.laissez_faire.extract.pronoun_features import pronoun_context, pronoun_features
from gbdesk.studies.laissez_faire.extract.story import Story
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def choose(s: Story, t: Tok, gender: str, case: str) -> int | None:
    """The character a he/she-form (or a neo-pronoun) `t` of `case` refers to, or None:
    the salient characters of the last few sentences, ranked by salience, binding and
    gender agreement; the first agreeing character after it when none comes before."""
    scores = _salience(s, t)
    if not scores:
        return _cataphora(s, t, gender)
    clause = _clause_of(s, t, case)
    ranked, learned, agreement = _rank(s, t, gender, case, scores, clause)
    if not ranked:
        return None
    return _pick(s, t, ranked, learned, agreement)


def _salience(s: Story, t: Tok) -> dict[int, float]:
    """Entity → salience from its mentions within `window` sentences before `t` (the
    narrator left out): subject mentions and non-possessors weigh more, each sentence back
    less."""
    sent = t.sent
    W = s.w
    scores: dict[int, float] = {}
    window, narrator, decay, total = W.window, s.narrator, W.salience_decay, W.salience_sum
    base, subject, free = W.mention_base, W.mention_subject, W.mention_free
    topic = W.mention_subject * W.possessor_topic
    # mentions more than `window` sentences back are left out: they come first
    for m in itertools.islice(s.mentions, bisect_left(s.mention_sents, sent - window), None):
        dist = sent - m.sent
        if dist > window or m.entity == narrator:
            continue
        w = base + (subject if m.subject else 0.0)
        w += topic if m.topic else 0.0
        w += 0.0 if m.embedded else free
        value = w * decay**dist
        old = scores.get(m.entity, 0.0)
        scores[m.entity] = max(old, value) + total * min(old, value)
    return scores


@dataclass
class _Clause:
    """What binding and continuity look at around a pronoun."""

    clause_subject: int | None
    sentence_subject: int | None
    last_subject: int | None  # the last subject mention before the pronoun
    excluded: set[int]  # characters a possessive cannot be ("his employee, Emma")
    intro_target: int | None  # the character after an opening phrase (`_intro_target`)


def _clause_of(s: Story, t: Tok, case: str) -> _Clause:
    sent = t.sent
    mentions = s.mentions
    clause_start = s.clause_start(t.i)
    # the mentions of this sentence, and of this clause (from token `clause_start` on)
    in_sentence = mentions[bisect_left(s.mention_sents, sent) :]
    clause_subject = next(
        (
            m.entity
            for m in itertools.islice(mentions, bisect_left(s.mention_toks, clause_start), None)
            if m.sent == sent and m.subject
        ),
        None,
    )
    if clause_subject is None:
        first = s.tok(clause_start)
        if first is not None and (first.lower.endswith("ing") or first.lower == "to"):
            # "…, showing her the steps": a participle's subject is the sentence's
            clause_subject = next(
                (m.entity for m in reversed(in_sentence) if m.subject),
                None,
            )
    who = next(
        (j for j in range(t.i - 1, clause_start - 1, -1) if s.toks[j].lower == "who"),
        None,
    )
    if who is not None:  # "a fan who had been waiting for him": the fan is the subject
        clause_subject = next(
            (m.entity for m in reversed(s.mentions) if m.tok < who), clause_subject
        )
    sentence_subject = next((m.entity for m in reversed(in_sentence) if m.subject), None)
    last_subject = next((m.entity for m in reversed(mentions) if m.subject), None)
    excluded = _possessed_entities(s, t) if case == "poss" else set()
    prev = s.tok(t.i - 1)
    copula = prev is not None and prev.lower in COPULAS
    if case == "poss" and copula and sentence_subject is not None:
        excluded.add(sentence_subject)  # "Jack had been his idol": not the subject
    return _Clause(clause_subject, sentence_subject, last_subject, excluded, _intro_target(s, t))


def _rank(
    s: Story, t: Tok, gender: str, case: str, scores: dict[int, float], clause: _Clause
) -> tuple[list[tuple[float, int, int]], dict[int, float], dict[int, float]]:
    """(score, agreement tier, entity) per candidate a strong gender does not rule out —
    tier 3 agrees or says nothing, 2 is barred by binding, 1 contradicts a weaker gender —
    with the learned model's score and the agreement bonus per entity. Records the
    learned decisions' feature rows when `s.collect`."""
    W = s.w
    clause_subject, sentence_subject = clause.clause_subject, clause.sentence_subject
    excluded, intro_target = clause.excluded, clause.intro_target
    model = s.learned.pronouns if gender in ("M", "F") else None
    context = None
    if model is not None or s.collect:
        context = pronoun_context(s, t, clause_subject, sentence_subject, clause.last_subject)
    group: list[tuple[int, dict[str, float]]] = []
    learned: dict[int, float] = {}  # entity → learned score
    agreement: dict[int, float] = {}
    ranked: list[tuple[float, int, int]] = []  # (score, agreement tier, entity)
    for ent, score in scores.items():
        e = s.entities[ent]
        g, level = e.gender()
        tier = 3
        agree = 0.0
        if g is not None and g != gender:
            if level == "strong":
                continue
            tier = 1  # against the name prior or earlier pronouns: last resort
        elif g == gender:
            agree = {"strong": W.agree_strong, "prior": W.agree_prior, "weak": W.agree_weak}[level]
        sal = score
        if (case == "obj" and ent == clause_subject) or ent in excluded:
            tier = min(tier, 2)  # binding: "Hank cornered him", "his employee, Emma"
        if case == "refl":
            own = clause_subject if clause_subject is not None else sentence_subject
            score += W.reflexive_own if ent == own else 0.0
        if case == "subj" and ent == clause.last_subject:
            score += W.subject_continuity
        if intro_target is not None and ent == intro_target:
            score += -W.intro_object_penalty if case == "obj" else W.intro_target
        if s.role_of.get(ent) == 0:
            score += W.protagonist
        if context is not None:
            feats = pronoun_features(
                s, context, case, ent, sal, score, ent in excluded, ent == intro_target
            )
            if s.collect:
                group.append((ent, feats))
            if model is not None:
                learned[ent] = model.logit(feats)
        agreement[ent] = agree
        ranked.append((score + agree, tier, ent))
    if s.collect and group and gender in ("M", "F"):
        s.pron_groups.append((t.i, gender, group))
    return ranked, learned, agreement


def _pick(
    s: Story,
    t: Tok,
    ranked: list[tuple[float, int, int]],
    learned: dict[int, float],
    agreement: dict[int, float],
) -> int | None:
    """The best candidate of the best tier (recording its lead in `s.margins`); None when
    every candidate contradicts the pronoun's gender outside dialogue; the learned model's
    choice between two named role characters when the rules are unsure."""
    top_tier = max(tier for _, tier, _ in ranked)
    if top_tier == 1 and not t.quoted:
        # every character has the other gender (name lexicon or earlier pronouns):
        # someone else — a free role's character, or nobody we track
        return None
    top = sorted(((score, ent) for score, tier, ent in ranked if tier == top_tier), reverse=True)
    s.margins[t.i] = top[0][0] - top[1][0] if len(top) > 1 else 10.0
    if learned and len(top) > 1 and s.margins[t.i] < s.w.learned_below_margin:
        # the rules are unsure between two named role characters the evidence so far
        # gives the same gender (or none): the learned model decides between them
        a, b = top[0][1], top[1][1]
        if (
            a in s.role_of
            and b in s.role_of
            and s.entities[a].kind == s.entities[b].kind == "name"
            and agreement[a] == agreement[b]
            and learned[b] > learned[a]
        ):
            return b
    return top[0][1]


def _possessed_entities(s: Story, t: Tok) -> set[int]:
    """ "his new employee, Emma": a possessive does not own its own character."""
    out = set()
    for j in range(t.i + 1, min(t.i + 4, len(s.toks))):
        np = s.nps.get(j)
        if np is not None and np.entity is not None:
            out.add(np.entity)
            break
        if not s.toks[j].word:
            break
    return out


def _intro_target(s: Story, t: Tok) -> int | None:
    """ "Despite his passion, Ryan's confidence …": a pronoun in an opening phrase
    with no character in it points forward to the character right after it."""
    comma = s.first_comma(t.sent)
    if comma is None or comma < t.i:
        return None
    sent_toks = s.sentence(t.sent)
    for u in sent_toks:
        if u.i >= comma:
            break
        if u.i in s.name_at or (u.i in s.nps and s.nps[u.i].entity is not None):
            return None
    nxt = s.tok(comma + 1)
    if nxt is None:
        return None
    j = comma + 1
    while j < len(s.toks) and s.toks[j].word and s.toks[j].lower in NAME_ADJECTIVES:
        j += 1
    nm = s.name_after(j)
    if nm is not None:
        return nm.entity
    np = s.nps.get(j)
    return np.entity if np is not None else None


def _cataphora(s: Story, t: Tok, gender: str) -> int | None:
    """A pronoun before any character: the character right after an opening
    phrase ("Bright star of his class, Alex …"), else the first agreeing one that
    follows."""
    target = _intro_target(s, t)
    if target is not None and s.entities[target].gender()[0] in (None, gender):
        return target
    fallback = None
    for j in range(t.i + 1, len(s.toks)):
        if s.toks[j].sent > t.sent + 1:
            break
        nm = s.name_at.get(j)
        ent = nm.entity if nm is not None else None
        if ent is None and j in s.nps:
            ent = s.nps[j].entity
        if ent is None:
            continue
        g, _ = s.entities[ent].gender()
        if g == gender:
            return ent
        if g is None and fallback is None:
            fallback = ent
    return fallback
