"""What a study adds to a report, as data (no Qt): paragraphs, tables and charts.

Studies return these from `Probe.report_blocks`; the PDF renderer lays every kind out
the same way for every study (and any other renderer could), so no study lays out its
report itself. Text is plain: renderers escape it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Heading:
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str
    style: str = "normal"  # "normal", "muted" (explanations) or "notice" (warnings)


@dataclass(frozen=True)
class MarkCells:
    """A table cell of mark letters (e.g. a model's marks in a harm section, best first),
    which renderers colour by mark."""

    letters: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(self.letters) or "—"


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



@dataclass(frozen=True)
class StudyRun:
    """One run as a study's cross-run report sees it (`Study.cross_run_report`): its
    probe, model, parameters, status and metrics (`gbdesk.maths.stats.MetricValue`s)."""

    run_id: int
    probe: str
    model: str
    params: dict[str, Any]
    metrics: dict[str, Any]
    status: str = "done"


@dataclass
class StudyReport:
    """A study's report over several runs (e.g. a benchmark's harm sections and
    normalized table for several models): blocks for the PDF and the Results pane, and
    CSV tables (file name → (columns, rows)) for the export."""

    title: str
    blocks: list[Block]
    tables: dict[str, tuple[list[str], list[dict[str, Any]]]] = field(default_factory=dict)
