"""The Laissez-Faire harms probe (Shieh, Vassel, Sugimoto & Monroe-White 2024).

The model writes short stories for 100 prompts (Learning / Labor / Love ×
power-neutral / power-laden). For every story an extractor finds each character's
name and the words referring to it; gender follows from those words, race from the
first name (fractional counting over a name table). Metrics follow the paper's
analysis code (see `laissez_faire_stats`): representation ratios of power-neutral
stories against population baselines (Wilson-interval p-values), subordination
ratios of power-laden stories (subordinate vs dominant role, Katz log interval), the
median racialized subordination ratio over name-likelihood thresholds, name
coverage, and identity-proxy term counts.

Conditions, as in the paper's code: "Baseline" = power-neutral (both characters of a
Love story), "Dominant" = the subject of a power-laden story, "Subordinate" = its
object.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from gbdesk.contract import GenerationProbe, Item, ItemResult, MetricGroup, ProbeOption
from gbdesk.contract.capabilities import (
    AuditSize,
    Capabilities,
    Precision,
    PrecisionRule,
)
from gbdesk.contract.running import sample_and_limit
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.laissez_faire.card import CARD
from gbdesk.studies.laissez_faire.characters import (  # re-exported: the study's helpers
    GENDER_LABELS,
    TOO_LONG,
    character_gender,
    character_label,
    characters_from_data,
    condition_of,
    first_name,
    load_codebook,
    load_prompts,
    metadata_scenario,
    roles_of,
)
from gbdesk.studies.laissez_faire.coding import coding
from gbdesk.studies.laissez_faire.exporting import exporting
from gbdesk.studies.laissez_faire.extract.deterministic import DeterministicExtractor
from gbdesk.studies.laissez_faire.extract.gender_words import (
    DEFAULT_WORD_LIST,
    WORD_LISTS,
    pair_label,
)
from gbdesk.studies.laissez_faire.flat import flat_facts
from gbdesk.studies.laissez_faire.importing import importing
from gbdesk.studies.laissez_faire.labels import DEFAULT_EXTRACTOR, labelling
from gbdesk.studies.laissez_faire.metrics import (  # the metrics' vocabulary, re-exported
    DOMAINS,
    GENDERS,
    extra_from_facts,
    facts_from_results,
    load_identity_terms,
    metrics_from_facts,
    stories_with_term,
    term_pattern,
)
from gbdesk.studies.laissez_faire.name_race import NameRaceTable, load_table
from gbdesk.studies.laissez_faire.report import (
    findings,
    metric_groups,
    presentation,
    stories_behind,
)
from gbdesk.studies.laissez_faire.report import summary as summary_in_words
from gbdesk.studies.laissez_faire.resampling import ppi, resampling
from gbdesk.studies.laissez_faire.review import ratings, review
from gbdesk.support.errors import UserError

__all__ = [
    "DOMAINS",
    "GENDERS",
    "GENDER_LABELS",
    "MAX_STORY_CHARS",
    "TOO_LONG",
    "Character",
    "LaissezFaireProbe",
    "character_gender",
    "character_label",
    "characters_from_data",
    "first_name",
    "load_codebook",
    "load_identity_terms",
    "term_pattern",
]

DEFAULT_TABLE = "rosenman2023"
#: Longest story the deterministic extractor reads (the prompts ask for 100 words; about
#: 1 s at this length on a laptop core, growing with the square of the length).
MAX_STORY_CHARS = 20_000


@dataclass
class Character:
    """One extracted character of one story, ready for counting."""

    domain: str
    condition: str  # Baseline / Dominant / Subordinate
    role: str
    relationship: str | None
    gender: str
    name: str | None
    first: str | None
    likelihoods: dict[str, float] | None  # race → P(race | first name), if matched


#: the representation ratio of women: the share's Wald half-width at p = 0.5 over the
#: power-neutral stories, divided by the population share 0.5 (variance 0.25 / 0.5²)
REPRESENTATION_PRECISION = PrecisionRule(
    "representation/All/gender/Female",
    1.0,
    "about ±{half:.2f} for the representation ratio of women: the binomial (Wald) "
    "half-width 1.96·√(p(1 − p)/n) of the share of women, at p = 0.5, over n = {n} "
    "power-neutral stories (one gendered character each; Love stories have two), "
    "divided by the population share 0.5",
)


class LaissezFaireProbe(GenerationProbe):
    name = "laissez_faire"
    version = "1"
    templates: ClassVar[dict[str, str]] = {"paper": "{prompt}"}
    template_slots = ("prompt",)
    default_attempts = 10  # samples per prompt (the paper drew 1,000 per model)
    options: ClassVar[tuple[ProbeOption, ...]] = (
        ProbeOption(
            "domains",
            "Domains",
            tuple((d, d) for d in DOMAINS),
            ",".join(DOMAINS),
            multiple=True,
            help="Learning (15 + 15 prompts), Labor (15 + 15), Love (20 + 20)",
        ),
        ProbeOption(
            "name_table",
            "Name → race table",
            (
                ("rosenman2023", "Rosenman et al. 2023 (voter files, CC0)"),
                ("census2020", "U.S. Census 2020 first names"),
            ),
            DEFAULT_TABLE,
            help="First-name race likelihoods; a CSV needs a name column and one column per race",
            file_filter="Name tables (*.csv *.csv.gz)",
        ),
        ProbeOption(
            "word_list",
            "Gender word list",
            (
                ("paper_s6a", "the paper's Table S6a (agrees best with human labellers)"),
                ("code", "the analysis code's list"),
            ),
            DEFAULT_WORD_LIST,
        ),
    )
    default_generation: ClassVar[dict[str, Any]] = {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 250,
    }
    label_options: ClassVar[list] = []  # reviewed per character in its own view
    headline_metrics: ClassVar[list[str]] = []
    card = CARD

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """Stories whose characters are extracted (by a labelling pass, or rebuilt from
        imported rows), reviewed least sure first in their own view, coded with a
        codebook, measured on the flat table of characters, resampled fast for PPI, and
        exported a character per row: each capability is built by the module of its
        feature."""
        caps = super().capabilities
        return caps.with_(
            running=caps.running.with_(unit="stories"),
            labelling=labelling(caps.labelling),
            review=review(caps.review),
            ratings=ratings(caps.ratings),
            presentation=presentation(self, caps.presentation),
            importing=importing(caps.importing),
            exporting=exporting(self),
            coding=coding(self),
            audit=caps.audit.with_(priority=20, sizes=audit_sizes, precision=self.audit_precision),
            flat=flat_facts(self),
            resampling=resampling(self),
            ppi=ppi(self, caps.ppi),
        )

    # -- parameters and items ---------------------------------------------------------------
    def resolve_params(
        self,
        template: str | None = None,
        limit: int | None = None,
        sample: int | None = None,
        domains: list[str] | str | None = None,
        name_table: str | None = None,
        word_list: str | None = None,
        extractor: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        params = super().resolve_params(template=template, limit=limit, sample=sample, **extra)
        if isinstance(domains, str):
            domains = [d.strip() for d in domains.split(",") if d.strip()]
        chosen = list(domains) if domains else list(DOMAINS)
        unknown = [d for d in chosen if d.title() not in DOMAINS]
        if unknown:
            raise UserError(
                f"unknown domain(s) {', '.join(unknown)}; choose from {', '.join(DOMAINS)}"
            )
        word_list = word_list or DEFAULT_WORD_LIST
        if word_list not in WORD_LISTS:
            raise UserError(f"unknown word list {word_list!r}; choose from {', '.join(WORD_LISTS)}")
        extractor = extractor or DEFAULT_EXTRACTOR
        if extractor not in ("deterministic", "llm", "hybrid"):
            raise UserError("extractor must be 'deterministic', 'llm' or 'hybrid'")
        params.update(
            domains=[d.title() for d in chosen],
            name_table=name_table or DEFAULT_TABLE,
            word_list=word_list,
            extractor=extractor,
        )
        self.table(params)  # fail now on a bad name table, not after the run
        return params

    def all_items(self, template: str) -> list[Item]:
        return [self._item(p, template) for p in load_prompts()]

    def items(self, params: dict[str, Any]) -> list[Item]:
        domains = set(params.get("domains") or DOMAINS)
        all_items = [
            i for i in self.all_items(params["template"]) if i.metadata["domain"] in domains
        ]
        return sample_and_limit(self, all_items, params)

    @staticmethod
    def _item(prompt: dict[str, Any], template: str) -> Item:
        meta = {
            k: prompt.get(k)
            for k in (
                "id",
                "domain",
                "condition",
                "relationship",
                "subject",
                "predicate",
                "object",
                "scenario",
                "roles",
            )
        }
        return Item(
            key=f"lf/{prompt['id']:03d}",
            prompt=template.format(prompt=prompt["prompt"]),
            metadata=meta,
        )

    # -- labelling ----------------------------------------------------------------------------
    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """The deterministic extractor's characters; a story longer than
        `MAX_STORY_CHARS` is not read (its time grows with the square of the length: a
        10 MB import would take days) and gets the label "too long to label" with no
        characters, so it adds nothing to the metrics."""
        extractor = DeterministicExtractor()
        metadata = metadata or {}
        if len(response or "") > MAX_STORY_CHARS:
            return {
                "source": f"{extractor.name}/{extractor.version}",
                "label": TOO_LONG,
                "data": {"characters": [], "too_long": len(response)},
                "evidence": [],
            }
        characters = extractor.extract(
            response or "", roles_of(metadata), metadata_scenario(metadata)
        )
        return character_label(characters, f"{extractor.name}/{extractor.version}")

    # -- metrics ----------------------------------------------------------------------------
    def table(self, params: dict[str, Any] | None) -> NameRaceTable:
        """The name → race table the parameters name."""
        return load_table((params or {}).get("name_table") or DEFAULT_TABLE)

    def characters(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> list[Character]:
        """Every character of these stories, ready for counting (`metrics.facts_from_results`)."""
        params = params or {}
        table = self.table(params)
        word_list = params.get("word_list", DEFAULT_WORD_LIST)
        out = []
        for result in results:
            meta = result.metadata
            for data in result.label_data:
                for ch in characters_from_data(data):
                    first = first_name(ch.name)
                    out.append(
                        Character(
                            domain=meta["domain"],
                            condition=condition_of(meta["condition"], ch.role),
                            role=ch.role,
                            relationship=meta.get("relationship"),
                            gender=character_gender(ch, word_list),
                            name=ch.name,
                            first=first,
                            likelihoods=table.likelihoods(first) if first else None,
                        )
                    )
        return out

    def metrics(
        self,
        results: list[ItemResult],
        bootstrap: bool = True,
        params: dict[str, Any] | None = None,
    ) -> dict[str, MetricValue]:
        """Every metric as `metrics.metrics_from_facts` defines it, over these stories'
        characters (the flat and resampled paths evaluate the same definition)."""
        results = [r for r in results if r.labels]
        if not results:
            return {}
        return metrics_from_facts(facts_from_results(self, results, params))

    def romantic_pairs(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> Counter[str]:
        """The gender pairs of the couples of power-neutral romantic Love stories."""
        word_list = (params or {}).get("word_list", DEFAULT_WORD_LIST)
        pairs: Counter[str] = Counter()
        for result in results:
            meta = result.metadata
            if not (
                meta["domain"] == "Love"
                and meta["condition"] == "power-neutral"
                and meta.get("relationship") == "romantic"
            ):
                continue
            for data in result.label_data:
                chars = characters_from_data(data)
                if len(chars) == 2:
                    label = pair_label(
                        character_gender(chars[0], word_list),
                        character_gender(chars[1], word_list),
                    )
                    if label:
                        pairs[label] += 1
        return pairs

    def audit_precision(
        self, params: dict[str, Any], n_items: int, attempts: int
    ) -> Precision | None:
        neutral = sum(i.metadata.get("condition") == "power-neutral" for i in self.items(params))
        return REPRESENTATION_PRECISION.for_units(neutral * attempts, n_items, attempts)

    def summary(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> str:
        return summary_in_words(metrics, extra)

    def findings(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> list[Any]:
        return findings(metrics, extra, stories_behind)

    def extra_results(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Non-scalar results: racialized subordination curves, the most common names per
        race (the paper's Table 3 view), stories per identity term, unmeasured groups."""
        results = [r for r in results if r.labels]
        if not results:
            return {}
        responses = [(r.key, i) for r in results for i in range(len(r.responses))]
        texts = [t for r in results for t in r.responses]
        identity = {}
        for group, terms in load_identity_terms().items():
            for term in terms:
                identity[term] = {
                    "group": group,
                    "stories": [responses[i] for i in stories_with_term(texts, term)],
                }
        facts = facts_from_results(self, results, params, terms=False)
        word_list = (params or {}).get("word_list", DEFAULT_WORD_LIST)
        return extra_from_facts(facts, self.table(params), identity, word_list)

    def metric_groups(self, present: Iterable[str] | None = None) -> list[MetricGroup]:
        return metric_groups(present)


def audit_sizes() -> list[AuditSize]:
    """A few prompts once, then all 100 prompts with more and more samples each (the
    paper drew 1,000 per prompt)."""
    return [
        AuditSize(1, sample=3),
        AuditSize(1, sample=10),
        *(AuditSize(a) for a in (1, 2, 5, 10, 20, 50, 100)),
    ]
