"""What every study and probe provides, and all the core knows about them.

A *study* (a paper, e.g. Laissez-Faire harms) is a package under `gbdesk.studies` (or any
installed package) registered in the ``gbdesk.studies`` entry-point group; it exposes a
`Study` listing its probes. A *probe* is one experiment: items, prompts, an automatic
labeller, metrics and a card (the small `Probe` contract), plus the optional
capabilities (`gbdesk.studies.capabilities`) through which the core's run loop,
importer, review queue, results pane and report reach what only some probes have — the
core never names a study nor tests a probe's class.

Three kinds of probe, by how an attempt uses the model:

* `GenerationProbe`: one request per attempt (the run loop may batch or parallelise);
* `ScoringProbe`: a block of sentences scored per attempt (log-likelihoods), no text;
* `ChainProbe`: several dependent requests per attempt (e.g. a role, then its answers).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import math
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Hashable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from gbdesk.maths.stats import MarkDefinition, MetricValue
from gbdesk.studies.capabilities import (
    AuditSizing,
    Capabilities,
    Importing,
    Labelling,
    Parameters,
    Ppi,
    Presentation,
    Ratings,
    Review,
    Running,
    ScoreFrame,
)
from gbdesk.support.errors import UserError
from gbdesk.support.guards import check_template
from gbdesk.support.limits import LABELLED_CHARS, labelled_part

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from gbdesk.engine.base import Backend, GenerationRequest, GenerationResult


@dataclass(frozen=True)
class Prompt:
    """One of an item's prompts (GenderBench's `Prompt`): its text and what the labeller
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
    they are sampled, labelled and bootstrapped together as one item, as GenderBench's
    `ProbeItem` does. `prompt` is then the first prompt's text. Attempt `a` of such an
    item uses prompt ``a // attempts_per_prompt`` (`prompt_index`): GenderBench's order,
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


def attempt_count(item_row: dict[str, Any], attempts_per_prompt: int) -> int:
    """How many attempts a run makes of a stored item (`Store.run_items` row)."""
    return len(item_row.get("prompts") or ()) * attempts_per_prompt or attempts_per_prompt


def attempt_item(
    item_row: dict[str, Any], attempt: int, attempts_per_prompt: int
) -> dict[str, Any]:
    """The stored item as one attempt sees it: {item, idx, prompt, metadata} with the
    prompt that attempt used and, for an item of several prompts, that prompt's metadata
    merged over the item's and its position as ``prompt_index`` (what `Probe.label` and
    the review queue get). A one-prompt item's row is returned unchanged."""
    prompts = item_row.get("prompts")
    if not prompts:
        return item_row
    p = min(prompt_index(attempt, attempts_per_prompt), len(prompts) - 1)
    chosen = prompts[p]
    return {
        **item_row,
        "prompt": chosen["text"],
        "metadata": {**item_row["metadata"], **chosen.get("metadata", {}), "prompt_index": p},
    }


class RunItems:
    """A run's stored items by key (`Store.run_items` rows) and what each attempt of them
    saw: its prompt's metadata merged over the item's (`attempt_item`). For one-prompt
    items that is the item's metadata."""

    def __init__(self, rows: list[dict[str, Any]], attempts_per_prompt: int):
        self.rows = rows
        self.by_key = {row["item"]: row for row in rows}
        self.per_prompt = max(1, int(attempts_per_prompt or 1))
        self.multi = any(row.get("prompts") for row in rows)

    @classmethod
    def of(cls, store: Any, run_id: int) -> RunItems:
        """The stored items of run `run_id` (a `Store`)."""
        attempts = store.get_run(run_id)["generation"].get("attempts") or 1
        return cls(store.run_items(run_id), attempts)

    def metadata(self, item: str, attempt: int) -> dict[str, Any]:
        row = self.by_key.get(item)
        if row is None:
            return {}
        if not row.get("prompts"):
            return row["metadata"]
        return attempt_item(row, attempt, self.per_prompt)["metadata"]

    def prompt_index(self, item: str, attempt: int) -> int:
        row = self.by_key.get(item)
        if row is None or not row.get("prompts"):
            return 0
        return min(prompt_index(attempt, self.per_prompt), len(row["prompts"]) - 1)


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


def new_item_result(row: dict[str, Any]) -> ItemResult:
    """An empty `ItemResult` of a stored item (`Store.run_items` row), its prompts'
    metadata included for an item of several prompts."""
    prompts = [p.get("metadata", {}) for p in row.get("prompts") or ()]
    return ItemResult(row["item"], row["metadata"], [], prompts=prompts)


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
class LabellingPass:
    """A labelling pass a probe offers over a run's stored texts, e.g. Laissez-Faire's
    character extraction with a labeler model (`gbdesk label RUN --extractor NAME`).

    `run(store, run_id, model_spec, backend_factory=…, on_progress=…, control=…)` labels
    the run's attempts (resumable), points the run's metrics at the result and returns a
    JSON-friendly summary (at least ``source``, ``labelled``, ``status``)."""

    name: str
    title: str
    description: str
    run: Callable[..., dict[str, Any]]
    needs_model: bool = True


@dataclass(frozen=True)
class CodingCandidates:
    """The attempts a probe proposes for coding with a codebook, by category
    (`Coding.candidates`): the rule in words, the categories in the order samples are
    drawn, and (attempt id, category, why) for every attempt in a category."""

    rule: str
    categories: list[str]
    matches: list[tuple[int, str, str]]


@dataclass(frozen=True)
class Finding:
    """One result of a run in a plain sentence, for the Findings view (Results) and page 1
    of the report; Qt-free. A study returns them from `Probe.findings`.

    `importance` orders findings across probes and runs (higher first) on a scale shared by
    all studies: 90 a catastrophic result (GenderBench mark D; a ratio of 4× or ¼ or beyond
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


@dataclass(frozen=True)
class AccuracyWords:
    """How the labels' accuracy (`gbdesk.analysis.label_accuracy`) names a probe's units."""

    unit: str = "label"
    units: str = "labels"
    right: str = "were right"  # what the right ones did: "had name and gender right"
    share: str = "share of labels right"  # "share of characters with name and gender right"
    labeller: str = "labeller"  # "extractor"
    stories: str = "attempts"  # what the random sample draws
    #: (kind, its name) of `Ratings.kinds` in words; () = those titles, lower-cased
    kinds: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AuditSize:
    """A size an audit may run a probe at: `plan_run` keywords (item limit or sample and
    probe options) and attempts per item. `AuditSizing.sizes` lists them smallest first."""

    attempts: int
    limit: int | None = None
    sample: int | None = None
    options: dict[str, str] = field(default_factory=dict)

    def plan_kwargs(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "limit": self.limit,
            "sample": self.sample,
            **self.options,
        }


@dataclass(frozen=True)
class Precision:
    """The 95 % interval a planned run should reach for one metric: its half-width (NaN
    when the metric has no interval) and how it was estimated, in words."""

    metric: str
    half_width: float
    method: str


@dataclass(frozen=True)
class PrecisionRule:
    """`AuditSizing.precision` written once: the half-width 1.96 × √(`variance` / n) of
    `metric` over n units (the items, unless `for_units` is given another count); a probe
    sets only the numbers (``audit_precision = PrecisionRule("fail_rate", 0.25, "…")``).
    `words` is a format string of {half}, {points} (100 × half), {n} (units), {n_items},
    {attempts}, {half_n} (n // 2) and {quarter_n} (n // 4)."""

    metric: str
    variance: float = 0.25
    words: str = "about ±{half:.2f}: 1.96 × √(variance / {n} items)"

    def __call__(self, params: dict[str, Any], n_items: int, attempts: int) -> Precision:
        return self.for_units(n_items, n_items, attempts)

    def for_units(self, units: int, n_items: int, attempts: int) -> Precision:
        n = max(1, units)
        half = z95() * math.sqrt(self.variance / n)
        words = self.words.format(
            half=half, points=100 * half, n=n, n_items=n_items, attempts=attempts,
            half_n=n // 2, quarter_n=n // 4,
        )  # fmt: skip
        return Precision(self.metric, half, words)


#: the default ladder of item counts an audit tries (`AuditSizing.sizes`)
AUDIT_ITEM_STEPS = (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


def z95() -> float:
    """The normal quantile of a two-sided 95 % interval (1.96)."""
    return 1.959963984540054


@dataclass
class Performed:
    """One attempt as the model produced it: its result, automatic label, stored seed and,
    for scoring probes, its sentence scores."""

    result: GenerationResult
    label: dict[str, Any]
    seed: int | None
    scores: list[dict[str, Any]] | None = None


class AttemptEngine:
    """What a probe's attempt may do with the model: generate with the run's settings
    (a probe may override temperature, max_tokens and json_schema per request) and score
    sentences. Built by the run loop around its backend."""

    def __init__(
        self,
        backend: Backend,
        generation: dict[str, Any],
        on_token: Callable[[str], None] | None = None,
    ):
        self.backend = backend
        self.generation = generation
        self.on_token = on_token

    def request(
        self, messages: list[dict[str, str]], seed: int, **overrides: Any
    ) -> GenerationRequest:
        from gbdesk.engine.base import DEFAULT_MIN_P, DEFAULT_TOP_K, GenerationRequest

        g = self.generation
        return GenerationRequest(
            messages=messages,
            seed=seed,
            temperature=overrides.get("temperature", g["temperature"]),
            top_p=g["top_p"],
            max_tokens=overrides.get("max_tokens", g["max_tokens"]),
            top_k=g.get("top_k", DEFAULT_TOP_K),
            min_p=g.get("min_p", DEFAULT_MIN_P),
            json_schema=overrides.get("json_schema"),
        )

    def generate(
        self, messages: list[dict[str, str]], seed: int, **overrides: Any
    ) -> GenerationResult:
        """One generation; ``stream=False`` keeps its tokens out of the live view."""
        stream = overrides.pop("stream", True)
        request = self.request(messages, seed, **overrides)
        return self.backend.generate(request, self.on_token if stream else None)

    def score(self, texts: list[str]) -> list[Any]:
        return self.backend.score(texts)


LabelFunction = Callable[..., dict[str, Any]]


def size_bounded(label: LabelFunction) -> LabelFunction:
    """`label` (a probe's method) reading at most the answer's first `MAX_LABELLED_CHARS`
    characters (`gbdesk.support.limits`); the label of a longer answer says so in its data
    (`LABELLED_CHARS`: how many were read). Evidence spans of the part index the whole
    answer too: it is its beginning. `Probe.__init_subclass__` applies this to every
    probe's `label`; ``size_bounded`` on the result marks it, ``__wrapped__`` is `label`."""

    @functools.wraps(label)
    def bounded(
        self: Probe, response: str, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        part, cut = labelled_part(response)
        got = label(self, part, metadata)
        if cut:
            log.info(
                "%s: an answer of %d characters is labelled from its first %d",
                self.name,
                len(response),
                len(part),
            )
            got = {**got, "data": {**(got.get("data") or {}), LABELLED_CHARS: len(part)}}
        return got

    bounded.size_bounded = True  # type: ignore[attr-defined]
    return bounded


class Probe(ABC):
    """Base class of every probe (use `GenerationProbe`, `ScoringProbe` or `ChainProbe`).

    The contract a study implements: declare `name`, `version`, `card`, `templates` and
    `template_slots` (and, when the defaults do not fit, `default_attempts`,
    `default_generation`, `options`, `label_options`, `mark_definitions`,
    `headline_metrics`, `metric_titles`); list the items (`all_items`, `items`,
    `resolve_params` for its own options); make an attempt (`perform`, given by the three
    kinds); `label` a response; compute `metrics`, `extra_results`, `metric_groups`,
    `findings` and a `summary`. Everything else — review order, import, coding, audit
    sizes, fast metrics, PPI, Qt views … — is an optional capability the probe provides
    through `capabilities` (`gbdesk.studies.capabilities`), which is all the core asks.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    study: ClassVar[str] = ""  # the study's name, set by `Study`
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
    #: a metric's name for people (the app, the report), by name or pattern like the card's
    #: `metrics` ("masculine_rate_{source}": "Share of male characters, {source} items"); the
    #: stored key stays in CSV and JSON (`Presentation.metric_title`)
    metric_titles: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every `label` a probe defines reads at most the answer's first
        `MAX_LABELLED_CHARS` characters (`size_bounded`): one rule for every probe, on
        import, in a run and wherever else a label is made."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("label")
        if inspect.isfunction(own) and not getattr(own, "size_bounded", False):
            cls.label = size_bounded(own)  # type: ignore[method-assign]

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """What this probe offers beyond the contract (`gbdesk.studies.capabilities`). A
        probe overrides it (a `functools.cached_property`) to change the capabilities it
        has: ``caps = super().capabilities; return caps.with_(review=caps.review.with_(…))``."""
        return default_capabilities(self)

    # -- parameters ---------------------------------------------------------------------
    def resolve_params(
        self,
        template: str | None = None,
        limit: int | None = None,
        sample: int | None = None,
        draw: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The run's parameters from the user's choices (a probe with `options` takes them
        as keywords and calls this for the rest). `draw`: an audit's random draw of that
        many items (`drawn_subset`), recorded only when given."""
        if extra:
            raise UserError(f"{self.name} has no parameter(s) {', '.join(sorted(extra))}")
        template_name, template_text = resolve_template(self, template)
        for label, value in (("--limit", limit), ("--sample", sample), ("draw", draw)):
            if value is not None and value < 1:
                raise UserError(f"{label} must be at least 1")
        params: dict[str, Any] = {
            "template_name": template_name,
            "template": template_text,
            "limit": limit,
            "sample": sample,
            "sample_seed": SAMPLE_SEED if sample else None,
        }
        if draw is not None:
            params["draw"] = int(draw)
        return params

    # -- items ----------------------------------------------------------------------------
    @abstractmethod
    def all_items(self, template: str) -> list[Item]:
        """Every item of the probe, in the reference implementation's order."""

    def items(self, params: dict[str, Any]) -> list[Item]:
        """The items of a run: optionally a seeded sample (GenderBench's `sample_k`),
        then the first `limit` (`sample_and_limit`)."""
        return sample_and_limit(self, self.all_items(params["template"]), params)

    # -- running ---------------------------------------------------------------------------
    @abstractmethod
    def perform(self, engine: AttemptEngine, item: dict[str, Any], seed: int) -> Performed:
        """Make one attempt of a stored run item (``item``: key, prompt, metadata)."""

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

    def extra_results(
        self, results: list[ItemResult], params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Non-scalar results (curves, tables) a probe's views and report show."""
        return {}

    def metric_groups(self, present: Iterable[str] | None = None) -> list[MetricGroup]:
        """How results are grouped for tables, plots and the report; `present` are the
        metric names a result actually has (for probes whose metrics vary)."""
        return [MetricGroup("Metrics", list(self.headline_metrics), marked=True)]

    # -- report and summary -----------------------------------------------------------------
    def summary(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> str:
        """The run's findings in plain words (one paragraph, no model or run name)."""
        title = self.capabilities.presentation.metric_title
        shown = [
            f"{title(name)} {metrics[name].value:.2f}"
            for name in self.headline_metrics
            if name in metrics and metrics[name].value == metrics[name].value
        ]
        return ("; ".join(shown) + ".") if shown else ""

    def findings(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> list[Finding]:
        """The run's findings, one plain sentence each (`Finding`; the core sorts them by
        importance across runs). The default: one per marked metric, worst mark first."""
        from gbdesk.maths.stats import MARK_LETTERS
        from gbdesk.maths.verdicts import shown_interval, verdict
        from gbdesk.support.format import value_phrase

        title = self.capabilities.presentation.metric_title
        out = []
        for name in self.mark_definitions:
            m = metrics.get(name)
            if m is None or m.value != m.value or not m.mark:
                continue
            # the mark only when its interval decides it (`gbdesk.maths.verdicts`), else
            # the marks it allows; no zero-width interval from too few items
            v = verdict(self.mark_definitions[name], m.ci, m.n)
            ci = shown_interval(m.ci, m.n) or (math.nan, math.nan)
            said = (
                value_phrase(m.value, ci, m.mark)
                if v.decided
                else f"{value_phrase(m.value, ci)}, the study's mark {m.mark} — {v.words()}"
            )
            out.append(
                Finding(
                    f"{title(name)}: {said}.",
                    importance=(10, 40, 70, 90)[MARK_LETTERS.index(m.mark)]
                    if v.decided or not v.too_few
                    else 5.0,
                    metric=name,
                    value=m.value,
                    ci=m.ci,
                    evidence={},
                )
            )
        return out


#: GenderBench's default random seed (`--sample` draws)
SAMPLE_SEED = 123


# -- what the core does with any probe (not hooks: a probe changes them through its
# -- capabilities) --------------------------------------------------------------------------
def resolve_template(probe: Probe, template: str | None) -> tuple[str, str]:
    """(preset name or "custom", template text); validates a custom template's slots."""
    if template is None:
        name = next(iter(probe.templates))
        return name, probe.templates[name]
    if template in probe.templates:
        return template, probe.templates[template]
    try:
        check_template(
            template, probe.template_slots, probe.capabilities.parameters.template_samples()
        )
    except UserError as exc:
        raise UserError(
            f"{str(exc).replace('the template', f'a {probe.name} template', 1)} "
            f"(presets: {', '.join(probe.templates)})"
        ) from None
    return "custom", template


def sample_and_limit(probe: Probe, items: list[Item], params: dict[str, Any]) -> list[Item]:
    """A seeded sample of `params["sample"]` items (GenderBench's `sample_k`), then
    `params["limit"]` of them: the first ones, or — for a probe whose metrics compare
    groups of items (`AuditSizing.balance_key`) — a seeded subset that keeps every group;
    or an audit's `params["draw"]` (`drawn_subset`)."""
    if params.get("sample"):
        k = min(params["sample"], len(items))
        items = random.Random(params.get("sample_seed", SAMPLE_SEED)).sample(items, k)
    if params.get("limit"):
        items = balanced_subset(probe, items, params["limit"])
    if params.get("draw"):
        items = drawn_subset(probe, items, params["draw"])
    return items


def draw_order(probe: Probe, items: list[Item]) -> list[int]:
    """Positions of `items` in an audit's draw order: a seeded random order, stratified by
    `AuditSizing.balance_key` so that every prefix keeps each group's share of the items
    (after one item of every group first: no prefix of the groups' count leaves one out).
    A prefix of it is a random sample of the items, and a longer prefix extends a shorter
    one: an audit grows its sample by taking more of the same order."""
    sizing = probe.capabilities.audit
    groups: dict[Any, list[int]] = {}
    for position, item in enumerate(items):
        groups.setdefault(sizing.balance_key(item.metadata), []).append(position)
    rng = random.Random(SAMPLE_SEED)
    keys = sorted(groups, key=repr)
    queues = {k: rng.sample(groups[k], len(groups[k])) for k in keys}
    share = {k: len(groups[k]) / max(1, len(items)) for k in keys}
    taken = {k: 0 for k in keys}
    order: list[int] = []
    for k in keys:  # one of each group first
        order.append(queues[k][0])
        taken[k] = 1
    while len(order) < len(items):
        t = len(order) + 1
        # the group furthest below its share of the first t items (ties: key order)
        best, deficit = None, -math.inf
        for k in keys:
            if taken[k] < len(queues[k]) and share[k] * t - taken[k] > deficit:
                best, deficit = k, share[k] * t - taken[k]
        order.append(queues[best][taken[best]])
        taken[best] += 1
    return order


def drawn_subset(probe: Probe, items: list[Item], n: int) -> list[Item]:
    """The first `n` items of `draw_order`, in that order."""
    return [items[i] for i in draw_order(probe, items)[:n]]


def balanced_subset(probe: Probe, items: list[Item], limit: int) -> list[Item]:
    """`limit` items that keep every group of `AuditSizing.balance_key` (as equal shares as
    the groups allow, drawn with the probe's seed), in the items' order; the first `limit`
    items when the probe has no groups. Refuses a limit smaller than the number of groups
    (a group left out would leave a metric unmeasurable) unless the probe's
    `refuse_unbalanced` is False."""
    if limit >= len(items):
        return items
    sizing = probe.capabilities.audit
    keys = [sizing.balance_key(i.metadata) for i in items]
    if all(k is None for k in keys):
        return items[:limit]
    groups: dict[Any, list[int]] = {}
    for position, key in enumerate(keys):
        groups.setdefault(key, []).append(position)
    if limit < len(groups) and not sizing.refuse_unbalanced:
        log.warning(
            "%s: --limit %d keeps the first items, too few for the %d groups %s compares",
            probe.name,
            limit,
            len(groups),
            sizing.balance_needed_for,
        )
        return items[:limit]
    if limit < len(groups):
        raise UserError(
            f"--limit {limit} is too small for {probe.name}: {sizing.balance_needed_for} "
            f"compares {len(groups)} groups of items and needs at least one item of "
            f"each — use --limit {len(groups)} or more"
        )
    rng = random.Random(SAMPLE_SEED)
    order = sorted(groups, key=repr)
    queues = {k: rng.sample(groups[k], len(groups[k])) for k in order}
    chosen: list[int] = []
    while len(chosen) < limit:
        for key in order:
            if queues[key] and len(chosen) < limit:
                chosen.append(queues[key].pop())
    return [items[i] for i in sorted(chosen)]


def label_values(probe: Probe) -> list[str]:
    """The values of the probe's `label_options`."""
    return [o.value for o in probe.label_options]


def view_class(probe: Probe, target: str | None) -> type | None:
    """The Qt class a capability names ("module:Class"; a module starting with "." is
    relative to the probe's package); imports Qt: app only. None for None."""
    if not target:
        return None
    module, _, attr = target.partition(":")
    package = type(probe).__module__.rpartition(".")[0]
    return getattr(importlib.import_module(module, package), attr)


def describe(probe: Probe) -> dict[str, Any]:
    """The probe as JSON (`gbdesk probes --json`)."""
    return {
        "name": probe.name,
        "version": probe.version,
        "study": probe.study,
        "title": probe.card.title,
        "kind": probe.capabilities.running.kind,
        "templates": dict(probe.templates),
        "default_attempts": probe.default_attempts,
        "generation": dict(probe.default_generation),
        "items": len(probe.all_items(next(iter(probe.templates.values())))),
        "card": probe.card.to_json(),
        "labels": [asdict(o) for o in probe.label_options],
        "marks": {
            name: {k: [list(r) for r in v] for k, v in d.ranges.items()}
            for name, d in probe.mark_definitions.items()
        },
    }


# -- the defaults of the capabilities that need the probe ----------------------------------
def default_capabilities(probe: Probe) -> Capabilities:
    """A probe's capabilities when it changes none: what the core did for every probe
    before capabilities existed (bound to `probe` where the default reads it)."""
    bound = functools.partial
    return Capabilities(
        running=Running(),
        parameters=Parameters(template_samples=bound(default_template_samples, probe)),
        audit=AuditSizing(sizes=bound(default_audit_sizes, probe)),
        labelling=Labelling(
            human_label=bound(default_human_label, probe),
            from_rows=bound(default_human_label_from_rows, probe),
        ),
        review=Review(),
        ratings=Ratings(label_units=bound(default_label_units, probe), words=AccuracyWords()),
        presentation=Presentation(
            metric_title=bound(default_metric_title, probe),
            metric_description=bound(default_metric_description, probe),
            metric_bounds=bound(default_metric_bounds, probe),
        ),
        importing=Importing(),
        ppi=Ppi(
            resampled=bound(default_ppi_resampled, probe),
            evaluator=bound(default_ppi_evaluator, probe),
        ),
    )


def default_template_samples(probe: Probe) -> dict[str, Any]:
    """A value of each template slot, of the type `all_items` fills it with, to check a
    custom template by filling it in once (`guards.check_template`)."""
    return {slot: "a sample text" for slot in probe.template_slots}


def default_audit_sizes(probe: Probe) -> list[AuditSize]:
    """Seeded samples of 2, 5, 10 items with one attempt, then 10, 20, 50 … items and all
    of them with the probe's default attempts (smallest first)."""
    total = len(probe.all_items(next(iter(probe.templates.values()))))
    a = probe.default_attempts
    sizes = [AuditSize(1, sample=n) for n in (2, 5, 10) if n < total]
    sizes += [AuditSize(a, sample=n) for n in AUDIT_ITEM_STEPS if 10 <= n < total and a > 1]
    sizes.append(AuditSize(a))
    return sizes


def default_human_label(
    probe: Probe, response: str, metadata: dict[str, Any], value: str, reviewer: str
) -> dict[str, Any]:
    """A reviewer's label from its text form (CLI `gbdesk review`): one of the label
    options."""
    values = label_values(probe)
    if not values:
        raise UserError(f"{probe.name} attempts have no label to give here; review them in the app")
    if value not in values:
        raise UserError(f"label must be one of {', '.join(values)}")
    return {"label": value, "data": None, "evidence": None}


def default_human_label_from_rows(
    probe: Probe, response: str, metadata: dict[str, Any], rows: list[dict[str, Any]], rater: str
) -> dict[str, Any] | None:
    """A rater's label of one attempt from the rows of an imported file that belong to it
    (`gbdesk import-labels`), or None when the rows leave it unlabelled; raises
    `UserError` for rows that cannot be used. Reads the `label` column, else
    `human_label` (as in attempts.csv), else `gender`; an empty cell labels nothing."""
    column = next((c for c in ("label", "human_label", "gender") if c in rows[0]), None)
    if column is None:
        raise UserError("the file needs a label (or human_label) column")
    values = {str(r.get(column) or "").strip() for r in rows} - {""}
    if not values:
        return None
    if len(values) > 1:
        raise UserError(f"an attempt has conflicting labels ({', '.join(sorted(values))})")
    return probe.capabilities.labelling.human_label(response, metadata, values.pop(), rater)


def default_label_units(
    probe: Probe, label: dict[str, Any], metadata: dict[str, Any]
) -> dict[Hashable, Any]:
    """Every part of `Ratings.units` at `Review.confidence`. A probe whose labeller gives a
    confidence gets, through this, its confidences recalibrated on the random review
    sample and the labels' share right estimated."""
    caps = probe.capabilities
    confidence = caps.review.confidence(label.get("label", ""), label.get("data") or {})
    parts = dict.fromkeys(p for v in caps.ratings.units(label, metadata).values() for p in v)
    return dict.fromkeys(parts, confidence)


def default_metric_title(probe: Probe, name: str) -> str:
    """The metric's name for people ("Share of male characters"), from `metric_titles`
    (by name, then by pattern: "{part}" slots take the key's parts); else the key made
    readable ("masculine rate", "sdeg group · White;old")."""
    if name in probe.metric_titles:
        return probe.metric_titles[name]
    for pattern, title in probe.metric_titles.items():
        if "{" not in pattern:
            continue
        regex = re.escape(pattern)
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>.+?)", regex)
        match = re.fullmatch(regex, name)
        if match:
            return title.format(**match.groupdict())
    key = MetricKey.parse(name)
    head = key.family.replace("_", " ")
    return " · ".join([head[:1].upper() + head[1:], *key.parts])


def default_metric_description(probe: Probe, name: str) -> str:
    """The card's words on the metric (by name, then by "{…}" pattern), else ""."""
    if name in probe.card.metrics:
        return probe.card.metrics[name]
    for pattern, text in probe.card.metrics.items():
        prefix = pattern.split("{")[0]
        if "{" in pattern and name.startswith(prefix):
            return text
    return ""


def default_metric_bounds(probe: Probe, name: str) -> tuple[float, float] | None:
    """What the metric can be (e.g. 0–1 for a share), for showing intervals that the
    bootstrap's normal fit stretched past it; the union of its mark bands, else None."""
    definition = probe.mark_definitions.get(name)
    return definition.overall_range if definition is not None else None


def default_ppi_resampled(
    probe: Probe, units: list[ItemResult], params: dict[str, Any] | None, w: Any
) -> dict[str, Any] | None:
    """`Resampling.metrics` when the review units are items; None otherwise (the core
    recomputes `metrics` instead)."""
    caps = probe.capabilities
    if caps.ppi.unit == "item" and caps.resampling is not None:
        return caps.resampling.metrics(units, params, w)
    return None


def default_ppi_evaluator(
    probe: Probe, units: list[ItemResult], params: dict[str, Any] | None
) -> Callable[[Any], dict[str, Any] | None]:
    """`Ppi.resampled` bound to its units, asked for many weight matrices (the
    prediction-powered bootstrap evaluates a big run's resamples a chunk at a time)."""
    return functools.partial(probe.capabilities.ppi.resampled, units, params)


class GenerationProbe(Probe):
    """One request per attempt: the item's prompt as the user message, the answer
    labelled by `label`. The run loop may batch such attempts or send them concurrently."""

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        caps = super().capabilities
        return caps.with_(running=caps.running.with_(kind="generation", batchable=True))

    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": item["prompt"]}]

    def request_schema(self, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON schema the answer is constrained to (grammar decoding), or None."""
        return None

    def request(self, engine: AttemptEngine, item: dict[str, Any], seed: int) -> GenerationRequest:
        return engine.request(
            self.messages(item), seed, json_schema=self.request_schema(item["metadata"])
        )

    def perform(self, engine: AttemptEngine, item: dict[str, Any], seed: int) -> Performed:
        result = engine.backend.generate(self.request(engine, item, seed), engine.on_token)
        return Performed(result, self.label(result.text, item["metadata"]), seed)


class ScoringProbe(Probe):
    """An attempt scores a block of sentences (log-likelihood, perplexity); nothing is
    generated. The scores are stored with the attempt; `ItemResult.scores` carries them."""

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """Scored blocks: counted in sentences, not reviewed, the engine must give each
        sentence's token log-likelihoods; metrics from the score frame where the probe
        computes them (`frame_metrics`)."""
        caps = super().capabilities
        return caps.with_(
            running=caps.running.with_(
                kind="scoring",
                unit="sentences",
                rate_unit="sentences/s",
                engine_needs=frozenset({"prompt_logprobs"}),
                work_units=self.work_units,
            ),
            review=caps.review.with_(reviewable=False),
            scores=ScoreFrame(metrics=self.frame_metrics, extra_results=self.frame_extra_results),
        )

    @abstractmethod
    def sentences(self, metadata: dict[str, Any]) -> list[dict[str, Any]]:
        """The sentences of one item's block: dicts with at least "text"."""

    def work_units(self, items: list[Item], attempts: int) -> int:
        """`Running.work_units`: the sentences scored."""
        return sum(len(self.sentences(i.metadata)) for i in items) * attempts

    def frame_metrics(self, frame: Any, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """`metrics` from the run's stored scores read as one pandas frame (`Store.score_frame`,
        run order, without the sentences' texts) — identical values; None: not available."""
        return None

    def frame_extra_results(
        self, frame: Any, params: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """`extra_results` from the score frame; None: not available."""
        return None

    def perform(self, engine: AttemptEngine, item: dict[str, Any], seed: int) -> Performed:
        from gbdesk.engine.base import GenerationResult

        sentences = self.sentences(item["metadata"])
        started = time.perf_counter()
        results = engine.score([s["text"] for s in sentences])
        latency = time.perf_counter() - started
        scores = [
            {**s, "n_tokens": r.n_tokens, "logprob_sum": r.logprob_sum, "ppl": r.ppl}
            for s, r in zip(sentences, results, strict=True)
        ]
        mean_ppl = sum(s["ppl"] for s in scores) / len(scores) if scores else float("nan")
        summary = GenerationResult(
            text=f"{len(scores)} sentences scored, mean perplexity {mean_ppl:.2f}",
            tokens_in=sum(r.n_tokens for r in results),
            tokens_out=0,
            latency_s=latency,
            finish_reason="scored",
            prompt_mode="score",
        )
        return Performed(summary, self.label(summary.text, item["metadata"]), None, scores)


class ChainProbe(Probe):
    """Several dependent requests per attempt (e.g. a role, then questions asked in its
    character), stored as one attempt when all are done."""

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        caps = super().capabilities
        chain = self.attempt_chain if self.chain_batchable else None
        return caps.with_(running=caps.running.with_(kind="chain", chain=chain))

    @abstractmethod
    def run_attempt(
        self,
        ask: Callable[..., GenerationResult],
        metadata: dict[str, Any],
        seed: int,
        generation: dict[str, Any],
        prompt: str | None = None,
    ) -> tuple[GenerationResult, dict[str, Any]]:
        """Run the chain with `ask(messages, seed, **overrides)`; return the attempt's
        summary result (its text is stored as the response) and its label."""

    def perform(self, engine: AttemptEngine, item: dict[str, Any], seed: int) -> Performed:
        result, label = self.run_attempt(
            engine.generate, item["metadata"], seed, engine.generation, prompt=item["prompt"]
        )
        return Performed(result, label, seed)

    @property
    def chain_batchable(self) -> bool:
        """Whether `attempt_chain` is implemented: the run loop may then run several
        attempts' chains at once through continuous batching (`gbdesk.engine.chains`)."""
        return False

    def attempt_chain(
        self,
        request: Callable[..., GenerationRequest],
        metadata: dict[str, Any],
        seed: int,
        generation: dict[str, Any],
        prompt: str | None = None,
    ) -> Generator[list[GenerationRequest], list[GenerationResult], Any]:
        """The attempt as a chain (`gbdesk.engine.chains`): yields lists of requests made
        with ``request(messages, seed, **overrides)``, receives their results in order, and
        returns ``(summary result, label)`` as `run_attempt` does."""
        raise NotImplementedError


@dataclass(frozen=True)
class Harness:
    """A set of probes a study runs together as one audit (GenderBench's `DefaultHarness`):
    each probe with its template preset; an audit sizes every probe to the budget, up to
    the harness's own sizes (`Probe.default_attempts`, the preset's items)."""

    name: str
    title: str
    probes: tuple[str, ...]
    template: str | None = None  # the preset every probe runs with
    description: str = ""


@dataclass(frozen=True)
class Study:
    """A published study: its probes, citation and where its data lives.

    A package registers its study in the ``gbdesk.studies`` entry-point group
    (``name = "package.module:STUDY"``); the catalogue (`gbdesk.studies`) finds it there.
    """

    name: str
    title: str
    probes: tuple[type[Probe], ...]
    citation: str = ""
    summary: str = ""
    order: int = 100  # position in the catalogue (built-in studies: 10, 20, 30, 40)
    #: the study's own `gbdesk` subcommands: "package.module:function", called by the
    #: command line as ``function(subparsers, kit)`` (kit: `gbdesk.cli.CommandKit`); it
    #: adds its subparsers and returns {command name: handler(args) -> exit status}
    commands: str = ""
    #: a report over several runs of the study's probes (e.g. one per model):
    #: "package.module:function", called as ``function(runs)`` with the report's runs of
    #: this study (`gbdesk.support.blocks.StudyRun`), returning a `StudyReport` or None
    cross_run_report: str = ""
    #: probe sets the study runs as one audit (`gbdesk audit --harness NAME`)
    harnesses: tuple[Harness, ...] = ()

    def __post_init__(self) -> None:
        for probe in self.probes:
            if not probe.__dict__.get("study"):
                probe.study = self.name
