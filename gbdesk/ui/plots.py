"""pyqtgraph plots: point estimates with their 95 % intervals, over mark bands."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics

from gbdesk.maths.stats import MarkDefinition
from gbdesk.support.format import log2_or_nan, ratio_ticks
from gbdesk.ui.theme import MARK_COLORS, MARK_FILLS

pg.setConfigOptions(background="w", foreground="#374151", antialias=True)


@dataclass
class PlotRow:
    label: str
    value: float
    lo: float
    hi: float
    color: str
    data: Any = None  # returned to the click handler


def _finite(x: float | None) -> bool:
    return x is not None and not math.isnan(x)


def _log2_rows(rows: list[PlotRow]) -> tuple[list[PlotRow], tuple[float, float]]:
    """Ratios as their log2 (a ratio of 2 as far from parity as one of ½), and an x range
    symmetric about parity that holds every finite value."""
    rows = [
        PlotRow(
            r.label,
            log2_or_nan(r.value),
            log2_or_nan(r.lo),
            log2_or_nan(r.hi),
            r.color,
            r.data,
        )
        for r in rows
    ]
    finite = [abs(v) for r in rows for v in (r.value, r.lo, r.hi) if _finite(v)]
    reach = max([1.0, *finite])
    return rows, (-reach, reach)


def _add_mark_bands(item: Any, marks: MarkDefinition, n: int) -> None:
    """The mark bands behind the points, each with its letter above the top row."""
    for letter, bands in marks.ranges.items():
        for lo, hi in bands:
            region = pg.LinearRegionItem(
                values=(lo, hi),
                movable=False,
                brush=pg.mkBrush(QColor(MARK_FILLS[letter])),
                pen=pg.mkPen(None),
            )
            region.setZValue(-10)
            item.addItem(region)
            text = pg.TextItem(letter, color=MARK_COLORS[letter], anchor=(0.5, 0))
            text.setFont(QFont("", 8, QFont.Weight.Bold))
            text.setPos((lo + hi) / 2, n - 0.35)
            item.addItem(text)


def _set_x_range(item: Any, rows: list[PlotRow], x_range: tuple[float, float]) -> None:
    """`x_range` widened to every finite value, with a little padding."""
    lo, hi = x_range
    values = [v for r in rows for v in (r.lo, r.hi, r.value) if _finite(v)]
    if values:
        lo, hi = min(lo, min(values)), max(hi, max(values))
    pad = (hi - lo) * 0.03 or 0.05
    item.setXRange(lo - pad, hi + pad, padding=0)


class CIPlot(pg.PlotWidget):
    """Horizontal intervals, one row per entry; mark bands behind them if given."""

    def __init__(
        self,
        title: str,
        rows: list[PlotRow],
        marks: MarkDefinition | None = None,
        x_range: tuple[float, float] | None = None,
        on_click: Callable[[Any], None] | None = None,
        log2: bool = False,
    ):
        super().__init__()
        if log2:  # ratios on a log scale: plot log2, label ticks with the ratios
            rows, x_range = _log2_rows(rows)
        self.rows = rows
        self.on_click = on_click
        item = self.getPlotItem()
        item.setTitle(title, size="10pt")
        item.setMenuEnabled(False)
        item.hideButtons()
        self.setMouseEnabled(x=False, y=False)
        n = max(1, len(rows))
        # room for every row's label: pyqtgraph hides tick labels that would overlap
        self.setMinimumHeight(100 + 28 * n)
        self.setMaximumHeight(120 + 32 * n)
        if marks is not None:
            _add_mark_bands(item, marks, n)
            x_range = x_range or marks.overall_range
        ys = list(range(len(rows)))[::-1]
        self._add_points(item, rows, ys, log2)
        left = item.getAxis("left")
        left.setTicks([[(y, r.label) for y, r in zip(ys, rows, strict=True)]])
        left.setStyle(hideOverlappingLabels=False)  # every row keeps its label
        width = max([0, *(QFontMetrics(left.font()).horizontalAdvance(r.label) for r in rows)])
        left.setWidth(min(320, max(110, width + 16)))
        bottom = item.getAxis("bottom")
        bottom.setStyle(showValues=True)
        item.setYRange(-0.6, n - 0.1 + (0.5 if marks is not None else 0), padding=0)
        if x_range is not None:
            _set_x_range(item, rows, x_range)
        if marks is None:
            item.showGrid(x=True, y=False, alpha=0.2)
        if log2:
            parity = pg.InfiniteLine(
                0, angle=90, pen=pg.mkPen("#6b7280", width=1, style=Qt.PenStyle.DashLine)
            )
            item.addItem(parity)
            ticks = ratio_ticks(-x_range[1] - 0.5, x_range[1] + 0.5)
            item.getAxis("bottom").setTicks([ticks])
            item.setLabel("bottom", "ratio (log scale; 1× = parity)")
        if on_click is not None:
            self.setCursor(Qt.CursorShape.PointingHandCursor)
            self.setToolTip("Click a point to review the attempts behind it")

    def _add_points(self, item: Any, rows: list[PlotRow], ys: list[int], log2: bool) -> None:
        """Each finite estimate as a point (clickable, `self.scatter`) on its interval."""
        ok = [(y, r) for y, r in zip(ys, rows, strict=True) if _finite(r.value)]
        by_color: dict[Any, list[tuple[int, PlotRow]]] = {}
        for y, r in ok:
            if _finite(r.lo) and _finite(r.hi):
                by_color.setdefault(r.color, []).append((y, r))
        for color, bars in by_color.items():  # one item per colour: fast with many rows
            bar = pg.ErrorBarItem(
                x=np.array([r.value for _, r in bars]),
                y=np.array([float(y) for y, _ in bars]),
                left=np.array([r.value - r.lo for _, r in bars]),
                right=np.array([r.hi - r.value for _, r in bars]),
                beam=0.18,
                pen=pg.mkPen(color, width=2),
            )
            item.addItem(bar)
        self.scatter = pg.ScatterPlotItem(
            x=[r.value for _, r in ok],
            y=[y for y, _ in ok],
            size=11,
            brush=[pg.mkBrush(r.color) for _, r in ok],
            pen=pg.mkPen("w", width=1),
            data=[r.data for _, r in ok],
            hoverable=True,
            hoverSize=14,
            tip=(lambda x, y, data: f"{2**x:.2f}×") if log2 else (lambda x, y, data: f"{x:.3f}"),
        )
        self.scatter.sigClicked.connect(self._clicked)
        item.addItem(self.scatter)

    def _clicked(self, _scatter, points, _event=None) -> None:
        if self.on_click is not None and len(points):
            self.on_click(points[0].data())

    def click_row(self, index: int) -> None:
        """Programmatic click (tests, keyboard users)."""
        if self.on_click is not None:
            self.on_click(self.rows[index].data)
