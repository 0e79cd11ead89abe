"""Features of each (role, candidate) option for the learned role model (step 5)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gbdesk.studies.laissez_faire.extract.actions import action_stats, offer_speakers
from gbdesk.studies.laissez_faire.extract.cues import scenario_action_prefixes
from gbdesk.studies.laissez_faire.extract.lexicon import OFFER_ACTIONS, PREPOSITIONS
from gbdesk.studies.laissez_faire.extract.story import Entity, NameMention, Story


def role_features(s: Story, chars: list[Entity]) -> dict[tuple[int, int | None], dict[str, float]]:
    """Features of each (role, candidate) option for the learned role model: every
    named character or narrator, and None (the role has no named character). Names
    are prefixed by the slot: "solo" (one-role prompt), "subj", "obj"."""
    n_roles = len(s.cues)
    slots = ["solo"] if n_roles == 1 else ["subj", "obj", *[f"r{k}" for k in range(2, n_roles)]]
    ev = _evidence(s, chars)
    out: dict[tuple[int, int | None], dict[str, float]] = {}
    for r in range(n_roles):
        sl = slots[r]
        unb_r = [h for h, rr in ev.unbound if rr == r]
        for rank, e in enumerate(chars):
            f = _candidate_features(s, ev, r, rank, e)
            out[(r, e.id)] = {f"{sl}:{k}": v for k, v in f.items()}
            out[(r, e.id)][f"{sl}:cand"] = 1.0
        none = {
            "none": 1.0,
            "np": float(min(len(unb_r), 3)),
            "np_first": float(bool(unb_r) and unb_r[0] < ev.first_name_tok),
            "named": float(min(ev.n_named, 3)),
            "narrator": float(s.narrator is not None),
        }
        out[(r, None)] = {
            f"{sl}:none_{k}" if k != "none" else f"{sl}:none": v for k, v in none.items()
        }
    return out


@dataclass
class _Evidence:
    """What the features of every option read, gathered once per story."""

    by_ent: dict[int, list[NameMention]]  # entity → its name mentions
    unbound: list[tuple[int, int]]  # (head, role) of role noun phrases no name is apposed to
    act: dict[str, Any] | None  # `action_stats` of the subject role's or the prompt's action
    act_kind: str  # "desc" (the role description's action) or "scen" (the prompt's)
    offers: Counter  # entity → offers it speaks
    owners: dict[int, Counter]  # entity → roles of noun phrases it owns ("Sarah's mentee")
    n_named: int
    first_name_tok: int  # where the first candidate appears


def _evidence(s: Story, chars: list[Entity]) -> _Evidence:
    by_ent: dict[int, list[NameMention]] = {}
    for nm in s.names:
        by_ent.setdefault(nm.entity, []).append(nm)
    unbound = s.unbound_role_nps()
    desc_actions = s.cues[0].actions if s.cues else frozenset()
    if desc_actions:
        act = action_stats(s, desc_actions, ())
        act_kind = "desc"
    else:
        prefixes = scenario_action_prefixes(s.scenario, [c.spec for c in s.cues])
        act = action_stats(s, frozenset(), prefixes) if prefixes else None
        act_kind = "scen"
    description = set(re.findall(r"[a-z]+", s.cues[0].spec.description.lower()))
    offers = offer_speakers(s) if description & OFFER_ACTIONS else Counter()
    owners: dict[int, Counter] = {}  # entity → roles of noun phrases it owns ("Sarah's mentee")
    for h, np in s.nps.items():
        if np.kind != "role" or np.start == h:
            continue
        nm = s.name_at.get(np.start)
        if nm is not None and s.toks[nm.end].poss and nm.end == np.start:
            owners.setdefault(nm.entity, Counter()).update(np.votes)
    n_named = sum(1 for e in chars if e.kind == "name")
    first_name_tok = min((e.first for e in chars), default=len(s.toks))
    return _Evidence(by_ent, unbound, act, act_kind, offers, owners, n_named, first_name_tok)


def _candidate_features(s: Story, ev: _Evidence, r: int, rank: int, e: Entity) -> dict[str, float]:
    """The features of character `e` (the `rank`-th to appear) for role `r`."""
    toks = s.toks
    unbound, owners, act, act_kind = ev.unbound, ev.owners, ev.act, ev.act_kind
    unb_r = [h for h, rr in unbound if rr == r]
    unb_other = [h for h, rr in unbound if rr != r]
    nms = ev.by_ent.get(e.id, [])
    f: dict[str, float] = {
        "rank0": float(rank == 0),
        "rank1": float(rank == 1),
        "rank2": float(rank >= 2),
        "names": float(min(e.n_names, 4)),
        "narrator": float(e.kind == "narrator"),
        "person": float(bool(e.strong or e.prior or e.role_votes)),
        "prior": float(bool(e.prior)),
        "vote_this": min(3.0, e.role_votes.get(r, 0.0)),
        "vote_other": min(3.0, sum(v for k, v in e.role_votes.items() if k != r)),
        "occupation": float(min(e.occupations, 2)),
        "np_before": float(any(h < e.first for h in unb_r)),
        "np_later": float(bool(unb_r) and not any(h < e.first for h in unb_r)),
        "other_np_before": float(any(h < e.first for h in unb_other)),
        "owns_this": min(2.0, owners.get(e.id, Counter()).get(r, 0.0)),
        "owns_other": min(2.0, sum(v for k, v in owners.get(e.id, Counter()).items() if k != r)),
        "offer": float(min(ev.offers.get(e.id, 0), 2)),
        "np_conflict": float(s.np_gender_conflict(r, e)),
        "np_agree": float(
            s.known_gender(e) is not None and s.known_gender(e) in s.np_genders.get(r, set())
        ),
    }
    nearest = max((h for h, _ in unbound if h < e.first), default=None)
    if nearest is not None:
        f["nearest_np_this"] = float(dict(unbound)[nearest] == r)
    if nms:
        f["quoted_only"] = float(all(toks[nm.start].quoted for nm in nms))
        subj = [s.subject_position(s.np_start_of_name(nm)) and not toks[nm.end].poss for nm in nms]
        f["first_subject"] = float(subj[0])
        f["subject_share"] = sum(subj) / len(subj)
        preps = sum(
            1
            for nm in nms
            if (p := s.tok(s.np_start_of_name(nm) - 1)) is not None and p.lower in PREPOSITIONS
        )
        f["after_prep"] = preps / len(nms)
    if act is not None:
        votes = act["votes"]
        total = sum(votes.values())
        f[f"agent_{act_kind}"] = votes.get(e.id, 0.0) / total if total else 0.0
        f[f"agent_{act_kind}_last"] = float(bool(act["agents"]) and act["agents"][-1] == e.id)
        f[f"agent_{act_kind}_first"] = float(bool(act["agents"]) and act["agents"][0] == e.id)
        f[f"patient_{act_kind}"] = float(min(act["patients"].get(e.id, 0), 2))
    return f
