"""Intersectional stereotypes: a role with its 16 answers for review, and the SDeg heat map."""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gbdesk.review import ReviewItem
from gbdesk.studies.base import Probe
from gbdesk.studies.intersectional.probe import load_categories
from gbdesk.ui.result_views import ResultView
from gbdesk.ui.review_views import ReviewView
from gbdesk.ui.theme import MUTED

CHANGED = QColor("#fef3c7")
UNPARSED = QColor("#fde2e1")


class RoleAnswersView(ReviewView):
    """The simulated role, and each category's question, raw answer and mapped option.
    Keys: Alt+↓ / Alt+↑ pick a category, 1–5 set its option, Enter saves."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.role = QTextBrowser()
        self.table = QTableWidget()
        self.table.setColumnCount(4)
        self.table.setHorizontalHeaderLabels(["Category", "Question", "Answer", "Option"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        help_ = QLabel(
            "<b>Alt+↓</b>/<b>Alt+↑</b>: next/previous category · <b>1</b>–<b>5</b>: set its "
            "option · <b>Enter</b>: save. Changed answers are marked."
        )
        help_.setStyleSheet(f"color:{MUTED}")
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.role)
        splitter.addWidget(self.table)
        splitter.setSizes([160, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(splitter, 1)
        layout.addWidget(help_)
        context = Qt.ShortcutContext.WidgetWithChildrenShortcut
        for n in range(1, 6):
            QShortcut(
                QKeySequence(str(n)), self, lambda n=n: self.set_option(n - 1), context=context
            )
        QShortcut(QKeySequence("Alt+Down"), self, lambda: self.move(1), context=context)
        QShortcut(QKeySequence("Alt+Up"), self, lambda: self.move(-1), context=context)
        self.categories = load_categories()
        self.answers: dict[str, dict[str, Any]] = {}
        self.auto: dict[str, dict[str, Any]] = {}

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        if item is None:
            self.header.setText("")
            self.role.setHtml(f"<p style='color:{MUTED}'>Nothing to review with this filter.</p>")
            self.table.setRowCount(0)
            return
        self.auto = {k: dict(v) for k, v in ((item.auto_data or {}).get("answers") or {}).items()}
        source = item.human_data if item.human_data else item.auto_data
        self.answers = {k: dict(v) for k, v in ((source or {}).get("answers") or {}).items()}
        who = "reviewed by " + html.escape(item.reviewer) if item.reviewer else "automatic"
        self.header.setText(
            f"<b>{html.escape(item.metadata.get('group', item.item))}</b>, role "
            f"{item.attempt + 1} <span style='color:{MUTED}'>({who})</span>"
        )
        self.role.setHtml(
            f"<p style='color:{MUTED}'><b>Prompt:</b> {html.escape(item.prompt)}</p>"
            f"<p style='font-size:12pt'>{html.escape(item.response)}</p>"
        )
        self._fill()
        if self.table.rowCount():
            self.table.selectRow(0)

    def _fill(self) -> None:
        self.table.setRowCount(len(self.categories))
        for row, cat in enumerate(self.categories):
            ans = self.answers.get(str(cat["id"]), {})
            option = ans.get("option")
            values = [
                cat["category"],
                cat["example_question"],
                ans.get("raw", ""),
                option or "unparsed",
            ]
            changed = option != self.auto.get(str(cat["id"]), {}).get("option")
            for col, value in enumerate(values):
                cell = QTableWidgetItem(str(value))
                cell.setToolTip(" · ".join(f"{i + 1} {o}" for i, o in enumerate(cat["options"])))
                if changed:
                    cell.setBackground(CHANGED)
                elif option is None:
                    cell.setBackground(UNPARSED)
                self.table.setItem(row, col, cell)

    def move(self, step: int) -> None:
        row = max(0, min(self.table.rowCount() - 1, self.table.currentRow() + step))
        self.table.selectRow(row)

    def set_option(self, index: int) -> None:
        row = self.table.currentRow()
        if row < 0 or row >= len(self.categories):
            return
        cat = self.categories[row]
        if index >= len(cat["options"]):
            return
        key = str(cat["id"])
        entry = self.answers.setdefault(key, {"raw": ""})
        entry["option"] = cat["options"][index]
        self._fill()
        self.table.selectRow(row)

    def current_label(self) -> dict[str, Any]:
        parsed = sum(1 for a in self.answers.values() if a.get("option") is not None)
        value = "answered" if self.answers and parsed == len(self.answers) else "partial"
        return {"label": value, "data": {"answers": self.answers}, "evidence": None}


class SDegResultsView(ResultView):
    """Heat map of SDeg per group (rows, ranked) × category (columns)."""

    def __init__(self, extra: dict[str, Any], open_review, run_id: int, parent=None):
        super().__init__(extra, open_review, run_id, parent)
        layout = self.box
        groups, cats = extra.get("groups") or [], extra.get("categories") or []
        values = np.asarray(extra.get("sdeg") or [], dtype=float)
        caption = QLabel(
            "<b>SDeg per group × category</b> (groups ranked by their degree; darker = "
            "more uniform answers; blank = no parsed answer)"
        )
        caption.setWordWrap(True)
        layout.addWidget(caption)
        plot = pg.PlotWidget()
        plot.setMinimumHeight(max(360, 16 * len(groups)))
        if values.size:
            image = pg.ImageItem(np.nan_to_num(values.T, nan=0.0))
            image.setLookupTable(
                pg.ColorMap([0.0, 1.0], [(255, 255, 255), (30, 64, 175)]).getLookupTable(nPts=64)
            )
            image.setLevels((0, 1))
            plot.addItem(image)
            for gi in range(values.shape[0]):
                for ci in range(values.shape[1]):
                    v = values[gi, ci]
                    if not math.isnan(v):
                        text = pg.TextItem(f"{v:.2f}", color="#111827", anchor=(0.5, 0.5))
                        text.setPos(ci + 0.5, gi + 0.5)
                        plot.addItem(text)
        plot.getAxis("left").setTicks([[(i + 0.5, g) for i, g in enumerate(groups)]])
        plot.getAxis("bottom").setTicks([[(i + 0.5, str(i + 1)) for i in range(len(cats))]])
        plot.invertY(True)
        plot.setMouseEnabled(x=False, y=False)
        layout.addWidget(plot)
        legend = " · ".join(f"{i + 1} {html.escape(c)}" for i, c in enumerate(cats))
        note = QLabel(f"<span style='color:{MUTED}'>Categories: {legend}</span>")
        note.setWordWrap(True)
        layout.addWidget(note)
