"""What every study and probe provides, and all the core knows about them.

A *study* (a paper, e.g. a benchmark of gender bias) is a package under `gbdesk.studies` (or any
installed package) registered in the ``gbdesk.studies`` entry-point group; it exposes a
`Study` listing its probes. A *probe* is one experiment: items, prompts, an automatic
labeller, metrics and a card (the small `Probe` contract), plus the optional
capabilities (`gbdesk.contract.capabilities`) through which the core's run loop,
importer, review queue, results pane and report reach what only some probes have — the
core never names a study nor tests a probe's class.

Three kinds of probe, by how an attempt uses the model:

* `GenerationProbe`: one request per attempt (the run loop may batch or parallelise);
* `ScoringProbe`: a block of sentences scored per attempt (log-likelihoods), no text;
* `ChainProbe`: several dependent requests per attempt (e.g. a role, then its answers).

The values a probe returns are in `gbdesk.contract.items`; what only the core does with
a probe is in `gbdesk.contract.running`.
"""

from __future__ import annotations

import functools
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from gbdesk.contract.capabilities import (
    Capabilities,
    ScoreFrame,
)
from gbdesk.contract.items import (
    Finding,
    Item,
    ItemResult,
    LabelOption,
    MetricGroup,
    Performed,
    ProbeCard,
    ProbeOption,
)
from gbdesk.contract.running import (
    AttemptEngine,
    default_capabilities,
    default_findings,
    default_params,
    sample_and_limit,
    score_block,
    size_bounded,
)
from gbdesk.maths.stats import MarkDefinition, MetricValue

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from gbdesk.engine.base import GenerationRequest, GenerationResult


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
    through `capabilities` (`gbdesk.contract.capabilities`), which is all the core asks.
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
        """What this probe offers beyond the contract (`gbdesk.contract.capabilities`). A
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
        return default_params(self, template, limit, sample, draw, extra)

    # -- items ----------------------------------------------------------------------------
    @abstractmethod
    def all_items(self, template: str) -> list[Item]:
        """Every item of the probe, in the reference implementation's order."""

    def items(self, params: dict[str, Any]) -> list[Item]:
        """The items of a run: optionally a seeded sample (the reference harness's `sample_k`),
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
        return default_findings(self, metrics)


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
        """Scores the item's sentences (`score_block`)."""
        return score_block(self, engine, item)


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
    """A set of probes a study runs together as one audit (a reference harness's `DefaultHarness`):
    each probe with its template preset; an audit sizes every probe to the budget, up to
    the harness's own sizes (`Probe.default_attempts`, the preset's items)."""

    name: str
    title: str
    probes: tuple[str, ...]
    template: str | None = None  # the preset every probe runs with
    description: str = ""
    #: the study's harm sections in its report's order: (title, ((probe, metric), …)) —
    #: an audit's verdicts are grouped by them; marked metrics in none are "other measures"
    sections: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()


@dataclass(frozen=True)
class Study:
    """A published study: its probes, citation and where its data lives.

    A package registers its study in the ``gbdesk.studies`` entry-point group
    (``name = "package.module:STUDY"``); the catalogue (`gbdesk.contract.registry`) finds it there.
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
