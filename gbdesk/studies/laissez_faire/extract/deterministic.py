"""Deterministic (no model) character extractor for Laissez-Faire stories.

For each character role of a prompt the extractor finds the character's name and
the words that refer to it (pronouns, gendered honorifics, gendered descriptors),
with character offsets into the story. It uses regular expressions and hand-written
heuristics only (Python stdlib): no downloads and no models.

The steps (`run_steps`), one module each; each module's docstring says how:

1. `tokens` — tokens, sentences, dialogue and preamble lines (when the `Story` is made);
2. `names` — name mentions clustered into named characters; a first-person narrator;
3. `noun_phrases` — noun phrases of the roles, person nouns and kinship terms;
4. `appositions` — names bound to role nouns and descriptors ("Jane, a passionate cook");
5. `roles` — one character per role (bindings, the prompt's order, the agent of the
   role's action, the narrator; the roles left take their noun phrases);
6. `pronouns` — a left-to-right pass resolving each pronoun as it comes (`antecedents`:
   salience, binding and gender agreement; `they`: singular they);
7. `output` — per role: name, name spans, references and a confidence.

Shared by the steps: `story` (`Story`, the state of one extraction), `cues` (what the
prompt says about each role), `actions` (who does the role's action, who offers),
`role_features` / `pronoun_features` (the optional learned models' inputs,
`extract.learned`). Every number the heuristics compare is a field of `ExtractorWeights`
(`weights`); the word lists are in `resources/laissez_faire/extractor_words.json`, read
once at import (`lexicon`).
"""

from __future__ import annotations

from typing import Any

from gbdesk.studies.laissez_faire.extract.appositions import bind_appositions
from gbdesk.studies.laissez_faire.extract.confidence import ConfidenceModel, shipped_model
from gbdesk.studies.laissez_faire.extract.cues import role_noun
from gbdesk.studies.laissez_faire.extract.gender_words import DEFAULT_WORD_LIST
from gbdesk.studies.laissez_faire.extract.learned import RULES_ONLY, LearnedModels
from gbdesk.studies.laissez_faire.extract.names import find_names, find_narrator
from gbdesk.studies.laissez_faire.extract.noun_phrases import find_noun_phrases
from gbdesk.studies.laissez_faire.extract.output import output
from gbdesk.studies.laissez_faire.extract.pronouns import resolve
from gbdesk.studies.laissez_faire.extract.roles import assign_roles
from gbdesk.studies.laissez_faire.extract.story import Story
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, RoleSpec
from gbdesk.studies.laissez_faire.extract.weights import ExtractorWeights

__all__ = ["DeterministicExtractor", "ExtractorWeights", "role_noun", "run_steps"]


def run_steps(s: Story) -> list[CharacterExtraction]:
    """The steps of one extraction, in order (see the module docstring); step 1 ran when
    `Story` was made from the text."""
    find_names(s)  # 2
    find_narrator(s)
    find_noun_phrases(s)  # 3
    bind_appositions(s)  # 4
    assign_roles(s)  # 5
    resolve(s)  # 6
    return output(s)  # 7


class DeterministicExtractor:
    """Rule-based `Extractor`: names and references per role, no model.

    `name_prior`: use a lexicon of common gendered first names as a soft prior when
    deciding which character a pronoun refers to (never as the reported gender).
    `include_neutral_titles`: also report "Dr."/"Prof." among the references (they
    carry no gender; the paper's labels leave them out).
    `weights`: the heuristics' numbers (`ExtractorWeights`).
    `word_list`: the gender word list the confidence features read references with.
    `confidence_model`: maps features to a confidence; default the shipped one
    (`resources/laissez_faire/extractor_confidence.json`), 0.5 when it is missing.
    `learned`: learned role assignment / pronoun resolution (`extract.learned`), used
    where the rules are unsure (`ExtractorWeights.learned_role_margin`,
    `learned_below_margin`); default none — the hand-set rules decide (on the
    development models the learned decisions did not beat them; see
    `scripts/eval_extractors.py --learned`).
    """

    name = "deterministic"
    version = "3"

    def __init__(
        self,
        name_prior: bool = True,
        include_neutral_titles: bool = False,
        weights: ExtractorWeights | None = None,
        word_list: str | None = None,
        confidence_model: ConfidenceModel | None = None,
        learned: LearnedModels | None = None,
    ) -> None:
        self.weights = weights or ExtractorWeights()
        self.learned = learned
        self.word_list = word_list or DEFAULT_WORD_LIST
        self.name_prior = name_prior
        self.include_neutral_titles = include_neutral_titles
        self.confidence_model = confidence_model
        if not name_prior:
            self.version += "-no-name-prior"
        if learned is not None and (learned.roles is not None or learned.pronouns is not None):
            self.version += "-learned"

    def extract(
        self, story: str, roles: list[RoleSpec], scenario: str = ""
    ) -> list[CharacterExtraction]:
        """One `CharacterExtraction` per role, in the order of `roles`, each with a
        `confidence`."""
        return [c for c, _ in self.extract_features(story, roles, scenario)]

    def extract_features(
        self, story: str, roles: list[RoleSpec], scenario: str = ""
    ) -> list[tuple[CharacterExtraction, dict[str, float]]]:
        """`extract`, with each character's confidence features (`FEATURES`)."""
        if not roles:
            return []
        run = self._run(story, roles, scenario)
        chars = run_steps(run)
        model = self.confidence_model or shipped_model()
        for c, f in zip(chars, run.features, strict=True):
            c.confidence = round(model.predict(f), 4) if model is not None else 0.5
        return list(zip(chars, run.features, strict=True))

    def _run(
        self, story: str, roles: list[RoleSpec], scenario: str, collect: bool = False
    ) -> Story:
        return Story(
            story,
            roles,
            scenario,
            self.name_prior,
            self.include_neutral_titles,
            self.weights,
            self.word_list,
            self.learned if self.learned is not None else RULES_ONLY,
            collect,
        )

    def training_rows(
        self, story: str, roles: list[RoleSpec], scenario: str = ""
    ) -> dict[str, list[tuple[Any, ...]]]:
        """The learned decisions' feature rows of one story, for fitting them
        (`scripts/eval_extractors.py`): "roles" — (role index, display name of the
        candidate or None for "no named character", features) per option; "pronouns" —
        (pronoun gender "M"/"F", [(role index of the candidate or None, features)]) per
        gendered pronoun the resolver chose among candidates; "role_names" — the name
        reported for each role (None: unnamed)."""
        if not roles:
            return {"roles": [], "pronouns": []}
        run = self._run(story, roles, scenario, collect=True)
        run_steps(run)
        pronouns = [
            (gender, [(run.role_of.get(ent), f) for ent, f in group])
            for _, gender, group in run.pron_groups
        ]
        names = {r: run.display_name(e) for r, e in run.role_entity.items()}
        return {
            "roles": [(r, name, f) for r, _, name, f in run.role_rows],
            "pronouns": pronouns,
            "role_names": [names.get(r) for r in range(len(roles))],
        }
