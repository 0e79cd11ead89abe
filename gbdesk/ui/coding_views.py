"""Coding views: a text coded with a codebook (several codes, number keys), and the
agreement and cluster figures of a run's coding.

A probe names its own `CodingView` subclass in `Coding.view` (in its `_qt`
package), e.g. to highlight what made a text worth coding; `CodingSummaryView` is the same
for every probe.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gbdesk.contract import Probe
from gbdesk.people.coding import NO_CODE, CodingItem
from gbdesk.support.format import fmt
from gbdesk.support.guards import html_text
from gbdesk.ui.review_views import highlight
from gbdesk.ui.theme import MUTED

MAX_CODES_BY_KEY = 9


class CodingView(QWidget):
    """One text, its codebook as check boxes (number keys toggle them), a memo, and the
    other raters' codings (shown to whoever adjudicates). The pane stores the coding."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.item: CodingItem | None = None
        self.book: list[dict[str, Any]] = []
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.text = QTextBrowser()
        self.text.setOpenLinks(False)
        self.boxes_widget = QWidget()
        self.boxes = QVBoxLayout(self.boxes_widget)
        self.boxes.setContentsMargins(0, 0, 0, 0)
        self.checks: list[QCheckBox] = []
        self.memo = QLineEdit()
        self.memo.setPlaceholderText("memo (optional): why these codes, what to discuss")
        self.others = QLabel()
        self.others.setWordWrap(True)
        self.others.setTextFormat(Qt.TextFormat.RichText)
        self.help = QLabel(
            "<b>1</b>–<b>9</b>: toggle a code (several per text) · <b>Enter</b>: save and go "
            "on · <b>↑</b>/<b>↓</b>: move"
        )
        self.help.setStyleSheet(f"color:{MUTED}")
        side = QWidget()
        sl = QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.addWidget(QLabel("<b>Codes</b>"))
        sl.addWidget(self.boxes_widget)
        sl.addWidget(QLabel("Memo"))
        sl.addWidget(self.memo)
        sl.addWidget(self.others)
        sl.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.text, 3)
        row.addWidget(side, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addLayout(row, 1)
        layout.addWidget(self.help)
        context = Qt.ShortcutContext.WidgetWithChildrenShortcut
        for n in range(1, MAX_CODES_BY_KEY + 1):
            QShortcut(QKeySequence(str(n)), self, lambda n=n: self.toggle(n - 1), context=context)

    # -- showing ------------------------------------------------------------------------------
    def set_codebook(self, book: list[dict[str, Any]]) -> None:
        if [(e["code"], e["name"], e["definition"]) for e in book] == [
            (e["code"], e["name"], e["definition"]) for e in self.book
        ]:
            return
        self.book = list(book)
        for box in self.checks:
            box.setParent(None)
        self.checks = []
        for n, entry in enumerate(book, start=1):
            key = f"{n} · " if n <= MAX_CODES_BY_KEY else ""
            box = QCheckBox(f"{key}{entry['name']}")
            box.setToolTip(entry["definition"] or "(no definition yet)")
            box.setProperty("code", entry["code"])
            self.boxes.addWidget(box)
            self.checks.append(box)

    def show_item(
        self,
        item: CodingItem | None,
        probe: Probe | None,
        rater: str,
        adjudicating: bool = False,
    ) -> None:
        self.item = item
        if item is None:
            self.header.setText("")
            self.text.setHtml(
                f"<p style='color:{MUTED}'>No text to code with this filter. Draw the texts "
                "to code first (“Draw texts to code…”), or choose another filter.</p>"
            )
            self.others.setText("")
            self.set_codes([], "")
            return
        self.header.setText(self.header_html(item))
        self.text.setHtml(
            f"<p style='color:{MUTED}'><b>Prompt:</b> {html_text(item.prompt)}</p><hr>"
            f"<p style='font-size:12pt; line-height:140%'>{self.story_html(item)}</p>"
        )
        mine = item.codings.get(rater)
        start = (item.consensus if adjudicating and item.consensus else None) or mine
        if start is None and adjudicating:  # the codes every rater gave
            sets = [set(c["codes"]) for c in item.codings.values()]
            start = {"codes": sorted(set.intersection(*sets)) if sets else [], "memo": ""}
        self.set_codes(list((start or {}).get("codes", [])), (start or {}).get("memo", ""))
        self.others.setText(self.others_html(item, rater))

    def header_html(self, item: CodingItem) -> str:
        why = f" — {html_text(item.reason)}" if item.reason else ""
        return (
            f"<b>{html_text(item.story)}</b> · category <b>{html_text(item.category)}</b>"
            f"<span style='color:{MUTED}'>{why}</span>"
        )

    def story_html(self, item: CodingItem) -> str:
        """The text as HTML (subclasses highlight what made it worth coding)."""
        return highlight(item.response, [], {})

    def others_html(self, item: CodingItem, rater: str) -> str:
        names = {e["code"]: e["name"] for e in self.book}

        def codes(c: dict[str, Any]) -> str:
            text = ", ".join(names.get(x, x) for x in c["codes"]) or NO_CODE
            memo = f" <i>— {html_text(c['memo'])}</i>" if c.get("memo") else ""
            return f"{html_text(text)}{memo}"

        lines = [
            f"{html_text(r)}{' (you)' if r == rater else ''}: {codes(c)}"
            for r, c in item.codings.items()
        ]
        if item.consensus:
            lines.append(
                f"<b>Consensus</b> (by {html_text(item.consensus['by'])}): "
                f"{codes(item.consensus)}"
            )
        elif item.disputed:
            lines.append("<b style='color:#b45309'>Raters disagree — not adjudicated yet.</b>")
        return ("<b>Codings</b><br>" + "<br>".join(lines)) if lines else ""

    # -- editing ---------------------------------------------------------------------------
    def set_codes(self, codes: list[str], memo: str) -> None:
        for box in self.checks:
            box.setChecked(box.property("code") in codes)
        self.memo.setText(memo or "")

    def toggle(self, index: int) -> None:
        if self.item is not None and 0 <= index < len(self.checks):
            box = self.checks[index]
            box.setChecked(not box.isChecked())

    def current(self) -> tuple[list[str], str]:
        """The ticked codes (keys, codebook order) and the memo."""
        return [b.property("code") for b in self.checks if b.isChecked()], self.memo.text()


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _num(value: Any) -> str:
    return "—" if value is None else fmt(value, 2)


class CodingSummaryView(QWidget):
    """Agreement per code and overall (initial and current, and after adjudication), and
    the clusters of texts by their combination of codes per category."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.progress = QLabel()
        self.progress.setWordWrap(True)
        self.progress.setTextFormat(Qt.TextFormat.RichText)
        self.agreement = self._table(
            ["Code", "Agreement (initial)", "κ (initial)", "Agreement", "Cohen's κ", "Kripp. α"]
        )
        self.clusters = self._table(["Category", "Codes", "Texts", "Representative", "Largest"])
        self.story = QTextBrowser()
        self.story.setMaximumHeight(160)
        self.clusters.currentCellChanged.connect(lambda row, *_: self._show_story(row))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.progress)
        layout.addWidget(_wrapped("<b>Agreement between raters</b> (current codings; initial: "
                                  "each rater's first coding)"))  # fmt: skip
        layout.addWidget(self.agreement, 1)
        self.adjudicated = QLabel()
        self.adjudicated.setWordWrap(True)
        self.adjudicated.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.adjudicated)
        layout.addWidget(_wrapped("<b>Clusters</b> — texts grouped by their final combination "
                                  "of codes, per category (click one to read its "
                                  "representative text)"))  # fmt: skip
        layout.addWidget(self.clusters, 1)
        layout.addWidget(self.story)
        self.summary: dict[str, Any] | None = None
        self._rows: list[dict[str, Any]] = []

    @staticmethod
    def _table(headers: list[str]) -> QTableWidget:
        table = QTableWidget(0, len(headers))
        table.setHorizontalHeaderLabels(headers)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.verticalHeader().setVisible(False)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        return table

    def show_summary(self, summary: dict[str, Any] | None, texts: dict[int, str] | None = None):
        """`texts`: attempt id → text, for the representative texts."""
        self.summary = summary
        self.texts = texts or {}
        if not summary:
            self.progress.setText(f"<span style='color:{MUTED}'>Nothing coded yet.</span>")
            self.agreement.setRowCount(0)
            self.adjudicated.setText("")
            self.clusters.setRowCount(0)
            self.story.clear()
            return
        p = summary["progress"]
        coded = " · ".join(f"{html_text(r)} {n}/{p['drawn']}" for r, n in p["coded_by"].items())
        self.progress.setText(
            f"<b>Progress</b>: {coded or 'nobody has coded yet'} · disputed {p['disputed']}, "
            f"adjudicated {p['adjudicated']}, unresolved {p['unresolved']}"
        )
        self._fill_agreement(summary.get("agreement"), summary)
        self._rows = [
            {**c, "category": g["category"]} for g in summary["clusters"] for c in g["clusters"]
        ]
        self.clusters.setRowCount(len(self._rows))
        for i, c in enumerate(self._rows):
            values = [
                c["category"],
                ", ".join(c.get("names") or c["codes"]) or NO_CODE,
                str(c["size"]),
                c.get("story", str(c["representative"])),
                "✓" if c["largest"] else "",
            ]
            for j, v in enumerate(values):
                self.clusters.setItem(i, j, QTableWidgetItem(v))
        if self._rows:
            self.clusters.setCurrentCell(0, 0)
            self._show_story(0)

    def _fill_agreement(self, agreement: dict[str, Any] | None, summary: dict[str, Any]) -> None:
        self.agreement.setRowCount(0)
        self.adjudicated.setText("")
        if not agreement:
            return
        adj = agreement["adjudication"]
        versus = "; ".join(
            f"{html_text(r)} {_pct(v['agreement'])} of {v['n_units']} "
            f"(κ {_num(v['cohen_kappa'])})"
            for r, v in adj["raters_vs_final"].items()
        )
        self.adjudicated.setText(
            f"<b>After adjudication</b>: {adj['n_adjudicated']} of {adj['n_disputed']} disputed "
            f"texts settled by a consensus, {adj['n_unresolved']} unresolved; {adj['n_final']} "
            f"texts have final codes. Each rater against the final codes (whole sets): "
            f"{versus or '—'}."
        )
        names = {e["code"]: e["name"] for e in summary["codebook"]}
        initial = {c["code"]: c for c in agreement["initial"]["multi_code"]["codes"]}
        rows = []
        for c in agreement["current"]["multi_code"]["codes"]:
            first = initial.get(c["code"], {})
            rows.append(
                [
                    names.get(c["code"], c["code"]),
                    _pct((first.get("percent_agreement") or {}).get("pairwise")),
                    _num((first.get("cohen_kappa") or {}).get("value")),
                    _pct(c["percent_agreement"]["pairwise"]),
                    _num(c["cohen_kappa"]["value"]),
                    _num(c["krippendorff_alpha"]["value"]),
                ]
            )
        for title, key in (("All codes (pooled)", "pooled"),):
            now = agreement["current"]["multi_code"][key]
            first = agreement["initial"]["multi_code"][key]
            rows.append(
                [
                    title,
                    _pct(first["percent_agreement"]["pairwise"]),
                    _num(first["cohen_kappa"]["value"]),
                    _pct(now["percent_agreement"]["pairwise"]),
                    _num(now["cohen_kappa"]["value"]),
                    _num(now["krippendorff_alpha"]["value"]),
                ]
            )
        now, first = agreement["current"], agreement["initial"]
        rows.append(
            [
                "Whole code sets",
                _pct(first["percent_agreement"]["pairwise"]),
                _num(first["cohen_kappa"]["value"]),
                _pct(now["percent_agreement"]["pairwise"]),
                _num(now["cohen_kappa"]["value"]),
                _num(now["krippendorff_alpha"]["value"]),
            ]
        )
        self.agreement.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                self.agreement.setItem(i, j, QTableWidgetItem(v))

    def _show_story(self, row: int) -> None:
        if not 0 <= row < len(self._rows):
            self.story.clear()
            return
        c = self._rows[row]
        text = self.texts.get(c["representative"]) or c.get("text", "")
        self.story.setHtml(
            f"<b>{html_text(c.get('story', ''))}</b> — representative of "
            f"{c['size']} text(s) coded {html_text(', '.join(c.get('names') or []))}"
            f"<p>{html_text(text)}</p>"
        )


def _wrapped(text: str) -> QLabel:
    """A label that wraps (an unwrapped sentence sets the window's least width)."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label
