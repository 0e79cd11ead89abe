"""What GenderBench 1.1.0's probes share, in gbdesk's terms.

A GenderBench probe (1.1.0 `probing/probe.py`) is items (each with one or more prompts,
sampled `num_repetitions` times), an *evaluator* that turns an answer into a value or
*undetected*, and a *metric calculator* over items. `GenderBenchProbe` maps that shape
onto gbdesk's `Probe`:

* items and prompts: `all_items` builds 1.1.0's `ProbeItem`s at `DefaultHarness`'s
  parameters, in 1.1.0's order (`multi_prompt_item` for items of several prompts);
  `harness_sample` is `sample_k` (1.1.0 samples with `random.seed(seed)` +
  `random.sample`, which `gbdesk.contract.running.sample_and_limit` reproduces);
* evaluator: `evaluate(response, metadata)` → the value, or None for *undetected*
  (`metadata` holds the prompt's metadata merged over the item's, as 1.1.0's evaluators
  read `attempt.prompt.metadata`); the stored label is the value as text, or
  ``"undetected"``;
* metric calculator: `calculate(items)` on `ItemResult`s, after `filter_undetected`
  (items whose every attempt is undetected are dropped and the two undetected rates
  added) unless `filters_undetected` is False, as in 1.1.0's `@filter_undetected`;
* intervals: 1.1.0's bootstrap — `random.seed(seed)`, 1000 × `random.choices(items,
  k=len(items))`, `calculate` on each resample, then `genderbench_interval`; gbdesk keeps
  the point estimate (`calculate` on all items) beside the interval;
* marks: 1.1.0's `MarkDefinition.calculate_mark` on the interval (the best mark whose
  range overlaps it; none when the interval is NaN).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from gbdesk.contract import GenerationProbe, Item, ItemResult, MetricGroup, Wording, wording_id
from gbdesk.contract.capabilities import (
    DEFAULT_EXPORT_FILES,
    AuditSizing,
    Capabilities,
    GroupRates,
    Intervals,
    PrecisionRule,
    Resampling,
)
from gbdesk.contract.running import SAMPLE_SEED, default_metric_bounds, sample_and_limit
from gbdesk.maths.stats import MARK_LETTERS, MarkDefinition, MetricValue
from gbdesk.maths.stats import iter_bootstrap_resamples as _bootstrap_resamples
from gbdesk.studies.genderbench.metric import Metric, apply_declarations, declared_bounds
from gbdesk.studies.genderbench.resampling import (
    BOOTSTRAP_CYCLES,
    RANDOM_SEED,
    GenderBenchResampling,
)
from gbdesk.studies.genderbench.rewordings import probe_wordings, read_answer, wording_by_id
from gbdesk.studies.genderbench.words import GenderBenchWords
from gbdesk.support.errors import UserError

#: export files of every GenderBench probe: the generation probe's, plus Report 1.1's
#: normalized table (written by a multi-run export; no command reads it back)
EXPORT_FILES: dict[str, tuple[str, ...]] = {
    **DEFAULT_EXPORT_FILES,
    "genderbench_normalized.csv": (),
}

UNDETECTED = "undetected"
#: an audit's precision when a probe gives none: a share of the items
SHARE_PRECISION = PrecisionRule(
    "",
    0.25,
    "about ±{half:.2f}: the bootstrap interval of a share of {n_items} items is at most "
    "1.96 × 0.5/√items wide on each side (differences between groups are wider)",
)


def genderbench_bounds(name: str) -> tuple[float, float] | None:
    """What a GenderBench metric can be, read from 1.1.0's metric names: the largest or
    absolute gap between two shares (`max_diff…`, `diff_abs…`) 0–1; a signed gap
    (`diff_…`, `…_diff`, `…_diff_…`) −1–1; a count (`…_tp`, `_fp`, `_tn`, `_fn`) 0 or more;
    a correlation −1–1; a share or rate (`…rate…`, `…frequency…`, `…_tpr`, `…_tnr`,
    `…_male`, `…_female`) 0–1; None for slopes (`…regression…`) and anything else."""
    if "regression" in name:
        return None
    if name.startswith("max_diff") or "diff_abs" in name:
        return (0.0, 1.0)
    if name.startswith("diff_") or name.endswith("_diff") or "_diff_" in name:
        return (-1.0, 1.0)
    if name.endswith(("_tp", "_fp", "_tn", "_fn")):
        return (0.0, math.inf)
    if name == "correlation":
        return (-1.0, 1.0)
    if "rate" in name or "frequency" in name or name.endswith(("_tpr", "_tnr", "_male", "_female")):
        return (0.0, 1.0)
    return None


def mark_of(definition: MarkDefinition | None, ci: tuple[float, float]) -> str | None:
    """1.1.0's `calculate_mark` on an interval (None where it gives NaN)."""
    if definition is None or math.isnan(ci[0]) or math.isnan(ci[1]):
        return None
    return definition.mark(ci)


def nanmean(values: Iterable[float]) -> float:
    """1.1.0's `utils.math.nanmean`: NaN for no values, else `np.nanmean` (NaN when every
    value is NaN)."""
    values = list(values)
    if not values:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(values))


def zero_div(a: float, b: float) -> float:
    """1.1.0's `utils.math.zero_div`: a / b, NaN when b is 0."""
    return math.nan if b == 0 else a / b


class GenderBenchProbe(GenderBenchResampling, GenderBenchWords, GenerationProbe):
    """Base of the probes of GenderBench 1.1.0's `DefaultHarness` (see the module).

    A subclass sets `name`, `version`, `card`, `templates` (with a ``"genderbench-1.1"``
    preset), `template_slots`, `label_options`, `mark_definitions`, `harness_attempts`
    (`num_repetitions` in DefaultHarness), optionally `harness_sample` (`sample_k`),
    and implements `all_items`, `evaluate` and `calculate`; `finding_sentence` words its
    marked metrics. Its metrics are declared once, in `metric_declarations`."""

    #: the probe's metrics, each declared once (`metric.Metric`): marks, headline, titles,
    #: card and Report 1.1's tables are derived from them
    metric_declarations: ClassVar[tuple[Metric, ...]] = ()
    #: the version of the probe's own code, recorded with its runs
    version: ClassVar[str] = "1"
    #: DefaultHarness's `num_repetitions` of this probe (attempts per prompt)
    harness_attempts: ClassVar[int] = 1
    #: DefaultHarness's `sample_k` (None: every item)
    harness_sample: ClassVar[int | None] = None
    #: whether the metric calculator is decorated with `@filter_undetected`
    filters_undetected: ClassVar[bool] = True
    #: the evaluator's name and version, the labels' source
    evaluator_name: ClassVar[str] = ""
    evaluator_version: ClassVar[str] = "1"
    review_filters: ClassVar[dict[str, str]] = {"undetected": "Undetected answers"}
    audit_priority: ClassVar[int] = 20
    #: tokens an answer is expected to have before an audit measured any (its prior):
    #: GenderBench's prompts that ask for a letter, a word or yes/no get about 60 (chat
    #: models add a sentence of reasons); None: a text, as long as the probe allows
    answer_tokens_prior: ClassVar[float | None] = None
    #: what a subset without one group of `balance_key` could not measure (words)
    balance_needed_for: ClassVar[str] = AuditSizing.balance_needed_for
    #: the `PrecisionRule` of the audit's half-width (default: `SHARE_PRECISION` of the
    #: first marked metric)
    audit_precision: ClassVar[PrecisionRule | None] = None
    #: a --limit below the number of groups is refused (True) or keeps the first items
    refuse_unbalanced: ClassVar[bool] = True
    #: what the findings point to, and what they say of unreadable answers (`{pct}`)
    evidence_title: ClassVar[str] = "every item's answers"
    undetected_finding: ClassVar[tuple[str, str]] = (
        "GenderBench's evaluator could not read {pct} of the answers; they are left out of "
        "the other metrics (review some of them).",
        "the answers the evaluator could not read",
    )
    #: each marked metric's finding in plain words, without its mark: metric -> a function
    #: of its value (the probe folder's `words.FINDINGS`; none: the default wording)
    finding_words: ClassVar[Mapping[str, Callable[[MetricValue], str]]] = {}
    #: the probe folder's `words` module: its `FINDINGS` become `finding_words`, and its
    #: `summary(probe, metrics)`, `breakdown_groups`, `item_title` and `review_title`, where
    #: it has them, the class's (unless the class defines its own)
    words: ClassVar[Any] = None
    #: the probe folder's `card` module: its `CARD`, `METRICS` and `LABELS` become the
    #: class's `card`, `metric_declarations` and `label_options` (unless it sets its own)
    card_data: ClassVar[Any] = None
    #: the metric group of unreadable answers: title and description
    undetected_group: ClassVar[tuple[str, str]] = (
        "Answers the evaluator could not read",
        "Attempts whose answer GenderBench's evaluator could not read, and items with no "
        "readable answer (left out of the other metrics).",
    )

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """The review queue's undetected filter and titles, GenderBench's evaluator as the
        labeller, audits sized by the headline share's interval, subsets that keep every
        group of `balance_key`, metrics that are means over items, resampled fast, and the
        group tables of a probe that decides about people (`group_rates`)."""
        caps = super().capabilities
        return caps.with_(
            labelling=caps.labelling.with_(
                source_prefix=self.builtin_source_prefix, detector_title=self.detector_title
            ),
            review=caps.review.with_(
                filters=self.review_filters, undecided=self.undecided, title=self.review_title
            ),
            presentation=caps.presentation.with_(
                item_title=self.item_title, metric_bounds=self.metric_bounds
            ),
            audit=caps.audit.with_(
                priority=self.audit_priority,
                precision=self.audit_precision or caps.audit.precision,
                balance_key=self.balance_key,
                balance_needed_for=self.balance_needed_for,
                refuse_unbalanced=self.refuse_unbalanced,
                answer_tokens=self.answer_tokens_prior,
            ),
            # the metrics are means over items, bootstrapped over items
            ppi=caps.ppi.with_(unit="item"),
            resampling=Resampling(self.resampled_metrics),
            intervals=Intervals(self.estimators, self.pool_size),
            exporting=caps.exporting.with_(files=EXPORT_FILES),
            parameters=caps.parameters.with_(wordings=self.wordings),
            groups=self.group_rates(),
        )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "card_data" in cls.__dict__:
            _take_given(cls, cls.card_data, CARD_GIVEN)
        apply_declarations(cls)
        if "words" in cls.__dict__:
            _take_words(cls, cls.words)
        if "harness_attempts" in cls.__dict__ and "default_attempts" not in cls.__dict__:
            cls.default_attempts = cls.harness_attempts
        if cls.audit_precision is None and cls.mark_definitions:
            first = next(iter(cls.mark_definitions))
            cls.audit_precision = dataclasses.replace(SHARE_PRECISION, metric=first)

    # -- parameters --------------------------------------------------------------------
    def resolve_params(
        self,
        template: str | None = None,
        limit: int | None = None,
        sample: int | None = None,
        wording: int | str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The harness's `sample_k` is the `genderbench-1.1` preset's default sample. A
        wording other than 0 (`rewordings`) replaces the template and is recorded as
        ``wording``; wording 0 leaves the parameters as 1.1.0's."""
        chosen = wording_by_id(self.wordings(), int(wording or 0))
        if chosen.id and template is not None:
            raise UserError(
                f"a wording (here {chosen.id}) brings its own template: drop --template"
            )
        params = super().resolve_params(template=template, limit=limit, sample=sample, **extra)
        if chosen.id:
            params["template_name"] = f"wording-{chosen.id}"
            params["template"] = chosen.template
            params["wording"] = chosen.id
        if sample is None and self.harness_sample and params["template_name"] != "custom":
            params["sample"] = self.harness_sample
            params["sample_seed"] = SAMPLE_SEED
        return self.completed_params(params)

    def completed_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """What a probe adds to (or checks in) the resolved parameters, last."""
        return params

    def wordings(self) -> list[Wording]:
        """1.1.0's wording (0) and the probe's others (`rewordings`)."""
        published = self.templates["genderbench-1.1"]
        return list(probe_wordings(self.name, published))

    def items(self, params: dict[str, Any]) -> list[Item]:
        """1.1.0's items; under a wording other than 0, built with its template (and its
        order of the options: `all_items(template, option_order=…)`), each item's
        metadata naming the wording."""
        chosen = wording_by_id(self.wordings(), wording_id(params))
        if chosen.option_order:
            every = self.all_items(params["template"], option_order=chosen.option_order)  # type: ignore[call-arg]
        else:
            every = self.all_items(params["template"])
        items = sample_and_limit(self, every, params)
        if not chosen.id:
            return items
        return [
            dataclasses.replace(i, metadata={**i.metadata, "wording": chosen.id}) for i in items
        ]

    # -- evaluator ---------------------------------------------------------------------
    def evaluate(self, response: str, metadata: dict[str, Any]) -> Any:
        """1.1.0's evaluator: the value of one answer, or None when undetected. Return
        (value, data, evidence) to add label data and the spans a reviewer sees."""
        raise NotImplementedError

    def label(self, response: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        metadata = metadata or {}
        read_as = None
        if metadata.get("wording"):
            read_as = wording_by_id(self.wordings(), int(metadata["wording"])).read_as
        shown: list[Any] | None = None
        if read_as:  # another answer format: read it as the word the evaluator knows
            response, shown = read_answer(response, read_as)
        got = self.evaluate(response, metadata)
        data: dict[str, Any] = {}
        evidence: list[Any] = []
        if isinstance(got, tuple):
            got, data, evidence = got
        if shown is not None:
            evidence = shown
        return {
            "source": f"{self.evaluator_name or self.name}/{self.evaluator_version}",
            "label": UNDETECTED if got is None else str(got),
            "data": data,
            "evidence": evidence,
        }

    def builtin_source_prefix(self) -> str:
        return f"{self.evaluator_name or self.name}/"

    def undecided(self, label: str) -> bool:
        return label == UNDETECTED

    @staticmethod
    def detected(label: str) -> bool:
        return label != UNDETECTED

    # -- metric calculator ------------------------------------------------------------
    def calculate(self, items: list[ItemResult]) -> dict[str, float]:
        """1.1.0's metric calculator on items that kept a detected attempt (after
        `filter_undetected`, unless `filters_undetected` is False)."""
        raise NotImplementedError

    def prepare(self, results: list[ItemResult]) -> Any:
        """Per-item quantities computed once for the point estimate and every resample
        (a probe may vectorise `calculate_at` with them); the default: the items."""
        return results

    def calculate_at(self, prepared: Any, idx: Sequence[int]) -> dict[str, float]:
        """The metrics of the items at positions `idx` (a bootstrap resample, with
        repeats): `filter_undetected`, then `calculate`."""
        items = [prepared[i] for i in idx]
        if not self.filters_undetected:
            return self.calculate(items)
        kept = [r for r in items if any(self.detected(lab) for lab in r.labels)]
        metrics = self.calculate(kept)
        metrics["undetected_rate_items"] = 1 - len(kept) / len(items)
        flags = [not self.detected(lab) for r in items for lab in r.labels]
        metrics["undetected_rate_attempts"] = float(np.mean(flags))
        return metrics

    def support(self, results: list[ItemResult], name: str) -> int:
        """How many items (attempts for the attempt rate) a metric rests on."""
        if name == "undetected_rate_attempts":
            return sum(len(r.labels) for r in results)
        if name == "undetected_rate_items":
            return len(results)
        return sum(1 for r in results if self.readable(r))

    def readable(self, result: ItemResult) -> bool:
        """Whether an item kept an attempt the evaluator could read."""
        return any(self.detected(lab) for lab in result.labels)

    def metrics(
        self,
        results: list[ItemResult],
        bootstrap: bool = True,
        params: dict[str, Any] | None = None,
    ) -> dict[str, MetricValue]:
        results = [r for r in results if r.labels]
        if not results:
            return {}
        prepared = self.prepare(results)
        everything = range(len(results))
        interval = self.interval_rule(params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            point = self.calculate_at(prepared, everything)
            buffer: dict[str, list[float]] = {}
            if bootstrap:
                for idx in _bootstrap_resamples(
                    len(results), BOOTSTRAP_CYCLES, RANDOM_SEED, as_array=True
                ):
                    for name, value in self.calculate_at(prepared, idx).items():
                        buffer.setdefault(name, []).append(float(value))
        shown = self.shown_intervals(results, point) if bootstrap else {}
        out: dict[str, MetricValue] = {}
        for name in sorted(point, key=self._metric_order):
            ci = interval(buffer[name]) if name in buffer else (math.nan, math.nan)
            out[name] = MetricValue(
                value=float(point[name]),
                ci=ci,
                mark=mark_of(self.mark_definitions.get(name), ci),
                n=self.support(results, name),
                ci_shown=shown.get(name),
            )
        return out

    def _metric_order(self, name: str) -> tuple[int, str]:
        if name in self.headline_metrics:
            return (self.headline_metrics.index(name), name)
        if name in self.mark_definitions:
            return (len(self.headline_metrics) + list(self.mark_definitions).index(name), name)
        if name.startswith("undetected"):
            return (999, name)
        return (500, name)

    # -- presentation -----------------------------------------------------------------
    def metric_bounds(self, name: str) -> tuple[float, float] | None:
        """A marked metric's mark bands, else what its name says it can be
        (`genderbench_bounds`): every view cuts its interval there."""
        return (
            declared_bounds(self.metric_declarations, name)
            or default_metric_bounds(self, name)
            or genderbench_bounds(name)
        )

    def graded_metrics(self) -> list[str]:
        """The metrics the findings and the summary grade, in their order (the marked)."""
        return list(self.mark_definitions)

    def breakdown_groups(self, present: set[str] | None) -> list[MetricGroup]:
        """Metric groups beyond the marked metrics (e.g. rates per gender)."""
        return []

    def group_rates(self) -> GroupRates | None:
        """The groups a probe's answers decide about and what favours them, for the group
        tables (`GroupRates`; per group the rate and its ratio to the highest group's);
        None: the probe decides about no one."""
        return None

    def finding_sentence(self, name: str, m: MetricValue) -> str | None:
        """The finding of a marked metric in plain words, without its mark (e.g. "When
        the candidate is a woman, the model hires 8 points less often: 95 % CI 3 to 13"),
        from `finding_words`; None: the default wording."""
        words = self.finding_words.get(name)
        return words(m) if words is not None else None

    # -- review order, where a probe's capabilities ask for it ---------------------------
    def is_tie(self, label: str, data: dict[str, Any]) -> bool:
        """Whether an unreadable answer gave several answers at once (none here)."""
        return False

    def review_category(self, label: str, data: dict[str, Any]) -> int:
        """The review queue's groups (`Review.category`): ties (`is_tie`) first, then the
        other unreadable answers, then the rest."""
        if self.is_tie(label, data):
            return 0
        return 1 if label == UNDETECTED else 2

    # -- audits and subsets -----------------------------------------------------------
    def balance_key(self, metadata: dict[str, Any]) -> Hashable | None:
        """The group of an item a --limit subset keeps (`AuditSizing.balance_key`); None:
        any subset will do."""
        return None


#: what a probe folder's `words` module gives its class: name there → name in the class
WORDS_GIVEN = {
    "FINDINGS": "finding_words",
    "breakdown_groups": "breakdown_groups",
    "item_title": "item_title",
    "review_title": "review_title",
}


#: what a probe folder's `card` module gives its class: name there → name in the class
CARD_GIVEN = {"CARD": "card", "METRICS": "metric_declarations", "LABELS": "label_options"}


def _take_given(cls: type, module: Any, given: dict[str, str]) -> None:
    """Set each of `given` (name in `module` → name in `cls`) that `module` has and `cls`
    does not define itself."""
    for name, attr in given.items():
        if hasattr(module, name) and attr not in cls.__dict__:
            setattr(cls, attr, getattr(module, name))


def _take_words(cls: type, words: Any) -> None:
    """A probe class's findings, groups, titles and summary from its folder's `words`
    module (`GenderBenchProbe.words`), where the class does not define its own."""
    _take_given(cls, words, WORDS_GIVEN)
    if hasattr(words, "summary") and "summary" not in cls.__dict__:
        summary = words.summary

        def summarised(
            self: Any,
            metrics: dict[str, MetricValue],
            extra: dict[str, Any],
            params: dict[str, Any],
        ) -> str:
            return summary(self, metrics)

        cls.summary = summarised


def mark_letter_rank(mark: str | None) -> int | None:
    """0 (A) … 3 (D), as 1.1.0's `mark_value`; None without a mark."""
    return MARK_LETTERS.index(mark) if mark in MARK_LETTERS else None
