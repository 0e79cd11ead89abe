"""GlobalBias (Siddique, Turner & Espinosa-Anke, EMNLP 2024): perplexity associations.

`globalbias_apx` scores 400 first names × 730 descriptors × 3 templates by perplexity
(no generation) and analyses them with `globalbias_apx_stats` exactly as the released
code does. Items are blocks of one name's sentences on one template, so every model call
scores a fixed batch that shares the name prefix, and every block is stored the moment it
is scored (resumable, idempotent).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Iterable
from typing import Any, ClassVar

import pandas as pd

from gbdesk.contract import Item, ItemResult, MetricGroup, ProbeOption, ScoringProbe
from gbdesk.contract.capabilities import AuditSize, Capabilities, Precision
from gbdesk.contract.running import sample_and_limit
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.globalbias.apx_frame import apx_extra, apx_metrics, decorated
from gbdesk.studies.globalbias.apx_frame import apx_of as _apx_of
from gbdesk.studies.globalbias.apx_frame import decorated as _decorated
from gbdesk.studies.globalbias.apx_stats import (
    TEMPLATES,
)
from gbdesk.studies.globalbias.cards import APX_CARD
from gbdesk.studies.globalbias.data import (
    NAMES_PER_GROUP,
    SCORE_BLOCK,
    SCORE_SOURCE,
    _csv_list,
    all_descriptor_sets,
    descriptor_set,
    load_descriptors,
    selected_names,
    sentence,
)
from gbdesk.studies.globalbias.exporting import apx_exporting
from gbdesk.studies.globalbias.importing import apx_importing
from gbdesk.studies.globalbias.report import (
    apx_findings,
    apx_metric_groups,
    apx_presentation,
    apx_summary,
)
from gbdesk.studies.globalbias.resampling import apx_ppi, apx_resampling
from gbdesk.support.errors import UserError

APX_TITLES = {
    "flagged_pairs": "Flagged group × descriptor associations",
    "flagged_descriptors": "Descriptors with a flagged group",
    "validation_accuracy_ppl": "Validation: target group has the lowest perplexity",
    "validation_accuracy_apx": "Validation: target group has the lowest APX",
    "validation_mrr_ppl": "Validation: mean reciprocal rank of the target (perplexity)",
    "validation_mrr_apx": "Validation: mean reciprocal rank of the target (APX)",
    "mean_ppl/t{template}": "Mean sentence perplexity, template {template}",
}


class GlobalBiasApxProbe(ScoringProbe):
    name = "globalbias_apx"
    version = "1"

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """Scored blocks of sentences with their own import (scores or an APX table), export
        tables, associations view, audit sizes and fast resampled metrics — each built by
        the module of its feature."""
        caps = super().capabilities
        return caps.with_(
            running=caps.running.with_(unit="sentences"),
            labelling=caps.labelling.with_(
                source_prefix=lambda: "perplexity/", detector_title=lambda p: "perplexity scoring"
            ),
            presentation=apx_presentation(caps.presentation),
            importing=apx_importing(self, caps.importing),
            exporting=apx_exporting(self),
            audit=caps.audit.with_(priority=40, sizes=audit_sizes, precision=self.audit_precision),
            resampling=apx_resampling(),
            ppi=apx_ppi(caps.ppi),
        )

    templates: ClassVar[dict[str, str]] = {"paper": "T1 My name is {name}, I …  · T2/T3 {name} …"}
    template_slots = ()
    default_attempts = 1
    options: ClassVar[tuple[ProbeOption, ...]] = (
        ProbeOption(
            "templates",
            "Templates",
            tuple(
                (str(t), text.format(name="{name}", **{f"partial_{t}": "…"}))
                for t, text in TEMPLATES.items()
            ),
            "1,2,3",
            multiple=True,
        ),
        ProbeOption(
            "descriptor_sets",
            "Descriptors",
            (),  # filled in __init__ from the shipped list
            "",
            multiple=True,
            help="HolisticBias axes, StereoSet, GhavamiPeplau (used for validation)",
        ),
        NAMES_PER_GROUP,
        ProbeOption(
            "descriptor_sample",
            "Descriptor sample",
            (("0", "all selected"), ("200", "200"), ("100", "100"), ("50", "50"), ("20", "20")),
            "0",
            help="a seeded random sample of the selected descriptors (run seed)",
        ),
    )
    default_generation: ClassVar[dict[str, Any]] = {
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 1,
    }
    label_options: ClassVar[list] = []
    metric_titles: ClassVar[dict[str, str]] = APX_TITLES
    headline_metrics: ClassVar[list[str]] = ["flagged_pairs", "flagged_descriptors"]
    card = APX_CARD

    def __init__(self) -> None:
        sets = tuple((s, s) for s in all_descriptor_sets())
        self.options = tuple(
            ProbeOption(o.key, o.title, sets, ",".join(s for s, _ in sets), o.multiple, o.help)
            if o.key == "descriptor_sets"
            else o
            for o in type(self).options
        )

    # -- parameters and items -----------------------------------------------------------
    def resolve_params(
        self,
        template: str | None = None,
        limit: int | None = None,
        sample: int | None = None,
        templates: Any = None,
        descriptor_sets: Any = None,
        names_per_group: Any = None,
        descriptor_sample: Any = None,
        descriptor_seed: Any = None,
        **extra: Any,
    ) -> dict[str, Any]:
        if template not in (None, "paper", self.templates["paper"]):
            raise UserError(
                "globalbias_apx has fixed templates; choose them with --set templates=1,2,3"
            )
        params = super().resolve_params(template=None, limit=limit, sample=sample, **extra)
        chosen = _csv_list(templates) or ["1", "2", "3"]
        if any(t not in ("1", "2", "3") for t in chosen):
            raise UserError("templates must be among 1, 2, 3")
        known = all_descriptor_sets()
        sets = _csv_list(descriptor_sets) or known
        unknown = [s for s in sets if s not in known]
        if unknown:
            raise UserError(
                f"unknown descriptor set(s) {', '.join(unknown)}; choose from {', '.join(known)}"
            )
        try:
            k = int(names_per_group or 10)
            n_sample = int(descriptor_sample or 0)
            seed = int(descriptor_seed or 0)
        except (TypeError, ValueError):
            raise UserError(
                "names_per_group, descriptor_sample and descriptor_seed are whole numbers"
            ) from None
        if not 1 <= k <= 10:
            raise UserError("names_per_group must be between 1 and 10")
        if n_sample < 0:
            raise UserError("descriptor_sample must be 0 (all) or more")
        params.update(
            templates=sorted(int(t) for t in set(chosen)),
            descriptor_sets=[s for s in known if s in sets],
            names_per_group=k,
            descriptor_sample=n_sample,
            descriptor_seed=seed,
        )
        return params

    def selected_descriptors(self, params: dict[str, Any]) -> list[int]:
        sets = set(params.get("descriptor_sets") or all_descriptor_sets())
        chosen = [i for i, d in enumerate(load_descriptors()) if descriptor_set(d) in sets]
        n = params.get("descriptor_sample") or 0
        if n and n < len(chosen):
            rng = random.Random(params.get("descriptor_seed", 0))
            chosen = sorted(rng.sample(chosen, n))
        return chosen

    def selected_names(self, params: dict[str, Any]) -> list[dict[str, str]]:
        return selected_names(params)

    def all_items(self, template: str) -> list[Item]:
        return self.items(self.resolve_params())

    def items(self, params: dict[str, Any]) -> list[Item]:
        descriptors = self.selected_descriptors(params)
        blocks = [descriptors[i : i + SCORE_BLOCK] for i in range(0, len(descriptors), SCORE_BLOCK)]
        items = [
            self.block_item(t, row, b, block)
            for t in params.get("templates") or (1, 2, 3)
            for row in self.selected_names(params)
            for b, block in enumerate(blocks)
        ]
        return sample_and_limit(self, items, params)

    @staticmethod
    def block_item(t: int, row: dict[str, str], b: int, block: list[int]) -> Item:
        """The item scoring block `b` (descriptor indices `block`) of the name `row` (one
        of `load_names()`) on template `t`."""
        all_d = load_descriptors()
        return Item(
            key=f"t{t}/{row['row']}-{row['firstname']}/{b}",
            prompt=f"{sentence(t, row['firstname'], all_d[block[0]])} … ({len(block)} sentences)",
            metadata={
                "template": t,
                "name": row["firstname"],
                "group": row["Group"],
                "ethnicity": row["Ethnicity"],
                "gender": row["Gender"],
                "descriptors": block,
            },
        )

    def sentences(self, metadata: dict[str, Any]) -> list[dict[str, Any]]:
        """The sentences of an item's block, with what the store keeps beside each score."""
        all_d = load_descriptors()
        t, name = metadata["template"], metadata["name"]
        return [
            {
                "group": metadata["group"],
                "descriptor": all_d[i]["descriptor"],
                "axis": all_d[i]["axis"],
                "template": t,
                "name": name,
                "text": sentence(t, name, all_d[i]),
            }
            for i in metadata["descriptors"]
        ]

    # -- labels (a scored block needs no detector) ----------------------------------------
    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"source": SCORE_SOURCE, "label": "scored", "data": None, "evidence": None}

    # -- analysis -------------------------------------------------------------------------
    @classmethod
    def score_frame(cls, results: list[ItemResult]) -> pd.DataFrame:
        rows = [s for r in results for s in r.scores]
        return cls.decorated(pd.DataFrame(rows))

    #: `apx_frame`'s functions, kept here for callers of the probe
    decorated = staticmethod(_decorated)
    apx_of = staticmethod(_apx_of)

    def apx(self, results: list[ItemResult]) -> pd.DataFrame:
        """The group × descriptor × template APX table (computed, or as imported)."""
        return self.apx_of(self.score_frame(results))

    def metrics(
        self,
        results: list[ItemResult],
        bootstrap: bool = True,
        params: dict[str, Any] | None = None,
    ) -> dict[str, MetricValue]:
        return apx_metrics(self.score_frame(results))

    def frame_metrics(
        self, frame: pd.DataFrame, params: dict[str, Any] | None
    ) -> dict[str, MetricValue]:
        return apx_metrics(decorated(frame))

    def findings(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> list[Any]:
        return apx_findings(metrics, extra)

    def audit_precision(
        self, params: dict[str, Any], n_items: int, attempts: int
    ) -> Precision | None:
        return Precision(
            "flagged_pairs",
            math.nan,
            f"no interval: flags are per-pair tests; each group's score averages its "
            f"{params.get('names_per_group', 10)} name(s) over "
            f"{len(self.selected_descriptors(params))} descriptors",
        )

    def summary(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> str:
        return apx_summary(metrics)

    def extra_results(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The association table (flagged first) and flags per group × descriptor set."""
        return apx_extra(self.score_frame(results))

    def frame_extra_results(
        self, frame: pd.DataFrame, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        return apx_extra(decorated(frame))

    def metric_groups(self, present: Iterable[str] | None = None) -> list[MetricGroup]:
        return apx_metric_groups(present)


def audit_sizes() -> list[AuditSize]:
    """More names per group and descriptors, then all three templates."""
    return [
        AuditSize(1, options=o)
        for o in (
            {"templates": "1", "names_per_group": "1", "descriptor_sample": "20"},
            {"templates": "1", "names_per_group": "2", "descriptor_sample": "50"},
            {"templates": "1", "names_per_group": "5", "descriptor_sample": "100"},
            {"templates": "1,2,3", "names_per_group": "5", "descriptor_sample": "200"},
            {"templates": "1,2,3", "names_per_group": "10", "descriptor_sample": "200"},
            {"templates": "1,2,3", "names_per_group": "10", "descriptor_sample": "0"},
        )
    ]
