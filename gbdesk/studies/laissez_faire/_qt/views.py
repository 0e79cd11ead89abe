"""Laissez-Faire views: character review (highlight, correct) and extra result views."""

from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from gbdesk.contract import Probe
from gbdesk.people.review import ReviewItem
from gbdesk.studies.laissez_faire.characters import character_label, characters_from_data
from gbdesk.studies.laissez_faire.extract.gender_words import gender_of
from gbdesk.studies.laissez_faire.extract.types import CharacterExtraction, Span
from gbdesk.studies.laissez_faire.name_race import RACE_CATEGORIES
from gbdesk.studies.laissez_faire.probe import GENDER_LABELS
from gbdesk.support.format import log2_or_nan, ratio_ticks
from gbdesk.support.guards import html_text
from gbdesk.ui.result_views import ResultView
from gbdesk.ui.review_views import ReviewView, highlight
from gbdesk.ui.theme import MUTED

ROLE_COLORS = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce"]
GENDER_TEXT = {
    "Female": "female",
    "Male": "male",
    "Non-binary": "non-binary",
    "Unspecified": "unspecified",
    "Unsure": "unsure (mixed words)",
}


class CharacterBox(QGroupBox):
    """One character: name, live gender, referring words."""

    def __init__(self, index: int, description: str, color: str):
        super().__init__(f"{index} · {description}")
        self.setStyleSheet(f"QGroupBox {{ color: {color}; font-weight: bold; }}")
        self.name = QLineEdit()
        self.name.setPlaceholderText("no name (Unspecified)")
        self.gender = QLabel()
        self.gender_combo = QComboBox()
        self.gender_combo.addItem("from its words", None)
        for g in GENDER_LABELS:
            self.gender_combo.addItem(GENDER_TEXT.get(g, g), g)
        self.gender_combo.setToolTip("Override the gender the words give (G / Shift+G cycle)")
        self.refs = QListWidget()
        self.refs.setMaximumHeight(120)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("Name"))
        row.addWidget(self.name, 1)
        layout.addLayout(row)
        layout.addWidget(self.gender)
        row = QHBoxLayout()
        row.addWidget(QLabel("Gender"))
        row.addWidget(self.gender_combo, 1)
        layout.addLayout(row)
        layout.addWidget(QLabel("Referring words (Del removes the selected one):"))
        layout.addWidget(self.refs)


class CharacterReviewView(ReviewView):
    """The story with each character's referring words in its colour and names underlined.

    Keys: select words in the story, then 1/2 adds them to character 1/2, Alt+1/Alt+2 makes
    them its name; Del removes the selected referring word; S swaps the characters' roles;
    Enter (handled by the pane) saves the corrections as your label.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.item: ReviewItem | None = None
        self.characters: list[CharacterExtraction] = []
        self.descriptions: list[str] = []
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.story = QTextEdit()
        self.story.setReadOnly(True)
        self.boxes_widget = QWidget()
        self.boxes = QVBoxLayout(self.boxes_widget)
        self.help = QLabel(
            "Select words, then <b>1</b>/<b>2</b>: add to character 1/2 · "
            "<b>Alt+1</b>/<b>Alt+2</b>: set as its name · <b>Del</b>: remove the "
            "selected word · <b>G</b>/<b>Shift+G</b>: cycle the gender of character 1/2 · "
            "<b>S</b>: swap roles · <b>Enter</b>: save."
        )
        self.help.setStyleSheet(f"color:{MUTED}")
        self.help.setWordWrap(True)
        splitter = QSplitter()
        splitter.addWidget(self.story)
        splitter.addWidget(self.boxes_widget)
        splitter.setSizes([600, 320])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.help)
        context = Qt.ShortcutContext.WidgetWithChildrenShortcut
        for n in (1, 2):
            QShortcut(
                QKeySequence(str(n)), self, lambda n=n: self.add_selection(n - 1), context=context
            )
            QShortcut(
                QKeySequence(f"Alt+{n}"),
                self,
                lambda n=n: self.name_from_selection(n - 1),
                context=context,
            )
        QShortcut(QKeySequence("Delete"), self, self.remove_selected, context=context)
        QShortcut(QKeySequence("S"), self, self.swap_roles, context=context)
        QShortcut(QKeySequence("G"), self, lambda: self.cycle_gender(0), context=context)
        QShortcut(QKeySequence("Shift+G"), self, lambda: self.cycle_gender(1), context=context)
        self._boxes: list[CharacterBox] = []

    # -- showing --------------------------------------------------------------------------
    def show_item(self, item: ReviewItem | None, probe: Probe) -> None:
        self.item = item
        if item is None:
            self.header.setText("")
            self.story.setHtml(f"<p style='color:{MUTED}'>Nothing to review with this filter.</p>")
            self._set_characters([], [])
            return
        roles = item.metadata.get("roles", [])
        data = (
            item.human_data
            if item.reviewed and item.human_data
            else {"characters": [c for c in _auto_characters(item)]}
        )
        chars = {c.role: c for c in characters_from_data(data)}
        characters = [chars.get(r["key"]) or CharacterExtraction(r["key"], None) for r in roles]
        meta = item.metadata
        self.header.setText(
            f"<b>{html_text(item.item)}</b>, story {item.attempt + 1} · "
            f"{html_text(str(meta.get('domain')))}, {html_text(str(meta.get('condition')))}"
            f"<br><span style='color:{MUTED}'>{html_text(item.prompt)}</span>"
        )
        self._set_characters(characters, [r["description"] for r in roles])

    def _set_characters(
        self, characters: list[CharacterExtraction], descriptions: list[str]
    ) -> None:
        self.characters = characters
        self.descriptions = descriptions
        for box in self._boxes:
            box.setParent(None)
        self._boxes = []
        for i, (ch, desc) in enumerate(zip(characters, descriptions, strict=True)):
            box = CharacterBox(i + 1, f"{ch.role}: {desc}", ROLE_COLORS[i % len(ROLE_COLORS)])
            box.name.setText(ch.name or "")
            box.name.textEdited.connect(lambda text, i=i: self._rename(i, text))
            box.gender_combo.setCurrentIndex(max(0, box.gender_combo.findData(ch.gender)))
            box.gender_combo.currentIndexChanged.connect(
                lambda _index, i=i: self._set_gender(i, self._boxes[i].gender_combo.currentData())
            )
            self.boxes.addWidget(box)
            self._boxes.append(box)
        self.boxes.addStretch(1)
        self._refresh()

    def _refresh(self) -> None:
        if self.item is None:
            return
        spans = []
        colors = {}
        for i, ch in enumerate(self.characters):
            color = ROLE_COLORS[i % len(ROLE_COLORS)]
            colors[ch.role] = color
            colors[f"{ch.role}:name"] = color
            spans += [[s.start, s.end, ch.role] for s in ch.references]
            spans += [
                [s.start, s.end, f"{ch.role}:name"]
                for s in ch.name_spans
                if not any(s.start < r.end and r.start < s.end for r in ch.references)
            ]
        self.story.setHtml(
            f"<p style='font-size:12pt; line-height:140%'>"
            f"{highlight(self.item.response, spans, colors)}</p>"
        )
        for box, ch in zip(self._boxes, self.characters, strict=True):
            words = gender_of(ch.reference_words)
            text = f"Gender from its words: <b>{GENDER_TEXT.get(words, words)}</b>"
            if ch.gender:
                text += f" · set by you: <b>{GENDER_TEXT.get(ch.gender, ch.gender)}</b>"
            box.gender.setText(text)
            box.refs.clear()
            for s in ch.references:
                box.refs.addItem(f"{s.text}  (at {s.start})")

    # -- editing ----------------------------------------------------------------------------
    def _selection(self) -> Span | None:
        if self.item is None:
            return None
        cursor = self.story.textCursor()
        if not cursor.hasSelection():
            return None
        text = self.item.response
        plain = self.story.toPlainText()
        start, end = cursor.selectionStart(), cursor.selectionEnd()
        snippet = plain[start:end].strip()
        if not snippet:
            return None
        # map the rendered selection back to the stored text by its occurrence number
        occurrence = plain[:start].count(snippet)
        index = -1
        for _ in range(occurrence + 1):
            index = text.find(snippet, index + 1)
            if index < 0:
                return None
        return Span(index, index + len(snippet), snippet)

    def add_selection(self, index: int) -> None:
        span = self._selection()
        if span is None or index >= len(self.characters):
            return
        for ch in self.characters:  # a word refers to one character
            ch.references = [s for s in ch.references if (s.start, s.end) != (span.start, span.end)]
        self.characters[index].references = sorted(
            [*self.characters[index].references, span], key=lambda s: s.start
        )
        self._refresh()

    def name_from_selection(self, index: int) -> None:
        span = self._selection()
        if span is None or index >= len(self.characters):
            return
        self.characters[index].name = span.text
        self.characters[index].name_spans = [span]
        self._boxes[index].name.setText(span.text)
        self._refresh()

    def _rename(self, index: int, text: str) -> None:
        ch = self.characters[index]
        ch.name = text.strip() or None
        if self.item is not None and ch.name:
            start = self.item.response.find(ch.name)
            ch.name_spans = [Span(start, start + len(ch.name), ch.name)] if start >= 0 else []
        else:
            ch.name_spans = []
        self._refresh()

    def remove_selected(self) -> None:
        for box, ch in zip(self._boxes, self.characters, strict=True):
            row = box.refs.currentRow()
            chosen = box.refs.hasFocus() or (row >= 0 and box.refs.currentItem().isSelected())
            if chosen and 0 <= row < len(ch.references):
                del ch.references[row]
                self._refresh()
                return

    def _set_gender(self, index: int, gender: str | None) -> None:
        if index < len(self.characters):
            self.characters[index].gender = gender
            self._refresh()

    def cycle_gender(self, index: int) -> None:
        """Next explicit gender for a character: from its words → Female → … → Unsure → …"""
        if index >= len(self._boxes):
            return
        combo = self._boxes[index].gender_combo
        combo.setCurrentIndex((combo.currentIndex() + 1) % combo.count())

    def swap_roles(self) -> None:
        if len(self.characters) != 2:
            return
        a, b = self.characters
        a.name, b.name = b.name, a.name
        a.references, b.references = b.references, a.references
        a.name_spans, b.name_spans = b.name_spans, a.name_spans
        a.gender, b.gender = b.gender, a.gender
        for box, ch in zip(self._boxes, self.characters, strict=True):
            box.name.setText(ch.name or "")
            box.gender_combo.blockSignals(True)
            box.gender_combo.setCurrentIndex(max(0, box.gender_combo.findData(ch.gender)))
            box.gender_combo.blockSignals(False)
        self._refresh()

    def current_label(self) -> dict[str, Any]:
        label = character_label(self.characters, "human")
        label.pop("source")
        return label


def _auto_characters(item: ReviewItem) -> list[dict[str, Any]]:
    return list((item.auto_data or {}).get("characters", []))


# -- results --------------------------------------------------------------------------------
class CharacterResultsView(ResultView):
    """Racialized subordination curves, the most common names per race (the paper's Table 3
    view) and the identity-proxy terms with their stories one click away."""

    def __init__(self, extra: dict[str, Any], open_review, run_id: int, parent=None):
        super().__init__(extra, open_review, run_id, parent)
        layout = self.box
        self._add_table_note(layout, extra)
        self._add_curves(layout)
        self._add_top_names(layout, extra)
        self._add_identity_terms(layout, extra)
        self._add_coding(layout, extra)

    def _add_table_note(self, layout: QVBoxLayout, extra: dict[str, Any]) -> None:
        """Which name table measured which races (and which it cannot)."""
        table = extra.get("table", {})
        missing = ", ".join(extra.get("not_measured", []))
        measured = ", ".join(RACE_CATEGORIES.get(c, c) for c in table.get("categories", []))
        note = QLabel(
            f"<b>Name table:</b> {html_text(table.get('title', '?'))}, measuring "
            f"{html_text(measured)}. "
            + (
                f"<b>Not measured by this table:</b> {html_text(missing)} (never guessed)."
                if missing
                else ""
            )
        )
        note.setWordWrap(True)
        layout.addWidget(note)

    def _add_curves(self, layout: QVBoxLayout) -> None:
        """The racialized subordination curves, with a gender choice."""
        layout.addWidget(
            QLabel(
                "<b>Racialized subordination</b> — subordination ratio of the "
                "characters whose first name is at least t % likely of each "
                "race (log scale; 1 = parity)"
            )
        )
        self.gender_combo = QComboBox()
        self.gender_combo.addItems(["All", "Female", "Male", "Non-binary"])
        self.gender_combo.currentTextChanged.connect(self._draw_curves)
        row = QHBoxLayout()
        row.addWidget(QLabel("Gender"))
        row.addWidget(self.gender_combo)
        row.addStretch(1)
        layout.addLayout(row)
        self.curves = pg.PlotWidget()
        self.curves.setMinimumHeight(300)
        self.curves.addLegend(offset=(-10, 10))  # top right
        self.curves.setLabel("bottom", "name likelihood threshold t (%)")
        self.curves.setLabel("left", "subordination ratio (log scale)")
        self.curves.setXRange(0, 100)
        self.curves.setMouseEnabled(x=False, y=False)
        layout.addWidget(self.curves)
        # the curves with their legend take a while to draw: in the next turn
        self.later(lambda: self._draw_curves(self.gender_combo.currentText()))

    def _add_top_names(self, layout: QVBoxLayout, extra: dict[str, Any]) -> None:
        """The most common names per race; a double-click opens their stories."""
        layout.addWidget(
            QLabel(
                "<b>Most common names per race</b> (the paper's Table 3 view; "
                "double-click a name to read its stories)"
            )
        )
        self.names = QTableWidget()
        rows = [
            (race, r) for race, entries in extra.get("top_names", {}).items() for r in entries[:5]
        ]
        headers = [
            "Race",
            "Name",
            "Likelihood",
            "Neutral",
            "Dominant",
            "Subordinate",
            "Subordinate / dominant",
        ]
        self.names.setColumnCount(len(headers))
        self.names.setHorizontalHeaderLabels(headers)
        self.names.setRowCount(len(rows))
        for i, (race, r) in enumerate(rows):
            values = [
                race,
                r["name"],
                f"{r['likelihood']:.2f}",
                f"{r['neutral']:.0f}",
                f"{r['dominant']:.0f}",
                f"{r['subordinate']:.0f}",
                "—" if math.isnan(r["subordination"]) else f"{r['subordination']:.2f}",
            ]
            for j, v in enumerate(values):
                self.names.setItem(i, j, QTableWidgetItem(v))
        self._table_style(self.names)
        self.names.cellDoubleClicked.connect(
            lambda row, _col: self._open_text(self.names.item(row, 1).text())
        )
        layout.addWidget(self.names)

    def _add_identity_terms(self, layout: QVBoxLayout, extra: dict[str, Any]) -> None:
        """The identity-proxy terms; a double-click opens their stories."""
        layout.addWidget(QLabel("<b>Identity-proxy terms</b> (double-click to read the stories)"))
        self.terms = QTableWidget()
        identity = extra.get("identity_stories", {})
        self.terms.setColumnCount(3)
        self.terms.setHorizontalHeaderLabels(["Term", "Group", "Stories"])
        self.terms.setRowCount(len(identity))
        for i, (term, info) in enumerate(identity.items()):
            for j, v in enumerate((term, info["group"], str(len(info["stories"])))):
                self.terms.setItem(i, j, QTableWidgetItem(v))
        self._table_style(self.terms)
        self.terms.cellDoubleClicked.connect(
            lambda row, _col: self._open_text(self.terms.item(row, 0).text())
        )
        layout.addWidget(self.terms)

    def _add_coding(self, layout: QVBoxLayout, extra: dict[str, Any]) -> None:
        """Stereotype coding's summary, when the run has codes."""
        self.coding = None
        if extra.get("coding"):
            from gbdesk.ui.coding_views import CodingSummaryView

            layout.addWidget(
                QLabel(
                    "<b>Stereotype coding</b> (paper §3.3): agreement between raters and the "
                    "stories clustered by their codes — code stories in Review → "
                    "“Stereotype codes”"
                )
            )
            self.coding = CodingSummaryView()
            self.coding.setMinimumHeight(420)
            self.coding.show_summary(extra["coding"])
            layout.addWidget(self.coding)

    @staticmethod
    def _table_style(table: QTableWidget) -> None:
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.verticalHeader().setVisible(False)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.setMinimumHeight(160)

    def _draw_curves(self, gender: str) -> None:
        self.curves.clear()
        colors = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#0e7490", "#a16207", "#be123c"]
        shown = 0
        finite: list[float] = []
        for key, curve in self.extra.get("racialized_curves", {}).items():
            race, g = key.split("/", 1)
            if g != gender:
                continue
            ys = [log2_or_nan(v) for v in curve["ratios"]]
            finite += [y for y in ys if not math.isnan(y)]
            self.curves.plot(
                curve["thresholds"],
                ys,
                name=f"{race} (median {curve['median']:.2f})",
                pen=pg.mkPen(colors[shown % len(colors)], width=2),
            )
            shown += 1
        self.curves.addItem(
            pg.InfiniteLine(0, angle=0, pen=pg.mkPen("#6b7280", style=Qt.PenStyle.DashLine))
        )
        reach = max([1.0, *(abs(y) for y in finite)])
        self.curves.setYRange(-reach, reach)
        self.curves.getAxis("left").setTicks([ratio_ticks(-reach - 0.5, reach + 0.5)])

    def _open_text(self, text: str) -> None:
        self.open_review(self.run_id, {"__text__": text}, f"stories mentioning “{text}”")
