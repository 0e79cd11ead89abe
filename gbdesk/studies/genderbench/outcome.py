"""Plain words and shared bits of GenderBench 1.1.0's outcome-disparity probes
(`discrimination_tamkin`, `hiring_an`, `relationship_levy`, `diversity_med_qa`).

Their headline metrics are differences of two rates (e.g. the share of "yes" for men minus
that for women). An auditor reads them as "points": "When the applicant is a man, the
model says yes 4 points more often than for a woman: 95 % CI 1 to 7". `gap_sentence`
words such a difference whichever its sign, the interval in the same direction.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gbdesk.contract import ItemResult, LabelOption
from gbdesk.contract.capabilities import Candidacy, GroupRates
from gbdesk.maths.stats import MetricValue
from gbdesk.studies.genderbench.gb_probe import UNDETECTED
from gbdesk.support.lowered import Lowered

MINUS = "\u2212"

#: the Review pane's "could not read" label, shared by the four probes
UNDETECTED_OPTION = LabelOption("undetected", "Could not read", "U", "#6b7280")


def _digits(*values: float) -> int:
    """Whole points, unless the gap is under one point (then one decimal)."""
    return 1 if all(abs(v) < 0.01 for v in values if not math.isnan(v)) else 0


def signed_points(x: float, digits: int = 0) -> str:
    """A difference of two shares in percentage points ("4", "0.4", "−3")."""
    if math.isnan(x):
        return "—"
    text = f"{abs(100 * x):.{digits}f}"
    negative = x < 0 and float(text) != 0.0
    return f"{MINUS}{text}" if negative else text


def interval_points(lo: float, hi: float, digits: int = 0) -> str:
    """ "95 % CI 1 to 7" in points (signed: "−1 to 7" when it reaches the other way)."""
    if math.isnan(lo) or math.isnan(hi):
        return "no interval"
    return f"95 % CI {signed_points(lo, digits)} to {signed_points(hi, digits)}"


def oriented(
    value: float, ci: tuple[float, float], first: str, second: str
) -> tuple[str, str, float, tuple[float, float]]:
    """(who gets more, who gets less, the gap ≥ 0, its interval) from a difference
    `first − second`: a negative difference swaps the two and turns the interval."""
    if value < 0:
        return second, first, -value, (-ci[1], -ci[0])
    return first, second, value, ci


def gap_sentence(
    value: float,
    ci: tuple[float, float],
    first: str,
    second: str,
    template: str,
) -> str:
    """A difference `first − second` of two rates in words: `template` gets {more} (the
    side favoured), {less} (the other), {gap} (points) and {ci} ("95 % CI 1 to 7").
    E.g. "When the applicant is {more}, the model says yes {gap} points more often than
    for {less}: {ci}"."""
    more, less, gap, (lo, hi) = oriented(value, ci, first, second)
    digits = _digits(gap)
    return template.format(
        more=more,
        less=less,
        gap=signed_points(gap, digits),
        ci=interval_points(lo, hi, digits),
    )


def gap_words(first: str, second: str, template: str) -> Callable[[MetricValue], str]:
    """A gap metric's finding as data: `gap_sentence` of its value and interval."""
    return lambda m: gap_sentence(m.value, m.ci, first, second, template)


def word_spans(text: str, words: Sequence[str]) -> list[list[int]]:
    """[start, end] of every whole-word occurrence of `words` (case-insensitive), for the
    Review pane's highlights."""
    pattern = r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)"
    return [[m.start(), m.end()] for m in re.finditer(pattern, text, re.IGNORECASE)]


def phrase_spans(text: str, phrase: str) -> list[list[int]]:
    """[start, end] in `text` of every occurrence of `phrase` in the lower-cased text."""
    return Lowered(text).find_all(phrase.lower())


class ItemTallies:
    """Per item (parallel to the results): its undetected and total attempts, and whether
    it kept a readable answer. A probe's per-item arrays for the bootstrap extend it."""

    def __init__(self, results: list[ItemResult]):
        self.undetected = np.array([r.labels.count(UNDETECTED) for r in results], dtype=np.int64)
        self.attempts = np.array([len(r.labels) for r in results], dtype=np.int64)
        self.detected = self.undetected < self.attempts

    def metrics_at(
        self, idx: Any, metrics_of: Callable[[np.ndarray], dict[str, float]]
    ) -> dict[str, float]:
        """1.1.0's `filter_undetected` on the items at positions `idx` (a resample, with
        repeats, in draw order): `metrics_of` the positions of those that kept a readable
        answer, plus the two undetected rates over all of them."""
        idx = np.asarray(idx, dtype=np.intp)
        kept = idx[self.detected[idx]]
        metrics = metrics_of(kept)
        metrics["undetected_rate_items"] = 1 - len(kept) / len(idx)
        metrics["undetected_rate_attempts"] = float(
            self.undetected[idx].sum() / self.attempts[idx].sum()
        )
        return metrics


#: the genders of GenderBench's probes as a group table names them
GENDER_GROUPS = {"male": "men", "female": "women", "nonbinary": "non-binary people"}


def group_value_title(dimension: str, value: str) -> str:
    """A value in a group table: a gender as people ("women"), anything else with a
    capital ("Hispanic", "software engineer" as it is)."""
    if dimension == "gender":
        return GENDER_GROUPS.get(value, value)
    if dimension == "race":
        return value[:1].upper() + value[1:]
    return value


def _decision(
    favourable: str, unfavourable: str, dimensions: tuple[str, ...], label: str, md: dict
) -> list[Candidacy]:
    if any(md.get(d) is None for d in dimensions):
        return []
    groups = {d: str(md[d]) for d in dimensions}
    if label == favourable:
        return [(groups, True)]
    if label == unfavourable:
        return [(groups, False)]
    return [(groups, None)]


def decision_groups(
    favourable: str,
    unfavourable: str,
    *,
    rate: str,
    favoured: str,
    tables: tuple[tuple[str, ...], ...] = (("gender",),),
    per_item: bool = False,
) -> GroupRates:
    """The groups of a probe whose every answer decides about one person (yes or no to a
    woman; an acceptance of a man): the prompt's or item's metadata names the person's
    value of each dimension of `tables`; a `favourable` label favours, an `unfavourable`
    one does not, any other could not be read."""
    dims = tuple(dict.fromkeys(d for t in tables for d in t))
    return GroupRates(
        candidacies=functools.partial(_decision, favourable, unfavourable, dims),
        rate=rate, favoured=favoured, tables=tables, per_item=per_item,
        value_title=group_value_title,
    )  # fmt: skip


def _choice(chosen: dict[str, str], pool: dict[str, str], label: str, md: dict) -> list[Candidacy]:
    groups = {d: str(md[k]) for d, k in pool.items() if md.get(k) is not None}
    gender = chosen.get(label)
    readable = label in chosen
    return [
        ({**groups, "gender": g}, (gender == g) if readable else None)
        for g in dict.fromkeys(chosen.values())
    ]


def choice_groups(
    chosen: dict[str, str],
    *,
    rate: str,
    favoured: str,
    tables: tuple[tuple[str, ...], ...] = (("gender",),),
    per_item: bool = True,
    keys: dict[str, str] | None = None,
) -> GroupRates:
    """The groups of a probe whose every answer chooses between genders (whom it ranks
    first, who it says is right): `chosen` maps a label to the gender it chooses (any
    other label could not be read); each answer decides about every gender, favouring
    the one chosen; the other dimensions of `tables` come from the item's metadata, under
    the key `keys` gives a dimension (else its own name)."""
    pool = {d: (keys or {}).get(d, d) for t in tables for d in t if d != "gender"}
    return GroupRates(
        candidacies=functools.partial(_choice, dict(chosen), pool),
        rate=rate, favoured=favoured, tables=tables, per_item=per_item, exclusive=True,
        value_title=group_value_title,
    )  # fmt: skip
