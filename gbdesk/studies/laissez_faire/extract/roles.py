"""Step 5: one character per role — the hand-set score of each (role, character) pair,
the best assignment of distinct characters, the learned model where the rules are unsure,
a narrator moved off a role a noun phrase describes, and unnamed roles from their noun
phrases.

In full: assign one character to each role: appositive bindings first, then the
prompt's order (the subject usually appears first; Love power-neutral pairs are simply
the first two characters), the agent of the role's action for power-laden Love prompts
("pays the bill"; the speaker of an offer such as "Let me get this" counts most; an
undone action such as "she had left her wallet" not at all), a role noun phrase whose
nearby pronoun contradicts a name's gender ("An American actor, famous for his range …
Hannah"), a first-person narrator (who gets no references); a role without a named
character takes its noun phrases ("the CEO") or a person noun ("the stranger");
optionally a learned model (`extract.learned`) decides where the rules' best assignment
leads by little.
"""

from __future__ import annotations

import itertools

from gbdesk.studies.laissez_faire.extract.actions import action_agent
from gbdesk.studies.laissez_faire.extract.lexicon import PRONOUNS
from gbdesk.studies.laissez_faire.extract.role_features import role_features
from gbdesk.studies.laissez_faire.extract.story import Entity, Story


def assign_roles(s: Story) -> None:
    """Pick one character per role: appositive bindings, then the prompt's order
    (the subject usually comes first), the agent of the role's action, the
    narrator, how often a name recurs; then unnamed characters for the roles left."""
    chars = sorted((e for e in s.entities if e.kind in ("name", "narrator")), key=lambda e: e.first)
    _assign_characters(s, chars)
    _move_narrator(s)
    _unnamed_role_characters(s)


def _assign_characters(s: Story, chars: list[Entity]) -> None:
    """The best assignment of distinct named characters (or the narrator, or nobody) to
    the roles by the rules' pair scores — by the learned model's where the rules' best
    leads by little — and its lead (`s.assignment_margin`)."""
    n_roles = len(s.cues)
    agent = None if s.love_pair else action_agent(s)
    w = s.w
    model = None if s.love_pair else s.learned.roles
    pair_score: dict[tuple[int, int | None], float] = {}
    s.np_genders = _role_np_genders(s)
    for r in range(n_roles):
        pair_score[(r, None)] = -(w.missing_subject if r == 0 else w.missing_other)
        for rank, e in enumerate(chars):
            pair_score[(r, e.id)] = _rule_pair_score(s, r, e, rank, agent)
    if not s.love_pair and (model is not None or s.collect):
        feats = role_features(s, chars)
        for key, f in feats.items():
            f["rule"] = pair_score[key]
        if s.collect:
            s.role_rows = [
                (r, ent, s.display_name(ent) if ent is not None else None, f)
                for (r, ent), f in feats.items()
            ]
    options: list[Entity | None] = [*chars, None]
    best, best_score, second_score = _best_assignment(options, n_roles, pair_score)
    if model is not None and best_score - second_score < w.learned_role_margin:
        # the rules are unsure: the learned model assigns the roles
        learned = {k: model.logit(f) for k, f in feats.items()}
        best, best_score, second_score = _best_assignment(options, n_roles, learned)
    s.assignment_margin = best_score - second_score if len(chars) else 0.0
    for r, e in enumerate(best or ()):
        if e is not None:
            s.set_role(r, e.id)


def _move_narrator(s: Story) -> None:
    """A narrator is not the role a third-person noun phrase describes ("I waited for
    hours … the actor emerged, a smile on his face"): move it to a free role."""
    n_roles = len(s.cues)
    if s.narrator is not None and s.narrator in s.role_of:
        r_n = s.role_of[s.narrator]
        free = [r for r in range(n_roles) if r not in s.role_entity]
        described = any(
            np.kind == "role"
            and np.entity is None
            and not s.toks[h].quoted
            and max(np.votes, key=np.votes.get) == r_n
            and s.tok(np.start) is not None
            and s.tok(np.start).lower == "the"
            for h, np in s.nps.items()
        )
        if described and free:
            del s.role_entity[r_n]
            s.set_role(free[0], s.narrator)


def _unnamed_role_characters(s: Story) -> None:
    """Unnamed characters of the remaining roles, from their noun phrases (not from
    dialogue: "such a dedicated fan," he said)."""
    for h in sorted(s.nps):
        np = s.nps[h]
        if np.entity is not None or np.kind != "role":
            continue
        r = max(np.votes, key=np.votes.get)
        if list(np.votes.values()).count(np.votes[r]) > 1:
            continue
        if s.toks[h].quoted and r not in s.role_entity:
            continue
        if r not in s.role_entity:
            s.set_role(r, s.new_entity("np", h, np.noun).id)
        np.entity = s.role_entity[r]


def _best_assignment(
    options: list[Entity | None],
    n_roles: int,
    pair_score: dict[tuple[int, int | None], float],
) -> tuple[tuple[Entity | None, ...] | None, float, float]:
    """The assignment of distinct options to roles with the highest summed score:
    (assignment, its score, the runner-up's score)."""
    best, best_score = None, float("-inf")
    second_score = float("-inf")
    keys = [e.id if e is not None else None for e in options]
    ids = [k for k in keys if k is not None]
    if len(set(ids)) == len(ids) and n_roles <= len(options):
        # distinct options (as `assign_roles` gives): no assignment repeats one, and
        # each (role, option) score is looked up once
        table = [[pair_score[(r, k)] for k in keys] for r in range(n_roles)]
        for picks in itertools.permutations(range(len(options)), n_roles):
            score = sum([table[r][j] for r, j in enumerate(picks)])
            if score > best_score:
                second_score = best_score
                best, best_score = tuple(options[j] for j in picks), score
            elif score > second_score:
                second_score = score
        return best, best_score, second_score
    for combo in itertools.permutations(options, n_roles):
        used = [e.id for e in combo if e is not None]
        if len(set(used)) != len(used):
            continue
        score = sum(pair_score[(r, e.id if e is not None else None)] for r, e in enumerate(combo))
        if score > best_score:
            second_score = best_score
            best, best_score = combo, score
        elif score > second_score:
            second_score = score
    return best, best_score, second_score


def _rule_pair_score(s: Story, r: int, e: Entity, rank: int, agent: int | None) -> float:
    """The hand-set score of character `e` (`rank`-th to appear) for role `r`."""
    w = s.w
    score = w.name_count * min(e.n_names, w.name_count_cap)
    if e.strong or e.prior or e.role_votes or e.kind == "narrator":
        score += w.surely_person
    if s.love_pair:
        return score + (w.love_pair_order if rank == r else 0.0)
    score += w.role_binding * e.role_votes.get(r, 0.0)
    score -= w.other_role_binding * sum(v for k, v in e.role_votes.items() if k != r)
    score += w.order_prior / (1 + abs(rank - r))
    if agent is not None and r == 0 and e.id == agent:
        score += w.action_agent
    if e.kind == "narrator" and r == 0:
        score += w.narrator_subject
    if s.np_gender_conflict(r, e):
        score -= w.np_gender_conflict
    return score


def _role_np_genders(s: Story) -> dict[int, set[str]]:
    """Role → genders ("M"/"F") of the gendered pronoun that closely follows each of
    its unbound noun phrases in subject position — within six words of the same
    sentence, no name or other noun phrase between ("An American actor, famous for
    his versatility", "the musician strummed his guitar" → M)."""
    out: dict[int, set[str]] = {}
    for h, r in s.unbound_role_nps():
        if not s.subject_position(s.nps[h].start):
            continue
        for j in range(h + 1, min(h + 7, len(s.toks))):
            u = s.toks[j]
            if u.sent != s.toks[h].sent or j in s.name_at or u.quoted or j in s.nps:
                break
            g = PRONOUNS.get(u.lower, ("", ""))[0]
            if g in ("M", "F"):
                out.setdefault(r, set()).add(g)
                break
    return out
