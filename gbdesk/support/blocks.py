"""What a study adds to a report, as data (no Qt): paragraphs, tables and charts.

Studies return these from `Presentation.report_blocks`; the PDF renderer lays every kind out
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
    #: "normal", "muted" (explanations), "notice" (warnings) or "mono" (a digest, a hash)
    style: str = "normal"


@dataclass(frozen=True)
class MarkCells:
    """A table cell of mark letters (e.g. a model's marks in a harm section, best first).

    `letters` are the grading study's own marks (`str` gives them, as the study prints
    them); `allowed[i]` the marks letter i's interval allows and `decided[i]` whether that
    is one mark from enough items. Renderers colour a decided letter by its mark and show
    an undecided one with the marks it allows, uncoloured (`letter_text`, `text`); without
    `allowed`, every letter counts as decided. `empty` is what a cell without letters says."""

    letters: tuple[str, ...]
    allowed: tuple[tuple[str, ...], ...] = ()
    decided: tuple[bool, ...] = ()
    empty: str = "—"

    def __str__(self) -> str:
        return " ".join(self.letters) or "—"

    def is_decided(self, i: int) -> bool:
        return self.decided[i] if i < len(self.decided) else True

    def letter_text(self, i: int) -> str:
        """"B" when decided; "B (A–C)": the study's letter and the marks allowed."""
        letter = self.letters[i]
        if self.is_decided(i) or i >= len(self.allowed) or not self.allowed[i]:
            return letter
        marks = self.allowed[i]
        span = marks[0] if len(marks) == 1 else f"{marks[0]}–{marks[-1]}"
        return f"{letter} ({span})"

    def text(self) -> str:
        """Every letter with what its interval allows: "A B (A–C) D (A–D)"."""
        if not self.letters:
            return self.empty
        return " ".join(self.letter_text(i) for i in range(len(self.letters)))


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
    #: the report without the charts of the verdicts an audit's first page already gives
    #: (its marks and summary tables only); empty: the whole report
    summary: list[Block] = field(default_factory=list)
    #: what a table holds, said in a last column of its every row in the CSV (file name →
    #: (column, text)), so that the file read alone is not taken for something else
    table_notes: dict[str, tuple[str, str]] = field(default_factory=dict)
