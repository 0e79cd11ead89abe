"""What only the core does with a probe (a study author need not read this): a run's
stored items as each attempt saw them (`RunItems`), the model as an attempt sees it
(`AttemptEngine`), templates, samples and draws of items, `describe`, and the `default_*`
binders that make a probe's default capabilities from its methods.

A probe is typed `ProbeLike` here: `gbdesk.contract.probe` imports this module (its
defaults), so this one cannot import it back."""

from __future__ import annotations

import functools
import importlib
import logging
import math
import random
import re
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict
from typing import Any

from gbdesk.contract.capabilities import (
    AUDIT_ITEM_STEPS,
    AccuracyWords,
    AuditSize,
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
)
from gbdesk.contract.items import (
    Finding,
    Item,
    ItemResult,
    MetricKey,
    Performed,
    prompt_index,
)
from gbdesk.engine.base import (
    DEFAULT_MIN_P,
    DEFAULT_TOP_K,
    Backend,
    GenerationRequest,
    GenerationResult,
)
from gbdesk.maths.stats import MARK_LETTERS, MetricValue
from gbdesk.maths.verdicts import shown_interval, verdict
from gbdesk.support.errors import UserError
from gbdesk.support.format import value_phrase
from gbdesk.support.guards import check_template
from gbdesk.support.limits import LABELLED_CHARS, labelled_part

log = logging.getLogger(__name__)

#: a `gbdesk.contract.probe.Probe` (not imported: that module imports this one)
ProbeLike = Any


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


def new_item_result(row: dict[str, Any]) -> ItemResult:
    """An empty `ItemResult` of a stored item (`Store.run_items` row), its prompts'
    metadata included for an item of several prompts."""
    prompts = [p.get("metadata", {}) for p in row.get("prompts") or ()]
    return ItemResult(row["item"], row["metadata"], [], prompts=prompts)


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
        self: ProbeLike, response: str, metadata: dict[str, Any] | None = None
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


#: the default random seed of `--sample` draws (the reference harness's)
SAMPLE_SEED = 123


# -- what the core does with any probe (not hooks: a probe changes them through its
# -- capabilities) --------------------------------------------------------------------------
def resolve_template(probe: ProbeLike, template: str | None) -> tuple[str, str]:
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


def sample_and_limit(probe: ProbeLike, items: list[Item], params: dict[str, Any]) -> list[Item]:
    """A seeded sample of `params["sample"]` items (the reference harness's `sample_k`), then
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


def draw_order(
    probe: ProbeLike,
    items: list[Item],
    *,
    rng: random.Random | None = None,
    limit: int | None = None,
) -> list[int]:
    """Positions of `items` in an audit's draw order: a seeded random order, stratified by
    `AuditSizing.balance_key` so that every prefix keeps each group's share of the items
    (after one item of every group first: no prefix of the groups' count leaves one out).
    A prefix of it is a random sample of the items, and a longer prefix extends a shorter
    one: an audit grows its sample by taking more of the same order. `rng` (default: the
    audit's seed) and `limit` (the first positions only) serve simulations that draw other
    samples the same way (benchmarks/worlds.py)."""
    sizing = probe.capabilities.audit
    groups: dict[Any, list[int]] = {}
    for position, item in enumerate(items):
        groups.setdefault(sizing.balance_key(item.metadata), []).append(position)
    rng = rng or random.Random(SAMPLE_SEED)
    keys = sorted(groups, key=repr)
    wanted = len(items) if limit is None else min(limit, len(items))

    def size(k: Any) -> int:  # a random subset in random order: as much as `wanted` takes
        return len(groups[k]) if limit is None else min(len(groups[k]), wanted)

    queues = {k: rng.sample(groups[k], size(k)) for k in keys}
    share = {k: len(groups[k]) / max(1, len(items)) for k in keys}
    taken = {k: 0 for k in keys}
    order: list[int] = []
    for k in keys:  # one of each group first
        order.append(queues[k][0])
        taken[k] = 1
    while len(order) < wanted:
        t = len(order) + 1
        # the group furthest below its share of the first t items (ties: key order)
        best, deficit = None, -math.inf
        for k in keys:
            if taken[k] < len(queues[k]) and share[k] * t - taken[k] > deficit:
                best, deficit = k, share[k] * t - taken[k]
        order.append(queues[best][taken[best]])
        taken[best] += 1
    return order


def drawn_subset(probe: ProbeLike, items: list[Item], n: int) -> list[Item]:
    """The first `n` items of `draw_order`, in that order."""
    return [items[i] for i in draw_order(probe, items)[:n]]


def balanced_subset(probe: ProbeLike, items: list[Item], limit: int) -> list[Item]:
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


def label_values(probe: ProbeLike) -> list[str]:
    """The values of the probe's `label_options`."""
    return [o.value for o in probe.label_options]


def view_class(probe: ProbeLike, target: str | None) -> type | None:
    """The Qt class a capability names ("module:Class"; a module starting with "." is
    relative to the probe's package); imports Qt: app only. None for None."""
    if not target:
        return None
    module, _, attr = target.partition(":")
    package = type(probe).__module__.rpartition(".")[0]
    return getattr(importlib.import_module(module, package), attr)


def describe(probe: ProbeLike) -> dict[str, Any]:
    """The probe as JSON (`gbdesk probes --json`)."""
    return {
        "name": probe.name,
        "version": probe.version,
        "study": probe.study,
        "title": probe.card.title,
        "kind": probe.capabilities.running.kind,
        "templates": dict(probe.templates),
        # the wordings a run may ask its items in (0: the study's own; docs/wordings.md)
        "wordings": [
            {"id": w.id, "name": w.name, "kind": w.kind, "note": w.note}
            for w in probe.capabilities.parameters.wordings()
        ],
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
def default_capabilities(probe: ProbeLike) -> Capabilities:
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


def default_template_samples(probe: ProbeLike) -> dict[str, Any]:
    """A value of each template slot, of the type `all_items` fills it with, to check a
    custom template by filling it in once (`guards.check_template`)."""
    return {slot: "a sample text" for slot in probe.template_slots}


def default_audit_sizes(probe: ProbeLike) -> list[AuditSize]:
    """Seeded samples of 2, 5, 10 items with one attempt, then 10, 20, 50 … items and all
    of them with the probe's default attempts (smallest first)."""
    total = len(probe.all_items(next(iter(probe.templates.values()))))
    a = probe.default_attempts
    sizes = [AuditSize(1, sample=n) for n in (2, 5, 10) if n < total]
    sizes += [AuditSize(a, sample=n) for n in AUDIT_ITEM_STEPS if 10 <= n < total and a > 1]
    sizes.append(AuditSize(a))
    return sizes


def default_human_label(
    probe: ProbeLike, response: str, metadata: dict[str, Any], value: str, reviewer: str
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
    probe: ProbeLike,
    response: str,
    metadata: dict[str, Any],
    rows: list[dict[str, Any]],
    rater: str,
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
    probe: ProbeLike, label: dict[str, Any], metadata: dict[str, Any]
) -> dict[Hashable, Any]:
    """Every part of `Ratings.units` at `Review.confidence`. A probe whose labeller gives a
    confidence gets, through this, its confidences recalibrated on the random review
    sample and the labels' share right estimated."""
    caps = probe.capabilities
    confidence = caps.review.confidence(label.get("label", ""), label.get("data") or {})
    parts = dict.fromkeys(p for v in caps.ratings.units(label, metadata).values() for p in v)
    return dict.fromkeys(parts, confidence)


def default_metric_title(probe: ProbeLike, name: str) -> str:
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


def default_metric_description(probe: ProbeLike, name: str) -> str:
    """The card's words on the metric (by name, then by "{…}" pattern), else ""."""
    if name in probe.card.metrics:
        return probe.card.metrics[name]
    for pattern, text in probe.card.metrics.items():
        prefix = pattern.split("{")[0]
        if "{" in pattern and name.startswith(prefix):
            return text
    return ""


def default_metric_bounds(probe: ProbeLike, name: str) -> tuple[float, float] | None:
    """What the metric can be (e.g. 0–1 for a share), for showing intervals that the
    bootstrap's normal fit stretched past it; the union of its mark bands, else None."""
    definition = probe.mark_definitions.get(name)
    return definition.overall_range if definition is not None else None


def default_ppi_resampled(
    probe: ProbeLike, units: list[ItemResult], params: dict[str, Any] | None, w: Any
) -> dict[str, Any] | None:
    """`Resampling.metrics` when the review units are items; None otherwise (the core
    recomputes `metrics` instead)."""
    caps = probe.capabilities
    if caps.ppi.unit == "item" and caps.resampling is not None:
        return caps.resampling.metrics(units, params, w)
    return None


def default_ppi_evaluator(
    probe: ProbeLike, units: list[ItemResult], params: dict[str, Any] | None
) -> Callable[[Any], dict[str, Any] | None]:
    """`Ppi.resampled` bound to its units, asked for many weight matrices (the
    prediction-powered bootstrap evaluates a big run's resamples a chunk at a time)."""
    return functools.partial(probe.capabilities.ppi.resampled, units, params)


def default_params(
    probe: ProbeLike,
    template: str | None,
    limit: int | None,
    sample: int | None,
    draw: int | None,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """`Probe.resolve_params`: the run's parameters from the user's choices."""
    if extra:
        raise UserError(f"{probe.name} has no parameter(s) {', '.join(sorted(extra))}")
    template_name, template_text = resolve_template(probe, template)
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


def default_findings(probe: ProbeLike, metrics: dict[str, MetricValue]) -> list[Finding]:
    """`Probe.findings`: one per marked metric, worst mark first; the mark only when its
    interval decides it (`gbdesk.maths.verdicts`), else the marks it allows; no zero-width
    interval from too few items."""

    title = probe.capabilities.presentation.metric_title
    out = []
    for name in probe.mark_definitions:
        m = metrics.get(name)
        if m is None or m.value != m.value or not m.mark:
            continue
        # the mark only when its interval decides it (`gbdesk.maths.verdicts`), else
        # the marks it allows; no zero-width interval from too few items
        v = verdict(probe.mark_definitions[name], m.ci, m.n)
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


def score_block(probe: ProbeLike, engine: AttemptEngine, item: dict[str, Any]) -> Performed:
    """`ScoringProbe.perform`: score the item's sentences; the scores stored with the
    attempt, a one-line summary as its text."""
    sentences = probe.sentences(item["metadata"])
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
    return Performed(summary, probe.label(summary.text, item["metadata"]), None, scores)


#: a wording id as typed: ASCII digits only (`str.isdigit` and `int` take "²" and "٣")
_WORDING_ID = re.compile(r"[0-9]{1,3}")


def wording_ids(text: str) -> list[int] | None:
    """THE reading of `--wordings` (run, items, audit): None for "all", else the ids of
    "0,2,3" — each 0 to 999 in ASCII digits; `UserError` (one line) for anything else."""
    if text.strip().lower() == "all":
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(_WORDING_ID.fullmatch(part) for part in parts):
        shown = text if len(text) <= 24 else text[:20] + "…"
        raise UserError(f"--wordings takes 'all' or ids such as 0,2,3, not {shown!r}")
    return [int(part) for part in parts]


def refuse_template_with_wordings(template: str | None, wordings: str | None) -> None:
    """THE rule of `--template` with `--wordings` (run and items alike): each wording
    brings its own template, so the two are not given together."""
    if template is not None and wordings is not None:
        raise UserError("--wordings brings each wording's own template: drop --template")


def parse_wordings(text: str | None, available: Sequence[Any]) -> list[int]:
    """`--wordings all` or `0,2,3` → the wording ids, checked (None → [0])."""
    ids = [w.id for w in available]
    if text is None:
        return [0]
    chosen = wording_ids(text)
    if chosen is None:
        return ids
    missing = [c for c in chosen if c not in ids]
    if missing or not chosen:
        what = f"no wording {', '.join(map(str, missing))}" if missing else "none named"
        raise UserError(
            f"--wordings {text}: {what} (this probe has wordings {', '.join(map(str, ids))})"
        )
    return list(dict.fromkeys(chosen))


def wording_kwargs(wording: int) -> dict[str, int]:
    """`resolve_params` keywords for a wording (none for wording 0, which every probe has)."""
    return {"wording": wording} if wording else {}
