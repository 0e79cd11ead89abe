"""The state one extraction shares between its steps (`Story`) and the structures the
steps fill: characters (`Entity`), name mentions, noun phrases and mentions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gbdesk.studies.laissez_faire.extract.cues import cached_role_cues
from gbdesk.studies.laissez_faire.extract.gender_words import DEFAULT_WORD_LIST
from gbdesk.studies.laissez_faire.extract.learned import LearnedModels
from gbdesk.studies.laissez_faire.extract.lexicon import (
    ADDRESS_TITLES,
    AUXILIARIES,
    DESCRIPTORS,
    DETERMINERS,
    GENDERED_PRONOUNS,
    HONORIFICS,
    NAME_ADJECTIVES,
    SUBORDINATORS,
    TITLES,
    VERBISH,
)
from gbdesk.studies.laissez_faire.extract.tokens import (
    Tok,
    mark_preamble,
    mark_quotes,
    split_sentences,
    tokenise,
)
from gbdesk.studies.laissez_faire.extract.types import RoleSpec
from gbdesk.studies.laissez_faire.extract.weights import ExtractorWeights


@dataclass
class Entity:
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
class NameMention:
    start: int  # first name token
    end: int  # last name token
    entity: int
    honorific: int | None  # "Mr" / "Dr" token, part of the name
    title: int | None  # "Chef" / "Nurse" token, not part of the name
    np_start: int = -1  # start of the noun phrase (for subject position)


@dataclass
class NounPhrase:
    head: int
    start: int  # determiner or first modifier
    modifiers: set[str]
    noun: str  # singular lower-case head
    kind: str  # "role", "person", "kin"
    votes: Counter  # role index → strength
    entity: int | None = None
    appositive: bool = False  # describes an adjacent name ("Jane, a cook")
    apposed_to: int | None = None  # head of the noun phrase it describes ("the patient, a


@dataclass
class Mention:
    tok: int
    entity: int
    sent: int
    subject: bool
    embedded: bool  # possessive: "Sarah's eyes", "his"
    kind: str  # "name", "np", "pron", "narrator"
    topic: bool = False  # possessor of a clause subject: "Lily's confidence grew"


class Story:
    """The state of one extraction (one story): its tokens, the prompt's role cues, and
    what the steps find — characters, name mentions, noun phrases, mentions, resolved
    pronouns, the role assignment — with the small look-ups every step shares."""

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
        self.toks = tokenise(story)
        mark_preamble(story, self.toks)
        mark_quotes(story, self.toks)
        split_sentences(story, self.toks)
        self._n_toks = len(self.toks)
        self.cues = list(cached_role_cues(tuple(roles), scenario))
        self.love_pair = all(c.spec.key in ("first", "second") for c in self.cues)
        self.entities: list[Entity] = []
        self.names: list[NameMention] = []
        self.name_at: dict[int, NameMention] = {}  # every token of a name mention
        self.nps: dict[int, NounPhrase] = {}  # head token → noun phrase
        self.narrator_toks: set[int] = set()
        self.narrator: int | None = None
        self.mentions: list[Mention] = []
        # the mentions' tokens and sentences: both grow along the list, as `resolve`
        # records mentions left to right (`antecedents` looks up where a sentence begins)
        self.mention_toks: list[int] = []
        self.mention_sents: list[int] = []
        self.resolved: dict[int, int] = {}  # pronoun token → entity
        self.descriptors: dict[int, list[int]] = {}  # entity → descriptor tokens
        self.role_entity: dict[int, int] = {}
        self.role_of: dict[int, int] = {}
        self.local_they: set[int] = set()  # they-forms given to one character by context
        self.margins: dict[int, float] = {}  # pronoun → lead of its antecedent's score
        self.np_genders: dict[int, set[str]] = {}  # role → genders of its unbound NPs
        self.assignment_margin = 0.0
        self.features: list[dict[str, float]] = []  # per role, filled by `output`
        self._sentences: dict[int, list[Tok]] | None = None  # see `sentence`
        self._commas: dict[int, int] | None = None  # see `first_comma`
        self.capitalised_bases: Counter | None = None  # base → capitalised tokens
        # every noun that names a role, strongly or weakly (`Story.noun_votes`)
        self.cue_nouns = frozenset(w for c in self.cues for w in c.nouns | c.weak_nouns)
        self.gendered_pronouns = any(
            t.lower in GENDERED_PRONOUNS and t.word and not t.skip for t in self.toks
        )

    def new_entity(self, kind: str, first: int, head: str = "") -> Entity:
        e = Entity(len(self.entities), kind, first, head)
        self.entities.append(e)
        return e

    def tok(self, i: int) -> Tok | None:
        return self.toks[i] if 0 <= i < self._n_toks else None

    def sentence(self, sent: int) -> list[Tok]:
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

    def first_comma(self, sent: int) -> int | None:
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

    def noun_votes(self, head: str, modifiers: set[str]) -> Counter:
        """Role index → strength for a noun phrase with `head` and `modifiers`. A noun
        shared by two roles ("student") binds only through modifiers ("star")."""
        votes: Counter = Counter()
        if head not in self.cue_nouns:
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

    def name_after(self, j: int) -> NameMention | None:
        """The name mention at token j, skipping an honorific or title."""
        t = self.tok(j)
        while t is not None and t.cap and (t.base in HONORIFICS or t.base in TITLES):
            after = self.tok(j + 1)
            j += 2 if after is not None and after.text == "." else 1
            t = self.tok(j)
        nm = self.name_at.get(j)
        return nm if nm is not None and nm.start == j else None

    def bind_descriptor(self, h: int, noun: str, ent: int) -> None:
        g = DESCRIPTORS.get(noun)
        if g is None:
            return
        self.entities[ent].strong[g] += self.w.honorific_votes
        if h not in self.descriptors.setdefault(ent, []):
            self.descriptors[ent].append(h)

    def known_gender(self, e: Entity) -> str | None:
        """A character's gender from honorifics, descriptors or its first name."""
        for votes in (e.strong, e.prior):
            if votes:
                (g, n), *rest = votes.most_common()
                return g if not rest or rest[0][1] < n else None
        return None

    def np_gender_conflict(self, r: int, e: Entity) -> bool:
        genders = self.np_genders.get(r)
        g = self.known_gender(e)
        return bool(genders) and g is not None and g not in genders

    def only_named_of_gender(self, gender: str) -> int:
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

    def np_start_of_name(self, nm: NameMention) -> int:
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
                    t.lower in NAME_ADJECTIVES or "-" in t.lower or self.noun_votes(t.lower, set())
                )
            ):
                j -= 1
            elif t.word and t.lower in DETERMINERS:
                j -= 1
                break
            else:
                break
        return j

    def subject_position(self, start: int) -> bool:
        """Does a noun phrase starting at `start` stand where a clause subject does:
        after a sentence start, clause punctuation or a conjunction?"""
        prev = self.tok(start - 1)
        if prev is None or prev.sent != self.toks[start].sent:
            return True
        if not prev.word:
            return prev.text in ',;:—–("“”'
        return prev.lower in SUBORDINATORS or prev.lower in ("that", "then", "where", "who")

    def verb_follows(self, end: int) -> bool:
        """Is the word after a name a finite verb ("… realizing Rachel had left her
        wallet", "… knew Mia could win")? Then the name is its clause's subject."""
        nxt = self.tok(end + 1)
        return (
            nxt is not None
            and nxt.word
            and not nxt.cap
            and (nxt.lower in AUXILIARIES or nxt.lower in VERBISH)
        )

    def mention(self, i: int, ent: int | None, subject: bool, embedded: bool, kind: str) -> None:
        if ent is not None:
            sent = self.toks[i].sent
            self.mentions.append(Mention(i, ent, sent, subject, embedded, kind))
            self.mention_toks.append(i)
            self.mention_sents.append(sent)

    def clause_start(self, i: int) -> int:
        j = i - 1
        while j >= 0:
            t = self.toks[j]
            if t.sent != self.toks[i].sent or t.text in ',;:—–()"“”':
                return j + 1
            j -= 1
        return 0

    def name_bounds(self, nm: NameMention) -> tuple[int, int]:
        """Character offsets of a name mention, without a possessive 's."""
        last = self.toks[nm.end]
        stop = last.end - (2 if last.poss and last.text[-2:] in ("'s", "’s") else 0)
        return self.toks[nm.start].start, stop

    def display_name(self, ent: int) -> str | None:
        """The name to report: the mention with the most name words, with its
        honorific ("Dr. Patel") or address title ("Chef Evan")."""
        toks, story = self.toks, self.story
        display, best = None, 0
        for nm in self.names:
            if nm.entity != ent:
                continue
            start, stop = self.name_bounds(nm)
            size = len(story[start:stop].split())
            if nm.honorific is not None:
                start = toks[nm.honorific].start
            elif nm.title is not None and toks[nm.title].base in ADDRESS_TITLES:
                start = toks[nm.title].start  # "Chef Evan", "Coach Jameson"
            if size > best:
                display, best = story[start:stop], size
        return display

    def unbound_role_nps(self) -> list[tuple[int, int]]:
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
