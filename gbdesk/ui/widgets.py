"""Small widgets shared by the panes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gbdesk.support.guards import html_text
from gbdesk.ui.theme import MARK_COLORS, MARK_TEXT


def pane_header(title: str, text: str) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 4)
    heading = QLabel(f"<h2 style='margin:0'>{html_text(title)}</h2>")
    blurb = QLabel(text)
    blurb.setWordWrap(True)
    blurb.setStyleSheet("color: #4b5563;")
    layout.addWidget(heading)
    layout.addWidget(blurb)
    return box


class Banner(QLabel):
    """An inline message (instead of modal dialogs, which block keyboard flow)."""

    STYLES: ClassVar[dict[str, str]] = {
        "info": "background:#eef2ff; color:#1e3a8a; border:1px solid #c7d2fe;",
        "error": "background:#fdecea; color:#7f1d1d; border:1px solid #f5c2c0;",
        "ok": "background:#e8f5e9; color:#14532d; border:1px solid #bbf7d0;",
        "warn": "background:#fff7e6; color:#7c2d12; border:1px solid #fde68a;",
    }

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setVisible(False)
        self.kind = ""

    def show_message(self, kind: str, text: str, rich: bool = False) -> None:
        self.kind = kind
        self.setStyleSheet(self.STYLES[kind] + " padding:6px; border-radius:4px;")
        self.setText(text if rich else html_text(text))
        self.setVisible(True)

    def info(self, text: str) -> None:
        self.show_message("info", text)

    def error(self, text: str) -> None:
        self.show_message("error", text)

    def ok(self, text: str) -> None:
        self.show_message("ok", text)

    def warn(self, text: str) -> None:
        self.show_message("warn", text)

    def clear(self) -> None:  # type: ignore[override]
        super().clear()
        self.kind = ""
        self.setVisible(False)


def mark_html(mark: str | None) -> str:
    if not mark:
        return "<span style='color:#6b7280'>—</span>"
    return (
        f"<span style='background:{MARK_COLORS[mark]}; color:white; padding:0 4px; "
        f"font-weight:bold' title='{MARK_TEXT[mark]}'>{mark}</span>"
    )


class Separator(QFrame):
    def __init__(self) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.HLine)
        self.setStyleSheet("color:#e5e7eb")


class _LazyRows(QAbstractTableModel):
    """Rows whose text is made only when a row is shown (then kept)."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.n = 0
        self.describe: Callable[[int], tuple[str, Any]] = lambda row: ("", None)
        self.cache: dict[int, tuple[str, Any]] = {}

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self.n

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else 1

    def entry(self, row: int) -> tuple[str, Any]:
        got = self.cache.get(row)
        if got is None:
            got = self.cache[row] = self.describe(row)
        return got

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < self.n:
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self.entry(index.row())[0]
        if role == Qt.ItemDataRole.ForegroundRole:
            return self.entry(index.row())[1]
        return None


class LazyListRow:
    """What `LazyList.item(row)` returns: the row's text (as `QListWidgetItem.text`)."""

    def __init__(self, model: _LazyRows, row: int):
        self._model, self._row = model, row

    def text(self) -> str:
        return self._model.entry(self._row)[0]

    def toolTip(self) -> str:
        return self.text()


class LazyList(QTableView):
    """A list of any length (hundreds of thousands of rows) that describes only the rows
    on screen: `set_rows(n, describe)` with `describe(row) -> (text, foreground or None)`.
    Offers the parts of `QListWidget` the panes use (`currentRowChanged`, `currentRow`,
    `setCurrentRow`, `count`, `item(row).text()`, `clear`, `addItem(text)`). A one-column
    table of fixed row height rather than a `QListView`, whose layout asks the model
    about every row."""

    currentRowChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._rows = _LazyRows(self)
        self.setModel(self._rows)
        self.horizontalHeader().hide()
        self.horizontalHeader().setStretchLastSection(True)
        rows = self.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # no row is measured
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setTabKeyNavigation(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.selectionModel().currentRowChanged.connect(
            lambda current, _previous: self.currentRowChanged.emit(current.row())
        )
        self._fixed: list[str] = []

    def set_rows(self, n: int, describe: Callable[[int], tuple[str, Any]]) -> None:
        rows = self._rows
        rows.beginResetModel()
        rows.n, rows.describe, rows.cache = n, describe, {}
        self._fixed = []
        rows.endResetModel()
        self.currentRowChanged.emit(-1)

    def refresh_row(self, row: int) -> None:
        """Describe the row again (its item changed)."""
        self._rows.cache.pop(row, None)
        index = self._rows.index(row, 0)
        self._rows.dataChanged.emit(index, index)

    def clear(self) -> None:
        self.set_rows(0, lambda row: ("", None))

    def addItem(self, text: str) -> None:
        """A row of plain text (e.g. a notice that the list is empty)."""
        self._fixed.append(text)
        fixed = list(self._fixed)
        rows = self._rows
        rows.beginResetModel()
        rows.n, rows.describe, rows.cache = len(fixed), lambda row: (fixed[row], None), {}
        rows.endResetModel()
        self._fixed = fixed

    def count(self) -> int:
        return self._rows.n

    def item(self, row: int) -> LazyListRow | None:
        return LazyListRow(self._rows, row) if 0 <= row < self._rows.n else None

    def currentRow(self) -> int:
        index = self.currentIndex()
        return index.row() if index.isValid() else -1

    def setCurrentRow(self, row: int) -> None:
        if 0 <= row < self._rows.n:
            self.setCurrentIndex(self._rows.index(row, 0))
        else:
            self.setCurrentIndex(QModelIndex())
