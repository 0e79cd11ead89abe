"""Gender-blind features of (pronoun, candidate) for the learned pronoun model (step 6)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from gbdesk.studies.laissez_faire.extract.story import Mention, Story
from gbdesk.studies.laissez_faire.extract.tokens import Tok


def pronoun_context(
    s: Story,
    t: Tok,
    clause_subject: int | None,
    sentence_subject: int | None,
    last_subject: int | None,
) -> dict[str, Any]:
    """What the learned pronoun model looks at besides the candidate: the pronoun's
    clause / sentence / last subjects, the entities by recency, and the earlier
    mentions of the pronoun's sentence."""
    recency: list[int] = []
    for m in reversed(s.mentions):
        if m.entity not in recency and m.entity != s.narrator:
            recency.append(m.entity)
    before = [m for m in s.mentions if m.sent == t.sent and m.tok < t.i]
    return {
        "t": t,
        "clause_subject": clause_subject,
        "sentence_subject": sentence_subject,
        "last_subject": last_subject,
        "recency": recency,
        "before": before,
        "last": {m.entity: m for m in s.mentions},
        "count": Counter(m.entity for m in s.mentions),
    }


def pronoun_features(
    s: Story,
    ctx: dict[str, Any],
    case: str,
    ent: int,
    salience: float,
    rule: float,
    excluded: bool,
    intro: bool,
) -> dict[str, float]:
    """Gender-blind features of (pronoun, candidate) for the learned pronoun model:
    the rule's salience and score, distances, grammatical roles, binding, the
    candidate's role; the main ones also crossed with the pronoun's case."""
    t: Tok = ctx["t"]
    last: Mention = ctx["last"][ent]
    dist = t.sent - last.sent
    rec = ctx["recency"]
    before = [m for m in ctx["before"] if m.entity == ent]
    role = s.role_of.get(ent)
    nearest = ctx["before"][-1].entity == ent if ctx["before"] else False
    f: dict[str, float] = {
        "rule": rule,
        "salience": salience,
        "dist0": float(dist == 0),
        "dist1": float(dist == 1),
        "dist2": float(dist >= 2),
        "tokdist": math.log1p(t.i - last.tok),
        "mentions": math.log1p(ctx["count"][ent]),
        "role0": float(role == 0),
        "role1": float(role is not None and role > 0),
        "bystander": float(role is None),
        "last_name": float(last.kind == "name"),
        "last_np": float(last.kind == "np"),
        "last_pron": float(last.kind == "pron"),
        "quoted": float(t.quoted),
    }
    cross = {
        "clause_subj": ent == ctx["clause_subject"],
        "sent_subj": ent == ctx["sentence_subject"],
        "prev_subj": ent == ctx["last_subject"],
        "recent0": bool(rec) and rec[0] == ent,
        "recent1": len(rec) > 1 and rec[1] == ent,
        "last_subject_mention": last.subject,
        "last_possessor": last.embedded,
        "object_before": any(not m.subject and not m.embedded for m in before),
        "possessor_before": any(m.embedded for m in before),
        "subject_before": any(m.subject for m in before),
        "nearest": nearest,
        "excluded": excluded,
        "intro": intro,
    }
    for k, v in cross.items():
        if v:
            f[k] = 1.0
            f[f"{case}:{k}"] = 1.0
    return f
