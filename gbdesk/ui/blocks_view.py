"""Report blocks (`gbdesk.support.blocks`) in the app: the same headings, paragraphs,
tables and interval charts the PDF lays out, as widgets (e.g. a study's cross-run report
in the Results pane)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gbdesk.support.blocks import (
    Block,
    Heading,
    IntervalChart,
    MarkCells,
    Paragraph,
    Table,
)
from gbdesk.support.guards import html_text
from gbdesk.ui.plots import CIPlot, PlotRow
from gbdesk.ui.theme import MARK_FILLS, RUN_COLORS

_PARAGRAPH_STYLE = {
    "muted": "color:#6b7280",
    "notice": "color:#92400e",
    "mono": "font-family:monospace",
}


def _table(block: Table) -> QTableWidget:
    table = QTableWidget(len(block.rows), len(block.columns))
    table.setHorizontalHeaderLabels([str(c) for c in block.columns])
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    for r, row in enumerate(block.rows):
        for c, value in enumerate(row):
            text = value.text() if isinstance(value, MarkCells) else str(value)
            cell = QTableWidgetItem(text)
            if isinstance(value, MarkCells) and value.letters:
                decided = [m for i, m in enumerate(value.letters) if value.is_decided(i)]
                if len(decided) == len(value.letters):  # every mark decided: colour it
                    cell.setBackground(QBrush(QColor(MARK_FILLS[max(decided)])))
                    cell.setToolTip(f"marks, best first: {text}; the cell's colour is the worst")
                else:  # a mark whose interval allows several is never coloured as a result
                    cell.setToolTip(
                        f"marks, best first: {text} — in brackets the marks an interval "
                        "allows where it does not decide one (not enough answers to tell); "
                        "uncoloured"
                    )
            table.setItem(r, c, cell)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.setMinimumHeight(min(400, 40 + 28 * max(1, len(block.rows))))
    return table


def block_widget(block: Block) -> QWidget | None:
    """One block as a widget (None for kinds the app does not show)."""
    if isinstance(block, Heading):
        label = QLabel(f"<b>{html_text(block.text)}</b>")
        return label
    if isinstance(block, Paragraph):
        style = _PARAGRAPH_STYLE.get(block.style, "")
        label = QLabel(f"<span style='{style}'>{html_text(block.text)}</span>")
        label.setWordWrap(True)
        return label
    if isinstance(block, Table):
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        if block.title:
            layout.addWidget(QLabel(f"<b>{html_text(block.title)}</b>"))
        if block.caption:
            caption = QLabel(f"<span style='color:#6b7280'>{html_text(block.caption)}</span>")
            caption.setWordWrap(True)
            layout.addWidget(caption)
        layout.addWidget(_table(block))
        return box
    if isinstance(block, IntervalChart):
        rows = [
            PlotRow(r.label, r.value, r.lo, r.hi, RUN_COLORS[i % len(RUN_COLORS)])
            for i, r in enumerate(block.rows)
        ]
        return CIPlot(
            block.title,
            rows,
            block.marks,
            x_range=block.x_range,
            log2=block.kind == "log_ratio",
        )
    return None


class BlocksView(QScrollArea):
    """A scrolling column of report blocks."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.blocks: list[Block] = []
        self._set_inner(QWidget())

    def _set_inner(self, inner: QWidget) -> None:
        self.inner = inner
        self.layout_ = QVBoxLayout(inner)
        self.setWidget(inner)

    def show_blocks(self, blocks: list[Block]) -> None:
        self.blocks = list(blocks)
        self._set_inner(QWidget())  # the old widgets go with the old inner widget
        for block in blocks:
            widget = block_widget(block)
            if widget is not None:
                self.layout_.addWidget(widget)
        self.layout_.addStretch(1)
        self.inner.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
