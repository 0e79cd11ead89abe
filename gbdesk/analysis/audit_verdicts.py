"""An audit's verdict of every marked metric of a probe at one look.

At each look (`gbdesk.maths.sequential.Looks`) the audit computes, for every marked
metric, from the answers so far:

* the **value** and the reference's own 95 % interval and mark (`Probe.metrics`, its
  bootstrap, unchanged);
* the **audit interval**: the same bootstrap over items (1,000 resamples, seed 123,
  `norm.interval` of the fitted resample values) at the look's level ``1 − α/K`` —
  computed on the answers plus a few **pseudo-answers** spread evenly over the probe's
  readable answer options (about z²/2 of them per prompt: half of what the Agresti–Coull
  interval adds to a proportion, z²/2 successes and as many failures; the simulation of
  `benchmarks/audit_simulation.py` checks that decided verdicts stay right). Without
  them a bootstrap of ten identical answers is a zero-width interval, and an audit would
  decide "no bias" from ten answers that happen to agree; with them, ten identical
  answers leave an interval about as wide as the exact binomial one. Their weight
  vanishes as answers accumulate (z²/2 against n). A probe whose metrics read more than
  the labels (e.g. word counts) takes none (`AuditSizing.pseudo_answers`);
* the **verdict**: the marks the audit interval allows (`gbdesk.maths.verdicts`).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any

from gbdesk.contract import ItemResult, Probe
from gbdesk.contract.running import label_values
from gbdesk.maths.sequential import Looks, interval_at_level
from gbdesk.maths.stats import iter_bootstrap_resamples
from gbdesk.maths.verdicts import Verdict, verdict

#: resamples of the audit interval (the reference's count)
RESAMPLES = 1000
SEED = 123


@dataclass(frozen=True)
class AuditVerdict:
    """One marked metric at one look of an audit."""

    probe: str
    metric: str
    title: str
    value: float
    ci: tuple[float, float]  # the audit interval (valid over all the audit's looks)
    ci95: tuple[float, float]  # the reference's 95 % interval on the same answers
    verdict: Verdict
    items: int  # items with a readable answer the metric rests on
    generations: int  # answers of the probe so far
    level: float  # the audit interval's confidence level

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "metric": self.metric,
            "title": self.title,
            "value": _num(self.value),
            "ci": [_num(self.ci[0]), _num(self.ci[1])],
            "ci_95": [_num(self.ci95[0]), _num(self.ci95[1])],
            "marks": list(self.verdict.marks),
            "decided": self.verdict.decided,
            "verdict": self.verdict.words(),
            "study_mark": self.verdict.study_mark,
            "items": self.items,
            "generations": self.generations,
            "level": round(self.level, 6),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditVerdict:
        v = Verdict(
            data["metric"],
            tuple(data.get("marks") or ()),
            data.get("study_mark"),
            int(data.get("items") or 0),
        )
        return cls(
            data["probe"], data["metric"], data.get("title") or data["metric"],
            _nan(data.get("value")), _pair(data.get("ci")), _pair(data.get("ci_95")), v,
            int(data.get("items") or 0), int(data.get("generations") or 0),
            float(data.get("level") or 0.95),
        )  # fmt: skip


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def _pair(x: Any) -> tuple[float, float]:
    if not x:
        return (math.nan, math.nan)
    return (_nan(x[0]), _nan(x[1]))


def readable_options(probe: Probe) -> list[str]:
    """The answer options a pseudo-answer may take: the probe's labels that are readable
    answers (not "undetected")."""
    undecided = probe.capabilities.review.undecided
    return [v for v in label_values(probe) if not undecided(v)]


def pseudo_items(probe: Probe, results: list[ItemResult], answers: float) -> list[ItemResult]:
    """Pseudo-items, about `answers` answers per prompt in all: copies of the first
    answered items (their metadata and prompts: the design of the probe), each copied once
    per readable option, its k-th copy answering every prompt with the options in turn from
    the k-th on. Every item and every prompt of it (a gender, say) thus gets every option
    equally often: the pseudo-answers show no bias of any kind. [] when the probe takes
    none (`AuditSizing.pseudo_answers`) or has fewer than two options."""
    options = readable_options(probe)
    answered = [r for r in results if r.labels]
    if not probe.capabilities.audit.pseudo_answers or len(options) < 2 or not answered:
        return []
    per_prompt = len(answered[0].labels) / max(1, len(answered[0].prompts) or 1)
    copies = max(1, math.ceil(answers / max(1.0, per_prompt) / len(options)))
    out = []
    for t in range(copies):
        template = answered[t % len(answered)]
        for k in range(len(options)):
            seen: dict[int, int] = {}
            labels = []
            for j in range(len(template.labels)):
                prompt = template.prompt_indices[j] if template.prompt_indices else 0
                a = seen.get(prompt, 0)
                seen[prompt] = a + 1
                labels.append(options[(k + a) % len(options)])
            out.append(
                dataclasses.replace(
                    template,
                    key=f"{template.key}~pseudo{t}.{k}",
                    labels=labels,
                    label_data=[{} for _ in labels],
                    responses=["" for _ in labels],
                )
            )
    return out


def look_verdicts(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    looks: Looks,
    generations: int,
    *,
    resamples: int = RESAMPLES,
    reference: dict[str, Any] | None = None,
    items: int | None = None,
) -> list[AuditVerdict]:
    """Every marked metric of `probe` on `results` at one look (see the module): the look
    at `items` items drawn (default: every result), whose level the grid `looks` sets.
    `reference`: the run's own metrics (`compute_metrics`), whose 95 % intervals and
    marks are the reference's; without them the 95 % interval is recomputed from the same
    resamples (the reference's method, for the marked metrics only)."""
    answered = [r for r in results if r.labels]
    marked = list(probe.mark_definitions)
    drawn = len(results) if items is None else int(items)
    level, z = looks.level_at(drawn), looks.z_at(drawn)
    if not answered or not marked:
        return [_unmeasured(probe, name, generations, level) for name in marked]
    plain = probe.metrics(answered, bootstrap=False, params=params)
    augmented = answered + pseudo_items(probe, answered, z**2 / 2)
    audit_values = _resampled(probe, augmented, params, marked, resamples)
    ninety_five = (
        {} if reference is not None else _resampled(probe, answered, params, marked, resamples)
    )
    out = []
    title = probe.capabilities.presentation.metric_title
    for name in marked:
        m = plain.get(name)
        if m is None or not math.isfinite(m.value):
            out.append(_unmeasured(probe, name, generations, level))
            continue
        bounds = probe.capabilities.presentation.metric_bounds(name)
        ci = interval_at_level(list(audit_values.get(name, [])), level)
        if not ci[1] - ci[0] > 0:
            # the answers do not vary at all (e.g. texts without a counted word): they
            # cannot tell how far the truth is, so the interval is all the metric can be
            ci = bounds or probe.mark_definitions[name].overall_range
        ci = _within(ci, bounds)
        if reference is not None and name in reference:
            ci95 = tuple(reference[name].ci)
        else:
            ci95 = interval_at_level(list(ninety_five.get(name, [])), 0.95)
        v = verdict(probe.mark_definitions[name], ci, m.n, study_ci=ci95)
        out.append(
            AuditVerdict(
                probe.name, name, title(name), m.value, ci, ci95, v, m.n, generations, level
            )
        )
    return out


def _resampled(
    probe: Probe,
    results: list[ItemResult],
    params: dict[str, Any] | None,
    names: list[str],
    resamples: int,
) -> dict[str, Any]:
    """The marked metrics on the reference's bootstrap resamples of `results` (seed 123)."""
    draws = iter_bootstrap_resamples(len(results), resamples, SEED, as_array=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = probe.capabilities.resampling.metrics(
            results, params, [None] * resamples, idx=draws, names=names
        )
    return got or {}


def _within(ci: tuple[float, float], bounds: tuple[float, float] | None) -> tuple[float, float]:
    """The interval cut at what the metric can be."""
    if bounds is None or not all(math.isfinite(x) for x in ci):
        return ci
    lo, hi = bounds
    return (min(max(ci[0], lo), hi), max(min(ci[1], hi), lo))


def _unmeasured(probe: Probe, name: str, generations: int, level: float) -> AuditVerdict:
    nan = (math.nan, math.nan)
    v = verdict(probe.mark_definitions.get(name), nan, 0)
    title = probe.capabilities.presentation.metric_title(name)
    return AuditVerdict(probe.name, name, title, math.nan, nan, nan, v, 0, generations, level)
