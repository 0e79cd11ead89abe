"""The Review pane's coding mode: texts coded with a codebook by several raters.

The queue holds the run's texts drawn for coding (`gbdesk.people.coding.draw_selection`); number
keys toggle codes, Enter stores the rater's coding (or, when adjudicating, the consensus)
and moves on. A second tab shows agreement and the clusters of texts by their codes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gbdesk.contract import get_probe
from gbdesk.contract.running import view_class
from gbdesk.people import coding
from gbdesk.people.coding import CodingItem
from gbdesk.support.guards import html_text
from gbdesk.ui.coding_views import CodingSummaryView, CodingView
from gbdesk.ui.context import AppContext
from gbdesk.ui.widgets import Banner

FILTERS = {
    "all": "All texts drawn for coding",
    "mine": "Not yet coded by you",
    "disputed": "Raters disagree (not adjudicated yet)",
    "adjudicated": "Adjudicated",
}


def _load(store, run_id: int) -> dict[str, Any]:
    items = coding.coding_items(store, run_id)
    return {
        "items": items,
        "book": coding.codebook(store, run_id),
        "summary": coding.coding_summary(store, run_id),
        "info": store.coding_selection_info(run_id),
    }


def coding_view_for(probe) -> type[CodingView]:
    return view_class(probe, probe.capabilities.coding.view) or CodingView


class CodingPanel(QWidget):
    """Coding of one run's texts (the pane gives the run, the rater and whether its user
    is adjudicating)."""

    def __init__(
        self,
        ctx: AppContext,
        rater: Callable[[], str],
        adjudicating: Callable[[], bool],
        banner: Banner,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.ctx = ctx
        self.rater = rater
        self.adjudicating = adjudicating
        self.banner = banner
        self.run_id: int | None = None
        self.probe_name: str | None = None
        self.all_items: list[CodingItem] = []
        self.items: list[CodingItem] = []
        self.book: list[dict[str, Any]] = []
        self.summary: dict[str, Any] | None = None
        self.info: dict[str, Any] | None = None
        self.view: CodingView = CodingView()
        self.saying = False  # announcing its own codings (labels_changed)

        self.filter_combo = QComboBox()
        for key, text in FILTERS.items():
            self.filter_combo.addItem(text, key)
        self.filter_combo.currentIndexChanged.connect(self._refilter)
        self.draw_button = QPushButton("&Draw texts to code…")
        self.draw_button.setToolTip(
            "Draw, with a seed, a few texts of each category of the study's selection rule "
            "(the paper coded 3 per category). Codings already made stay."
        )
        self.draw_button.clicked.connect(lambda: self.draw())
        self.book_button = QPushButton("Code&book…")
        self.book_button.setToolTip("Add, rename and define this run's codes")
        self.book_button.clicked.connect(self.edit_codebook)
        top = QHBoxLayout()
        lab = QLabel("S&how")
        lab.setBuddy(self.filter_combo)
        top.addWidget(lab)
        top.addWidget(self.filter_combo)
        top.addStretch(1)
        top.addWidget(self.draw_button)
        top.addWidget(self.book_button)

        self.queue = QListWidget()
        self.queue.currentRowChanged.connect(self._show_current)
        self.view_page = QWidget()
        self.view_box = QVBoxLayout(self.view_page)
        self.view_box.setContentsMargins(0, 0, 0, 0)
        self.view_box.addWidget(self.view)
        self.summary_view = CodingSummaryView()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.view_page, "&Code")
        self.tabs.addTab(self.summary_view, "&Agreement and clusters")
        splitter = QSplitter()
        splitter.addWidget(self.queue)
        splitter.addWidget(self.tabs)
        splitter.setSizes([280, 720])
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.status)

    # -- the run ------------------------------------------------------------------------------
    def set_run(self, run_id: int | None, probe_name: str | None) -> None:
        if probe_name and probe_name != self.probe_name:
            self.view.setParent(None)
            self.view = coding_view_for(get_probe(probe_name))()
            self.view_box.addWidget(self.view)
        self.run_id, self.probe_name = run_id, probe_name
        self.reload()

    def reload(self) -> None:
        if self.run_id is None:
            return
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _load,
            self.run_id,
            on_done=self._loaded,
            on_error=self.banner.error,
            key="coding.load",
        )

    def _loaded(self, loaded: dict[str, Any]) -> None:
        self.all_items = loaded["items"]
        self.book = loaded["book"]
        self.summary = loaded["summary"]
        self.info = loaded["info"]
        self.view.set_codebook(self.book)
        self._refilter()
        self._show_summary()

    def _show_summary(self) -> None:
        texts = {i.attempt_id: i.response for i in self.all_items}
        self.summary_view.show_summary(self.summary, texts)
        rater = self.rater()
        drawn = [i for i in self.all_items if i.category != coding.NOT_DRAWN]
        mine = sum(1 for i in drawn if rater in i.codings)
        p = (self.summary or {}).get("progress") or {}
        per = " · ".join(f"{html_text(r)} {n}" for r, n in (p.get("coded_by") or {}).items())
        rule = (self.info or {}).get("rule") or {}
        drawn_text = (
            f"{len(drawn)} texts drawn ({rule.get('per_category')} per category, seed "
            f"{rule.get('seed')})"
            if self.info
            else "no texts drawn yet — “Draw texts to code…”"
        )
        self.status.setText(
            f"{drawn_text}. You ({html_text(rater or '?')}) coded <b>{mine}</b> of "
            f"{len(drawn)}. Coded per rater: {per or '—'}. Disputed: {p.get('disputed', 0)}, "
            f"adjudicated: {p.get('adjudicated', 0)}."
        )

    def _refilter(self, *_: Any) -> None:
        current = self.current()
        key = self.filter_combo.currentData()
        rater = self.rater()
        self.items = [
            i
            for i in self.all_items
            if key == "all"
            or (key == "mine" and rater not in i.codings)
            or (key == "disputed" and i.disputed and not i.adjudicated)
            or (key == "adjudicated" and i.adjudicated)
        ]
        self.queue.blockSignals(True)
        self.queue.clear()
        for item in self.items:
            self.queue.addItem(self._entry(item))
        self.queue.blockSignals(False)
        row = 0
        if current is not None:
            row = next(
                (n for n, i in enumerate(self.items) if i.attempt_id == current.attempt_id), 0
            )
        if self.items:
            self.queue.setCurrentRow(row)
        else:
            self._show_current(-1)

    def _entry(self, item: CodingItem) -> QListWidgetItem:
        rater = self.rater()
        mark = "✓ " if rater in item.codings else "• "
        if item.adjudicated:
            mark += "≡ "
        elif item.disputed:
            mark += "≠ "
        names = {e["code"]: e["name"] for e in self.book}
        mine = item.codings.get(rater)
        codes = ", ".join(names.get(c, c) for c in mine["codes"]) if mine else ""
        text = f"{mark}{item.story} · {item.category}" + (f" — {codes}" if codes else "")
        return QListWidgetItem(text)

    def current(self) -> CodingItem | None:
        row = self.queue.currentRow()
        return self.items[row] if 0 <= row < len(self.items) else None

    def _show_current(self, _row: int) -> None:
        probe = get_probe(self.probe_name) if self.probe_name else None
        self.view.show_item(self.current(), probe, self.rater(), self.adjudicating())

    def move(self, step: int) -> None:
        if self.items:
            row = min(max(0, self.queue.currentRow() + step), len(self.items) - 1)
            self.queue.setCurrentRow(row)

    def rater_changed(self) -> None:
        """Another rater at the desk: their marks in the queue, their progress."""
        self._refilter()
        if self.all_items or self.summary:
            self._show_summary()

    def refresh_current(self) -> None:
        """Show the current text again (e.g. after adjudication was switched on)."""
        self._show_current(self.queue.currentRow())

    # -- coding ---------------------------------------------------------------------------
    def save(self) -> None:
        """Store the view's codes as the rater's coding (the consensus when adjudicating)
        and go on to the next text."""
        item = self.current()
        if item is None:
            return
        rater = self.rater()
        if not rater:
            self.banner.warn(
                "Type your name in “Reviewer” first: every coding records who made it."
            )
            return
        codes, memo = self.view.current()
        consensus = self.adjudicating()
        if consensus and not item.codings:
            self.banner.warn("Nobody has coded this text yet: there is nothing to adjudicate.")
            return
        self.banner.clear()
        attempt_id = item.attempt_id

        def save(store):
            coding.save_coding(store, attempt_id, rater, codes, memo, consensus=consensus)
            return _load(store, self.run_id)

        # optimistic update so the keyboard flow never waits on the database
        entry = {"codes": codes, "memo": memo, "at": ""}
        if consensus:
            item.consensus = {**entry, "by": rater}
        else:
            item.codings[rater] = entry
        row = self.queue.currentRow()
        self.queue.item(row).setText(self._entry(item).text())
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            save,
            on_done=self._saved,
            on_error=self.banner.error,
        )
        if row + 1 < len(self.items):
            self.queue.setCurrentRow(row + 1)
        else:
            self._show_current(row)

    def _saved(self, loaded: dict[str, Any]) -> None:
        current = self.current()
        self.all_items = loaded["items"]
        self.summary = loaded["summary"]
        self.info = loaded["info"]
        fresh = {i.attempt_id: i for i in self.all_items}
        # keep the queue as it is (the user is moving through it); refresh its entries
        self.items = [fresh.get(i.attempt_id, i) for i in self.items]
        for row, item in enumerate(self.items):
            self.queue.item(row).setText(self._entry(item).text())
        if current is not None and current.attempt_id in fresh:
            self.view.item = fresh[current.attempt_id]
        self._show_summary()
        if self.run_id is not None:
            self.saying = True  # the Review pane need not reload what was just saved
            try:
                self.ctx.labels_changed.emit(self.run_id)
            finally:
                self.saying = False

    # -- drawing and the codebook -------------------------------------------------------------
    def draw(
        self,
        per_category: int | None = None,
        seed: int | None = None,
        threshold: float | None = None,
    ) -> None:
        """Ask for the sample size, seed and threshold (unless given), then draw."""
        if self.run_id is None:
            return
        if per_category is None:
            dialog = DrawDialog(self)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return
            per_category, seed, threshold = dialog.values()
        run_id = self.run_id

        def draw(store):
            result = coding.draw_selection(
                store, run_id, per_category=per_category, seed=seed or 0, threshold=threshold
            )
            return result, _load(store, run_id)

        def drawn(result) -> None:
            drawn_, loaded = result
            counts = ", ".join(f"{c} {n}" for c, n in drawn_["available"].items())
            self.banner.ok(
                f"Run {run_id}: {len(drawn_['drawn'])} texts drawn to code "
                f"({drawn_['per_category']} per category, seed {drawn_['seed']}); texts "
                f"available per category: {counts}."
            )
            self._loaded(loaded)

        self.ctx.tasks.with_store(self.ctx.db_path, draw, on_done=drawn, on_error=self.banner.error)

    def edit_codebook(self) -> None:
        dialog = CodebookDialog(self.book, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.apply_codebook(dialog.changes())

    def apply_codebook(self, changes: list[tuple[str, str | None, str, str]]) -> None:
        """Apply (action, code, name, definition) changes: ("add", None, name, definition),
        ("edit", code, name, definition)."""
        if self.run_id is None or not changes:
            return
        run_id, who = self.run_id, self.rater()

        def apply(store):
            book = {e["code"]: e for e in coding.ensure_codebook(store, run_id)}
            with store.transaction():
                for action, code, name, definition in changes:
                    if action == "add":
                        coding.add_code(store, run_id, name, definition, who)
                        continue
                    old = book[code]
                    if name != old["name"]:
                        coding.rename_code(store, run_id, code, name, who)
                    if definition != old["definition"]:
                        coding.define_code(store, run_id, code, definition, who)
            return _load(store, run_id)

        self.ctx.tasks.with_store(
            self.ctx.db_path, apply, on_done=self._loaded, on_error=self.banner.error
        )


class DrawDialog(QDialog):
    """Sample size per category, seed and name-likelihood threshold of a draw."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Draw texts to code")
        self.per = QSpinBox()
        self.per.setRange(1, 10_000)
        self.per.setValue(3)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2_000_000_000)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 0.99)
        self.threshold.setSingleStep(0.05)
        self.threshold.setValue(0.6)
        form = QFormLayout(self)
        form.addRow("Texts per category (the paper: 3)", self.per)
        form.addRow("Seed", self.seed)
        form.addRow("Name-likelihood threshold (the paper: 0.6)", self.threshold)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def values(self) -> tuple[int, int, float]:
        return self.per.value(), self.seed.value(), self.threshold.value()


class CodebookDialog(QDialog):
    """The run's codes: edit a name or definition in place, add a row for a new code."""

    def __init__(self, book: list[dict[str, Any]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Codebook")
        self.book = book
        self.table = QTableWidget(len(book), 2)
        self.table.setHorizontalHeaderLabels(["Name", "Definition"])
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.AllEditTriggers)
        for row, entry in enumerate(book):
            self.table.setItem(row, 0, QTableWidgetItem(entry["name"]))
            self.table.setItem(row, 1, QTableWidgetItem(entry["definition"]))
        add = QPushButton("&Add a code")
        add.clicked.connect(self.add_row)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(
            QLabel(
                "Codings keep a code through a rename (they store its key). Where a code "
                "came from is kept with it and exported with the report."
            )
        )
        layout.addWidget(self.table, 1)
        layout.addWidget(add)
        layout.addWidget(buttons)
        self.resize(760, 360)

    def add_row(self) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.table.setItem(row, 0, QTableWidgetItem(""))
        self.table.setItem(row, 1, QTableWidgetItem(""))
        self.table.setCurrentCell(row, 0)

    def changes(self) -> list[tuple[str, str | None, str, str]]:
        out: list[tuple[str, str | None, str, str]] = []
        for row in range(self.table.rowCount()):
            name = (self.table.item(row, 0) or QTableWidgetItem("")).text().strip()
            definition = (self.table.item(row, 1) or QTableWidgetItem("")).text().strip()
            if row < len(self.book):
                entry = self.book[row]
                if name and (name, definition) != (entry["name"], entry["definition"]):
                    out.append(("edit", entry["code"], name, definition))
            elif name:
                out.append(("add", None, name, definition))
        return out
