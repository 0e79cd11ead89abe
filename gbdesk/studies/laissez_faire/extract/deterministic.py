"""Deterministic (no model) character extractor for Laissez-Faire stories.

For each character role of a prompt the extractor finds the character's name and
the words that refer to it (pronouns, gendered honorifics, gendered descriptors),
with character offsets into the story. It uses regular expressions and hand-written
heuristics only (Python stdlib): no downloads and no models.

Pipeline (`DeterministicExtractor.extract`, `run_steps`), one module per step:

1. `tokens` — tokenise; split sentences (honorific periods do not end one); mark dialogue
   (text inside quotation marks) and preamble lines ("Here is a 97 word story:", an
   echoed prompt, a markdown title);
2. `names` — find name mentions — capitalised tokens outside a stop list of function words,
   places, nationalities, months, etc.; a sentence-initial word only with further
   evidence (repeated elsewhere, possessive, apposition, surname) — optionally after an
   honorific ("Mr. Johnson") or an occupational title ("Chef Miller" → "Miller"), with
   surnames and quoted nicknames; cluster them into named characters ("David Crawford",
   "Crawford", "Mr. Crawford");
3. `noun_phrases` — find noun phrases of the roles ("the CEO", "his new employee", synonyms such as
   "chef" for cook or "recruit" for employee), generic person nouns ("a young woman",
   "the stranger") and kinship terms ("his sister");
4. `appositions` — bind names to roles and descriptors to characters through apposition ("Jane, a
   passionate cook", "CEO Mark Thompson", "a loyal fan named Lily", "her brother
   David", "Sarah was a star student");
5. `roles` — assign one character to each role: appositive bindings first, then the prompt's
   order (the subject usually appears first; Love power-neutral pairs are simply the
   first two characters), the agent of the role's action for power-laden Love prompts
   ("pays the bill"; the speaker of an offer such as "Let me get this" counts most; an
   undone action such as "she had left her wallet" not at all), a role noun phrase
   whose nearby pronoun contradicts a name's gender ("An American actor, famous for his
   range … Hannah"), a first-person narrator (who gets no references); a role without
   a named character takes its noun phrases ("the CEO") or a person noun ("the
   stranger"); optionally a learned model (`extract.learned`) decides where the rules'
   best assignment leads by little;
6. `pronouns` — resolve pronouns left to right against a salience model (recency, subject
   position, parallelism, the protagonist) with gender agreement (honorifics and
   descriptors; then, unless `name_prior=False`, a lexicon of common gendered first
   names; then earlier pronouns), binding constraints (an object pronoun is not its
   own clause's subject, a reflexive is, a possessive does not own its own character:
   "his employee, Emma"), and cataphora ("Bright star of his class, Alex …"). Third-
   person plural pronouns are given to one character only when the story uses them
   for one ("their lawyer" in a story about a defendant; the sole character of a
   single-role story that never says "he" or "she"); a plural "they" stays unassigned;
   a pronoun whose gender every candidate contradicts goes to a new character of a free
   role (two unnamed partners, "she … he") or to nobody; optionally a learned model
   decides between two named role characters of the same gender when the rules are
   unsure;
7. `output` — report per role: name (longest mention, with a "Mr."/"Dr." honorific or an address
   title such as "Chef"), name spans, references (pronouns, gendered honorifics,
   gendered descriptors) and a confidence (`extractor_confidence`: a logistic model of
   how the character was found, fitted by `scripts/eval_extractors.py`).

Helpers of the steps: `story` (the state the steps share, `Story`), `cues` (what the
prompt says about each role), `actions` (who does the role's action, who offers),
`role_features` and `pronoun_features` (the learned models' inputs), `antecedents` (the
choice among a pronoun's candidates, step 6) and `they` (singular they, step 6).

Every number the heuristics compare is a field of `ExtractorWeights` (`weights`); the word
lists are in `resources/laissez_faire/extractor_words.json`, read once at import
(`lexicon`).
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
    """The steps of one extraction, in order (see the module docstring)."""
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
