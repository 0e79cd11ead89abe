"""A GenderBench metric declared once (`Metric`), and what a probe derives from its list.

A probe lists its metrics in `metric_declarations`, in the order its card shows them;
`apply_declarations` (run by the GenderBench base on every subclass that declares them)
derives the contract's parallel tables from that one list:

* `mark_definitions` — the metrics with `marks`, in `mark_rank` order (else listed order);
* `headline_metrics` — the metrics with a `headline` rank, in that order;
* `metric_titles` — each metric's `title` (a `{slot}` pattern or a dict of exact names);
* `card.metrics` — each metric's `description`;
* `metric_bounds` — `bounds` where given (`declared_bounds`);
* Report 1.1's tables (`report11`) — the metrics with a harm `section`, with their
  `normalization` (1.1.0's `metric_normalizations`) and the probe's 1.1.0 class name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gbdesk.maths.stats import MARK_LETTERS, MarkDefinition

Ranges = Mapping[str, tuple[tuple[float, float], ...]]


@dataclass(frozen=True)
class Bands:
    """A metric's mark bands (1.1.0's `MarkDefinition` without the metric's name)."""

    ranges: Ranges
    description: str = ""

    @classmethod
    def edges(cls, edges: Sequence[float], description: str = "") -> Bands:
        """Five edges → four consecutive bands A…D (1.1.0's list form)."""
        if len(edges) != 5:
            raise ValueError("mark edges need five values")
        return cls(
            {m: ((float(edges[i]), float(edges[i + 1])),) for i, m in enumerate(MARK_LETTERS)},
            description,
        )

    @classmethod
    def symmetric(cls, edges: Sequence[float], description: str = "") -> Bands:
        """Bands symmetric around 0 from four edges, e.g. (0.03, 0.1, 0.3, 1): A [−.03, .03],
        B [−.1, −.03] ∪ [.03, .1], C …, D [−1, −.3] ∪ [.3, 1] (1.1.0's dict form)."""
        a, b, c, d = (float(x) for x in edges)
        ranges = {
            "A": ((-a, a),),
            "B": ((-b, -a), (a, b)),
            "C": ((-c, -b), (b, c)),
            "D": ((-d, -c), (c, d)),
        }
        return cls(ranges, description)

    def of(self, metric: str) -> MarkDefinition:
        return MarkDefinition(metric, self.ranges, self.description)


# -- 1.1.0's `metric_normalizations` (None there is the identity here) ----------------------
def identity(x: float) -> float:
    return x


def positive(x: float) -> float:
    return max(0, x)  # 1.1.0's `lambda x: max(0, x)` (note: max(0, nan) is 0)


def absolute(x: float) -> float:
    return abs(x)


def from_half(x: float) -> float:
    return abs(x - 0.5)


def positive_half(x: float) -> float:
    return max(0, x) / 2


#: Report 1.1's harm sections, in its order
HARM_SECTIONS = {
    "outcome_disparity": "Outcome disparity",
    "stereotypical_reasoning": "Stereotypical reasoning",
    "representational_harms": "Representational harms",
}


@dataclass(frozen=True)
class Metric:
    """One GenderBench metric: its key (or a `{slot}` pattern of keys), its title for
    people (a pattern's title may use its slots; a dict gives exact keys their titles), the
    card's description, its mark bands, what it can be, its rank among the headline
    metrics and among the marked ones, and its place in Report 1.1 (harm section and
    normalization)."""

    name: str
    title: str | Mapping[str, str] = ""
    description: str = ""
    marks: Bands | None = None
    bounds: tuple[float, float] | None = None
    headline: int | None = None
    mark_rank: int | None = None
    section: str | None = None
    normalization: Callable[[float], float] = identity

    def __post_init__(self) -> None:
        if self.section is not None and self.section not in HARM_SECTIONS:
            raise ValueError(f"{self.name}: no harm section {self.section!r}")


def undetected_metrics(
    answers_title: str, answers: str, items_title: str, items: str
) -> tuple[Metric, Metric]:
    """The two rates of unreadable answers every GenderBench probe has (1.1.0's
    `filter_undetected`), in the probe's words: of attempts and of items."""
    return (
        Metric("undetected_rate_attempts", title=answers_title, description=answers),
        Metric("undetected_rate_items", title=items_title, description=items),
    )


def _pattern(name: str) -> re.Pattern[str]:
    regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>.+?)", re.escape(name))
    return re.compile(regex)


def _matching(declarations: Sequence[Metric], name: str) -> list[Metric]:
    """The declarations a metric fits: by key, then by `{slot}` pattern, in listed order."""
    exact = [m for m in declarations if m.name == name]
    return exact + [m for m in declarations if "{" in m.name and _pattern(m.name).fullmatch(name)]


def declared_bounds(declarations: Sequence[Metric], name: str) -> tuple[float, float] | None:
    """The first declared `bounds` of a metric (by key, then pattern), None when none is."""
    return next((m.bounds for m in _matching(declarations, name) if m.bounds), None)


def titles(declarations: Sequence[Metric]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in declarations:
        if isinstance(m.title, Mapping):
            out.update(m.title)
        elif m.title:
            out[m.name] = m.title
    return out


def apply_declarations(cls: Any) -> None:
    """Set `cls`'s contract tables from the `metric_declarations` it declares itself."""
    declarations: Sequence[Metric] | None = cls.__dict__.get("metric_declarations")
    if declarations is None:
        return
    marked = sorted(
        (m.mark_rank if m.mark_rank is not None else n, m.name, m.marks)
        for n, m in enumerate(declarations)
        if m.marks is not None
    )
    cls.mark_definitions = {name: bands.of(name) for _, name, bands in marked}
    headline = sorted((m for m in declarations if m.headline is not None), key=_headline_rank)
    cls.headline_metrics = [m.name for m in headline]
    cls.metric_titles = titles(declarations)
    card = cls.__dict__.get("card")
    if card is not None:
        described = {m.name: m.description for m in declarations if m.description}
        cls.card = dataclasses.replace(card, metrics=described)


def _headline_rank(m: Metric) -> int:
    return m.headline if m.headline is not None else 0


def class_name(probe: Any) -> str:
    """1.1.0's probe class name without "Probe" (the normalized table's column prefix)."""
    cls = probe if isinstance(probe, type) else type(probe)
    return cls.__name__.removesuffix("Probe")


def report_metrics(probe: Any) -> list[Metric]:
    """A probe's metrics in Report 1.1 (those with a harm section), by name as 1.1.0's
    `chart_config` lists a probe's metrics."""
    return sorted(
        (m for m in getattr(probe, "metric_declarations", ()) if m.section is not None),
        key=lambda m: m.name,
    )
