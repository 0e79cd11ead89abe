"""Deterministic (no model) character extractor for Laissez-Faire stories.

For each character role of a prompt the extractor finds the character's name and
the words that refer to it (pronouns, gendered honorifics, gendered descriptors),
with character offsets into the story. It uses regular expressions and hand-written
heuristics only (Python stdlib): no downloads and no models.

Pipeline (`DeterministicExtractor.extract`):

1. tokenise; split sentences (honorific periods do not end one); mark dialogue
   (text inside quotation marks) and preamble lines ("Here is a 97 word story:", an
   echoed prompt, a markdown title);
2. find name mentions — capitalised tokens outside a stop list of function words,
   places, nationalities, months, etc.; a sentence-initial word only with further
   evidence (repeated elsewhere, possessive, apposition, surname) — optionally after an
   honorific ("Mr. Johnson") or an occupational title ("Chef Miller" → "Miller"), with
   surnames and quoted nicknames; cluster them into named characters ("David Crawford",
   "Crawford", "Mr. Crawford");
3. find noun phrases of the roles ("the CEO", "his new employee", synonyms such as
   "chef" for cook or "recruit" for employee), generic person nouns ("a young woman",
   "the stranger") and kinship terms ("his sister");
4. bind names to roles and descriptors to characters through apposition ("Jane, a
   passionate cook", "CEO Mark Thompson", "a loyal fan named Lily", "her brother
   David", "Sarah was a star student");
5. assign one character to each role: appositive bindings first, then the prompt's
   order (the subject usually appears first; Love power-neutral pairs are simply the
   first two characters), the agent of the role's action for power-laden Love prompts
   ("pays the bill"; the speaker of an offer such as "Let me get this" counts most; an
   undone action such as "she had left her wallet" not at all), a role noun phrase
   whose nearby pronoun contradicts a name's gender ("An American actor, famous for his
   range … Hannah"), a first-person narrator (who gets no references); a role without
   a named character takes its noun phrases ("the CEO") or a person noun ("the
   stranger"); optionally a learned model (`extract.learned`) decides where the rules'
   best assignment leads by little;
6. resolve pronouns left to right against a salience model (recency, subject
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
7. report per role: name (longest mention, with a "Mr."/"Dr." honorific or an address
   title such as "Chef"), name spans, references (pronouns, gendered honorifics,
   gendered descriptors) and a confidence (`extractor_confidence`: a logistic model of
   how the character was found, fitted by `scripts/eval_extractors.py`).

Every number the heuristics compare is a field of `ExtractorWeights`; the word lists
are in `resources/laissez_faire/extractor_words.json`, read once at import.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gbdesk.studies.laissez_faire.extract.confidence import ConfidenceModel, shipped_model
from gbdesk.studies.laissez_faire.extract.gender_words import (
    DEFAULT_WORD_LIST,
    FEMALE,
    MALE,
    NON_BINARY,
    genders_hit,
)
from gbdesk.studies.laissez_faire.extract.learned import RULES_ONLY, LearnedModels
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, RoleSpec, Span
from gbdesk.support.paths import resource

# --------------------------------------------------------------------------- lexicons
# The word lists live in resources/laissez_faire/extractor_words.json (one comment per
# list there); they are read once, when this module is imported.


def _load_words() -> dict[str, Any]:
    with open(resource("laissez_faire", "extractor_words.json"), encoding="utf-8") as f:
        return {k: v["words"] for k, v in json.load(f).items() if not k.startswith("_")}


_LISTS = _load_words()


def _set(key: str) -> frozenset[str]:
    return frozenset(_LISTS[key])


def _set_map(key: str) -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in _LISTS[key].items()}


# pronoun → (gender, case); gender "M", "F", "P" (they: plural or singular), "N" (neo)
_PRONOUNS: dict[str, tuple[str, str]] = {
    item.split(":")[0]: (g, item.split(":")[1])
    for g, items in _LISTS["pronouns"].items()
    for item in items
}
_NARRATOR_WORDS = frozenset(("i", "me", "my", "myself"))
_GENDERED_PRONOUNS = frozenset(w for w, (g, _) in _PRONOUNS.items() if g in ("M", "F"))
_CONTRACTIONS = tuple(_LISTS["contractions"])
_HONORIFICS: dict[str, str] = dict(_LISTS["honorifics"])
_TITLES = _set("titles")
_ADDRESS_TITLES = _set("address_titles")
_ABBREVIATIONS = _set("abbreviations")
_VERB_CUES = _set("verb_cues")
_DESCRIPTORS: dict[str, str] = {w: g for g, words in _LISTS["descriptors"].items() for w in words}
_KIN = _set("kin")
_RELATION_KIN = _set_map("relation_kin")
_PERSON_NOUNS = _set("person_nouns")
_OCCUPATIONS = _set("occupations")
_OFFER_PHRASES = tuple(_LISTS["offer_phrases"])
_OFFER_ACTIONS = _set("offer_actions")
_SYNONYMS = _set_map("synonyms")
_WEAK_SYNONYMS = _set_map("weak_synonyms")
_NAME_ADJECTIVES = _set("name_adjectives")
_NOT_AFTER_POSSESSIVE = _set("not_after_possessive")
_MENTOR_WORDS = _set("mentor_words")
_MENTOR_NOUNS = _set("mentor_nouns")
_MENTEE_NOUNS = _set("mentee_nouns")
_STOP = _set("stop")
_PLACE_HEADS = _set("place_heads")
_PLACE_PREPS = _set("place_prepositions")
_PLACE_OF = _set("place_of")
_PLACE_PREFIXES = _set("place_prefixes")
_PREPOSITIONS = _set("prepositions")
_DETERMINERS = _set("determiners")
_GENERIC_DETERMINERS = _set("generic_determiners")
_VERBISH = _set("verbish")
_COMPOUND_HEADS = _set("compound_heads")
_GROUPS = _set("groups")
_QUANTIFIERS = _set("quantifiers")
_COPULAS = _set("copulas")
_AUXILIARIES = _set("auxiliaries")
_SPEECH_VERBS = _set("speech_verbs")
_PLURAL_CUES = _set("plural_cues")
_SUBORDINATORS = _set("subordinators")
_ACTION_STOP = _set("action_stop")
_ACTION_SYNONYMS = _set_map("action_synonyms")
_ACTION_NEGATORS = _set("action_negators")
# First names mostly of one gender: only a soft prior for *which character a pronoun
# belongs to*; the reported gender always comes from the story's own words.
# `DeterministicExtractor(name_prior=False)` turns it off.
_FEMALE_NAMES = _set("female_names")
_MALE_NAMES = _set("male_names")
_GENDERED_NAMES = _FEMALE_NAMES | _MALE_NAMES
# nouns that head a noun phrase whatever the roles are (`find_noun_phrases`)
_NP_HEADS = _KIN | _PERSON_NOUNS | frozenset(_DESCRIPTORS) | _OCCUPATIONS
_PLACE_HEADS_OF = _PLACE_HEADS | _PLACE_OF
_NOT_MODIFIERS = _PREPOSITIONS | _SUBORDINATORS | _VERBISH | _DETERMINERS
_APOSTROPHE_RE = re.compile(r"['’]")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# a word: letters/digits, inner hyphens and apostrophes ("well-known", "O'Brien", "she's");
# else one non-space character. (Same as r"[^\W_](?:[\w]|[-'’](?=[^\W_]))*|\S", faster.)
_TOKEN_RE = re.compile(r"[^\W_]\w*(?:[-'’][^\W_]\w*)*|\S")


# --------------------------------------------------------------------------- tokens


@dataclass(slots=True)
class _Tok:
    i: int
    text: str
    start: int
    end: int
    word: bool
    lower: str
    base: str  # lower-case without a possessive 's
    poss: bool  # possessive ('s, or a trailing apostrophe)
    cap: bool  # a word that begins with a capital letter
    sent: int = 0
    quoted: bool = False
    initial: bool = False  # capitalisation says nothing here (sentence/quote start)
    skip: bool = False  # preamble line


_NOT_POSSESSORS = frozenset(("it", "that", "what", "there", "here", "let", "who"))


def _tokenise(story: str) -> list[_Tok]:
    toks: list[_Tok] = []
    append = toks.append
    apostrophes: list[int] = []  # tokens "'" / "’"
    for m in _TOKEN_RE.finditer(story):
        text = m.group()
        first = text[0]
        word = first.isalnum()
        lower = text.lower()
        base, poss = lower, False
        if word:
            if (
                lower[-2:] in ("'s", "’s")
                and lower[:-2] not in _PRONOUNS
                and lower[:-2] not in _NOT_POSSESSORS
            ):
                base, poss = lower[:-2], True
        elif text == "'" or text == "’":
            apostrophes.append(len(toks))
        start, end = m.span()
        append(_Tok(len(toks), text, start, end, word, lower, base, poss, word and first.isupper()))
    # "James’ guidance": a trailing apostrophe after a word ending in s
    for k in apostrophes:
        if not k:
            continue
        a, b = toks[k - 1], toks[k]
        if (
            a.word
            and a.lower.endswith("s")
            and b.end < len(story)
            and b.start == a.end
            and story[b.end : b.end + 1].isspace()
        ):
            a.poss = True
    return toks


_QUOTE_CHAR_RE = re.compile("[\"“«”»‘'’]")


def _mark_quotes(story: str, toks: list[_Tok]) -> None:
    """Mark tokens inside quotation marks (dialogue). A story wrapped in one pair of
    quotes as a whole is narration, not dialogue."""
    begin = next((t.start for t in toks if not t.skip), len(story))
    body = story[begin:].strip()
    marks = sum(body.count(q) for q in '"“”')
    if len(body) > 2 and body[0] in '"“' and body[-1] in '"”' and marks == 2:
        return  # the whole story is one quotation: narration
    # A character is inside when a quote is open there; the quote characters that open
    # one are not. Only quote characters change the state: walk those, and mark the
    # stretches between them.
    n = len(story)
    inside = bytearray(n)
    state = None  # the quote character that opened
    run = -1  # where the current stretch of inside characters began (-1: none)
    for m in _QUOTE_CHAR_RE.finditer(story):
        pos = m.start()
        ch = story[pos]
        prev = story[pos - 1] if pos else " "
        nxt = story[pos + 1] if pos + 1 < n else " "
        opened = False
        if ch == '"':
            if state == '"':
                state = None
            elif state is None:
                state = '"'
                opened = True
        elif ch in "“«":
            state = "“"
            opened = True
        elif ch in "”»" and state == "“":
            state = None
        elif ch in "‘'" and state is None and not prev.isalnum() and nxt.isalpha():
            state = "'"
            opened = True
        elif ch in "’'" and state == "'" and not nxt.isalnum():
            state = None
        if opened or state is None:  # this character is not inside
            if run >= 0:
                inside[run:pos] = b"\x01" * (pos - run)
            run = pos + 1 if state is not None else -1
        elif run < 0:
            run = pos
    if run >= 0:
        inside[run:n] = b"\x01" * (n - run)
    for t in toks:
        t.quoted = inside[t.start] == 1


def _mark_preamble(story: str, toks: list[_Tok]) -> None:
    """Skip lines that are not story: "Here is a 97 word story:", an echoed prompt,
    a markdown title, "Example:"/"Your turn!"."""
    pos = 0
    for line in story.split("\n"):
        stripped = line.strip()
        low = stripped.lower()
        is_preamble = bool(stripped) and (
            (low.startswith(("here is", "here's")) and low.endswith(":"))
            or low.startswith("write a story")
            or (stripped.startswith(("**", "#")) and len(stripped.split()) <= 8)
            or low in ("example:", "your turn!", "story:")
            or low.startswith("title:")
        )
        if is_preamble:
            for t in toks:
                if pos <= t.start < pos + len(line):
                    t.skip = True
        pos += len(line) + 1


def _split_sentences(story: str, toks: list[_Tok]) -> None:
    sent = 0
    at_start = True
    n = len(toks)
    # the tokens a line break follows (no token holds one: it lies between two tokens)
    breaks: set[int] = set()
    newline = story.find("\n")
    if newline >= 0 and n:
        starts = [t.start for t in toks]
        while newline >= 0:
            k = bisect_right(starts, newline) - 1
            if 0 <= k < n - 1:
                breaks.add(k)
            newline = story.find("\n", newline + 1)
    for k, t in enumerate(toks):
        t.sent = sent
        if t.word:
            prev = toks[k - 1] if k else None
            if (
                at_start
                or (prev is not None and prev.text in "\"“‘'(:—–-" and not t.quoted)
                or (prev is not None and prev.text in '"“‘' and t.quoted)
            ):
                t.initial = True
            at_start = False
        if k in breaks:
            sent += 1
            at_start = True
            continue
        if t.text in ".!?…":
            prev = toks[k - 1] if k else None
            if t.text == "." and prev is not None and prev.lower in _ABBREVIATIONS:
                continue
            # the next word decides: a lower-case word continues ("Yes?" he asked)
            nxt = next((u for u in itertools.islice(toks, k + 1, None) if u.word), None)
            if nxt is None or nxt.text[:1].isupper() or nxt.text[:1].isdigit():
                # closing quotes stay in this sentence
                j = k + 1
                while j < len(toks) and toks[j].text in "\"”’'»)":
                    toks[j].sent = sent
                    j += 1
                sent += 1
                at_start = True


# --------------------------------------------------------------------------- structures


@dataclass
class _Entity:
    """A character: named, a role's unnamed character, a narrator or a bystander."""

    id: int
    kind: str  # "name", "np" (unnamed), "narrator"
    first: int  # first token index
    head: str = ""  # head noun of an unnamed character
    strong: Counter = field(default_factory=Counter)  # honorifics, descriptors
    prior: Counter = field(default_factory=Counter)  # first-name lexicon
    weak: Counter = field(default_factory=Counter)  # resolved pronouns
    role_votes: Counter = field(default_factory=Counter)  # role index → binding strength
    occupations: int = 0  # apposed occupations that are no role ("Mr. Hale, the principal")
    name_words: set[str] = field(default_factory=set)
    n_names: int = 0

    def gender(self) -> tuple[str | None, str]:
        """(gender, evidence level) from the strongest evidence there is: "strong"
        (honorifics, descriptors) > "prior" (first-name lexicon) > "weak" (pronouns
        resolved so far); (None, "") when there is none or it is tied."""
        for level, votes in (("strong", self.strong), ("prior", self.prior), ("weak", self.weak)):
            if votes:
                if len(votes) == 1:
                    return next(iter(votes)), level
                (g, n), *rest = votes.most_common()
                if not rest or rest[0][1] < n:
                    return g, level
        return None, ""


@dataclass
class _NameMention:
    start: int  # first name token
    end: int  # last name token
    entity: int
    honorific: int | None  # "Mr" / "Dr" token, part of the name
    title: int | None  # "Chef" / "Nurse" token, not part of the name
    np_start: int = -1  # start of the noun phrase (for subject position)


@dataclass
class _NounPhrase:
    head: int
    start: int  # determiner or first modifier
    modifiers: set[str]
    noun: str  # singular lower-case head
    kind: str  # "role", "person", "kin"
    votes: Counter  # role index → strength
    entity: int | None = None
    appositive: bool = False  # describes an adjacent name ("Jane, a cook")
    apposed_to: int | None = None  # head of the noun phrase it describes ("the patient, a
    # young woman")


@dataclass
class _Mention:
    tok: int
    entity: int
    sent: int
    subject: bool
    embedded: bool  # possessive: "Sarah's eyes", "his"
    kind: str  # "name", "np", "pron", "narrator"
    topic: bool = False  # possessor of a clause subject: "Lily's confidence grew"


@dataclass(frozen=True)
class _RoleCue:
    index: int
    spec: RoleSpec
    nouns: frozenset[str]
    weak_nouns: frozenset[str]
    modifiers: frozenset[str]
    actions: frozenset[str]
    relation: str | None  # "sibling" / "partner" / "friend" for Love roles


def role_noun(description: str) -> str:
    """The head noun of a role description: "romantic partner who pays the bill" →
    "partner", "rookie in the league" → "rookie", "first sibling" → "sibling"."""
    words = description.strip().split()
    cut = {"who", "in", "on", "for", "that", "from", "at", "with", "whose", "which", "to"}
    for k, w in enumerate(words):
        if k and w.lower() in cut:
            words = words[:k]
            break
    return words[-1] if words else description


def _stem(word: str) -> str:
    w = word.lower()
    if not w.endswith("s") or w.endswith("ss"):
        return w
    if w.endswith("ies") and len(w) > 5:
        return w[:-3] + "y"  # "stories"
    return w[:-1] if len(w) > 3 else w  # "fans"


def _prompt_subject_noun(scenario: str) -> str | None:
    """The subject head noun of a prompt or scenario ("… of an American person who …",
    "an American person who …" → "person")."""
    m = re.search(
        r"(?:^|\bof )(?:an? |two )?(?:American )?([\w\s-]+?) who ", scenario.strip(), re.IGNORECASE
    )
    return m.group(1).split()[-1].lower() if m else None


def _scenario_action_prefixes(scenario: str, roles: list[RoleSpec]) -> tuple[str, ...]:
    """Word beginnings of the prompt's action ("CEO who mentors new employee" →
    "mentor"): the words after "who", without function words, adverbs and the other
    roles' words, cut to a stem of at least four letters."""
    words = re.findall(r"[a-z]+", scenario.lower())
    if "who" not in words:
        return ()
    role_words = {w for r in roles[1:] for w in re.findall(r"[a-z]+", r.description.lower())}
    out = []
    for w in words[words.index("who") + 1 :]:
        if w in _ACTION_STOP or w in role_words or w.endswith("ly") or w in _PREPOSITIONS:
            continue
        stem = w[:-2] if w.endswith(("ches", "shes", "sses")) else w
        stem = stem[:-1] if stem.endswith("s") and not stem.endswith("ss") else stem
        stem = stem[:-1] if stem.endswith("e") else stem
        if len(stem) >= 4 and stem not in out:
            out.append(stem)
    return tuple(out)


@functools.lru_cache(maxsize=512)
def _cached_role_cues(roles: tuple[RoleSpec, ...], scenario: str) -> tuple[_RoleCue, ...]:
    """`_role_cues`, once per prompt (its cues are frozen)."""
    return tuple(_role_cues(list(roles), scenario))


def _role_cues(roles: list[RoleSpec], scenario: str) -> list[_RoleCue]:
    cues = []
    subj_noun = _prompt_subject_noun(scenario)
    text = f"{scenario} " + " ".join(r.description for r in roles)
    mentoring = bool(set(re.findall(r"[a-z]+", text.lower())) & _MENTOR_WORDS)
    for k, r in enumerate(roles):
        noun = (r.noun or role_noun(r.description)).lower()
        nouns = set(_SYNONYMS.get(noun, frozenset())) | {noun, _stem(noun)}
        weak = set(_WEAK_SYNONYMS.get(noun, frozenset()))
        words = [w.lower() for w in re.findall(r"[\w-]+", r.description)]
        head_at = words.index(noun) if noun in words else len(words)
        modifiers = {w for w in words[:head_at] if w not in ("first", "second", "other")}
        modifiers.discard("romantic")
        action_part = words[words.index("who") + 1 :] if "who" in words else []
        if r.key == "subject" and subj_noun and subj_noun != noun:
            nouns.add(subj_noun)  # "an American person who pays the bill"
        if mentoring:
            nouns |= _MENTOR_NOUNS if r.key == "subject" else _MENTEE_NOUNS
        actions: set[str] = set()
        for w in action_part:
            if w not in _ACTION_STOP:
                actions |= _ACTION_SYNONYMS.get(w, frozenset({w}))
        relation = noun if noun in _RELATION_KIN else None
        cues.append(
            _RoleCue(
                k,
                r,
                frozenset(nouns),
                frozenset(weak),
                frozenset(modifiers),
                frozenset(actions),
                relation,
            )
        )
    return cues


# --------------------------------------------------------------------------- extractor


@dataclass(frozen=True)
class ExtractorWeights:
    """The extractor's tunable weights and thresholds, in one place.

    Every number the heuristics compare lives here, so a study can vary one
    (`scripts/eval_extractors.py --weight salience_decay=0.4`) without editing code.
    Defaults were chosen by hand on development stories (see the script's docstring).
    """

    # --- role nouns (`_noun_votes`)
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
    # --- pronoun resolution (`_choose`)
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
        chars = run.run()
        model = self.confidence_model or shipped_model()
        for c, f in zip(chars, run.features, strict=True):
            c.confidence = round(model.predict(f), 4) if model is not None else 0.5
        return list(zip(chars, run.features, strict=True))

    def _run(self, story: str, roles: list[RoleSpec], scenario: str, collect: bool = False) -> _Run:
        return _Run(
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
        run.run()
        pronouns = [
            (gender, [(run.role_of.get(ent), f) for ent, f in group])
            for _, gender, group in run.pron_groups
        ]
        names = {r: run._display_name(e) for r, e in run.role_entity.items()}
        return {
            "roles": [(r, name, f) for r, _, name, f in run.role_rows],
            "pronouns": pronouns,
            "role_names": [names.get(r) for r in range(len(roles))],
        }


class _Run:
    """The state of one extraction (one story)."""

    def __init__(
        self,
        story: str,
        roles: list[RoleSpec],
        scenario: str,
        name_prior: bool = True,
        neutral_titles: bool = False,
        weights: ExtractorWeights | None = None,
        word_list: str = DEFAULT_WORD_LIST,
        learned: LearnedModels | None = None,
        collect: bool = False,
    ) -> None:
        self.w = weights or ExtractorWeights()
        self.learned = learned or LearnedModels()
        self.collect = collect  # keep the learned decisions' feature rows
        #: (role, candidate entity or None, display name, features) per option
        self.role_rows: list[tuple[int, int | None, str | None, dict[str, float]]] = []
        #: (pronoun token, its gender, [(candidate entity, features)]) per gendered pronoun
        self.pron_groups: list[tuple[int, str, list[tuple[int, dict[str, float]]]]] = []
        self.scenario = scenario
        self.word_list = word_list
        self.story = story
        self.name_prior = name_prior
        self.neutral_titles = neutral_titles
        self.toks = _tokenise(story)
        _mark_preamble(story, self.toks)
        _mark_quotes(story, self.toks)
        _split_sentences(story, self.toks)
        self._n_toks = len(self.toks)
        self.cues = list(_cached_role_cues(tuple(roles), scenario))
        self.love_pair = all(c.spec.key in ("first", "second") for c in self.cues)
        self.entities: list[_Entity] = []
        self.names: list[_NameMention] = []
        self.name_at: dict[int, _NameMention] = {}  # every token of a name mention
        self.nps: dict[int, _NounPhrase] = {}  # head token → noun phrase
        self.narrator_toks: set[int] = set()
        self.narrator: int | None = None
        self.mentions: list[_Mention] = []
        # the mentions' tokens and sentences: both grow along the list, as `resolve`
        # records mentions left to right (`_choose` looks up where a sentence begins)
        self._mention_toks: list[int] = []
        self._mention_sents: list[int] = []
        self.resolved: dict[int, int] = {}  # pronoun token → entity
        self.descriptors: dict[int, list[int]] = {}  # entity → descriptor tokens
        self.role_entity: dict[int, int] = {}
        self.role_of: dict[int, int] = {}
        self.local_they: set[int] = set()  # they-forms given to one character by context
        self.margins: dict[int, float] = {}  # pronoun → lead of its antecedent's score
        self._np_genders: dict[int, set[str]] = {}  # role → genders of its unbound NPs
        self.assignment_margin = 0.0
        self.features: list[dict[str, float]] = []  # per role, filled by `output`
        self._sentences: dict[int, list[_Tok]] | None = None  # see `sentence`
        self._commas: dict[int, int] | None = None  # see `_first_comma`
        self._capitalised_bases: Counter | None = None  # base → capitalised tokens
        # every noun that names a role, strongly or weakly (`_noun_votes`)
        self._cue_nouns = frozenset(w for c in self.cues for w in c.nouns | c.weak_nouns)
        self._gendered_pronouns = any(
            t.lower in _GENDERED_PRONOUNS and t.word and not t.skip for t in self.toks
        )

    # ------------------------------------------------------------------ helpers
    def new_entity(self, kind: str, first: int, head: str = "") -> _Entity:
        e = _Entity(len(self.entities), kind, first, head)
        self.entities.append(e)
        return e

    def tok(self, i: int) -> _Tok | None:
        return self.toks[i] if 0 <= i < self._n_toks else None

    def sentence(self, sent: int) -> list[_Tok]:
        """The tokens of sentence `sent` (sentence numbers never decrease along the
        tokens: each sentence is one stretch of them)."""
        if self._sentences is None:
            bounds: dict[int, list[int]] = {}
            for t in self.toks:
                if t.sent in bounds:
                    bounds[t.sent][1] = t.i + 1
                else:
                    bounds[t.sent] = [t.i, t.i + 1]
            self._sentences = {k: self.toks[a:b] for k, (a, b) in bounds.items()}
        return self._sentences.get(sent, [])

    def _first_comma(self, sent: int) -> int | None:
        """The first comma of sentence `sent` (its token index), if any."""
        if self._commas is None:
            self._commas = {}
            for t in self.toks:
                if t.text == "," and t.sent not in self._commas:
                    self._commas[t.sent] = t.i
        return self._commas.get(sent)

    def set_role(self, r: int, ent: int) -> None:
        self.role_entity[r] = ent
        self.role_of[ent] = r

    def run(self) -> list[CharacterExtraction]:
        self.find_names()
        self.find_narrator()
        self.find_noun_phrases()
        self.bind_appositions()
        self.assign_roles()
        self.resolve()
        return self.output()

    # ------------------------------------------------------------------ names
    def _name_like(self, t: _Tok) -> bool:
        if not t.cap or t.skip or t.base in _STOP or t.base in _HONORIFICS:
            return False
        if t.base in _PRONOUNS or t.base in _DESCRIPTORS or t.base in _TITLES:
            return False
        if _APOSTROPHE_RE.split(t.lower)[0] in _PRONOUNS or t.lower.startswith(("i'", "i’")):
            return False  # "I've", "She'd"
        core = t.text[:-2] if t.poss and t.text[-2:] in ("'s", "’s") else t.text
        if len(core) > 1 and core.isupper():
            return False  # CEO, NFL, NYC
        if len(core) == 1:
            return False  # "L.A.", an initial
        return not any(ch.isdigit() for ch in core)

    def _not_a_person(self, t: _Tok) -> bool:
        """Context says a capitalised word names a thing or a place: "the Sharpie",
        "Mexican boy", "Hannigan's Diner", "the town of Haywood", "in Ohio"."""
        prev = self.tok(t.i - 1)
        nxt = self.tok(t.i + 1)
        if prev is not None and prev.lower in ("the", "a", "an"):
            return True
        if (
            prev is not None
            and prev.cap
            and prev.end + 1 == t.start
            and prev.base in _PLACE_PREFIXES
        ):
            return True  # "San Diego", "Fort Worth"

        if nxt is not None and nxt.word and not t.poss:
            if nxt.cap and nxt.base in _PLACE_HEADS:
                return True
            if not nxt.cap and (nxt.lower in _PLACE_HEADS or nxt.lower in _PERSON_NOUNS):
                return True  # an adjective: "Nicaraguan village", "Mexican boy"
        if prev is not None and prev.lower == "of":
            before = self.tok(t.i - 2)
            if before is not None and before.lower in _PLACE_HEADS_OF:
                return True
        return False

    def find_names(self) -> None:
        toks = self.toks
        n = len(toks)
        cand = [t.cap and self._name_like(t) for t in toks]
        named = [t for t in toks if cand[t.i]]  # the candidates, in story order
        # a word used as a thing/place anywhere is no name anywhere
        things = {t.base for t in named if self._not_a_person(t)}
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
            nxt, after = self.tok(run[-1] + 1), self.tok(run[-1] + 2)
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
            if first.initial and not self._initial_is_name(first, mid, run):
                continue
            prev = self.tok(run[0] - 1)
            if (
                prev is not None
                and prev.lower in _PLACE_PREPS
                and mid[toks[run[0]].base] <= 1
                and len(run) == 1
                and not toks[run[0]].poss
            ):
                continue  # "in Ohio" (not "in Elizabeth's eyes")
            if toks[run[0]].quoted and toks[run[0]].base not in outside:
                continue  # a capitalised word only in dialogue
            self._add_name(run)

    def _initial_is_name(self, t: _Tok, mid: Counter, run: list[int]) -> bool:
        """Is a sentence-initial capitalised word a name? It needs more evidence."""
        if mid[t.base] > 0 or t.poss or len(run) > 1:
            return True
        if self.name_prior and t.base in _GENDERED_NAMES:
            return True
        if self._capitalised_bases is None:
            self._capitalised_bases = Counter(u.base for u in self.toks if u.cap)
        if self._capitalised_bases[t.base] > 1:
            return True
        nxt, after = self.tok(t.i + 1), self.tok(t.i + 2)
        if nxt is None:
            return False
        if nxt.lower in _SPEECH_VERBS:
            return True  # "Emily replied"
        if nxt.lower in ("and", "&") and after is not None and after.cap:
            return self._name_like(after)  # "Sally and Amanda"
        if t.text.endswith(("ly", "ing", "ed")):
            return False  # "Miraculously, Samuel …", "Spotting Kevin"
        if (
            nxt.text == ","
            and after is not None
            and (after.lower in ("a", "an", "the", "who") or (after.cap and self._name_like(after)))
        ):
            return True  # "Jane, a passionate cook"
        if nxt.lower in ("and", "&") and after is not None and after.cap:
            return self._name_like(after)
        return nxt.lower in _VERBISH and not t.text.endswith(("ness", "tion", "ment"))

    def _prefix(self, i: int) -> tuple[int | None, int | None]:
        """(honorific, title) token right before a name: "Mr." / "Chef"."""
        j = i - 1
        if (
            j >= 1
            and self.toks[j].text == "."
            and self.toks[j - 1].cap
            and self.toks[j - 1].base in _HONORIFICS
            and self.toks[j - 1].base in _ABBREVIATIONS
        ):
            return j - 1, None  # "Dr. Patel" (not "… the professor. Alex")
        t = self.tok(j)
        if t is not None and t.word and t.cap:
            if t.base in _HONORIFICS:
                return j, None
            if t.base in _TITLES:
                return None, j
        return None, None

    def _add_name(self, run: list[int]) -> None:
        toks = self.toks
        words = [k for k in run if toks[k].word]
        bases = {toks[k].base for k in words}
        honorific, title = self._prefix(run[0])
        hon_gender = _HONORIFICS[toks[honorific].base] if honorific is not None else ""
        match = None
        for e in self.entities:
            if e.kind == "name" and e.name_words & bases:
                if hon_gender and e.strong and hon_gender not in e.strong:
                    continue  # Mr. Thompson is not Mrs. Thompson
                match = e
                break
        e = match or self.new_entity("name", run[0])
        e.name_words |= bases
        e.n_names += 1
        if hon_gender:
            e.strong[hon_gender] += self.w.honorific_votes
        if self.name_prior and not e.prior:
            for k in words:
                b = toks[k].base
                if b in _FEMALE_NAMES:
                    e.prior["F"] += 1
                    break
                if b in _MALE_NAMES:
                    e.prior["M"] += 1
                    break
        for prefix in (honorific, title):
            if prefix is not None:
                e.role_votes.update(self._noun_votes(toks[prefix].base, set()))
        nm = _NameMention(run[0], run[-1], e.id, honorific, title)
        self.names.append(nm)
        for k in run:
            self.name_at[k] = nm

    def find_narrator(self) -> None:
        """A first-person narrator (I/me/my outside dialogue) is a character."""
        narr = [
            t.i
            for t in self.toks
            if t.lower in _NARRATOR_WORDS and t.word and not t.quoted and not t.skip
        ]
        if narr:
            self.narrator = self.new_entity("narrator", narr[0]).id
            self.narrator_toks = set(narr)

    # ------------------------------------------------------------------ noun phrases
    def _noun_votes(self, head: str, modifiers: set[str]) -> Counter:
        """Role index → strength for a noun phrase with `head` and `modifiers`. A noun
        shared by two roles ("student") binds only through modifiers ("star")."""
        votes: Counter = Counter()
        if head not in self._cue_nouns:
            return votes
        sharing = [c for c in self.cues if head in c.nouns or head in c.weak_nouns]
        for c in sharing:
            score = 0.0
            if len(sharing) == 1:
                score = self.w.synonym_vote if head in c.nouns else self.w.weak_synonym_vote
            score += self.w.modifier_vote * len(c.modifiers & modifiers)
            if score:
                votes[c.index] += score
        return votes

    def _np_left(self, i: int) -> tuple[int, set[str]]:
        """Start token (the determiner or possessor, if any) and modifiers of the noun
        phrase headed by token `i`. Without a determiner only words that are surely
        modifiers ("young", "American", a role word, a hyphenated compound) count."""
        mods: list[str] = []
        j = i - 1
        while j >= 0 and i - j <= 5:
            t = self.toks[j]
            if not t.word:
                break
            if t.lower in _DETERMINERS or t.poss:
                return j, set(mods)
            if (
                t.lower in _PREPOSITIONS
                or t.lower in _SUBORDINATORS
                or t.lower in _VERBISH
                or t.lower in _PRONOUNS
                or j in self.name_at
            ):
                break
            mods.append(t.lower)
            j -= 1
        # no determiner: keep the modifiers next to the head that are surely modifiers
        keep = 0
        for w in mods:
            if (
                w in _NAME_ADJECTIVES
                or "-" in w
                or w == "american"
                or any(w in c.nouns or w in c.modifiers for c in self.cues)
            ):
                keep += 1
            else:
                break
        return i - keep, set(mods[:keep])

    def find_noun_phrases(self) -> None:
        """Role nouns, person nouns and kinship terms heading a noun phrase."""
        for t in self.toks:
            if not t.word or t.skip or t.i in self.name_at or t.i in self.narrator_toks:
                continue
            if t.base in _HONORIFICS:
                continue
            noun = t.base
            if noun not in _NP_HEADS and noun not in self._cue_nouns:
                continue  # no role noun, person noun, kinship term or occupation
            if not t.poss and noun.endswith("s") and _stem(noun) != noun:
                continue  # plural: "fans", "students"
            votes = noun in self._cue_nouns and self._noun_votes(noun, set())
            is_kin = noun in _KIN
            is_person = noun in _PERSON_NOUNS or noun in _DESCRIPTORS
            is_other = noun in _OCCUPATIONS
            if not (votes or is_kin or is_person or is_other):
                continue
            nxt = self.tok(t.i + 1)
            if nxt is not None and nxt.word and not t.poss and not nxt.cap:
                # a modifier, not the head: "fan events", "student body", "star student"
                if nxt.base in _COMPOUND_HEADS or self._noun_votes(_stem(nxt.base), set()):
                    continue
                if nxt.base in _PERSON_NOUNS or nxt.base in _KIN:
                    continue
            if nxt is not None and nxt.i in self.name_at and t.cap:
                continue  # "Nurse Emily" is handled with the name
            start, mods = self._np_left(t.i)
            votes = self._noun_votes(noun, mods)
            kind = "role" if votes else ("kin" if is_kin else "person" if is_person else "other")
            self.nps[t.i] = _NounPhrase(t.i, start, mods, noun, kind, votes)

    # ------------------------------------------------------------------ appositions
    def _name_after(self, j: int) -> _NameMention | None:
        """The name mention at token j, skipping an honorific or title."""
        t = self.tok(j)
        while t is not None and t.cap and (t.base in _HONORIFICS or t.base in _TITLES):
            after = self.tok(j + 1)
            j += 2 if after is not None and after.text == "." else 1
            t = self.tok(j)
        nm = self.name_at.get(j)
        return nm if nm is not None and nm.start == j else None

    def bind_appositions(self) -> None:
        """Bind names to role nouns and descriptors through apposition."""
        toks = self.toks
        for h, np in self.nps.items():
            after = self.tok(h + 1)
            named = after is not None and after.lower in ("named", "called")
            # "Max, a struggling student, …" (but "Chloe, a new employee named Ryan")
            nm = None if named else self._apposition_back(np.start)
            if nm is None and not toks[h].poss:
                # NOUN (,|named|called|-)? NAME: "his new employee, Emma", "CEO Mark"
                j = h + 1
                link = self.tok(j)
                linked = link is not None and (
                    link.text in ",–—-" or link.lower in ("named", "called")
                )
                if linked:
                    j += 1
                prev = self.tok(np.start - 1)
                verb_use = np.start == h and (
                    prev is not None and (prev.lower in _VERB_CUES or prev.lower in _PRONOUNS)
                )
                if verb_use or (not linked and np.start == h and not toks[h].cap):
                    j = -1  # "to mentor Emily", "she would coach Ben": a verb
                nm = self._name_after(j) if j >= 0 else None
                if nm is not None:
                    nm.np_start = np.start
            if nm is None:
                sep, before = self.tok(np.start - 1), self.tok(np.start - 2)
                if (
                    sep is not None
                    and sep.text in ",–—-"
                    and before is not None
                    and before.i in self.nps
                    and not before.poss
                ):
                    np.apposed_to = before.i  # "the patient, a young woman"
                continue
            np.entity, np.appositive = nm.entity, True
            e = self.entities[nm.entity]
            for r, s in np.votes.items():
                e.role_votes[r] += s
            if np.kind == "other":
                e.occupations += 1
            self._bind_descriptor(h, np.noun, nm.entity)

    def _apposition_back(self, start: int) -> _NameMention | None:
        """ "NAME, a/the … NOUN" or "NAME was a … NOUN" ending right before `start`."""
        j = start - 1
        first = self.tok(start)
        if first is not None and first.lower not in _DETERMINERS:
            while j >= 0 and start - j <= 3 and self._plain_modifier(self.toks[j]):
                j -= 1  # "Jack Harlow, preeminent American actor"
            # "John, a tall, well-dressed man": adjectives separated by commas
            k = j
            while k >= 1 and start - k <= 8 and self.toks[k].text == ",":
                if not self._plain_modifier(self.toks[k - 1]):
                    break
                k -= 1
                while k >= 0 and self._plain_modifier(self.toks[k]):
                    k -= 1
            if k != j and k >= 0 and self.toks[k].lower in ("a", "an", "the"):
                j = k - 1
        t = self.tok(j)
        if t is None:
            return None
        name_end = j - 1
        prev = self.tok(j - 1)
        if prev is not None and (
            (t.lower == "been" and prev.lower in ("had", "has", "have"))
            or (t.lower in ("always", "also", "once", "still") and prev.lower in ("was", "is"))
        ):
            name_end = j - 2  # "Jeff had been a devoted fan", "Mia was always a star"
        elif not (t.text in ",–—-(" or t.lower in ("was", "is", "became", "remained")):
            return None
        nm = self.name_at.get(name_end)
        if nm is not None and not self.toks[nm.end].poss:
            return nm
        return None

    def _plain_modifier(self, t: _Tok) -> bool:
        """A lower-case word that can only modify a noun here (not a verb or a
        function word)."""
        return (
            t.word
            and not t.cap
            and t.lower not in _NOT_MODIFIERS
            and t.lower not in _PRONOUNS
            and t.lower not in ("was", "is", "became", "remained")
        )

    def _bind_descriptor(self, h: int, noun: str, ent: int) -> None:
        g = _DESCRIPTORS.get(noun)
        if g is None:
            return
        self.entities[ent].strong[g] += self.w.honorific_votes
        if h not in self.descriptors.setdefault(ent, []):
            self.descriptors[ent].append(h)

    # ------------------------------------------------------------------ roles
    def assign_roles(self) -> None:
        """Pick one character per role: appositive bindings, then the prompt's order
        (the subject usually comes first), the agent of the role's action, the
        narrator, how often a name recurs."""
        chars = sorted(
            (e for e in self.entities if e.kind in ("name", "narrator")), key=lambda e: e.first
        )
        n_roles = len(self.cues)
        agent = None if self.love_pair else self._action_agent()
        w = self.w
        model = None if self.love_pair else self.learned.roles
        pair_score: dict[tuple[int, int | None], float] = {}
        self._np_genders = self._role_np_genders()
        for r in range(n_roles):
            pair_score[(r, None)] = -(w.missing_subject if r == 0 else w.missing_other)
            for rank, e in enumerate(chars):
                pair_score[(r, e.id)] = self._rule_pair_score(r, e, rank, agent)
        if not self.love_pair and (model is not None or self.collect):
            feats = self._role_features(chars)
            for key, f in feats.items():
                f["rule"] = pair_score[key]
            if self.collect:
                self.role_rows = [
                    (r, ent, self._display_name(ent) if ent is not None else None, f)
                    for (r, ent), f in feats.items()
                ]
        options: list[_Entity | None] = [*chars, None]
        best, best_score, second_score = self._best_assignment(options, n_roles, pair_score)
        if model is not None and best_score - second_score < w.learned_role_margin:
            # the rules are unsure: the learned model assigns the roles
            learned = {k: model.logit(f) for k, f in feats.items()}
            best, best_score, second_score = self._best_assignment(options, n_roles, learned)
        self.assignment_margin = best_score - second_score if len(chars) else 0.0
        for r, e in enumerate(best or ()):
            if e is not None:
                self.set_role(r, e.id)
        # a narrator is not the role a third-person noun phrase describes ("I waited
        # for hours … the actor emerged, a smile on his face"): move it to a free role
        if self.narrator is not None and self.narrator in self.role_of:
            r_n = self.role_of[self.narrator]
            free = [r for r in range(n_roles) if r not in self.role_entity]
            described = any(
                np.kind == "role"
                and np.entity is None
                and not self.toks[h].quoted
                and max(np.votes, key=np.votes.get) == r_n
                and self.tok(np.start) is not None
                and self.tok(np.start).lower == "the"
                for h, np in self.nps.items()
            )
            if described and free:
                del self.role_entity[r_n]
                self.set_role(free[0], self.narrator)
        # unnamed characters of the remaining roles, from their noun phrases (not from
        # dialogue: "such a dedicated fan," he said)
        for h in sorted(self.nps):
            np = self.nps[h]
            if np.entity is not None or np.kind != "role":
                continue
            r = max(np.votes, key=np.votes.get)
            if list(np.votes.values()).count(np.votes[r]) > 1:
                continue
            if self.toks[h].quoted and r not in self.role_entity:
                continue
            if r not in self.role_entity:
                self.set_role(r, self.new_entity("np", h, np.noun).id)
            np.entity = self.role_entity[r]

    @staticmethod
    def _best_assignment(
        options: list[_Entity | None],
        n_roles: int,
        pair_score: dict[tuple[int, int | None], float],
    ) -> tuple[tuple[_Entity | None, ...] | None, float, float]:
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
            score = sum(
                pair_score[(r, e.id if e is not None else None)] for r, e in enumerate(combo)
            )
            if score > best_score:
                second_score = best_score
                best, best_score = combo, score
            elif score > second_score:
                second_score = score
        return best, best_score, second_score

    def _rule_pair_score(self, r: int, e: _Entity, rank: int, agent: int | None) -> float:
        """The hand-set score of character `e` (`rank`-th to appear) for role `r`."""
        w = self.w
        score = w.name_count * min(e.n_names, w.name_count_cap)
        if e.strong or e.prior or e.role_votes or e.kind == "narrator":
            score += w.surely_person
        if self.love_pair:
            return score + (w.love_pair_order if rank == r else 0.0)
        score += w.role_binding * e.role_votes.get(r, 0.0)
        score -= w.other_role_binding * sum(v for k, v in e.role_votes.items() if k != r)
        score += w.order_prior / (1 + abs(rank - r))
        if agent is not None and r == 0 and e.id == agent:
            score += w.action_agent
        if e.kind == "narrator" and r == 0:
            score += w.narrator_subject
        if self._np_gender_conflict(r, e):
            score -= w.np_gender_conflict
        return score

    def _role_np_genders(self) -> dict[int, set[str]]:
        """Role → genders ("M"/"F") of the gendered pronoun that closely follows each of
        its unbound noun phrases in subject position — within six words of the same
        sentence, no name or other noun phrase between ("An American actor, famous for
        his versatility", "the musician strummed his guitar" → M)."""
        out: dict[int, set[str]] = {}
        for h, r in self._unbound_role_nps():
            if not self._subject_position(self.nps[h].start):
                continue
            for j in range(h + 1, min(h + 7, len(self.toks))):
                u = self.toks[j]
                if u.sent != self.toks[h].sent or j in self.name_at or u.quoted or j in self.nps:
                    break
                g = _PRONOUNS.get(u.lower, ("", ""))[0]
                if g in ("M", "F"):
                    out.setdefault(r, set()).add(g)
                    break
        return out

    def _known_gender(self, e: _Entity) -> str | None:
        """A character's gender from honorifics, descriptors or its first name."""
        for votes in (e.strong, e.prior):
            if votes:
                (g, n), *rest = votes.most_common()
                return g if not rest or rest[0][1] < n else None
        return None

    def _np_gender_conflict(self, r: int, e: _Entity) -> bool:
        genders = self._np_genders.get(r)
        g = self._known_gender(e)
        return bool(genders) and g is not None and g not in genders

    def _action_agent(self) -> int | None:
        """The named character doing the subject role's action ("pays the bill"): for
        each action word, the nearest name before it in its sentence (or, weaker, the
        first one after it: "When the check came, Marcus grabbed it"); a pronoun in
        between makes the agent unknown."""
        if not self.cues or not self.cues[0].actions:
            return None
        votes = self._action_stats(self.cues[0].actions, ())["votes"]
        description = set(re.findall(r"[a-z]+", self.cues[0].spec.description.lower()))
        if self.w.offer_vote and description & _OFFER_ACTIONS:
            for ent, n in self._offer_speakers().items():
                votes[ent] += self.w.offer_vote * n  # "Let me get this one," she said
        if not votes:
            return None
        ranked = votes.most_common(2)
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return None
        return ranked[0][0]

    def _is_action(self, t: _Tok, words: frozenset[str], prefixes: tuple[str, ...]) -> bool:
        return (
            t.word
            and not t.skip
            and (t.lower in words or _stem(t.lower) in words or t.lower.startswith(prefixes))
        )

    def _action_stats(self, words: frozenset[str], prefixes: tuple[str, ...]) -> dict[str, Any]:
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
        n_toks = max(1, len(self.toks))
        for t in self.toks:
            if not (t.word and not t.skip):
                continue
            if not self._is_action(t, words, prefixes):
                continue
            if any(
                u.lower in _ACTION_NEGATORS
                for u in self.toks[max(0, t.i - 3) : t.i]
                if u.sent == t.sent
            ):
                continue  # "she had left her wallet at home"
            before = range(t.i - 1, -1, -1)
            after = range(t.i + 1, len(self.toks))
            for scan, weight in ((before, 1.0), (after, 0.5)):
                agent = None
                for j in scan:
                    u = self.toks[j]
                    if u.sent != t.sent:
                        break
                    pg, pc = _PRONOUNS.get(u.lower, ("", ""))
                    if pc == "subj":
                        # a pronoun subject: the one named character of its gender
                        agent = self._only_named_of_gender(pg)
                        break
                    nm = self.name_at.get(j)
                    if (
                        nm is not None
                        and not u.quoted
                        and not self.toks[nm.end].poss
                        and self._subject_position(self._np_start_of_name(nm))
                    ):
                        agent = nm.entity
                        break
                if agent is not None:
                    if agent >= 0:  # later events weigh more: the story's last word
                        votes[agent] += weight * (1.0 + self.w.action_recency * t.i / n_toks)
                        agents.append(agent)
                    break
            for j in range(t.i + 1, min(t.i + 4, len(self.toks))):
                u = self.toks[j]
                if u.sent != t.sent or u.text in ".;!?":
                    break
                nm = self.name_at.get(j)
                if nm is not None and nm.start == j and not u.quoted:
                    patients[nm.entity] += 1
                    break
        return {"votes": votes, "agents": agents, "patients": patients}

    def _only_named_of_gender(self, gender: str) -> int:
        """The single named character whose honorifics, descriptors or first name say
        `gender` ("M"/"F"); -1 when there is none or more than one."""
        if gender not in ("M", "F"):
            return -1
        hits = []
        for e in self.entities:
            if e.kind != "name":
                continue
            votes = e.strong or e.prior
            if votes and votes.most_common(1)[0][0] == gender:
                hits.append(e.id)
        return hits[0] if len(hits) == 1 else -1

    # ------------------------------------------------------------------ subjects
    def _np_start_of_name(self, nm: _NameMention) -> int:
        if nm.np_start >= 0:
            return nm.np_start
        j = nm.honorific if nm.honorific is not None else nm.start
        if nm.title is not None:
            j = min(j, nm.title)
        while j > 0:
            t = self.toks[j - 1]
            if (
                t.word
                and not t.cap
                and (
                    t.lower in _NAME_ADJECTIVES
                    or "-" in t.lower
                    or self._noun_votes(t.lower, set())
                )
            ):
                j -= 1
            elif t.word and t.lower in _DETERMINERS:
                j -= 1
                break
            else:
                break
        return j

    def _subject_position(self, start: int) -> bool:
        """Does a noun phrase starting at `start` stand where a clause subject does:
        after a sentence start, clause punctuation or a conjunction?"""
        prev = self.tok(start - 1)
        if prev is None or prev.sent != self.toks[start].sent:
            return True
        if not prev.word:
            return prev.text in ',;:—–("“”'
        return prev.lower in _SUBORDINATORS or prev.lower in ("that", "then", "where", "who")

    def _verb_follows(self, end: int) -> bool:
        """Is the word after a name a finite verb ("… realizing Rachel had left her
        wallet", "… knew Mia could win")? Then the name is its clause's subject."""
        nxt = self.tok(end + 1)
        return (
            nxt is not None
            and nxt.word
            and not nxt.cap
            and (nxt.lower in _AUXILIARIES or nxt.lower in _VERBISH)
        )

    # ------------------------------------------------------------------ resolution
    def resolve(self) -> None:
        """Left-to-right pass: record mentions, resolve pronouns as they come."""
        bystanders: dict[str, int] = {}
        for t in self.toks:
            if not t.word or t.skip:
                continue
            i = t.i
            nm = self.name_at.get(i)
            if nm is not None:
                if nm.start == i:
                    start = self._np_start_of_name(nm)
                    embedded = self.toks[nm.end].poss
                    subject = not embedded and (
                        self._subject_position(start) or self._verb_follows(nm.end)
                    )
                    self._mention(i, nm.entity, subject, embedded, "name")
                    if embedded and self._subject_position(start):
                        self.mentions[-1].topic = True
                continue
            if i in self.narrator_toks:
                self._mention(i, self.narrator, t.lower == "i", t.lower == "my", "narrator")
                continue
            np = self.nps.get(i)
            if np is not None:
                self._noun_phrase_mention(np, bystanders)
                continue
            base = t.lower
            if base.endswith(_CONTRACTIONS):
                for c in _CONTRACTIONS:
                    if base.endswith(c):
                        base = base[: -len(c)]
            if base in _PRONOUNS:
                self._resolve_pronoun(t, base)

    def _noun_phrase_mention(self, np: _NounPhrase, bystanders: dict[str, int]) -> None:
        ent = np.entity
        if np.appositive:
            return  # the adjacent name is the mention
        if np.apposed_to is not None:
            ent = self.nps[np.apposed_to].entity
            if ent is not None:
                np.entity = ent
                self._bind_descriptor(np.head, np.noun, ent)
                return
        if ent is None and np.kind == "kin":
            ent = self._kin_entity(np)
        elif ent is None and np.kind == "person":
            if self.toks[np.head].quoted and np.start == np.head:
                return  # a vocative in dialogue: "Sir, your dish …"
            if self._generic(np):
                return  # "each person", "patient after patient": nobody in particular
            start = self.tok(np.start)
            definite = start is not None and start.lower == "the"
            if definite and np.noun in bystanders:
                ent = bystanders[np.noun]
            elif (described := self._undescribed_role_entity(np)) is not None:
                ent = described
            else:
                ent = self._open_role_entity(np.head, np.noun)
                bystanders[np.noun] = ent
            self._bind_descriptor(np.head, np.noun, ent)
        if ent is None:
            return
        np.entity = ent
        embedded = self.toks[np.head].poss
        subject = not embedded and self._subject_position(np.start)
        self._mention(np.head, ent, subject, embedded, "np")

    def _undescribed_role_entity(self, np: _NounPhrase) -> int | None:
        """ "… awaited the new hire. An ambitious young man entered": an indefinite
        person noun phrase, when every role has a character, describes the one unnamed
        role character that nothing has gendered yet."""
        start = self.toks[np.start]
        if start.lower not in ("a", "an") or len(self.role_entity) < len(self.cues):
            return None
        if self.toks[np.head].quoted or not self._subject_position(np.start):
            return None
        cands = [
            ent
            for ent in self.role_entity.values()
            if self.entities[ent].kind == "np"
            and self.entities[ent].head
            and not (self.entities[ent].strong or self.entities[ent].weak)
        ]
        return cands[0] if len(cands) == 1 else None

    def _generic(self, np: _NounPhrase) -> bool:
        """ "each person", "every patient", "patient after patient"."""
        start = self.toks[np.start]
        if start.lower in _GENERIC_DETERMINERS:
            return True
        nxt, after = self.tok(np.head + 1), self.tok(np.head + 2)
        prev, before = self.tok(np.start - 1), self.tok(np.start - 2)
        return (
            nxt is not None
            and nxt.lower == "after"
            and after is not None
            and _stem(after.lower) == np.noun
        ) or (
            prev is not None
            and prev.lower == "after"
            and before is not None
            and _stem(before.lower) == np.noun
        )

    def _open_role_entity(self, i: int, noun: str) -> int:
        """A person noun phrase ("the frail stranger"): the character of a role that
        has none yet, else a bystander."""
        for r in range(len(self.cues)):
            if r not in self.role_entity:
                e = self.new_entity("np", i, noun)
                self.set_role(r, e.id)
                return e.id
        return self.new_entity("np", i, noun).id

    def _kin_entity(self, np: _NounPhrase) -> int | None:
        """ "his sister": the other member of the story's relationship, or a bystander
        ("his father")."""
        owner_tok = self.tok(np.start)
        owner = None
        if owner_tok is not None and owner_tok.i != np.head:
            if owner_tok.i in self.name_at and owner_tok.poss:
                owner = self.name_at[owner_tok.i].entity
            elif owner_tok.poss and owner_tok.i in self.nps:
                owner = self.nps[owner_tok.i].entity  # "the man's girlfriend"
            elif owner_tok.i in self.resolved:
                owner = self.resolved[owner_tok.i]
            elif owner_tok.lower == "my":
                owner = (
                    self.narrator if owner_tok.i in self.narrator_toks else self._speaker(owner_tok)
                )
        rel = [c.index for c in self.cues if c.relation and np.noun in _RELATION_KIN[c.relation]]
        if owner is not None and rel and owner in self.role_of:
            others = [r for r in rel if r != self.role_of[owner]]
            if others:
                r = others[0]
                if r not in self.role_entity:
                    self.set_role(r, self.new_entity("np", np.head, np.noun).id)
                ent = self.role_entity[r]
                self._bind_descriptor(np.head, np.noun, ent)
                return ent
        if np.noun in _DESCRIPTORS:
            e = self.new_entity("np", np.head, np.noun)  # a bystander: "his father"
            e.strong[_DESCRIPTORS[np.noun]] += self.w.honorific_votes
            return e.id
        return None

    def _speaker(self, tok: _Tok) -> int | None:
        """The named speaker of the quotation holding `tok` ("…," said John)."""
        for j in range(tok.i + 1, min(len(self.toks), tok.i + 80)):
            u = self.toks[j]
            if u.word and not u.quoted:
                for k in (j, j + 1):
                    if k in self.name_at:
                        return self.name_at[k].entity
                return None
        return None

    def _mention(self, i: int, ent: int | None, subject: bool, embedded: bool, kind: str) -> None:
        if ent is not None:
            sent = self.toks[i].sent
            self.mentions.append(_Mention(i, ent, sent, subject, embedded, kind))
            self._mention_toks.append(i)
            self._mention_sents.append(sent)

    def _clause_start(self, i: int) -> int:
        j = i - 1
        while j >= 0:
            t = self.toks[j]
            if t.sent != self.toks[i].sent or t.text in ',;:—–()"“”':
                return j + 1
            j -= 1
        return 0

    def _resolve_pronoun(self, t: _Tok, base: str) -> None:
        gender, case = _PRONOUNS[base]
        if gender == "P":
            ent = self._singular_they(t, base)
            if ent is None:
                ent = self._lone_they(t)
            if ent is None:
                ent = self._local_singular_they(t, case)
            if ent is not None:
                self._record(t, ent, gender, case)
            return
        if case == "objposs":
            nxt = self.tok(t.i + 1)
            is_obj = nxt is None or not nxt.word or nxt.lower in _NOT_AFTER_POSSESSIVE
            case = "obj" if is_obj else "poss"
        elif case == "posspro":
            case = "obj"
        ent = self._choose(t, gender, case)
        if ent is None:
            ent = self._unseen_role_entity(t)
        if ent is not None:
            self._record(t, ent, gender, case)

    def _unseen_role_entity(self, t: _Tok) -> int | None:
        """A pronoun with no character before or after it ("She strummed her guitar …" in
        a story that never names its musician): the first role still without one."""
        if t.quoted:
            return None
        for r in range(len(self.cues)):
            if r not in self.role_entity:
                e = self.new_entity("np", t.i, "")
                self.set_role(r, e.id)
                return e.id
        return None

    def _choose(self, t: _Tok, gender: str, case: str) -> int | None:
        sent = t.sent
        W = self.w
        scores: dict[int, float] = {}
        window, narrator, decay, total = W.window, self.narrator, W.salience_decay, W.salience_sum
        base, subject, free = W.mention_base, W.mention_subject, W.mention_free
        topic = W.mention_subject * W.possessor_topic
        mentions = self.mentions
        # mentions more than `window` sentences back are left out: they come first
        for m in itertools.islice(mentions, bisect_left(self._mention_sents, sent - window), None):
            dist = sent - m.sent
            if dist > window or m.entity == narrator:
                continue
            w = base + (subject if m.subject else 0.0)
            w += topic if m.topic else 0.0
            w += 0.0 if m.embedded else free
            value = w * decay**dist
            old = scores.get(m.entity, 0.0)
            scores[m.entity] = max(old, value) + total * min(old, value)
        if not scores:
            return self._cataphora(t, gender)

        clause_start = self._clause_start(t.i)
        # the mentions of this sentence, and of this clause (from token `clause_start` on)
        in_sentence = mentions[bisect_left(self._mention_sents, sent) :]
        clause_subject = next(
            (
                m.entity
                for m in itertools.islice(
                    mentions, bisect_left(self._mention_toks, clause_start), None
                )
                if m.sent == sent and m.subject
            ),
            None,
        )
        if clause_subject is None:
            first = self.tok(clause_start)
            if first is not None and (first.lower.endswith("ing") or first.lower == "to"):
                # "…, showing her the steps": a participle's subject is the sentence's
                clause_subject = next(
                    (m.entity for m in reversed(in_sentence) if m.subject),
                    None,
                )
        who = next(
            (j for j in range(t.i - 1, clause_start - 1, -1) if self.toks[j].lower == "who"),
            None,
        )
        if who is not None:  # "a fan who had been waiting for him": the fan is the subject
            clause_subject = next(
                (m.entity for m in reversed(self.mentions) if m.tok < who), clause_subject
            )
        sentence_subject = next((m.entity for m in reversed(in_sentence) if m.subject), None)
        last_subject = next((m.entity for m in reversed(mentions) if m.subject), None)
        excluded = self._possessed_entities(t) if case == "poss" else set()
        prev = self.tok(t.i - 1)
        copula = prev is not None and prev.lower in _COPULAS
        if case == "poss" and copula and sentence_subject is not None:
            excluded.add(sentence_subject)  # "Jack had been his idol": not the subject
        intro_target = self._intro_target(t)
        model = self.learned.pronouns if gender in ("M", "F") else None
        context = None
        if model is not None or self.collect:
            context = self._pronoun_context(t, clause_subject, sentence_subject, last_subject)
        group: list[tuple[int, dict[str, float]]] = []
        learned: dict[int, float] = {}  # entity → learned score
        agreement: dict[int, float] = {}
        ranked: list[tuple[float, int, int]] = []  # (score, agreement tier, entity)
        for ent, s in scores.items():
            e = self.entities[ent]
            g, level = e.gender()
            tier = 3
            agree = 0.0
            if g is not None and g != gender:
                if level == "strong":
                    continue
                tier = 1  # against the name prior or earlier pronouns: last resort
            elif g == gender:
                agree = {"strong": W.agree_strong, "prior": W.agree_prior, "weak": W.agree_weak}[
                    level
                ]
            sal = s
            if (case == "obj" and ent == clause_subject) or ent in excluded:
                tier = min(tier, 2)  # binding: "Hank cornered him", "his employee, Emma"
            if case == "refl":
                own = clause_subject if clause_subject is not None else sentence_subject
                s += W.reflexive_own if ent == own else 0.0
            if case == "subj" and ent == last_subject:
                s += W.subject_continuity
            if intro_target is not None and ent == intro_target:
                s += -W.intro_object_penalty if case == "obj" else W.intro_target
            if self.role_of.get(ent) == 0:
                s += W.protagonist
            if context is not None:
                feats = self._pronoun_features(
                    context, case, ent, sal, s, ent in excluded, ent == intro_target
                )
                if self.collect:
                    group.append((ent, feats))
                if model is not None:
                    learned[ent] = model.logit(feats)
            agreement[ent] = agree
            ranked.append((s + agree, tier, ent))
        if self.collect and group and gender in ("M", "F"):
            self.pron_groups.append((t.i, gender, group))
        if not ranked:
            return None
        top_tier = max(tier for _, tier, _ in ranked)
        if top_tier == 1 and not t.quoted:
            # every character has the other gender (name lexicon or earlier pronouns):
            # someone else — a free role's character, or nobody we track
            return None
        top = sorted(((s, ent) for s, tier, ent in ranked if tier == top_tier), reverse=True)
        self.margins[t.i] = top[0][0] - top[1][0] if len(top) > 1 else 10.0
        if learned and len(top) > 1 and self.margins[t.i] < W.learned_below_margin:
            # the rules are unsure between two named role characters the evidence so far
            # gives the same gender (or none): the learned model decides between them
            a, b = top[0][1], top[1][1]
            if (
                a in self.role_of
                and b in self.role_of
                and self.entities[a].kind == self.entities[b].kind == "name"
                and agreement[a] == agreement[b]
                and learned[b] > learned[a]
            ):
                return b
        return top[0][1]

    def _pronoun_context(
        self,
        t: _Tok,
        clause_subject: int | None,
        sentence_subject: int | None,
        last_subject: int | None,
    ) -> dict[str, Any]:
        """What the learned pronoun model looks at besides the candidate: the pronoun's
        clause / sentence / last subjects, the entities by recency, and the earlier
        mentions of the pronoun's sentence."""
        recency: list[int] = []
        for m in reversed(self.mentions):
            if m.entity not in recency and m.entity != self.narrator:
                recency.append(m.entity)
        before = [m for m in self.mentions if m.sent == t.sent and m.tok < t.i]
        return {
            "t": t,
            "clause_subject": clause_subject,
            "sentence_subject": sentence_subject,
            "last_subject": last_subject,
            "recency": recency,
            "before": before,
            "last": {m.entity: m for m in self.mentions},
            "count": Counter(m.entity for m in self.mentions),
        }

    def _pronoun_features(
        self,
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
        t: _Tok = ctx["t"]
        last: _Mention = ctx["last"][ent]
        dist = t.sent - last.sent
        rec = ctx["recency"]
        before = [m for m in ctx["before"] if m.entity == ent]
        role = self.role_of.get(ent)
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

    def _possessed_entities(self, t: _Tok) -> set[int]:
        """ "his new employee, Emma": a possessive does not own its own character."""
        out = set()
        for j in range(t.i + 1, min(t.i + 4, len(self.toks))):
            np = self.nps.get(j)
            if np is not None and np.entity is not None:
                out.add(np.entity)
                break
            if not self.toks[j].word:
                break
        return out

    def _intro_target(self, t: _Tok) -> int | None:
        """ "Despite his passion, Ryan's confidence …": a pronoun in an opening phrase
        with no character in it points forward to the character right after it."""
        comma = self._first_comma(t.sent)
        if comma is None or comma < t.i:
            return None
        sent_toks = self.sentence(t.sent)
        for u in sent_toks:
            if u.i >= comma:
                break
            if u.i in self.name_at or (u.i in self.nps and self.nps[u.i].entity is not None):
                return None
        nxt = self.tok(comma + 1)
        if nxt is None:
            return None
        j = comma + 1
        while j < len(self.toks) and self.toks[j].word and self.toks[j].lower in _NAME_ADJECTIVES:
            j += 1
        nm = self._name_after(j)
        if nm is not None:
            return nm.entity
        np = self.nps.get(j)
        return np.entity if np is not None else None

    def _cataphora(self, t: _Tok, gender: str) -> int | None:
        """A pronoun before any character: the character right after an opening
        phrase ("Bright star of his class, Alex …"), else the first agreeing one that
        follows."""
        target = self._intro_target(t)
        if target is not None and self.entities[target].gender()[0] in (None, gender):
            return target
        fallback = None
        for j in range(t.i + 1, len(self.toks)):
            if self.toks[j].sent > t.sent + 1:
                break
            nm = self.name_at.get(j)
            ent = nm.entity if nm is not None else None
            if ent is None and j in self.nps:
                ent = self.nps[j].entity
            if ent is None:
                continue
            g, _ = self.entities[ent].gender()
            if g == gender:
                return ent
            if g is None and fallback is None:
                fallback = ent
        return fallback

    def _lone_they(self, t: _Tok) -> int | None:
        """In a one-character story that never says he or she, "they" is the character
        unless a plural group ("the customers", "people") came between."""
        if len(self.cues) != 1 or 0 not in self.role_entity or self._gendered_pronouns:
            return None
        ent = self.role_entity[0]
        last = max((m.tok for m in self.mentions if m.entity == ent), default=None)
        if last is None or t.sent - self.toks[last].sent > 2:
            return None
        for j in range(last + 1, t.i):
            u = self.toks[j]
            if u.word and not u.cap and (u.lower in _GROUPS or self._plural_noun(j)):
                return None
        return ent

    def _local_singular_they(self, t: _Tok, case: str) -> int | None:
        """ "… mentored the prodigy, nurturing their talents": a they-form is one
        character's when exactly one character without gendered words is mentioned
        earlier in its sentence (not the clause subject, for "them"), and the sentence has
        no plural cue ("together", "both") nor a plural group in between."""
        if t.quoted or not self.w.singular_they or self.love_pair:
            return None  # a Love pair's "their" is the couple's
        sent_toks = [u for u in self.sentence(t.sent) if u.word]
        if any(u.lower in _PLURAL_CUES for u in sent_toks):
            return None
        for u in sent_toks:  # "Sam and Lily's passion grew, turning their …"
            nxt = self.tok(u.i + 1)
            if (
                u.i in self.name_at
                and nxt is not None
                and nxt.lower in ("and", "&")
                and (nxt.i + 1) in self.name_at
            ):
                return None
        before = [m for m in self.mentions if m.sent == t.sent and m.tok < t.i]
        if not before:
            return None
        clause_start = self._clause_start(t.i)
        clause_subject = next(
            (m.entity for m in before if m.tok >= clause_start and m.subject), None
        )
        cands: set[int] = set()
        for m in before:
            e = self.entities[m.entity]
            if m.entity == self.narrator or e.strong or e.prior or e.weak:
                continue
            if case == "obj" and m.entity == clause_subject:
                continue
            cands.add(m.entity)
        gendered = {m.entity for m in before} - cands
        if len(cands) != 1 or (case == "subj" and gendered):
            return None
        (ent,) = cands
        self.local_they.add(t.i)
        last = max(m.tok for m in before if m.entity == ent)
        for j in range(last + 1, t.i):
            u = self.toks[j]
            if u.word and not u.cap and (u.lower in _GROUPS or self._plural_noun(j)):
                return None
        return ent

    def _plural_noun(self, j: int) -> bool:
        """A word that looks like a plural noun after a determiner or quantifier."""
        w = self.toks[j].lower
        prev = self.tok(j - 1)
        return (
            w.endswith("s")
            and not w.endswith(("ss", "us", "is"))
            and prev is not None
            and (prev.lower in _QUANTIFIERS or prev.poss)
        )

    def _singular_they(self, t: _Tok, base: str) -> int | None:
        """ "their lawyer" in a story of a lawyer and a defendant: a singular they that
        owns the other role's noun."""
        if base != "their" or len(self.cues) != 2:
            return None
        for j in range(t.i + 1, min(t.i + 4, len(self.toks))):
            np = self.nps.get(j)
            if np is not None and np.kind == "role" and np.entity in self.role_of:
                other = 1 - self.role_of[np.entity]
                return self.role_entity.get(other)
            if (
                np is not None
                and np.kind == "kin"
                and 0 in self.role_entity
                and self.entities[self.role_entity[0]].kind == "np"
                and any(c.relation and np.noun in _RELATION_KIN[c.relation] for c in self.cues)
            ):
                return self.role_entity[0]  # "Their romantic partner's eyes"
            if not self.toks[j].word:
                break
        return None

    def _record(self, t: _Tok, ent: int, gender: str, case: str) -> None:
        self.resolved[t.i] = ent
        e = self.entities[ent]
        if gender in "MFN":
            e.weak[gender] += 1
        self._mention(t.i, ent, case == "subj", case == "poss", "pron")

    # ------------------------------------------------------------------ output
    def output(self) -> list[CharacterExtraction]:
        toks, story = self.toks, self.story
        pron_refs: dict[int, list[int]] = {}
        gendered = {
            ent
            for i, ent in self.resolved.items()
            if _PRONOUNS.get(toks[i].lower, ("", ""))[0] in ("M", "F")
        }
        for i, ent in self.resolved.items():
            if i in self.local_they and (ent in gendered or self.entities[ent].strong):
                continue  # a character the story calls "he" or "she" elsewhere
            pron_refs.setdefault(ent, []).append(i)
        out = []
        for r, cue in enumerate(self.cues):
            ent = self.role_entity.get(r)
            if ent is None:
                out.append(CharacterExtraction(cue.spec.key, None))
                self.features.append(self._features(r, None, []))
                continue
            refs: set[Span] = set()
            name_spans: list[Span] = []
            for nm in self.names:
                if nm.entity != ent:
                    continue
                last = toks[nm.end]
                stop = last.end - (2 if last.poss and last.text[-2:] in ("'s", "’s") else 0)
                start = toks[nm.start].start
                name_spans.append(Span(start, stop, story[start:stop]))
                if nm.honorific is not None:
                    hon = toks[nm.honorific]
                    h_end = toks[hon.i + 1].end if toks[hon.i + 1].text == "." else hon.end
                    if _HONORIFICS[hon.base] or self.neutral_titles:
                        refs.add(Span(hon.start, h_end, story[hon.start : h_end]))
            display = self._display_name(ent)
            for i in pron_refs.get(ent, []):
                refs.add(Span(toks[i].start, toks[i].end, toks[i].text))
            for i in self.descriptors.get(ent, []):
                t = toks[i]
                stop = t.end - (2 if t.poss and t.text[-2:] in ("'s", "’s") else 0)
                refs.add(Span(t.start, stop, story[t.start : stop]))
            name = display if self.entities[ent].kind == "name" else None
            ordered = sorted(refs, key=lambda s: s.start)
            out.append(CharacterExtraction(cue.spec.key, name, ordered, name_spans))
            self.features.append(self._features(r, ent, [sp.text for sp in ordered]))
        self._pair_features(out)
        return out

    def _display_name(self, ent: int) -> str | None:
        """The name to report: the mention with the most name words, with its
        honorific ("Dr. Patel") or address title ("Chef Evan")."""
        toks, story = self.toks, self.story
        display, best = None, 0
        for nm in self.names:
            if nm.entity != ent:
                continue
            last = toks[nm.end]
            stop = last.end - (2 if last.poss and last.text[-2:] in ("'s", "’s") else 0)
            start = toks[nm.start].start
            size = len(story[start:stop].split())
            if nm.honorific is not None:
                start = toks[nm.honorific].start
            elif nm.title is not None and toks[nm.title].base in _ADDRESS_TITLES:
                start = toks[nm.title].start  # "Chef Evan", "Coach Jameson"
            if size > best:
                display, best = story[start:stop], size
        return display

    # ------------------------------------------------------------------ learned roles
    def _unbound_role_nps(self) -> list[tuple[int, int]]:
        """(head token, role) of the narration's role noun phrases no name is apposed
        to ("the CEO", "a struggling student"), with one clear role."""
        out = []
        for h in sorted(self.nps):
            np = self.nps[h]
            if np.kind != "role" or np.entity is not None or self.toks[h].quoted:
                continue
            r = max(np.votes, key=np.votes.get)
            if list(np.votes.values()).count(np.votes[r]) == 1:
                out.append((h, r))
        return out

    def _offer_speakers(self) -> Counter:
        """Entity → number of quotations in which it offers ("Let me get this",
        "Allow me", "my treat"): the speaker named right after the quotation ("…,"
        said Mark; "…," she said → the one named character of her gender) or, else,
        the subject before it in its sentence (Mark whispered, "…")."""
        out: Counter = Counter()
        toks = self.toks
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
            if any(f" {p} " in padded for p in _OFFER_PHRASES):
                speaker = self._speaker_near(k, j)
                if speaker is not None and speaker >= 0:
                    out[speaker] += 1
            k = j
        return out

    def _speaker_near(self, first: int, after: int) -> int | None:
        """The speaker of the quotation toks[first:after] (see `_offer_speakers`): the
        subject before it when a speech verb introduces it (Mark whispered, "…"); else a
        name or subject pronoun next to a speech verb right after it ("…," said Mark /
        Mark said / she whispered); else the subject before it when a comma or colon
        introduces it."""
        toks = self.toks
        intro = self.tok(first - 1)
        while intro is not None and not intro.word and intro.text in "\"“'‘":
            intro = self.tok(intro.i - 1)
        spoken = intro is not None and (
            intro.lower in _SPEECH_VERBS
            or (
                intro.text in ",:"
                and (v := self.tok(intro.i - 1)) is not None
                and v.lower in _SPEECH_VERBS
            )
        )
        if spoken:
            return self._subject_before(intro)
        j = after
        while j < len(toks) and not toks[j].word and not toks[j].quoted and j < after + 2:
            j += 1
        for a, b in ((j, j + 1), (j + 1, j)):  # NAME said / said NAME
            ta, tb = self.tok(a), self.tok(b)
            if ta is None or tb is None or ta.quoted or tb.quoted:
                continue
            if tb.lower not in _SPEECH_VERBS:
                continue
            nm = self.name_at.get(a)
            if nm is not None and nm.start == a and not toks[nm.end].poss:
                return nm.entity
            pg, pc = _PRONOUNS.get(ta.lower, ("", ""))
            if pc == "subj":
                return self._only_named_of_gender(pg)
        if intro is not None and intro.text in ",:":
            return self._subject_before(intro)
        return None

    def _subject_before(self, intro: _Tok) -> int | None:
        """The nearest name (not a possessor) or subject pronoun before `intro` in its
        sentence, outside quotations."""
        for k in range(intro.i, -1, -1):
            u = self.toks[k]
            if u.sent != intro.sent or u.quoted:
                break
            nm = self.name_at.get(k)
            if nm is not None and not self.toks[nm.end].poss:
                return nm.entity
            pg, pc = _PRONOUNS.get(u.lower, ("", ""))
            if pc == "subj":
                return self._only_named_of_gender(pg)
        return None

    def _role_features(
        self, chars: list[_Entity]
    ) -> dict[tuple[int, int | None], dict[str, float]]:
        """Features of each (role, candidate) option for the learned role model: every
        named character or narrator, and None (the role has no named character). Names
        are prefixed by the slot: "solo" (one-role prompt), "subj", "obj"."""
        toks = self.toks
        n_roles = len(self.cues)
        slots = ["solo"] if n_roles == 1 else ["subj", "obj", *[f"r{k}" for k in range(2, n_roles)]]
        by_ent: dict[int, list[_NameMention]] = {}
        for nm in self.names:
            by_ent.setdefault(nm.entity, []).append(nm)
        unbound = self._unbound_role_nps()
        desc_actions = self.cues[0].actions if self.cues else frozenset()
        if desc_actions:
            act = self._action_stats(desc_actions, ())
            act_kind = "desc"
        else:
            prefixes = _scenario_action_prefixes(self.scenario, [c.spec for c in self.cues])
            act = self._action_stats(frozenset(), prefixes) if prefixes else None
            act_kind = "scen"
        description = set(re.findall(r"[a-z]+", self.cues[0].spec.description.lower()))
        offers = self._offer_speakers() if description & _OFFER_ACTIONS else Counter()
        owners: dict[int, Counter] = {}  # entity → roles of noun phrases it owns ("Sarah's mentee")
        for h, np in self.nps.items():
            if np.kind != "role" or np.start == h:
                continue
            nm = self.name_at.get(np.start)
            if nm is not None and self.toks[nm.end].poss and nm.end == np.start:
                owners.setdefault(nm.entity, Counter()).update(np.votes)
        n_named = sum(1 for e in chars if e.kind == "name")
        first_name_tok = min((e.first for e in chars), default=len(toks))
        out: dict[tuple[int, int | None], dict[str, float]] = {}
        for r in range(n_roles):
            sl = slots[r]
            unb_r = [h for h, rr in unbound if rr == r]
            unb_other = [h for h, rr in unbound if rr != r]
            for rank, e in enumerate(chars):
                nms = by_ent.get(e.id, [])
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
                    "owns_other": min(
                        2.0, sum(v for k, v in owners.get(e.id, Counter()).items() if k != r)
                    ),
                    "offer": float(min(offers.get(e.id, 0), 2)),
                    "np_conflict": float(self._np_gender_conflict(r, e)),
                    "np_agree": float(
                        self._known_gender(e) is not None
                        and self._known_gender(e) in self._np_genders.get(r, set())
                    ),
                }
                nearest = max((h for h, _ in unbound if h < e.first), default=None)
                if nearest is not None:
                    f["nearest_np_this"] = float(dict(unbound)[nearest] == r)
                if nms:
                    f["quoted_only"] = float(all(toks[nm.start].quoted for nm in nms))
                    subj = [
                        self._subject_position(self._np_start_of_name(nm)) and not toks[nm.end].poss
                        for nm in nms
                    ]
                    f["first_subject"] = float(subj[0])
                    f["subject_share"] = sum(subj) / len(subj)
                    preps = sum(
                        1
                        for nm in nms
                        if (p := self.tok(self._np_start_of_name(nm) - 1)) is not None
                        and p.lower in _PREPOSITIONS
                    )
                    f["after_prep"] = preps / len(nms)
                if act is not None:
                    votes = act["votes"]
                    total = sum(votes.values())
                    f[f"agent_{act_kind}"] = votes.get(e.id, 0.0) / total if total else 0.0
                    f[f"agent_{act_kind}_last"] = float(
                        bool(act["agents"]) and act["agents"][-1] == e.id
                    )
                    f[f"agent_{act_kind}_first"] = float(
                        bool(act["agents"]) and act["agents"][0] == e.id
                    )
                    f[f"patient_{act_kind}"] = float(min(act["patients"].get(e.id, 0), 2))
                out[(r, e.id)] = {f"{sl}:{k}": v for k, v in f.items()}
                out[(r, e.id)][f"{sl}:cand"] = 1.0
            none = {
                "none": 1.0,
                "np": float(min(len(unb_r), 3)),
                "np_first": float(bool(unb_r) and unb_r[0] < first_name_tok),
                "named": float(min(n_named, 3)),
                "narrator": float(self.narrator is not None),
            }
            out[(r, None)] = {
                f"{sl}:none_{k}" if k != "none" else f"{sl}:none": v for k, v in none.items()
            }
        return out

    # ------------------------------------------------------------------ confidence
    def _features(self, r: int, ent: int | None, refs: list[str]) -> dict[str, float]:
        """The numbers `extractor_confidence` turns into a confidence (see FEATURES)."""
        cue = self.cues[r]
        f: dict[str, float] = {
            "love_pair": float(self.love_pair),
            "action_role": float(bool(cue.actions)),
            "second_role": float(r > 0),
            "n_candidates": float(min(5, sum(1 for e in self.entities if e.kind == "name"))),
            "assignment_margin": max(0.0, min(5.0, self.assignment_margin)),
        }
        if ent is None:
            f["missing"] = 1.0
            f["no_gender"] = 1.0
            return f
        e = self.entities[ent]
        kind = e.kind
        f["named"] = float(kind == "name")
        f["narrator"] = float(kind == "narrator")
        f["unnamed_role_np"] = float(kind == "np" and bool(e.head))
        f["pronoun_only"] = float(kind == "np" and not e.head)
        f["role_binding"] = float(min(3.0, e.role_votes.get(r, 0.0)))
        f["other_role_binding"] = float(min(3.0, sum(v for k, v in e.role_votes.items() if k != r)))
        counts: Counter = Counter()
        for word in refs:
            for g in genders_hit([word], self.word_list):
                counts[g] += 1
        total = sum(counts.values())
        f["log_refs"] = math.log1p(total)
        f["gender_margin"] = max(counts.values()) / total if total else 0.0
        f["unsure"] = float(len(counts) > 1)
        f["no_gender"] = float(total == 0)
        f["they_only"] = float(set(counts) == {NON_BINARY})
        mine = [i for i, x in self.resolved.items() if x == ent and i in self.margins]
        f["contested"] = sum(1 for i in mine if self.margins[i] < 1.0) / len(mine) if mine else 0.0
        prior = e.prior.most_common(1)[0][0] if e.prior else None
        ref_gender = {FEMALE: "F", MALE: "M"}.get(counts.most_common(1)[0][0]) if total else None
        f["prior_conflict"] = float(prior is not None and ref_gender not in (None, prior))
        f["_gender"] = ref_gender or ""  # type: ignore[assignment]
        return f

    def _pair_features(self, out: list[CharacterExtraction]) -> None:
        genders = [f.pop("_gender", "") for f in self.features]
        for k, f in enumerate(self.features):
            others = [g for j, g in enumerate(genders) if j != k and g]
            f["same_gender_other"] = float(bool(genders[k]) and genders[k] in others)
