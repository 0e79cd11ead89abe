"""What a probe may offer beyond the small `Probe` contract: one capability object per
feature of the app, which the core asks for (``probe.capabilities.review.category(…)``,
``if caps.flat is not None: …``) instead of testing the probe's class or looking for hooks.

Why objects and not more base-class hooks: the `Probe` base grew a hook or a switch for
every feature (85 of them) and a study author had to read all of them to know which
mattered. Here each feature's hooks travel together, with defaults that are what the core
does for a probe that says nothing, so a study provides only the capabilities it changes:

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        caps = super().capabilities
        return caps.with_(review=caps.review.with_(category=self.review_category))

Capabilities that only some probes have are None by default (`flat`, `scores`, `groups`,
`resampling`): the core falls back to its general path (load the labels, recompute the
metrics per resample). The defaults that need the probe itself (e.g. the audit sizes
drawn from its items) are bound by `gbdesk.contract.running.default_capabilities`.

This module imports nothing of gbdesk (no cycle with `base`): items, results and the
other study types appear as `Any` in the signatures below; their docstrings say which.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

#: the files of gbdesk's CSV export of a run → the commands that read them back
#: (`Exporting.files`)
DEFAULT_EXPORT_FILES: dict[str, tuple[str, ...]] = {
    "attempts.csv": ("import", "import-labels"),
    "metrics.csv": (),
    "codes.csv": ("code",),
    "codebook.csv": (),
    "groups.csv": (),  # the group tables of the probes that decide about people (`GroupRates`)
}


class _Capability:
    """`with_` for the frozen capability dataclasses."""

    def with_(self, **changes: Any) -> Any:
        """A copy with these fields changed (`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


def _none(*_args: Any, **_kwargs: Any) -> None:
    return None


def _empty_dict(*_args: Any, **_kwargs: Any) -> dict[Any, Any]:
    return {}


def _empty_list(*_args: Any, **_kwargs: Any) -> list[Any]:
    return []


def prompts_times_attempts(items: list[Any], attempts: int) -> int:
    """The default `Running.work_units`: one unit per prompt and attempt."""
    return sum(i.prompt_count for i in items) * attempts


def one_request(params: dict[str, Any], generation: dict[str, Any]) -> tuple[int, float, float]:
    """The default `AuditSizing.tokens`: one request of at most `max_tokens`, no prompt
    beyond the item's."""
    return 1, float(generation["max_tokens"]), 0.0


def label_string_unit(label: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """The default `Ratings.units`: the label string, one unit per attempt."""
    return {"label": {"": label.get("label")}}


def label_strings_differ(auto: dict[str, Any], human: dict[str, Any]) -> bool:
    """The default `Labelling.labels_differ`: the label strings differ."""
    return auto.get("label") != human.get("label")


def attempt_title(item: Any) -> str:
    """The default `Review.title` of a `gbdesk.people.review.ReviewItem`."""
    return f"{item.item} #{item.attempt + 1} — {item.effective_label}"


def item_key(item: str, metadata: dict[str, Any]) -> str:
    """The default `Presentation.item_title`: the item's key."""
    return item


@dataclass(frozen=True)
class Running(_Capability):
    """How the run loop makes and counts a probe's attempts (`gbdesk.workflows.runs`, the Runs pane,
    `gbdesk run`/`estimate`, the Models pane's engine checks).

    `chain`: the probe's attempt as a generator of request lists (`ChainProbe.attempt_chain`)
    when the run loop may run several chains at once (continuous batching); None: one at a
    time. `engine_needs`: keys of `gbdesk.engine.http.CAPABILITIES` an endpoint must
    offer (e.g. "prompt_logprobs"). `work_units(items, attempts)`: the `unit`s a run makes."""

    kind: str = "generation"  # "generation", "scoring" or "chain" (descriptive)
    unit: str = "generations"  # what one attempt produces, in words
    rate_unit: str = "tokens/s"
    batchable: bool = False  # one request per attempt: batched or concurrent requests
    chain: Callable[..., Any] | None = None
    engine_needs: frozenset[str] = frozenset()
    work_units: Callable[[list[Any], int], int] = prompts_times_attempts


@dataclass(frozen=True)
class Parameters(_Capability):
    """Run parameters beyond the template, limit and sample (`plan_run`, `estimate_run`,
    `gbdesk run --set`): `bind(store, params)` resolves parameters that refer to data in
    the database (a dataset built there) before the items are listed; `template_samples()`
    gives a value of each template slot to check a custom template with (bound by
    `default_capabilities`: "a sample text" per slot)."""

    template_samples: Callable[[], dict[str, Any]]
    bind: Callable[[Any, dict[str, Any]], dict[str, Any]] = lambda store, params: params
    #: the wordings a run may ask its items in (`Wording`; 0 = the published one): a
    #: probe without other wordings has only wording 0
    wordings: Callable[[], list[Any]] = lambda: [AS_PUBLISHED]


@dataclass(frozen=True)
class AuditSizing(_Capability):
    """How an audit sizes the probe to a time budget (`gbdesk.workflows.audit`, the Audit pane) and
    which subset `--limit` keeps (`gbdesk.workflows.runs`).

    `sizes()`: `AuditSize`s smallest first (default bound: seeded samples of 2, 5, 10
    items, then the ladder of item counts at the default attempts); `tokens(params,
    generation)`: (requests, tokens generated, prompt tokens beyond the item's) of one
    attempt at most; `precision(params, n_items, attempts)`: the `Precision` a run of that
    size should reach, None: unknown; `balance_key(metadata)`: the group an item belongs
    to that a subset must keep (None: any subset will do); `refuse_unbalanced`: a --limit
    below the number of groups is refused (else the first items are kept and the run's
    subset note names `balance_needed_for`)."""

    sizes: Callable[[], list[Any]]
    priority: int = 50  # the order an audit with little time fits probes in (lower first)
    tokens: Callable[[dict[str, Any], dict[str, Any]], tuple[int, float, float]] = one_request
    precision: Callable[[dict[str, Any], int, int], Any] = _none
    balance_key: Callable[[dict[str, Any]], Hashable | None] = _none
    balance_needed_for: str = "the probe's headline metric"
    refuse_unbalanced: bool = True
    #: tokens an answer is expected to have before any was measured (the audit's prior;
    #: None: as many as the probe allows, `max_tokens`)
    answer_tokens: float | None = None


@dataclass(frozen=True)
class Labelling(_Capability):
    """Automatic and human labels beyond `Probe.label` (results, report, `gbdesk review`,
    `gbdesk import-labels`, `gbdesk label`, PPI).

    `source_prefix()`: prefix of the sources `Probe.label` writes (relabelling);
    `auto_source(params)`: the automatic label source the metrics use (None: any);
    `detector_title(params)`: what writes the automatic labels, in words;
    `human_label(response, metadata, value, reviewer)`: a reviewer's label from its text
    form; `from_rows(response, metadata, rows, rater)`: a rater's label from the rows of an
    imported file (None: unlabelled); `labels_differ(auto, human)`: whether a reviewer
    changed a label (PPI); `passes()`: `LabellingPass`es over stored texts."""

    human_label: Callable[[str, dict[str, Any], str, str], dict[str, Any]]
    from_rows: Callable[[str, dict[str, Any], list[dict[str, Any]], str], dict[str, Any] | None]
    source_prefix: Callable[[], str] = lambda: ""
    auto_source: Callable[[dict[str, Any] | None], str | None] = _none
    detector_title: Callable[[dict[str, Any] | None], str] = lambda params: "the automatic labeller"
    labels_differ: Callable[[dict[str, Any], dict[str, Any]], bool] = label_strings_differ
    passes: Callable[[], list[Any]] = _empty_list


@dataclass(frozen=True)
class Review(_Capability):
    """The review queue and the Review pane (`gbdesk.people.review`, `gbdesk review`).

    `category(label, data)`: 0 hardest (reviewed first), 1 undecided, 2 decided;
    `margin(label, data)`: within a category, smaller first; `confidence(label, data)`: the
    automatic label's calibrated chance of being right, or None; `undecided(label)`,
    `is_tie(label, data)`: the filters of those names; `extras(store, run_id)`: attempt id
    → what the probe's view needs beyond the label; `title(review_item)`: the queue's entry
    in words; `view`: the probe's Qt review view, "module:Class" ("." = the probe's
    package), None: the generic one; `filters`: the queue's filters beyond "all",
    "unreviewed" and "disagreements"; `quality(pairs)` and `quality_summary(quality)`: a
    probe-specific detector quality from (automatic, human) label rows and one sentence
    on it (None: per-label precision and recall instead); `reviewable`: whether people
    review the labels at all (not for scores)."""

    reviewable: bool = True
    filters: dict[str, str] = field(default_factory=dict)
    category: Callable[[str, dict[str, Any]], int] = lambda label, data: 2
    margin: Callable[[str, dict[str, Any]], float] = lambda label, data: 0.0
    undecided: Callable[[str], bool] = lambda label: False
    is_tie: Callable[[str, dict[str, Any]], bool] = lambda label, data: False
    confidence: Callable[[str, dict[str, Any]], float | None] = _none
    extras: Callable[[Any, int], dict[int, dict[str, Any]]] = _empty_dict
    title: Callable[[Any], str] = attempt_title
    view: str | None = None
    quality: Callable[[list[tuple[dict[str, Any], dict[str, Any]]]], dict[str, Any]] = _empty_dict
    quality_summary: Callable[[dict[str, Any]], str | None] = _none


@dataclass(frozen=True)
class Ratings(_Capability):
    """Agreement between raters (`gbdesk.people.raters`) and the labels' measured accuracy
    (`gbdesk.analysis.label_accuracy`).

    `units(label, metadata)`: label kind → {part of the attempt → value} raters agree or
    disagree on; `kinds()`: titles of those kinds; `label_units(label, metadata)`: the
    units of an automatic label with the labeller's confidence in each (default bound:
    every part at `Review.confidence`); `words`: how the accuracy names the units
    (`AccuracyWords`)."""

    label_units: Callable[[dict[str, Any], dict[str, Any]], dict[Hashable, Any]]
    words: Any  # AccuracyWords
    units: Callable[[dict[str, Any], dict[str, Any]], dict[str, dict[str, Hashable]]] = (
        label_string_unit
    )
    kinds: Callable[[], dict[str, str]] = lambda: {"label": "Label"}


@dataclass(frozen=True)
class FlatFacts(_Capability):
    """The flat table: fast columnar metrics at the papers' scale (`gbdesk.analysis.flat`; used by
    results, the importer and the label accuracy). A probe with this capability gets its
    labels' flat rows written with them and its metrics read from those rows.

    `facts(label, response, metadata)`: rows (k, a, b, c, d, x) of one label row, None: no
    flat form; `metrics(flat_run, params)` and `extra_results(flat_run, params)`: the
    probe's metrics and extra results from a `gbdesk.analysis.flat.FlatRun` (identical values; None:
    not available); `label_units(flat_run)`: (attempt ids, confidences) of every automatic
    label's units as numpy arrays, None: not available."""

    facts: Callable[[dict[str, Any], str, dict[str, Any]], list[tuple[Any, ...]] | None]
    metrics: Callable[[Any, dict[str, Any] | None], dict[str, Any] | None] = _none
    extra_results: Callable[[Any, dict[str, Any] | None], dict[str, Any] | None] = _none
    label_units: Callable[[Any], tuple[Any, Any] | None] = _none


@dataclass(frozen=True)
class ScoreFrame(_Capability):
    """A scoring probe: each attempt scores a block of sentences (no text to review or
    export per attempt); its metrics may be computed from the run's stored scores read as
    one pandas frame (`Store.score_frame`) — `metrics(frame, params)` and
    `extra_results(frame, params)`, identical values; None: not available."""

    metrics: Callable[[Any, dict[str, Any] | None], dict[str, Any] | None] = _none
    extra_results: Callable[[Any, dict[str, Any] | None], dict[str, Any] | None] = _none


@dataclass(frozen=True)
class Resampling(_Capability):
    """Fast resampled metrics (`gbdesk.maths.resampling`: paired comparisons, bootstraps):
    `metrics(results, params, w, idx=None)` → metric name → numpy array of its value in
    each resample, equal to `Probe.metrics(…, bootstrap=False)` on the drawn items (`w`:
    resamples × items, how often each is drawn; `idx`: drawn positions in draw order)."""

    metrics: Callable[..., dict[str, Any] | None]


@dataclass(frozen=True)
class Intervals(_Capability):
    """Closed-form intervals that hold their level (`gbdesk.analysis.intervals`):
    `estimators(results, pool)` → metric name → a `gbdesk.maths.intervals.Estimator` on the
    items (`pool`: the number of items the run samples from, None: infinite);
    `pool(params)` → that number for a run's parameters (None: unknown or infinite)."""

    estimators: Callable[[list[Any], int | None], dict[str, Any]]
    pool: Callable[[dict[str, Any] | None], int | None] = _none


@dataclass(frozen=True)
class Ppi(_Capability):
    """Prediction-powered estimates (`gbdesk.analysis.ppi_metrics`, `gbdesk compare`).

    `unit`: what the random review sample draws and the metrics average over ("attempt",
    or "item" for means over items); `resampled(units, params, w)`: resampled metrics over
    review units (None: recompute `metrics`; default bound: `Resampling.metrics` when units
    are items); `evaluator(units, params)`: `resampled` bound to its units, asked for many
    weight matrices; `paired_test_exclusion(metric)`: why a metric gets no paired test
    between two runs, None: it is tested."""

    resampled: Callable[[list[Any], dict[str, Any] | None, Any], dict[str, Any] | None]
    evaluator: Callable[[list[Any], dict[str, Any] | None], Callable[[Any], Any]]
    unit: str = "attempt"
    paired_test_exclusion: Callable[[str], str | None] = _none


@dataclass(frozen=True)
class Coding(_Capability):
    """Coding texts with a codebook (`gbdesk.people.coding`, `gbdesk code`, the Review pane's
    coding mode): `view` the mode's Qt view ("module:Class"; None: no coding mode in the
    pane), `title` its name, `codebook()` the codebook a run starts with (None: empty),
    `candidates(attempts, params, threshold)` the `CodingCandidates` worth coding (None:
    any attempt)."""

    view: str | None = None
    title: str = "Codes"
    codebook: Callable[[], dict[str, Any] | None] = _none
    candidates: Callable[..., Any] = _none


@dataclass(frozen=True)
class Importing(_Capability):
    """Results made elsewhere (`gbdesk import`, the Import pane): `plan(path, model_name=…,
    template=…, deal_rows=…)` reads and validates a whole file — nothing written — and
    returns the `ImportedRun`s to create (None: the importer's own layout, `response` rows
    placed by `item` or by `prompt`, `gbdesk.workflows.importer.plan_prompt_response_import`);
    `item(record)` rebuilds an item a row names that is not one of the probe's (None: none);
    `hint()` what to add to a file whose prompts match no item."""

    plan: Callable[..., list[Any]] | None = None
    item: Callable[[dict[str, Any]], Any] = _none
    hint: Callable[[], str] = lambda: ""


@dataclass(frozen=True)
class Exporting(_Capability):
    """The CSV export of a run (`gbdesk export`, the Results pane's export): `tables(attempts,
    params)` the probe's own files (name → (columns, rows)); `per_attempt`: every row comes
    from one attempt (the export may hand them a chunk at a time); `files`: the export's
    files → the commands that read them back (a file given to another command is refused
    naming the one it reads)."""

    tables: Callable[
        [list[dict[str, Any]], dict[str, Any] | None],
        dict[str, tuple[list[str], list[dict[str, Any]]]],
    ] = _empty_dict
    per_attempt: bool = False
    files: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_EXPORT_FILES))


@dataclass(frozen=True)
class Presentation(_Capability):
    """How results read for people (Results pane, report, `gbdesk results`, findings).

    `metric_title(name)`, `metric_description(name)`, `metric_bounds(name)` (what the metric
    can be, for clipping intervals; None: unbounded) — defaults bound from the probe's
    `metric_titles`, card and mark bands; `why_undefined(name, metrics)`: why a metric has
    no value (None: the generic reason); `item_title(item, metadata)`: an item in words;
    `report_blocks(extra, params)`: the report's blocks beyond the metric groups;
    `result_view`: the Qt view below the Results pane's plots ("module:Class")."""

    metric_title: Callable[[str], str]
    metric_description: Callable[[str], str]
    metric_bounds: Callable[[str], tuple[float, float] | None]
    why_undefined: Callable[[str, dict[str, Any]], str | None] = _none
    item_title: Callable[[str, dict[str, Any]], str] = item_key
    report_blocks: Callable[[dict[str, Any], dict[str, Any]], list[Any]] = _empty_list
    result_view: str | None = None


#: one group an answer decides about: (its value of each dimension, whether the answer
#: favoured it — None when the answer could not be read)
Candidacy = tuple[dict[str, str], bool | None]


@dataclass(frozen=True)
class GroupRates(_Capability):
    """A probe whose answers decide about people: which groups each answer decides about
    and whether it favoured them, for the group tables (`gbdesk.analysis.group_rates`: per
    group its items, answers and rate, and the ratio to the highest group's rate with its
    interval — NYC Local Law 144's impact ratio — with the groups left out and why).

    `candidacies(label, metadata)` reads one answer (its label; the prompt's metadata over
    the item's): the groups it decides about, each ({dimension: value}, favoured) — one
    for a decision about one person (a yes for a woman), one per group for a choice among
    groups (whether a man, whether a woman was ranked first); favoured is None when the
    answer could not be read (counted per group, in no rate); [] for an answer about no
    group. `tables`: each table's dimensions, e.g. (("gender",), ("race", "gender")).
    `rate`: the rate's name ("Yes-rate") and `favoured` which answers count, as words after
    "answers" ("that are a yes"). `per_item`: the rate is the mean over items of each item's
    share of favourable answers (as the probe's own metric is computed), else favourable ÷
    answers. `exclusive`: an answer favours at most one of the groups it decides about (a
    choice), so two groups decided in the same answers get the interval of one's share of
    the two.
    `value_title(dimension, value)` names a value in the table ("women")."""

    candidacies: Callable[[str, dict[str, Any]], list[Candidacy]]
    rate: str
    favoured: str
    tables: tuple[tuple[str, ...], ...] = (("gender",),)
    per_item: bool = False
    exclusive: bool = False
    value_title: Callable[[str, str], str] = lambda dimension, value: value


@dataclass(frozen=True)
class Capabilities(_Capability):
    """Everything a probe offers beyond the `Probe` contract (see the module docstring and
    docs/adding_a_study.md for which feature asks for which)."""

    running: Running
    parameters: Parameters
    audit: AuditSizing
    labelling: Labelling
    review: Review
    ratings: Ratings
    presentation: Presentation
    ppi: Ppi
    importing: Importing = field(default_factory=Importing)
    exporting: Exporting = field(default_factory=Exporting)
    coding: Coding = field(default_factory=Coding)
    resampling: Resampling | None = None
    intervals: Intervals | None = None
    flat: FlatFacts | None = None
    scores: ScoreFrame | None = None
    groups: GroupRates | None = None


# -- the values some capabilities take ---------------------------------------------------
@dataclass(frozen=True)
class Wording:
    """One wording of a probe's prompts (`Parameters.wordings`; `gbdesk run --wordings`):
    only the frame changes — instructions, the answer format asked for, the order of the
    options — never an item's content. Wording 0 is the published one (the probe's first
    template preset, byte for byte).

    `template` fills the probe's template slots; `kind` says what was changed
    ("instruction", "format", "order", or several joined by "+"); `note` how it was
    written; `read_as` maps each answer the probe's reader knows to a regular expression
    of the answer format this wording asks for (None: the probe's own reader reads it);
    `option_order` the positions of the options in this wording (None: the probe's)."""

    id: int
    name: str
    kind: str = "published"
    template: str | None = None
    note: str = ""
    read_as: dict[str, str] | None = None
    option_order: tuple[int, ...] | None = None


#: the published wording, the only one a probe without others has
AS_PUBLISHED: Wording = Wording(0, "as published", note="the study's own wording")


def wording_id(params: dict[str, Any]) -> int:
    """The wording a run's parameters ask for (0 when they name none)."""
    return int(params.get("wording") or 0)


@dataclass(frozen=True)
class LabellingPass:
    """A labelling pass a probe offers over a run's stored texts, e.g. a study's
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
