"""Review pane: confirm or correct automatic labels with the keyboard."""

from __future__ import annotations

import logging
import math
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gbdesk.analysis.label_accuracy import review_stats
from gbdesk.analysis.results import runs_with_generations
from gbdesk.contract import get_probe
from gbdesk.people.review import ORDERS, ReviewItem, filters_for, review_queue
from gbdesk.support.guards import html_text
from gbdesk.ui.context import AppContext
from gbdesk.ui.review_views import ReviewView, review_view_for
from gbdesk.ui.theme import GENDER_COLORS, MUTED
from gbdesk.ui.widgets import Banner, LazyList, pane_header

log = logging.getLogger(__name__)


def _stats(store, run_id: int):
    """Review statistics, the random review sample's progress, and the agreement between
    raters (None while fewer than two people labelled)."""
    from gbdesk.analysis.ppi_metrics import sample_progress

    agreement = None
    if len(store.rater_labels(run_id)) >= 2:
        from gbdesk.people.raters import labels_agreement

        agreement = labels_agreement(store, run_id)
    return review_stats(store, run_id), sample_progress(store, run_id), agreement


def _load(store, run_id: int, filter_name: str, item_filter: dict | None, order: str):
    return review_queue(store, run_id, filter_name, item_filter, order), _stats(store, run_id)


def agreement_line(agreement: dict[str, Any]) -> str:
    """One line of the agreement between raters per label kind (current labels)."""

    def num(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    parts = []
    for kind in agreement.values():
        now = kind["current"]
        if not now["n_units_overlap"]:
            continue
        adj = kind["adjudication"]
        parts.append(
            f"{html_text(kind['title'])}: {now['percent_agreement']['pairwise']:.0%} agree, "
            f"κ {num(now['cohen_kappa']['value'])}, α {num(now['krippendorff_alpha']['value'])} "
            f"over {now['n_units_overlap']} units; {adj['n_disputed']} disputed, "
            f"{adj['n_adjudicated']} adjudicated"
        )
    if not parts:
        return "Raters: no unit rated by two people yet."
    return "<b>Agreement between raters</b> — " + " · ".join(parts) + "."


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
        self.adopt_buttons: list[QPushButton] = []  # "take <rater>'s label" when adjudicating
        self.label_buttons: list[QPushButton] = []
        self._label_shortcuts: list[QShortcut] = []
        self._saying = False  # this pane is announcing its own labels
        self.banner = Banner()
        self._lay_out(self._build_top(), self._build_labelling())
        self._connect_signals()
        self.refresh_runs()

    # -- layout: the widgets, built once --------------------------------------------------
    def _build_top(self) -> QHBoxLayout:
        """The row above the queue: run, filter, order, reviewer, adjudication, mode, the
        filter chip and the review sample."""
        self.run_combo = QComboBox()
        self.filter_combo = QComboBox()
        self._fill_filters(None)
        for combo in (self.run_combo, self.filter_combo):  # long run names, filter words:
            combo.setSizeAdjustPolicy(  # shown cut, not widening the window past the screen
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
            combo.setMinimumContentsLength(8)
        self.order_combo = QComboBox()
        for key, text in ORDERS.items():
            self.order_combo.addItem(text, key)
        self.order_combo.setToolTip(
            "Hard cases first: as the labeller ranks them (ties, undecided, narrow margins). "
            "Least sure first: lowest calibrated confidence first, where the labeller gives one "
            "(reviewing these fixes the most errors per story read)."
        )
        self.reviewer = QLineEdit(self.ctx.reviewer)
        self.reviewer.setPlaceholderText("your name")
        self.adjudicate = QCheckBox("Ad&judicate")
        self.adjudicate.setToolTip(
            "Decide where raters disagree: the labels (or codes) you give now are stored as "
            "the consensus, with your name, apart from every rater's own labels. Use the "
            "filter “Raters disagree” to see what is left to decide."
        )
        self.mode_combo = QComboBox()
        self.mode_combo.addItem("Labels", "labels")
        self.mode_combo.setToolTip(
            "Labels: check the automatic labels. The study's coding mode: code texts with a "
            "codebook (several codes per text), as several raters, and adjudicate."
        )
        self.mode_combo.setVisible(False)
        self.filter_chip = QPushButton()
        self.filter_chip.setVisible(False)
        self.filter_chip.setToolTip("Clear this filter")
        top = QHBoxLayout()
        self._top_labels: dict[QWidget, QLabel] = {}
        for label, w in (
            ("Ru&n", self.run_combo),
            ("&Show", self.filter_combo),
            ("&Order", self.order_combo),
            ("Re&viewer", self.reviewer),
        ):
            lab = QLabel(label)
            lab.setBuddy(w)
            self._top_labels[w] = lab
            top.addWidget(lab)
            top.addWidget(w)
        top.addWidget(self.adjudicate)
        top.addWidget(self.mode_combo)
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
        top.addWidget(self.sample_button)
        return top

    def _build_labelling(self) -> QSplitter:
        """The queue beside the current text's view, its status, adopt and label buttons."""
        self.queue = LazyList()  # a run's every attempt: only the rows on screen are described
        # the keys act on the queue: show where they go (Qt's default style draws no ring)
        self.queue.setStyleSheet(
            "QListView:focus { border: 2px solid #1f5fbf; } "
            "QListView { border: 1px solid #d1d5db; }"
        )
        self.view_holder = QVBoxLayout()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.buttons = QHBoxLayout()
        self.adopt_row = QHBoxLayout()  # "take <rater>'s label" when adjudicating
        self.confirm_button = QPushButton("Confirm detector's label  (Enter)")
        self.stats = QLabel()
        self.stats.setWordWrap(True)
        self.stats.setTextFormat(Qt.TextFormat.RichText)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addLayout(self.view_holder, 1)
        rl.addWidget(self.status)
        rl.addLayout(self.adopt_row)
        rl.addLayout(self.buttons)
        splitter = QSplitter()
        splitter.addWidget(self.queue)
        splitter.addWidget(right)
        splitter.setSizes([300, 700])
        return splitter

    def _lay_out(self, top: QHBoxLayout, splitter: QSplitter) -> None:
        """Header, banner, the top row; labelling and coding stacked (the mode chooses);
        the statistics below."""
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
        from gbdesk.ui.coding_panel import CodingPanel

        self.coding = CodingPanel(
            self.ctx,
            lambda: self.reviewer.text().strip(),
            self.adjudicate.isChecked,
            self.banner,
        )
        self.stack = QStackedWidget()
        self.stack.addWidget(splitter)
        self.stack.addWidget(self.coding)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.stats)

    # -- wiring -----------------------------------------------------------------------------
    def _connect_signals(self) -> None:
        """What each widget, key and application-wide change sets off."""
        self.run_combo.currentIndexChanged.connect(self._run_changed)
        self.filter_combo.currentIndexChanged.connect(self.reload)
        self.order_combo.currentIndexChanged.connect(self.reload)
        self.reviewer.editingFinished.connect(self._reviewer_changed)
        # views that show each reviewer's own label follow a change of name
        self.reviewer.editingFinished.connect(lambda: self._show_current(self.queue.currentRow()))
        self.adjudicate.toggled.connect(self._adjudicate_toggled)
        self.mode_combo.currentIndexChanged.connect(self._mode_changed)
        self.filter_chip.clicked.connect(self.clear_item_filter)
        self.sample_button.clicked.connect(self.draw_sample)
        self.queue.currentRowChanged.connect(self._show_current)
        self.confirm_button.clicked.connect(self.confirm)
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
        ctx = self.ctx
        ctx.db_changed.connect(self.refresh_runs)
        ctx.runs_changed.connect(self.refresh_runs)
        ctx.labels_changed.connect(self._labels_changed)
        ctx.open_review.connect(self.open_filtered)

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
        counts = {r["id"]: (r["attempts_done"], r["status"]) for r in self.runs}
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
        elif current is not None and counts.get(current) != next(
            ((r["attempts_done"], r["status"]) for r in runs if r["id"] == current), None
        ):  # the run shown gained attempts (still running, e.g. in the CLI): count them
            self._reload_shown()

    def _labels_changed(self, run_id: int) -> None:
        """Labels of the run shown changed elsewhere (another window, the CLI, the Runs
        pane's labelling pass): show them and recount."""
        if not self._saying and run_id == self.run_id():
            self._reload_shown()

    def _reload_shown(self) -> None:
        if self.coding_mode():
            if not self.coding.saying:
                self.coding.reload()
        else:
            self.reload()

    def _announce(self, run_id: int) -> None:
        """Tell the other panes this pane changed the run's labels (not itself)."""
        self._saying = True
        try:
            self.ctx.labels_changed.emit(run_id)
        finally:
            self._saying = False

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
        if self.coding_mode():
            self.coding.set_run(self.run_id(), probe_name)
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
        self._offer_coding(probe)

    # -- the coding mode (texts coded with a codebook) ----------------------------------------
    def _offer_coding(self, probe) -> None:
        """Offer the probe's coding mode, if it has one (keeping the mode chosen)."""
        coding = self.coding_mode()
        self.mode_combo.blockSignals(True)
        while self.mode_combo.count() > 1:
            self.mode_combo.removeItem(1)
        if probe.capabilities.coding.view:
            self.mode_combo.addItem(probe.capabilities.coding.title, "coding")
        self.mode_combo.setVisible(bool(probe.capabilities.coding.view))
        self.mode_combo.setCurrentIndex(1 if coding and probe.capabilities.coding.view else 0)
        self.mode_combo.blockSignals(False)
        self._apply_mode()

    def coding_mode(self) -> bool:
        return self.mode_combo.currentData() == "coding"

    def set_coding_mode(self, on: bool) -> None:
        index = self.mode_combo.findData("coding" if on else "labels")
        if index >= 0:
            self.mode_combo.setCurrentIndex(index)

    def _mode_changed(self, *_: Any) -> None:
        self._apply_mode()
        if self.coding_mode():
            self.coding.set_run(self.run_id(), self.probe_name())
        else:
            self.reload()

    def _apply_mode(self) -> None:
        coding = self.coding_mode()
        self.stack.setCurrentIndex(1 if coding else 0)
        # the labels' filter, order, sample and statistics mean nothing to the coding
        for widget in (self.filter_combo, self.order_combo, self.sample_button, self.stats):
            widget.setVisible(not coding)
            if widget in self._top_labels:
                self._top_labels[widget].setVisible(not coding)
        for shortcut in self._label_shortcuts:
            shortcut.setEnabled(not coding)

    def _reviewer_changed(self) -> None:
        """Remember the name; in the coding mode, show the queue and progress as this
        rater's (what they coded, what is left)."""
        self.ctx.settings.setValue("reviewer", self.reviewer.text().strip())
        if self.coding_mode():
            self.coding.rater_changed()

    def _adjudicate_toggled(self, on: bool) -> None:
        if on and not self.coding_mode():
            index = self.filter_combo.findData("rater_disagreements")
            if index >= 0 and self.filter_combo.currentData() in ("all", "unreviewed"):
                self.filter_combo.setCurrentIndex(index)
        if self.coding_mode():
            self.coding.refresh_current()
        else:
            self._show_current(self.queue.currentRow())

    def reload(self, *_: Any) -> None:
        run_id = self.run_id()
        if run_id is None:
            return
        self._asked_queue = (
            run_id, self.filter_combo.currentData(), repr(self.item_filter),
            self.order_combo.currentData(),
        )  # fmt: skip
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
        """The queue loaded. A reload of the same queue (labels changed elsewhere, the run
        grew) keeps the order shown, new attempts after it, and the item selected: a queue
        that re-sorts its reviewed items to the end while someone labels would move the
        selection under their keys."""
        items, stats = loaded
        current = self.current()
        asked = getattr(self, "_asked_queue", None)
        if asked is not None and asked == getattr(self, "_shown_queue", None) and self.items:
            rank = {item.attempt_id: n for n, item in enumerate(self.items)}
            items = sorted(items, key=lambda i: rank.get(i.attempt_id, len(rank)))
        self._shown_queue = asked
        self.items = items
        self.queue.blockSignals(True)
        self.queue.set_rows(len(items), lambda row: self._queue_entry(items[row]))
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

    def _queue_entry(self, item: ReviewItem) -> tuple[str, Any]:
        """A queue row's text and colour (asked only when the row is on screen)."""
        mark = ("✓ " if item.reviewed else "• ") + ("◆ " if item.in_sample else "")
        probe_name = self.probe_name()
        try:  # the scenario and names in words (the study's `review_title`)
            title = get_probe(probe_name).capabilities.review.title(item) if probe_name else ""
        except Exception:  # a study's bug must not empty the queue
            log.exception("review_title of %s failed", probe_name)
            title = ""
        text = mark + (title or f"{item.item} #{item.attempt + 1} — {item.effective_label}")
        if item.corrected:
            text += f" (detector: {item.auto_label})"
        if item.adjudicated:
            text += f" ≡ consensus by {item.consensus_by}"
        elif item.raters_disagree:
            text += f" ≠ raters disagree ({', '.join(item.rater_labels)})"
        # the text is also the row's tooltip: the whole scenario and names when the list is narrow
        return text, QBrush(Qt.GlobalColor.black if item.reviewed else Qt.GlobalColor.darkGray)

    def current(self) -> ReviewItem | None:
        row = self.queue.currentRow()
        return self.items[row] if 0 <= row < len(self.items) else None

    def _show_current(self, row: int) -> None:
        item = self.current()
        probe_name = self.probe_name()
        if self.view is not None and probe_name:
            set_reviewer = getattr(self.view, "set_reviewer", None)  # views of other packages
            if set_reviewer is not None:
                set_reviewer(self.reviewer.text().strip())
            self.view.show_item(item, get_probe(probe_name))
        if item is None:
            self.status.setText("")
            return
        auto = (
            f"<span style='color:{GENDER_COLORS.get(item.auto_label, MUTED)}'>"
            f"{html_text(item.auto_label)}</span>"
        )
        if item.reviewed:
            human = (
                f"<span style='color:{GENDER_COLORS.get(item.human_label, MUTED)}'>"
                f"{html_text(item.human_label)}</span>"
            )
            self.status.setText(
                f"Label: <b>{human}</b> — <b>human</b>, by {html_text(item.reviewer or '')} "
                f"at {html_text((item.reviewed_at or '')[:16])}. Detector said {auto} "
                f"({html_text(item.auto_source)})."
            )
        else:
            self.status.setText(
                f"Label: <b>{auto}</b> — <b>automatic</b> "
                f"({html_text(item.auto_source)}); not yet reviewed."
            )
        self._show_raters(item)

    def _show_raters(self, item: ReviewItem | None) -> None:
        """Each rater's label of a disputed attempt, the consensus, and (when adjudicating)
        a button per rater to take that rater's label as the consensus."""
        for b in self.adopt_buttons:
            b.setParent(None)
        self.adopt_buttons = []
        while self.adopt_row.count():
            self.adopt_row.takeAt(0)
        if item is None or (len(item.rater_labels) < 2 and not item.adjudicated):
            return
        lines = [
            f"{html_text(r)}: <b>{html_text(row['label'])}</b>"
            for r, row in item.rater_labels.items()
        ]
        if item.consensus:
            lines.append(
                f"consensus by {html_text(item.consensus_by or '')}: "
                f"<b>{html_text(item.consensus['label'])}</b>"
            )
        elif item.raters_disagree:
            lines.append("<span style='color:#b45309'>raters disagree — not adjudicated</span>")
        self.status.setText(self.status.text() + "<br>Raters — " + " · ".join(lines))
        if not self.adjudicate.isChecked():
            return
        for rater, row in item.rater_labels.items():
            button = QPushButton(f"Take {rater}'s label as the consensus")
            button.clicked.connect(lambda _c=False, r=row: self.save_label(dict(r)))
            self.adopt_row.addWidget(button)
            self.adopt_buttons.append(button)
        self.adopt_row.addStretch(1)

    def move(self, step: int) -> None:
        if self.coding_mode():
            self.coding.move(step)
            return
        if not self.items:
            return
        row = min(max(0, self.queue.currentRow() + step), len(self.items) - 1)
        self.queue.setCurrentRow(row)

    # -- labelling --------------------------------------------------------------------------
    def _typing(self) -> bool:
        """Whether the focus is in one of the pane's own fields (the reviewer's name, a
        filter): Enter there ends the typing — the focus goes back to the queue — and never
        labels the item shown. (A view's own fields, a story's names, keep Enter as saving.)"""
        from PySide6.QtWidgets import QAbstractSpinBox, QApplication

        focus = QApplication.focusWidget()
        if focus is None:
            return False
        coding_view = getattr(self.coding, "view", None) if self.coding_mode() else None
        for view in (self.view, coding_view):  # a view's own fields (a coding memo) save
            if view is not None and (view is focus or view.isAncestorOf(focus)):
                return False
        editable = isinstance(focus, (QLineEdit, QAbstractSpinBox)) or (
            isinstance(focus, QComboBox) and focus.isEditable()
        )
        return editable and self.isAncestorOf(focus)

    def confirm(self) -> None:
        """Enter: store the detector's label as the reviewer's — or, for views that edit
        structured labels (e.g. a story's characters), what the view now shows. In the
        pane's own fields Enter ends the typing instead (`_typing`)."""
        if self._typing():
            self.queue.setFocus()  # the field's editingFinished follows (its name is kept)
            return
        if self.coding_mode():
            self.coding.save()
            return
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

        adjudicating = self.adjudicate.isChecked()
        if adjudicating and not item.rater_labels:
            self.banner.warn("Nobody has labelled this attempt yet: nothing to adjudicate.")
            return

        def save(store):
            add = store.add_consensus_label if adjudicating else store.add_human_label
            add(item.attempt_id, reviewer, value, label.get("data"), label.get("evidence"))
            return _stats(store, run_id)

        def saved(stats) -> None:
            self._announce(run_id)
            self._show_stats(stats)

        # optimistic update so the keyboard flow never waits on the database
        from datetime import datetime, timezone

        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if adjudicating:
            item.consensus = {
                "label": value,
                "data": label.get("data"),
                "source": f"consensus:{reviewer}",
                "created_at": stamp,
            }
        else:
            item.human_label, item.reviewer = value, reviewer
            item.human_data = label.get("data")
            item.reviewed_at = stamp
            item.rater_labels[reviewer] = {"label": value, "data": label.get("data")}
        row = self.queue.currentRow()
        self.queue.refresh_row(row)
        self.ctx.tasks.with_store(self.ctx.db_path, save, on_done=saved, on_error=self.banner.error)
        if row + 1 < len(self.items):
            self.queue.setCurrentRow(row + 1)
        else:
            self._show_current(row)

    def _show_stats(self, loaded) -> None:
        stats, sample, agreement = loaded

        def pct(x: float | None) -> str:
            return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"

        parts = [
            f"<b>{stats.reviewed}</b> of {stats.attempts} attempts reviewed, "
            f"<b>{stats.corrected}</b> corrected"
        ]
        probe_name = self.probe_name()
        summary = (
            get_probe(probe_name).capabilities.review.quality_summary(stats.quality)
            if probe_name and stats.reviewed
            else None
        )
        if sample:
            unit = "items" if sample["unit"] == "item" else "attempts"
            parts.append(
                f"Random review sample: <b>{sample['reviewed']}</b> of {sample['size']} {unit} "
                f"reviewed (seed {sample['seed']}) — prediction-powered results need at least 30."
            )
        if stats.label_accuracy is not None:
            parts.append(html_text(stats.label_accuracy.text))
        if summary:
            parts.append(html_text(summary))
        elif stats.reviewed:
            per = " · ".join(
                f"{label}: precision {pct(v['precision'])} (n = {v.get('predicted', 0)}), "
                f"recall {pct(v['recall'])} (n = {v['support']})"
                for label, v in stats.per_label.items()
            )
            parts.append(f"Detector against your labels — {per}; agreement {pct(stats.accuracy)}.")
            if any(min(v["support"], v.get("predicted", 0)) < 20 for v in stats.per_label.values()):
                parts.append(
                    "<span style='color:#92400e'>A figure resting on fewer than 20 reviews (n) "
                    "is rough: one more review can move it by several points.</span>"
                )
        if agreement:
            parts.append(agreement_line(agreement))
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
            from gbdesk.analysis.ppi_metrics import draw_sample

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
            self._announce(run_id)

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
