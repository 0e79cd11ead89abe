"""The values a study author builds and returns: items and their prompts, item results,
label options, metric groups and keys, the probe's card, findings, audit sizes and
precisions (`gbdesk.contract.probe` holds the `Probe` classes that use them)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from gbdesk.engine.base import GenerationResult


@dataclass(frozen=True)
class Prompt:
    """One of an item's prompts (a reference harness's `Prompt`): its text and what the labeller
    and the metrics need to know about it (e.g. the gender it names, the order of its
    options)."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "metadata": dict(self.metadata)}


@dataclass(frozen=True)
class Item:
    """One probe item: a stable key, the user message sent to the model, metadata.

    An item may hold several prompts (`prompts`, e.g. the same question about a woman, a
    man and a non-binary person, or one multiple-choice question in six option orders):
    they are sampled, labelled and bootstrapped together as one item, as a reference
    harness's `ProbeItem` does. `prompt` is then the first prompt's text. Attempt `a` of such an
    item uses prompt ``a // attempts_per_prompt`` (`prompt_index`): the reference order,
    every repetition of the first prompt, then of the second, …"""

    key: str
    prompt: str
    metadata: dict[str, Any]
    prompts: tuple[Prompt, ...] = ()

    @property
    def prompt_count(self) -> int:
        return len(self.prompts) or 1

    def prompts_json(self) -> list[dict[str, Any]] | None:
        """The prompts as stored with a run's item (None: a one-prompt item)."""
        return [p.to_json() for p in self.prompts] if self.prompts else None

    def as_row(self) -> tuple[str, str, dict[str, Any], list[dict[str, Any]] | None]:
        """(key, prompt, metadata, prompts) as `Store.create_run` takes them."""
        return (self.key, self.prompt, self.metadata, self.prompts_json())


def multi_prompt_item(key: str, prompts: list[Prompt], metadata: dict[str, Any]) -> Item:
    """An item of several prompts (one prompt: a plain item with the prompt's metadata
    merged into the item's)."""
    if not prompts:
        raise ValueError(f"item {key} has no prompt")
    if len(prompts) == 1:
        return Item(key, prompts[0].text, {**metadata, **prompts[0].metadata})
    return Item(key, prompts[0].text, metadata, tuple(prompts))


def prompt_index(attempt: int, attempts_per_prompt: int) -> int:
    """Which of an item's prompts attempt `attempt` used (0 for one-prompt items)."""
    return attempt // max(1, attempts_per_prompt)


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
    #: items of several prompts: which prompt each label answers (parallel to `labels`)
    #: and the metadata of each of the item's prompts; empty for one-prompt items
    prompt_indices: list[int] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)

    def prompt_metadata(self, position: int) -> dict[str, Any]:
        """The metadata of the prompt that label `position` answers ({} for one-prompt
        items)."""
        if not self.prompts:
            return {}
        return self.prompts[self.prompt_indices[position]]


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
    # parity at 1), "count" (a table of numbers)
    # the plotted range (values outside widen it); None: 0–1 for "ci"/"unit", ±1 in log2
    # units for "log_ratio", 0…max for "count", the mark bands for marked metrics
    x_range: tuple[float, float] | None = None
    columns: tuple[str, str] = ("Metric", "Value")  # headers of a "count" table

    def plot_range(self, values: Iterable[float] = ()) -> tuple[float, float]:
        """The declared range, or the kind's default (a count's range reaches its largest
        value)."""
        if self.x_range is not None:
            return self.x_range
        if self.kind == "log_ratio":
            return (-1.0, 1.0)
        if self.kind == "count":
            finite = [v for v in values if v == v]
            return (0.0, max([1.0, *finite]))
        return (0.0, 1.0)


@dataclass(frozen=True)
class MetricKey:
    """A structured metric name: a family and its parts, stored and shown joined by "/"
    (``representation/All/gender/Female``, ``sdeg_group/White;old``). Metric names stay
    strings everywhere they are stored; build and read them through this type."""

    family: str
    parts: tuple[str, ...] = ()

    @classmethod
    def of(cls, family: str, *parts: Any) -> str:
        """The stored name of `family` with `parts`."""
        return str(cls(family, tuple(str(p) for p in parts)))

    @classmethod
    def parse(cls, name: str, max_parts: int = -1) -> MetricKey:
        """Split a stored name (`max_parts` > 0 keeps the rest of the name in the last
        part, for parts that may contain "/")."""
        family, _, rest = name.partition("/")
        if not rest:
            return cls(family)
        parts = rest.split("/", max_parts - 1) if max_parts > 0 else rest.split("/")
        return cls(family, tuple(parts))

    def part(self, index: int, default: str = "") -> str:
        return self.parts[index] if -len(self.parts) <= index < len(self.parts) else default

    def tail(self, start: int = 0, sep: str = " ") -> str:
        """The parts from `start` on, joined for reading ("Female", "hispanic Male")."""
        return sep.join(self.parts[start:])

    def __str__(self) -> str:
        return "/".join((self.family, *self.parts))


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
    """A probe card in the benchmarks' style: what is measured, how, from what, and its limits."""

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
    short: str = ""  # one line for tables (the README's probe table, the catalogue)

    @property
    def measures_short(self) -> str:
        return self.short or self.measures.split(". ")[0].rstrip(".")

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


@dataclass(frozen=True)
class Finding:
    """One result of a run in a plain sentence, for the Findings view (Results) and page 1
    of the report; Qt-free. A study returns them from `Probe.findings`.

    `importance` orders findings across probes and runs (higher first) on a scale shared by
    all studies: 90 a catastrophic result (mark D; a ratio of 4× or ¼ or beyond
    that survives the run's Benjamini–Hochberg correction; every member of a group imagined
    alike), 70 critical (mark C; a ratio of 2× or ½), 40 cautionary (mark B; smaller ratios
    that survive the correction, associations flagged above chance), 10 healthy (mark A),
    below 10 notes (coverage, what could not be measured). `evidence` is the review queue's
    item filter for the items behind it (as `MetricGroup.item_filters`; {} = every item) and
    `review_filter` the queue filter; None: no items to show."""

    sentence: str
    importance: float
    metric: str | None = None
    value: float = math.nan
    ci: tuple[float, float] = (math.nan, math.nan)
    p_value: float | None = None
    p_adj: float | None = None  # Benjamini–Hochberg over the run's tests
    evidence: dict[str, Any] | None = None
    review_filter: str = "all"
    evidence_title: str = ""  # the items behind it in words ("the power-neutral stories")


@dataclass
class Performed:
    """One attempt as the model produced it: its result, automatic label, stored seed and,
    for scoring probes, its sentence scores."""

    result: GenerationResult
    label: dict[str, Any]
    seed: int | None
    scores: list[dict[str, Any]] | None = None
