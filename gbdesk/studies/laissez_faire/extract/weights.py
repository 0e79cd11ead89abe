"""The extractor's tunable numbers (`ExtractorWeights`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExtractorWeights:
    """The extractor's tunable weights and thresholds, in one place.

    Every number the heuristics compare lives here, so a study can vary one
    (`scripts/eval_extractors.py --weight salience_decay=0.4`) without editing code.
    Defaults were chosen by hand on development stories (see the script's docstring).
    """

    # --- role nouns (`Story.noun_votes`)
    synonym_vote: float = 1.0  # a role noun or synonym that only one role has
    weak_synonym_vote: float = 0.5  # a noun naming the role only loosely ("player")
    modifier_vote: float = 0.75  # each role modifier in the noun phrase ("star", "new")
    # --- assigning characters to roles (`assign_roles`)
    missing_subject: float = 0.6  # penalty: the subject role has no named character
    missing_other: float = 0.4  # penalty: another role has none
    name_count: float = 0.3  # per mention of the name (capped at `name_count_cap`)
    name_count_cap: int = 4
    surely_person: float = 0.5  # honorific, descriptor, gendered first name or role binding
    love_pair_order: float = 3.0  # Love power-neutral pairs: order of first appearance
    role_binding: float = 2.5  # per unit of apposition vote for this role
    other_role_binding: float = 2.0  # penalty per unit of vote for another role
    order_prior: float = 1.0  # 1/(1+|rank−role|): the subject tends to come first
    action_agent: float = 1.5  # the agent of the subject role's action ("pays the bill")
    action_recency: float = 0.0  # extra weight of a later action event (0 = all equal)
    offer_vote: float = 3.0  # agent vote of the speaker of an offer ("Let me pay")
    narrator_subject: float = 0.5  # a first-person narrator tends to be the subject
    np_gender_conflict: float = 1.5  # penalty: a role noun phrase no name is apposed to
    # ("An American actor, famous for his range") is followed by a pronoun of the other
    # gender than the character's honorifics or first name
    # --- pronoun resolution (`antecedents.choose`)
    window: int = 4  # sentences back a pronoun looks for antecedents
    salience_decay: float = 0.5  # weight per sentence of distance
    mention_base: float = 1.0  # every mention
    mention_subject: float = 1.0  # a mention in subject position
    mention_free: float = 0.5  # a mention that is not a possessor ("Sarah's")
    possessor_topic: float = 1.0  # share of the subject weight for "Lily's" in "Lily's
    # confidence grew"
    salience_sum: float = 0.0  # 1 = sum over a character's mentions, 0 = only its best
    singular_they: float = 1.0  # 0 turns off "their" for one ungendered character
    agree_strong: float = 1.5  # agreement with honorifics / descriptors
    agree_prior: float = 1.2  # agreement with the first-name lexicon
    agree_weak: float = 0.8  # agreement with earlier pronouns
    reflexive_own: float = 3.0  # a reflexive is its clause's subject
    subject_continuity: float = 0.3  # a subject pronoun continues the last subject
    intro_target: float = 1.5  # cataphora of an opening phrase ("Despite his …, Ryan")
    intro_object_penalty: float = 3.0
    protagonist: float = 0.2  # the subject role's character
    learned_role_margin: float = 0.5  # the learned role model assigns the roles when the
    # rules' best assignment leads the runner-up by less than this
    learned_agreement: float = 2.0  # agreement bonuses' scale on the learned model's logits
    learned_below_margin: float = 3.0  # the learned pronoun model decides when the rules'
    # best candidate leads by less than this
    # --- strong evidence
    honorific_votes: float = 2.0  # votes per honorific / descriptor

    def replace(self, **changes: float) -> ExtractorWeights:
        """A copy with some fields changed (unknown names raise `TypeError`)."""
        import dataclasses

        names = {f.name: f for f in dataclasses.fields(self)}
        typed: dict[str, float | int] = {}
        for key, value in changes.items():
            if key not in names:
                raise TypeError(f"unknown extractor weight {key!r}; known: {sorted(names)}")
            typed[key] = int(value) if names[key].type in (int, "int") else float(value)
        return dataclasses.replace(self, **typed)
