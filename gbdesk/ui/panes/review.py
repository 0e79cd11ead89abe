"""Review pane: confirm or correct automatic labels with the keyboard."""

from __future__ import annotations

import html
import math
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gbdesk.results import review_stats, runs_with_generations
from gbdesk.review import ORDERS, ReviewItem, filters_for, review_queue
from gbdesk.studies import get_probe
from gbdesk.ui.context import AppContext
from gbdesk.ui.review_views import ReviewView, review_view_for
from gbdesk.ui.theme import GENDER_COLORS, MUTED
from gbdesk.ui.widgets import Banner, pane_header


def _stats(store, run_id: int):
    """Review statistics and the random review sample's progress."""
    from gbdesk.ppi_metrics import sample_progress

    return review_stats(store, run_id), sample_progress(store, run_id)


def _load(store, run_id: int, filter_name: str, item_filter: dict | None, order: str):
    return review_queue(store, run_id, filter_name, item_filter, order), _stats(store, run_id)


class ReviewPane(QWidget):
    title = "Review"

    def __init__(self, ctx: AppContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.items: list[ReviewItem] = []
        self.runs: list[dict[str, Any]] = []
        self.item_filter: dict[str, Any] | None = None
        self.view: ReviewView | None = None
        self.view_probe: str | None = None
        self.banner = Banner()

        self.run_combo = QComboBox()
        self.run_combo.currentIndexChanged.connect(self._run_changed)
        self.filter_combo = QComboBox()
        self._fill_filters(None)
        self.filter_combo.currentIndexChanged.connect(self.reload)
        self.order_combo = QComboBox()
        for key, text in ORDERS.items():
            self.order_combo.addItem(text, key)
        self.order_combo.setToolTip(
            "Hard cases first: as the labeller ranks them (ties, undecided, narrow margins). "
            "Least sure first: lowest calibrated confidence first, where the labeller gives one "
            "(reviewing these fixes the most errors per story read)."
        )
        self.order_combo.currentIndexChanged.connect(self.reload)
        self.reviewer = QLineEdit(ctx.reviewer)
        self.reviewer.setPlaceholderText("your name")
        self.reviewer.editingFinished.connect(
            lambda: ctx.settings.setValue("reviewer", self.reviewer.text().strip())
        )
        self.filter_chip = QPushButton()
        self.filter_chip.setVisible(False)
        self.filter_chip.setToolTip("Clear this filter")
        self.filter_chip.clicked.connect(self.clear_item_filter)
        top = QHBoxLayout()
        for label, w in (
            ("Ru&n", self.run_combo),
            ("&Show", self.filter_combo),
            ("&Order", self.order_combo),
            ("Re&viewer", self.reviewer),
        ):
            lab = QLabel(label)
            lab.setBuddy(w)
            top.addWidget(lab)
            top.addWidget(w)
        top.addWidget(self.filter_chip)
        top.addStretch(1)
        self.sample_button = QPushButton("Draw a review &sample…")
        self.sample_button.setToolTip(
            "Mark a uniformly random, seeded set of this run's attempts (whole items where the "
            "metrics average over items) for review. Reviewing them lets Results give every "
            "metric as a prediction-powered estimate whose interval stays valid whatever the "
            "automatic labeller gets wrong. Only a random sample supports this: review it in "
            "run order, not least-sure-first."
        )
        self.sample_button.clicked.connect(self.draw_sample)
        top.addWidget(self.sample_button)

        self.queue = QListWidget()
        self.queue.currentRowChanged.connect(self._show_current)
        self.view_holder = QVBoxLayout()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.buttons = QHBoxLayout()
        self.label_buttons: list[QPushButton] = []
        self.confirm_button = QPushButton("Confirm detector's label  (Enter)")
        self.confirm_button.clicked.connect(self.confirm)
        self.stats = QLabel()
        self.stats.setWordWrap(True)
        self.stats.setTextFormat(Qt.TextFormat.RichText)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addLayout(self.view_holder, 1)
        rl.addWidget(self.status)
        rl.addLayout(self.buttons)
        splitter = QSplitter()
        splitter.addWidget(self.queue)
        splitter.addWidget(right)
        splitter.setSizes([300, 700])

        layout = QVBoxLayout(self)
        layout.addWidget(
            pane_header(
                "Review",
                "Check the automatic labels. Keys: the letter (or number) of a label sets it, "
                "Enter confirms the detector's label, ↑/↓ move. Your labels are stored apart "
                "from the detector's, with your name and the time.",
            )
        )
        layout.addWidget(self.banner)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.stats)

        for seq in ("Return", "Enter"):
            QShortcut(
                QKeySequence(seq),
                self,
                self.confirm,
                context=Qt.ShortcutContext.WidgetWithChildrenShortcut,
            )
        QShortcut(
            QKeySequence("Down"),
            self,
            lambda: self.move(1),
            context=Qt.ShortcutContext.WidgetWithChildrenShortcut,
        )
        QShortcut(
            QKeySequence("Up"),
            self,
            lambda: self.move(-1),
            context=Qt.ShortcutContext.WidgetWithChildrenShortcut,
        )
        self._label_shortcuts: list[QShortcut] = []
        ctx.db_changed.connect(self.refresh_runs)
        ctx.runs_changed.connect(self.refresh_runs)
        ctx.open_review.connect(self.open_filtered)
        self.refresh_runs()

    # -- runs and queue -------------------------------------------------------------------
    def refresh_runs(self) -> None:
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            runs_with_generations,
            on_done=self._show_runs,
            on_error=self.banner.error,
            key="review.runs",
        )

    def _show_runs(self, runs: list[dict[str, Any]]) -> None:
        current = self.run_id()
        self.runs = runs
        self.run_combo.blockSignals(True)
        self.run_combo.clear()
        for r in reversed(runs):
            self.run_combo.addItem(f"Run {r['id']} · {r['probe']} · {r.get('model_name')}", r["id"])
        if current is not None and self.run_combo.findData(current) >= 0:
            self.run_combo.setCurrentIndex(self.run_combo.findData(current))
        self.run_combo.blockSignals(False)
        if not runs:
            self.items = []
            self.queue.clear()
            self.queue.addItem("No generations yet — start a run in Runs.")
            self.stats.clear()
            return
        if current != self.run_id():
            self._run_changed()

    def run_id(self) -> int | None:
        data = self.run_combo.currentData()
        return int(data) if data is not None else None

    def probe_name(self) -> str | None:
        run_id = self.run_id()
        for r in self.runs:
            if r["id"] == run_id:
                return r["probe"]
        return None

    def _run_changed(self, *_: Any) -> None:
        probe_name = self.probe_name()
        if probe_name is None:
            return
        if probe_name != self.view_probe:
            self._install_view(probe_name)
        self.reload()

    def _fill_filters(self, probe_name: str | None) -> None:
        """The filters of the run's probe; the current choice is kept when it exists."""
        current = self.filter_combo.currentData()
        self.filter_combo.blockSignals(True)
        self.filter_combo.clear()
        for key, text in filters_for(get_probe(probe_name) if probe_name else None).items():
            self.filter_combo.addItem(text, key)
        self.filter_combo.setCurrentIndex(max(0, self.filter_combo.findData(current)))
        self.filter_combo.blockSignals(False)

    def _install_view(self, probe_name: str) -> None:
        if self.view is not None:
            self.view.setParent(None)
        self._fill_filters(probe_name)
        self.view = review_view_for(get_probe(probe_name))()
        self.view_holder.addWidget(self.view)
        self.view_probe = probe_name
        for b in self.label_buttons:
            b.setParent(None)
        for s in self._label_shortcuts:
            s.setParent(None)
        self.label_buttons, self._label_shortcuts = [], []
        while self.buttons.count():
            self.buttons.takeAt(0)
        probe = get_probe(probe_name)
        for number, option in enumerate(probe.label_options, start=1):
            button = QPushButton(f"{option.title}  ({option.key} / {number})")
            button.setStyleSheet(f"color:{option.color}; font-weight:bold")
            button.clicked.connect(lambda _c=False, v=option.value: self.set_label(v))
            self.buttons.addWidget(button)
            self.label_buttons.append(button)
            for key in (option.key, str(number)):
                shortcut = QShortcut(
                    QKeySequence(key),
                    self,
                    lambda v=option.value: self.set_label(v),
                    context=Qt.ShortcutContext.WidgetWithChildrenShortcut,
                )
                self._label_shortcuts.append(shortcut)
        self.buttons.addWidget(self.confirm_button)
        self.buttons.addStretch(1)

    def reload(self, *_: Any) -> None:
        run_id = self.run_id()
        if run_id is None:
            return
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _load,
            run_id,
            self.filter_combo.currentData(),
            self.item_filter,
            self.order_combo.currentData(),
            on_done=self._show_queue,
            on_error=self.banner.error,
            key="review.queue",
        )

    def _show_queue(self, loaded) -> None:
        items, stats = loaded
        current = self.current()
        self.items = items
        self.queue.blockSignals(True)
        self.queue.clear()
        for item in items:
            self.queue.addItem(self._queue_entry(item))
        self.queue.blockSignals(False)
        row = 0
        if current is not None:
            for i, item in enumerate(items):
                if item.attempt_id == current.attempt_id:
                    row = i
        if items:
            self.queue.setCurrentRow(row)
        else:
            self._show_current(-1)
        self._show_stats(stats)

    def _queue_entry(self, item: ReviewItem) -> QListWidgetItem:
        mark = ("✓ " if item.reviewed else "• ") + ("◆ " if item.in_sample else "")
        text = f"{mark}{item.item} #{item.attempt + 1} — {item.effective_label}"
        if item.corrected:
            text += f" (detector: {item.auto_label})"
        entry = QListWidgetItem(text)
        entry.setForeground(Qt.GlobalColor.black if item.reviewed else Qt.GlobalColor.darkGray)
        return entry

    def current(self) -> ReviewItem | None:
        row = self.queue.currentRow()
        return self.items[row] if 0 <= row < len(self.items) else None

    def _show_current(self, row: int) -> None:
        item = self.current()
        probe_name = self.probe_name()
        if self.view is not None and probe_name:
            self.view.show_item(item, get_probe(probe_name))
        if item is None:
            self.status.setText("")
            return
        auto = (
            f"<span style='color:{GENDER_COLORS.get(item.auto_label, MUTED)}'>"
            f"{item.auto_label}</span>"
        )
        if item.reviewed:
            human = (
                f"<span style='color:{GENDER_COLORS.get(item.human_label, MUTED)}'>"
                f"{item.human_label}</span>"
            )
            self.status.setText(
                f"Label: <b>{human}</b> — <b>human</b>, by {html.escape(item.reviewer or '')} "
                f"at {html.escape((item.reviewed_at or '')[:16])}. Detector said {auto} "
                f"({html.escape(item.auto_source)})."
            )
        else:
            self.status.setText(
                f"Label: <b>{auto}</b> — <b>automatic</b> "
                f"({html.escape(item.auto_source)}); not yet reviewed."
            )

    def move(self, step: int) -> None:
        if not self.items:
            return
        row = min(max(0, self.queue.currentRow() + step), len(self.items) - 1)
        self.queue.setCurrentRow(row)

    # -- labelling --------------------------------------------------------------------------
    def confirm(self) -> None:
        """Enter: store the detector's label as the reviewer's — or, for views that edit
        structured labels (Laissez-Faire characters), what the view now shows."""
        item = self.current()
        if item is None:
            return
        if self.view is not None and hasattr(self.view, "current_label"):
            self.save_label(self.view.current_label())
        else:
            self.set_label(item.auto_label)

    def set_label(self, value: str) -> None:
        self.save_label({"label": value})

    def save_label(self, label: dict[str, Any]) -> None:
        """Store a human label ({label, data?, evidence?}) for the current attempt."""
        item = self.current()
        if item is None:
            return
        value = label["label"]
        reviewer = self.reviewer.text().strip()
        if not reviewer:
            self.banner.warn(
                "Type your name in “Reviewer” first: every human label records who gave it."
            )
            self.reviewer.setFocus()
            return
        self.ctx.settings.setValue("reviewer", reviewer)
        self.banner.clear()
        run_id = item.run_id

        def save(store):
            store.add_human_label(
                item.attempt_id, reviewer, value, label.get("data"), label.get("evidence")
            )
            return _stats(store, run_id)

        def saved(stats) -> None:
            self.ctx.labels_changed.emit(run_id)
            self._show_stats(stats)

        # optimistic update so the keyboard flow never waits on the database
        from datetime import datetime, timezone

        item.human_label, item.reviewer = value, reviewer
        item.human_data = label.get("data")
        item.reviewed_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        row = self.queue.currentRow()
        self.queue.item(row).setText(self._queue_entry(item).text())
        self.queue.item(row).setForeground(Qt.GlobalColor.black)
        self.ctx.tasks.with_store(self.ctx.db_path, save, on_done=saved, on_error=self.banner.error)
        if row + 1 < len(self.items):
            self.queue.setCurrentRow(row + 1)
        else:
            self._show_current(row)

    def _show_stats(self, loaded) -> None:
        stats, sample = loaded

        def pct(x: float | None) -> str:
            return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"

        parts = [
            f"<b>{stats.reviewed}</b> of {stats.attempts} attempts reviewed, "
            f"<b>{stats.corrected}</b> corrected"
        ]
        probe_name = self.probe_name()
        summary = (
            get_probe(probe_name).quality_summary(stats.quality)
            if probe_name and stats.reviewed
            else None
        )
        if sample:
            unit = "items" if sample["unit"] == "item" else "attempts"
            parts.append(
                f"Random review sample: <b>{sample['reviewed']}</b> of {sample['size']} {unit} "
                f"reviewed (seed {sample['seed']}) — prediction-powered results need at least 30."
            )
        if stats.estimate and stats.estimate.get("text"):
            parts.append(html.escape(stats.estimate["text"]) + ".")
        if summary:
            parts.append(html.escape(summary))
        elif stats.reviewed:
            per = " · ".join(
                f"{label}: precision {pct(v['precision'])}, recall {pct(v['recall'])}"
                for label, v in stats.per_label.items()
            )
            parts.append(f"Detector against your labels — {per}; agreement {pct(stats.accuracy)}.")
        self.stats.setText("<br>".join(parts))

    def draw_sample(self, size: int | None = None, seed: int | None = None) -> None:
        """Ask for a size and seed (unless given), draw the run's random review sample and
        show it (filter "In the random review sample")."""
        run_id = self.run_id()
        if run_id is None:
            return
        if size is None:
            from PySide6.QtWidgets import QInputDialog

            size, ok = QInputDialog.getInt(
                self,
                "Random review sample",
                "How many units to review by hand (30 at least; 100–300 is typical):",
                100,
                1,
                1_000_000,
            )
            if not ok:
                return
        seed = 0 if seed is None else seed

        def draw(store):
            from gbdesk.ppi_metrics import draw_sample

            return draw_sample(store, run_id, size, seed)

        def drawn(result) -> None:
            unit = "items (all their attempts)" if result["unit"] == "item" else "attempts"
            self.banner.ok(
                f"Run {run_id}: random review sample of {result['size']} of {result['of']} "
                f"{unit} (seed {result['seed']}). Review them in run order; Results can then "
                "show prediction-powered estimates."
            )
            self.filter_combo.setCurrentIndex(max(0, self.filter_combo.findData("sample")))
            self.order_combo.setCurrentIndex(max(0, self.order_combo.findData("run")))
            self.reload()
            self.ctx.labels_changed.emit(run_id)

        self.ctx.tasks.with_store(self.ctx.db_path, draw, on_done=drawn, on_error=self.banner.error)

    # -- navigation from Results --------------------------------------------------------
    def open_filtered(self, run_id: int, filter_name: str, item_filter: Any, title: str) -> None:
        index = self.run_combo.findData(run_id)
        if index < 0:
            return
        self.item_filter = dict(item_filter) if item_filter else None
        self.filter_chip.setText(f"Filtered: {title}  ✕" if title else "")
        self.filter_chip.setVisible(bool(self.item_filter))
        self.run_combo.blockSignals(True)
        self.run_combo.setCurrentIndex(index)
        self.run_combo.blockSignals(False)
        probe_name = self.probe_name()
        if probe_name is not None and probe_name != self.view_probe:
            self._install_view(probe_name)
        self.filter_combo.blockSignals(True)
        self.filter_combo.setCurrentIndex(max(0, self.filter_combo.findData(filter_name)))
        self.filter_combo.blockSignals(False)
        self._run_changed()
        self.queue.setFocus()

    def clear_item_filter(self) -> None:
        self.item_filter = None
        self.filter_chip.setVisible(False)
        self.reload()
