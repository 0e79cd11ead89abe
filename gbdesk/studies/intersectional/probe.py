"""Intersectional stereotypes (Ma, Chiang, Wu, Wang & Vosoughi, Findings of EMNLP 2023).

Per intersectional group, the model simulates roles (the paper's Figure 3 prompt); each
role then answers the 16 category questions in character; SDeg measures how uniform the
answers of a group's roles are (`intersectional_stats`).

Design choices (documented on the card):
- one role per request, with its own seed, instead of asking for 3 and splitting the
  paragraph: no fragile splitting of numbered lists, every role is its own stored record,
  and a crash loses at most one role;
- answers are decoded under a JSON schema whose only values are the category's options
  (grammar-constrained), so an answer always maps to exactly one option; imported answers
  are mapped by a parser (option number or text) with an explicit "unparsed" outcome.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Generator, Iterable
from typing import Any, ClassVar

from gbdesk.contract import ChainProbe, Item, ItemResult, MetricGroup, ProbeOption
from gbdesk.contract.capabilities import (
    AuditSize,
    Capabilities,
    Precision,
    PrecisionRule,
)
from gbdesk.contract.running import sample_and_limit
from gbdesk.engine.base import GenerationRequest, GenerationResult
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.intersectional.attempt import (
    ROLE_PROMPT,
    answer_asks,
    attempt_result,
    role_prompt,
)
from gbdesk.studies.intersectional.card import CARD
from gbdesk.studies.intersectional.data import answers_label, load_categories, load_groups
from gbdesk.studies.intersectional.exporting import exporting
from gbdesk.studies.intersectional.groups import parse_group, people_phrase, table1_groups
from gbdesk.studies.intersectional.importing import importing
from gbdesk.studies.intersectional.labels import labelling
from gbdesk.studies.intersectional.params import ATTRIBUTES, parameters, study_params
from gbdesk.studies.intersectional.questions import paper_bank, question_catalog, questions_of
from gbdesk.studies.intersectional.report import findings as report_findings
from gbdesk.studies.intersectional.report import metric_groups, presentation
from gbdesk.studies.intersectional.report import summary as summary_in_words
from gbdesk.studies.intersectional.resampling import ppi, resampling
from gbdesk.studies.intersectional.review import ratings, review
from gbdesk.studies.intersectional.stats import (
    category_table,
    group_table,
    sdeg_extra,
    sdeg_metrics,
)
from gbdesk.support.errors import UserError

__all__ = ["ATTRIBUTES", "IntersectionalProbe", "people_phrase", "questions_of"]


#: each group's stereotype degree: an answer's share at p = 0.5 over its roles
SDEG_PRECISION = PrecisionRule(
    "sdeg_group",
    0.25,
    "at most ±{half:.2f} for each group's stereotype degree: the binomial (Wald) "
    "half-width 1.96·√(p(1 − p)/n) of an answer's share at p = 0.5 over its n = "
    "{n} roles (the paper's percentile bootstrap over roles gives about the same)",
)


class IntersectionalProbe(ChainProbe):
    name = "intersectional_sdeg"
    version = "1"

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """Roles and their answers: a dataset bound from the database, the answers as
        the units raters agree on, its own views, import, export, audit sizes (a role's
        follow-up questions counted) and fast resampled SDeg — each capability built by
        the module of its feature."""
        caps = super().capabilities
        return caps.with_(
            running=caps.running.with_(unit="roles"),
            parameters=parameters(caps.parameters),
            labelling=labelling(caps.labelling),
            review=review(caps.review),
            ratings=ratings(caps.ratings),
            presentation=presentation(self, caps.presentation),
            importing=importing(self, caps.importing),
            exporting=exporting(self),
            audit=caps.audit.with_(
                priority=30,
                sizes=audit_sizes,
                tokens=audit_tokens,
                precision=self.audit_precision,
            ),
            resampling=resampling(self),
            ppi=ppi(caps.ppi),
        )

    templates: ClassVar[dict[str, str]] = {"paper": ROLE_PROMPT}
    template_slots = ("count", "people")

    default_attempts = 10  # roles per group, as the paper
    options: ClassVar[tuple[ProbeOption, ...]] = (
        ProbeOption(
            "dataset",
            "Stereotype dataset",
            (
                ("none", "none: the 106 groups of Table 1"),
                ("latest", "the latest dataset in this database"),
            ),
            "none",
            help="a dataset built and validated with gbdesk dataset (the CLI takes its id), "
            "or an exported dataset file; none asks the 106 groups of Table 1",
            file_filter="Datasets (*.json *.csv)",
        ),
        ProbeOption(
            "design",
            "Questions asked",
            (
                ("auto", "as the paper with a dataset, all 16 without"),
                ("paper", "as the paper: the categories of each group's stereotypes"),
                ("all16", "all 16 categories for every group"),
            ),
            "auto",
        ),
        ProbeOption(
            "stereotypes",
            "Stereotypes used",
            (
                ("validated", "validated: kept by the validators' majority"),
                ("all", "all in the dataset (validated or not)"),
            ),
            "validated",
        ),
        ProbeOption(
            "attributes",
            "Groups with the attribute",
            tuple((a, a) for a in ATTRIBUTES),
            ",".join(ATTRIBUTES),
            multiple=True,
            help="keep the groups that combine at least one ticked attribute (all: 106 groups)",
        ),
        ProbeOption(
            "answer_temperature",
            "Answer temperature",
            (("0", "0 (the role decides)"), ("1", "1 (sampled)")),
            "0",
        ),
    )
    default_generation: ClassVar[dict[str, Any]] = {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 200,
    }
    label_options: ClassVar[list] = []
    headline_metrics: ClassVar[list[str]] = ["sdeg_overall"]
    metric_titles: ClassVar[dict[str, str]] = {
        "sdeg_overall": "Stereotype degree, mean over groups",
        "sdeg_category/{category}": "Stereotype degree of answers about {category}",
        "unparsed_answers": "Answers that named no option",
    }
    card = CARD

    # -- parameters and items -----------------------------------------------------------
    def resolve_params(
        self,
        template: str | None = None,
        limit: int | None = None,
        sample: int | None = None,
        attributes: Any = None,
        answer_temperature: Any = None,
        dataset: Any = None,
        design: Any = None,
        stereotypes: Any = None,
        questions: Any = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The common parameters and the study's own (`params.study_params`)."""
        params = super().resolve_params(template=template, limit=limit, sample=sample, **extra)
        params.update(
            study_params(attributes, answer_temperature, dataset, design, stereotypes, questions)
        )
        return params

    def all_items(self, template: str) -> list[Item]:
        return [self.group_item(g, template) for g in load_groups()]

    def items(self, params: dict[str, Any]) -> list[Item]:
        bank = params.get("questions") or []
        plan = params.get("groups_plan")
        temperature = params.get("answer_temperature", 0.0)
        if plan is None and params.get("dataset") is not None:
            raise UserError(
                "a run on a stereotype dataset is planned with the database it is in "
                "(gbdesk run --probe … --set dataset=ID)"
            )
        if plan is None:  # Table 1's groups, every question
            chosen = set(params.get("attributes") or ATTRIBUTES)
            items = [
                self.group_item(g, params["template"], temperature, bank or None)
                for g in load_groups()
                if any(g.get(a) for a in chosen)
            ]
            return sample_and_limit(self, items, params)
        by_id = {q["id"]: q for q in bank}
        table1 = {name: n for n, name in enumerate(table1_groups(), start=1)}
        items = []
        for entry in plan:
            group = {"group": entry["group"], **parse_group(entry["group"])}
            if entry["group"] in table1:
                group["group_id"] = str(table1[entry["group"]])
            item = self.group_item(
                group,
                params["template"],
                temperature,
                [by_id[q] for q in entry["questions"] if q in by_id],
            )
            item.metadata["categories"] = entry["categories"]
            item.metadata["stereotypes"] = entry["stereotypes"]
            items.append(item)
        return sample_and_limit(self, items, params)

    @staticmethod
    def group_item(
        group: dict[str, str],
        template: str,
        answer_temperature: float = 0.0,
        questions: list[dict[str, Any]] | None = None,
    ) -> Item:
        """One group's item; its questions (dicts) are kept in its metadata — as the ids of
        the paper's questions when they are those."""
        meta: dict[str, Any] = {"group": group["group"], "answer_temperature": answer_temperature}
        if group.get("group_id"):
            meta["group_id"] = int(group["group_id"])
            key = f"g{int(group['group_id']):03d}"
        else:
            key = "g-" + re.sub(r"[^a-z0-9]+", "-", group["group"].casefold()).strip("-")
        meta.update({a: group[a] for a in ATTRIBUTES if group.get(a)})
        if questions is not None:
            paper = {q["id"]: q for q in paper_bank()}
            meta["questions"] = [q["id"] if paper.get(q["id"]) == q else q for q in questions]
        return Item(
            key=key,
            prompt=template.format(count=1, people=people_phrase(group, 1)),
            metadata=meta,
        )

    # -- one attempt = one role and its answers ------------------------------------------
    def run_attempt(
        self,
        ask: Callable[..., GenerationResult],
        metadata: dict[str, Any],
        seed: int,
        generation: dict[str, Any],
        prompt: str | None = None,
    ) -> tuple[GenerationResult, dict[str, Any]]:
        started = time.perf_counter()
        role = ask([{"role": "user", "content": role_prompt(metadata, prompt)}], seed)
        replies = [
            ask(messages, answer_seed, **overrides, stream=False)
            for messages, answer_seed, overrides in answer_asks(role, metadata, seed)
        ]
        return attempt_result(role, replies, metadata, time.perf_counter() - started)

    @property
    def chain_batchable(self) -> bool:
        return True

    def attempt_chain(
        self,
        request: Callable[..., GenerationRequest],
        metadata: dict[str, Any],
        seed: int,
        generation: dict[str, Any],
        prompt: str | None = None,
    ) -> Generator[list[GenerationRequest], list[GenerationResult], Any]:
        """`run_attempt` as a chain: the role, then its answers at once (they share the
        role text as prompt prefix). Latency: the model time of its requests."""
        (role,) = yield [
            request([{"role": "user", "content": role_prompt(metadata, prompt)}], seed)
        ]
        replies = yield [
            request(messages, answer_seed, **overrides)
            for messages, answer_seed, overrides in answer_asks(role, metadata, seed)
        ]
        return attempt_result(role, replies, metadata, sum(r.latency_s for r in (role, *replies)))

    # -- labels ---------------------------------------------------------------------------
    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Answers are labelled while they are generated (`run_attempt`) or imported; a
        role without them has nothing to map."""
        return answers_label({})

    # -- metrics --------------------------------------------------------------------------
    @staticmethod
    def roles(results: list[ItemResult]) -> dict[str, list[dict[str, str | None]]]:
        """group → one dict per role: question id → option (None when unparsed)."""
        out: dict[str, list[dict[str, str | None]]] = {}
        for r in results:
            group = r.metadata.get("group", r.key)
            for data in r.label_data:
                answers = (data or {}).get("answers") or {}
                if answers:
                    out.setdefault(group, []).append(
                        {c: a.get("option") for c, a in answers.items()}
                    )
        return out

    @staticmethod
    def n_options() -> dict[str, int]:
        """Options per question of the paper's bank (id = category number)."""
        return {str(c["id"]): len(c["options"]) for c in load_categories()}

    def tables(
        self, results: list[ItemResult]
    ) -> tuple[dict[str, list], dict[str, dict[str, float]], dict[str, dict[str, Any]]]:
        """(roles, group → category → SDeg, question catalog)."""
        roles = self.roles(results)
        catalog = question_catalog(results)
        n_opts = {qid: len(q["options"]) for qid, q in catalog.items()}
        table = group_table(roles, n_opts)
        cats = category_table(table, {qid: q["category"] for qid, q in catalog.items()})
        return roles, cats, catalog

    def metrics(
        self,
        results: list[ItemResult],
        bootstrap: bool = True,
        params: dict[str, Any] | None = None,
    ) -> dict[str, MetricValue]:
        return sdeg_metrics(*self.tables(results), bootstrap=bootstrap)

    def extra_results(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> dict[str, Any]:
        return sdeg_extra(*self.tables(results), params)

    def metric_groups(self, present: Iterable[str] | None = None) -> list[MetricGroup]:
        return metric_groups(present)

    def findings(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> list[Any]:
        people = {g["group"]: people_phrase(g, 2) for g in load_groups()}
        return report_findings(metrics, extra, people)

    def audit_precision(
        self, params: dict[str, Any], n_items: int, attempts: int
    ) -> Precision | None:
        return SDEG_PRECISION.for_units(attempts, n_items, attempts)

    def summary(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> str:
        return summary_in_words(metrics, params) if "sdeg_overall" in metrics else ""


def audit_sizes() -> list[AuditSize]:
    """Few groups with few roles first, then every group with the paper's 10 roles."""
    return [
        AuditSize(1, sample=2),
        AuditSize(2, sample=5),
        AuditSize(5, sample=10),
        AuditSize(10, sample=20),
        AuditSize(10, sample=50),
        AuditSize(10),
        AuditSize(20),
    ]


def audit_tokens(params: dict[str, Any], generation: dict[str, Any]) -> tuple[int, float, float]:
    """A role, then one short constrained answer per category, each asked with the role
    in the prompt."""
    n = len(load_categories())
    role = float(generation["max_tokens"])
    return 1 + n, role + n * 24.0, n * (role + 60.0)
