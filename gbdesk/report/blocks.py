"""What a study adds to a report, as data (no Qt): paragraphs, tables and charts.

Studies return these from `Probe.report_blocks`; the PDF renderer lays every kind out
the same way for every study (and any other renderer could), so no study lays out its
report itself. Text is plain: renderers escape it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Heading:
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str
    style: str = "normal"  # "normal", "muted" (explanations) or "notice" (warnings)


@dataclass(frozen=True)
class Table:
    """A table of already formatted cells; `caption` explains it below the heading."""

    columns: list[str]
    rows: list[list[Any]]
    title: str = ""
    caption: str = ""


@dataclass(frozen=True)
class ChartRow:
    label: str
    value: float
    lo: float
    hi: float


@dataclass(frozen=True)
class IntervalChart:
    """Points with 95 % intervals; ``log_ratio`` draws ratios on a log axis (parity 1)."""

    title: str
    rows: list[ChartRow]
    kind: str = "ci"  # "ci", "unit" or "log_ratio"
    x_range: tuple[float, float] = (0.0, 1.0)
    marks: Any = None  # a MarkDefinition: its bands are drawn behind the points


@dataclass(frozen=True)
class CurveChart:
    """Lines of (x, ratio) points, the ratio on a log axis with parity at 1."""

    title: str
    series: dict[str, list[tuple[float, float]]]
    x_label: str = ""
    x_unit: str = ""
    x_range: tuple[float, float] = (0.0, 100.0)
    log_ratio: bool = True


Block = Heading | Paragraph | Table | IntervalChart | CurveChart

