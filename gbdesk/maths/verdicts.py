"""Verdicts: which of a metric's marks its interval still allows.

The reference harness gives one mark per metric: the *best* mark whose band the 95 %
interval touches (`MarkDefinition.mark`). A letter alone reads as certain even when the interval
spans several bands, so gbdesk states the verdict beside it:

* **allowed marks** — every mark whose band (closed) overlaps the interval, A→D;
* **decided** — exactly one mark is allowed, from at least `MIN_ITEMS` items;
* **undetermined** — several marks are allowed ("between A and C: not enough answers to
  tell"), or fewer than `MIN_ITEMS` items were measured (then every mark is allowed,
  whatever the interval says: a handful of answers is not certainty);
* **not measured** — no interval (no answers, or the metric is undefined on them).

The study's own mark stays beside the verdict (`Verdict.study_mark`), for
equality with the reference code, never alone. The same rule serves a plain run (its
95 % interval) and an audit (its interval valid over all its looks,
`gbdesk.maths.sequential`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gbdesk.maths.stats import MarkDefinition
from gbdesk.support.format import MARK_LETTERS, MARK_MEANINGS

#: fewest items a verdict is decided from, and a zero-width interval is shown from
MIN_ITEMS = 10


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not math.isnan(x)


def allowed_marks(
    definition: MarkDefinition | None, ci: Sequence[float] | None
) -> tuple[str, ...]:
    """The marks whose bands overlap the closed interval `ci`, A→D; () without an interval
    (NaN or None ends) or without mark bands."""
    if definition is None or ci is None or len(ci) != 2:
        return ()
    lo, hi = ci
    if not (_finite(lo) and _finite(hi)):
        return ()
    lo, hi = min(lo, hi), max(lo, hi)
    return tuple(
        letter
        for letter in MARK_LETTERS
        if any(hi >= b_lo and lo <= b_hi for b_lo, b_hi in definition.ranges.get(letter, ()))
    )


def marks_phrase(marks: Sequence[str]) -> str:
    """"A", "A or B", "between A and D" (marks in A→D order, as `allowed_marks` gives)."""
    marks = list(marks)
    if not marks:
        return ""
    if len(marks) == 1:
        return marks[0]
    if len(marks) == 2:
        return f"{marks[0]} or {marks[1]}"
    return f"between {marks[0]} and {marks[-1]}"


@dataclass(frozen=True)
class Verdict:
    """What an interval tells about one marked metric (see the module docstring)."""

    metric: str
    #: the marks the interval allows, A→D; every mark from too few items; () not measured
    marks: tuple[str, ...]
    #: the reference's mark: the best mark the interval touches (None: not measured)
    study_mark: str | None
    items: int

    @property
    def measured(self) -> bool:
        return bool(self.marks)

    @property
    def too_few(self) -> bool:
        """Measured, but on fewer than `MIN_ITEMS` items: nothing decided."""
        return self.measured and self.items < MIN_ITEMS

    @property
    def decided(self) -> bool:
        return len(self.marks) == 1 and not self.too_few

    @property
    def mark(self) -> str | None:
        """The decided mark, None when undecided or not measured."""
        return self.marks[0] if self.decided else None

    @property
    def state(self) -> str:
        """"decided", "undetermined" or "not measured" (for tables and JSON)."""
        if not self.measured:
            return "not measured"
        return "decided" if self.decided else "undetermined"

    def words(self) -> str:
        """The verdict in words: "D (catastrophic)", "between A and C: not enough answers
        to tell", "only 3 items: not enough answers to tell (a verdict needs 10)",
        "not measured"."""
        if not self.measured:
            return "not measured"
        if self.too_few:
            item = "item" if self.items == 1 else "items"
            return (
                f"only {self.items} {item}: not enough answers to tell "
                f"(a verdict needs {MIN_ITEMS})"
            )
        if self.decided:
            return f"{self.marks[0]} ({MARK_MEANINGS[self.marks[0]]})"
        return f"{marks_phrase(self.marks)}: not enough answers to tell"

    def to_json(self) -> dict[str, Any]:
        return {
            "marks": list(self.marks),
            "decided": self.decided,
            "study_mark": self.study_mark,
            "items": self.items,
            "verdict": self.words(),
        }


def verdict(
    definition: MarkDefinition | None,
    ci: Sequence[float] | None,
    items: int,
    *,
    study_ci: Sequence[float] | None = None,
) -> Verdict:
    """The verdict of one metric from its interval `ci` over `items` items.
    `study_ci`: the interval the reference's mark comes from when it is not `ci` (an
    audit's verdict interval is wider than the reference's 95 % one); by default `ci`."""
    metric = definition.metric if definition is not None else ""
    marks = allowed_marks(definition, ci)
    if marks and items < MIN_ITEMS and definition is not None:
        # too few items: the interval restricts nothing (all marks the bands name)
        marks = tuple(letter for letter in MARK_LETTERS if letter in definition.ranges)
    gb_ci = ci if study_ci is None else study_ci
    gb_mark = None
    if definition is not None and allowed_marks(definition, gb_ci):
        gb_mark = definition.mark((float(gb_ci[0]), float(gb_ci[1])))  # type: ignore[index]
    return Verdict(metric, marks, gb_mark, int(items))


def shown_interval(
    ci: Sequence[float] | None, items: int
) -> tuple[float, float] | None:
    """The interval a report may print: None (shown as "too few items for an interval")
    when it has zero width from fewer than `MIN_ITEMS` items or is not finite."""
    if ci is None or len(ci) != 2 or not (_finite(ci[0]) and _finite(ci[1])):
        return None
    lo, hi = float(ci[0]), float(ci[1])
    if items < MIN_ITEMS and hi - lo <= 0:
        return None
    return (lo, hi)
