"""The report's charts, painted with QPainter (no plotting library, no network): an
interval chart over a metric's mark bands (`ci_chart`) and the threshold curves
(`curves_chart`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen

from gbdesk.maths.stats import MarkDefinition
from gbdesk.report.pdf_layout import _fit, _label
from gbdesk.support.format import MARK_COLORS, MARK_FILLS, RUN_COLORS, log2_or_nan, ratio_ticks

#: one row of an interval chart: (label, value, lo, hi, colour)
ChartRow = tuple[str, float, float, float, str]


def ci_chart(
    rows: list[ChartRow],
    marks: MarkDefinition | None,
    x_range: tuple[float, float],
    title: str,
    width: int = 1400,
    row_height: int = 46,
    log: bool = False,
) -> QImage:
    """Rows of (label, value, lo, hi, colour) as points with interval bars over the bands.

    With `log`, values are ratios drawn on a log2 axis whose ticks read as ratios, with a
    dashed parity line at 1."""
    rows = _chart_rows(rows, log)
    title = _label(title, 200)
    font = QFont("DejaVu Sans")
    font.setPixelSize(22)
    label_width = max([0, *(QFontMetrics(font).horizontalAdvance(r[0]) for r in rows)])
    left, right, top, bottom = min(max(200, label_width + 30), width // 2), 40, 56, 52
    height = top + bottom + row_height * max(1, len(rows))
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    lo_x, hi_x = _x_span(rows, x_range)
    span = (hi_x - lo_x) or 1.0
    plot_w = width - left - right

    def x_of(v: float) -> float:
        return left + (v - lo_x) / span * plot_w

    p.setFont(font)
    p.setPen(QColor("#111827"))
    p.drawText(QRectF(0, 6, width, 40), Qt.AlignmentFlag.AlignHCenter, _fit(title, font, width))
    plot_rect = QRectF(left, top, plot_w, height - top - bottom)
    if marks is not None:
        _draw_bands(p, marks, x_of, plot_rect, font)
    p.setPen(QPen(QColor("#9ca3af"), 1))
    p.drawRect(plot_rect)
    p.setFont(font)
    if log:
        ticks = ratio_ticks(lo_x, hi_x)
    else:
        ticks = [(lo_x + span * i / 5, f"{lo_x + span * i / 5:.2f}") for i in range(6)]
    _draw_ticks(p, ticks, x_of, plot_rect)
    if log and lo_x <= 0 <= hi_x:  # the parity line: a ratio of 1
        p.setPen(QPen(QColor("#6b7280"), 2, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(x_of(0), plot_rect.top()), QPointF(x_of(0), plot_rect.bottom()))
    _draw_rows(p, rows, x_of, top, row_height, left)
    p.end()
    return image


def _chart_rows(rows: list[ChartRow], log: bool) -> list[ChartRow]:
    """The rows as drawn: labels escaped (`_label`), ratios as their log2 with `log`."""
    rows = [(_label(label), v, lo, hi, c) for label, v, lo, hi, c in rows]
    if log:
        rows = [
            (label, log2_or_nan(v), log2_or_nan(lo), log2_or_nan(hi), c)
            for label, v, lo, hi, c in rows
        ]
    return rows


def _x_span(rows: list[ChartRow], x_range: tuple[float, float]) -> tuple[float, float]:
    """The axis: `x_range`, widened to every value and interval end the rows have."""
    lo_x, hi_x = x_range
    values = [v for _, val, lo, hi, _ in rows for v in (val, lo, hi) if not math.isnan(v)]
    if values:
        lo_x, hi_x = min(lo_x, min(values)), max(hi_x, max(values))
    return lo_x, hi_x


def _draw_bands(
    p: QPainter,
    marks: MarkDefinition,
    x_of: Callable[[float], float],
    plot_rect: QRectF,
    font: QFont,
) -> None:
    """The mark bands behind the plot, each filled in its colour with its letter on top."""
    small = QFont(font)
    small.setPixelSize(18)
    small.setBold(True)
    for letter, bands in marks.ranges.items():
        for a, b in bands:
            rect = QRectF(x_of(a), plot_rect.top(), x_of(b) - x_of(a), plot_rect.height())
            p.fillRect(rect, QColor(MARK_FILLS[letter]))
            p.setFont(small)
            p.setPen(QColor(MARK_COLORS[letter]))
            p.drawText(
                QRectF(rect.left(), plot_rect.top() + 2, rect.width(), 22),
                Qt.AlignmentFlag.AlignHCenter,
                letter,
            )


def _draw_ticks(
    p: QPainter,
    ticks: list[tuple[float, str]],
    x_of: Callable[[float], float],
    plot_rect: QRectF,
) -> None:
    """The axis ticks: a light grid line across the plot and the tick's text below it."""
    for v, text in ticks:
        x = x_of(v)
        p.setPen(QPen(QColor("#e5e7eb"), 1))
        p.drawLine(QPointF(x, plot_rect.top()), QPointF(x, plot_rect.bottom()))
        p.setPen(QColor("#374151"))
        p.drawText(
            QRectF(x - 60, plot_rect.bottom() + 6, 120, 30),
            Qt.AlignmentFlag.AlignHCenter,
            text,
        )


def _draw_rows(
    p: QPainter,
    rows: list[ChartRow],
    x_of: Callable[[float], float],
    top: int,
    row_height: int,
    left: int,
) -> None:
    """Each row: its label right-aligned before the plot, its interval bar with end ticks
    and its value as a dot (nothing drawn for an undefined value)."""
    for i, (label, val, lo, hi, color) in enumerate(rows):
        y = top + row_height * (i + 0.5) + 10
        p.setPen(QColor("#111827"))
        p.drawText(
            QRectF(8, y - 16, left - 20, 32),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            label,
        )
        if math.isnan(val):
            continue
        pen = QPen(QColor(color), 4)
        p.setPen(pen)
        if not (math.isnan(lo) or math.isnan(hi)):
            p.drawLine(QPointF(x_of(lo), y), QPointF(x_of(hi), y))
            for v in (lo, hi):
                p.drawLine(QPointF(x_of(v), y - 9), QPointF(x_of(v), y + 9))
        p.setBrush(QColor(color))
        p.setPen(QPen(QColor("white"), 2))
        p.drawEllipse(QPointF(x_of(val), y), 9, 9)


def curves_chart(curves: dict[str, dict[str, Any]], title: str, width: int = 1400) -> QImage:
    """Racialized subordination ratio (log2 axis) against the likelihood threshold."""
    title = _label(title, 200)
    height, left, right, top, bottom = 620, 110, 260, 56, 70
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    series = {
        key: [(t, log2_or_nan(r)) for t, r in zip(c["thresholds"], c["ratios"], strict=True)]
        for key, c in curves.items()
    }
    ys = [y for pts in series.values() for _, y in pts if not math.isnan(y)]
    lo_y, hi_y = (min([-1.0, *ys]), max([1.0, *ys])) if ys else (-1.0, 1.0)
    plot = QRectF(left, top, width - left - right, height - top - bottom)

    def pt(t: float, y: float) -> QPointF:
        return QPointF(
            plot.left() + t / 100 * plot.width(),
            plot.bottom() - (y - lo_y) / (hi_y - lo_y) * plot.height(),
        )

    font = QFont("DejaVu Sans")
    font.setPixelSize(22)
    p.setFont(font)
    p.setPen(QColor("#111827"))
    p.drawText(QRectF(0, 6, width, 40), Qt.AlignmentFlag.AlignHCenter, _fit(title, font, width))
    p.setPen(QPen(QColor("#9ca3af"), 1))
    p.drawRect(plot)
    for k, text in ratio_ticks(lo_y, hi_y):
        y = pt(0, k).y()
        p.setPen(QPen(QColor("#6b7280"), 2, Qt.PenStyle.DashLine) if k == 0 else QColor("#e5e7eb"))
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
        p.setPen(QColor("#374151"))
        p.drawText(
            QRectF(0, y - 15, left - 10, 30),
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            text,
        )
    for t in range(0, 101, 20):
        p.drawText(
            QRectF(pt(t, lo_y).x() - 40, plot.bottom() + 6, 80, 30),
            Qt.AlignmentFlag.AlignHCenter,
            f"{t} %",
        )
    p.drawText(
        QRectF(plot.left(), plot.bottom() + 34, plot.width(), 30),
        Qt.AlignmentFlag.AlignHCenter,
        "name likelihood threshold",
    )
    for i, (key, pts) in enumerate(series.items()):
        color = QColor(RUN_COLORS[i % len(RUN_COLORS)])
        p.setPen(QPen(color, 3))
        prev = None
        for t, y in pts:
            cur = None if math.isnan(y) else pt(t, y)
            if prev is not None and cur is not None:
                p.drawLine(prev, cur)
            prev = cur
        p.drawText(
            QRectF(plot.right() + 12, top + 30 * i, right - 14, 28),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            _label(key),
        )
    p.end()
    return image
