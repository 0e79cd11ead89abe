"""Intersectional stereotypes: a role with its 16 answers for review, and the SDeg heat map."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gbdesk.contract import Probe
from gbdesk.people.review import ReviewItem
from gbdesk.studies.intersectional.data import load_categories
from gbdesk.studies.intersectional.probe import questions_of
from gbdesk.support.guards import html_text
from gbdesk.ui.result_views import ResultView
from gbdesk.ui.review_views import ReviewView
from gbdesk.ui.theme import MUTED

CHANGED = QColor("#fef3c7")
UNPARSED = QColor("#fde2e1")


class RoleAnswersView(ReviewView):
    """The simulated role, and each question it answered (its category, raw answer and
    mapped option). Keys: Alt+↓ / Alt+↑ pick a question, 1–5 set its option, Enter saves."""

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
        self.questions: list[dict[str, Any]] = questions_of({})
        self.answers: dict[str, dict[str, Any]] = {}
        self.auto: dict[str, dict[str, Any]] = {}

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        if item is None:
            self.header.setText("")
            self.role.setHtml(f"<p style='color:{MUTED}'>Nothing to review with this filter.</p>")
            self.table.setRowCount(0)
            return
        self.questions = questions_of(item.metadata)
        self.auto = {k: dict(v) for k, v in ((item.auto_data or {}).get("answers") or {}).items()}
        source = item.human_data if item.human_data else item.auto_data
        self.answers = {k: dict(v) for k, v in ((source or {}).get("answers") or {}).items()}
        who = "reviewed by " + html_text(item.reviewer) if item.reviewer else "automatic"
        self.header.setText(
            f"<b>{html_text(item.metadata.get('group', item.item))}</b>, role "
            f"{item.attempt + 1} <span style='color:{MUTED}'>({who})</span>"
        )
        self.role.setHtml(
            f"<p style='color:{MUTED}'><b>Prompt:</b> {html_text(item.prompt)}</p>"
            f"<p style='font-size:12pt'>{html_text(item.response)}</p>"
        )
        self._fill()
        if self.table.rowCount():
            self.table.selectRow(0)

    def _fill(self) -> None:
        self.table.setRowCount(len(self.questions))
        for row, cat in enumerate(self.questions):
            ans = self.answers.get(str(cat["id"]), {})
            option = ans.get("option")
            values = [
                cat["category"],
                cat["question"],
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
        if row < 0 or row >= len(self.questions):
            return
        cat = self.questions[row]
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
        legend = " · ".join(f"{i + 1} {html_text(c)}" for i, c in enumerate(cats))
        note = QLabel(f"<span style='color:{MUTED}'>Categories: {legend}</span>")
        note.setWordWrap(True)
        layout.addWidget(note)


def own_decision(item: ReviewItem, validator: str) -> dict[str, Any] | None:
    """The validator's latest decision on a stereotype: the item's latest human label when
    it is theirs (also just saved here), else theirs among every validator's (`extra`)."""
    if not validator:
        return None
    if item.reviewer == validator:
        return item.human_data or {}
    return ((item.extra or {}).get("validations") or {}).get(validator)


class StereotypeValidationView(ReviewView):
    """One stereotype of a dataset for a validator (the Review pane's "Reviewer"): the
    group, stereotype, explanation and the filter's verdict; the validator's answers to the
    paper's two questions and the category. Keys: 1 / Y common, 2 / N not common, 3 / A
    exclusive to the group (a), 4 / B also broader groups (b), Alt+↓ / Alt+↑ category,
    Enter saves (and moves on)."""

    COMMON: ClassVar[dict[str, str]] = {
        "yes": "yes — commonly associated with the group",
        "no": "no — not common",
    }
    SPECIFIC: ClassVar[dict[str, str]] = {
        "a": "(a) exclusive to this intersectional group",
        "b": "(b) also applies to broader groups",
    }

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.reviewer = ""
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.text = QTextBrowser()
        self.common_label = QLabel()
        self.specific_label = QLabel()
        self.category = QComboBox()
        self.category.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Alt+↓ must not open it
        for c in load_categories():
            self.category.addItem(f"{c['id']}. {c['category']}", c["category"])
        self.category.setToolTip("Alt+↓ / Alt+↑: next / previous category")
        help_ = QLabel(
            "<b>1</b>/<b>Y</b> common · <b>2</b>/<b>N</b> not common · <b>3</b>/<b>A</b> "
            "exclusive to the group · <b>4</b>/<b>B</b> also broader groups · "
            "<b>Alt+↓</b>/<b>Alt+↑</b> category · <b>Enter</b> save. Your name (Reviewer) "
            "is the validator's; each validator decides on their own."
        )
        help_.setWordWrap(True)
        help_.setStyleSheet(f"color:{MUTED}")
        form = QFormLayout()
        form.addRow("Commonly associated with the group?", self.common_label)
        form.addRow("Exclusive to the group?", self.specific_label)
        form.addRow("Category", self.category)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.text, 1)
        layout.addLayout(form)
        layout.addWidget(help_)
        context = Qt.ShortcutContext.WidgetWithChildrenShortcut
        keys = (
            (("1", "Y"), lambda: self.set_answer("common", "yes")),
            (("2", "N"), lambda: self.set_answer("common", "no")),
            (("3", "A"), lambda: self.set_answer("specific", "a")),
            (("4", "B"), lambda: self.set_answer("specific", "b")),
            (("Alt+Down",), lambda: self.step_category(1)),
            (("Alt+Up",), lambda: self.step_category(-1)),
        )
        for sequences, slot in keys:
            for seq in sequences:
                QShortcut(QKeySequence(seq), self, slot, context=context)
        self.answers: dict[str, str | None] = {"common": None, "specific": None}
        self.suggested: str | None = None
        self.filter_status: str | None = None
        self._show_answers()

    def set_reviewer(self, name: str) -> None:
        """The validator whose decisions this view shows and makes."""
        self.reviewer = name

    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        if item is None:
            self.header.setText("")
            self.text.setHtml(f"<p style='color:{MUTED}'>Nothing to review with this filter.</p>")
            return
        meta, auto = item.metadata, item.auto_data or {}
        mine = own_decision(item, self.reviewer)
        self.answers = {
            "common": (mine or {}).get("common"),
            "specific": (mine or {}).get("specific"),
        }
        self.suggested = auto.get("category_suggested") or meta.get("category_imported")
        chosen = (mine or {}).get("category") or self.suggested
        self.category.setCurrentIndex(max(0, self.category.findData(chosen)))
        group = auto.get("group") or meta.get("group", "")
        status = auto.get("status") or item.auto_label
        self.filter_status = status
        e = html_text
        note = {
            "kept": "the filter judged it specific to this group",
            "moved": f"the filter moved it here from {e(meta.get('group', ''))}",
            "out": "the filter moved it <b>out of the dataset</b> (it applies to "
            + e(auto.get("broader_group") or "an unnamed broader group")
            + "); your decision does not change that",
            "unparsed": "the filter gave no readable verdict",
        }.get(status, e(status))
        who = (
            f"your decision ({e(self.reviewer)})"
            if mine
            else (f"not yet decided by {e(self.reviewer)}" if self.reviewer else "type your name")
        )
        self.header.setText(
            f"<b>{e(group)}</b> · stereotype {e(item.item)} <span style='color:{MUTED}'>"
            f"({who})</span>"
        )
        self.text.setHtml(
            f"<p style='font-size:14pt'><b>{e(meta.get('stereotype', ''))}</b></p>"
            f"<p>{e(meta.get('explanation', ''))}</p>"
            f"<p style='color:{MUTED}'>Filter: {note}."
            + (f" “{e(auto['explanation'])}”" if auto.get("explanation") else "")
            + (
                f"<br>Category suggested by the model: {e(self.suggested)}"
                if self.suggested
                else ""
            )
            + "</p>"
        )
        self._show_answers()

    def set_answer(self, question: str, value: str) -> None:
        self.answers[question] = value
        self._show_answers()

    def step_category(self, step: int) -> None:
        n = self.category.count()
        self.category.setCurrentIndex((self.category.currentIndex() + step) % n)

    def _show_answers(self) -> None:
        for label, question, words in (
            (self.common_label, "common", self.COMMON),
            (self.specific_label, "specific", self.SPECIFIC),
        ):
            value = self.answers.get(question)
            label.setText(
                f"<b>{html_text(words[value])}</b>"
                if value
                else f"<span style='color:{MUTED}'>not decided</span>"
            )

    def current_label(self) -> dict[str, Any]:
        category = self.category.currentData()
        data = {
            "common": self.answers.get("common"),
            "specific": self.answers.get("specific"),
            "category": category,
            "category_changed": category != self.suggested,
            "filter_status": self.filter_status,  # the filter's verdict, for its metrics
        }
        value = f"{data['common'] or '?'}/{data['specific'] or '?'}"
        return {"label": value, "data": data, "evidence": None}
