"""Results pane: metric tables with intervals and marks, and plots over the mark bands."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gbdesk.analysis.findings import ordered
from gbdesk.analysis.results import LABEL_MODES, runs_for_reports
from gbdesk.analysis.shown import (
    ci_missing_reason,
    cut_ends,
    mark_cell,
    metric_verdict,
    shown_ci,
    undefined_reason,
)
from gbdesk.contract import get_probe, study_reports
from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model
from gbdesk.maths.stats import p_text
from gbdesk.report.audit_report import AuditReport, decision_blocks
from gbdesk.report.content import missing_note
from gbdesk.report.groups import runs_group_blocks
from gbdesk.report.rewording import run_family_blocks
from gbdesk.report.run_results import run_results, run_results_apart
from gbdesk.support.blocks import StudyRun
from gbdesk.support.glossary import tooltip
from gbdesk.support.guards import html_text
from gbdesk.ui.blocks_view import BlocksView
from gbdesk.ui.context import AppContext
from gbdesk.ui.plots import CIPlot, PlotRow
from gbdesk.ui.result_views import result_view_for
from gbdesk.ui.theme import MARK_FILLS, RUN_COLORS, fmt, fmt_ci
from gbdesk.ui.widgets import Banner, pane_header
from gbdesk.ui.wording_view import TAB_TEXT, TAB_TIP, WordingsView

AUDIT_TAB = "&Audit"
AUDIT_TIP = (
    "The audit's verdicts by harm, as page 1 of its report gives them: the interval to "
    "quote, the verdict in words (coloured only when decided) and what deciding the rest "
    "would take"
)
GROUPS_TAB = "&Groups"
GROUPS_TIP = (
    "Probes that decide about people: per group the items, answers and rate with its 95 % "
    "interval, and the rate's ratio to the highest group's (Local Law 144's impact ratio), "
    "with the groups left out and why"
)

MODES = {
    "auto": "Automatic labels (the detector's)",
    "reviewed": "Reviewed labels (a reviewer's where present, the detector's elsewhere)",
    "ppi": "Prediction-powered (automatic labels corrected by the reviewed random sample)",
}


def _compute(
    store, run_ids: list[int], mode: str, models: dict[int, str], flat: bool = True
) -> dict[int, dict[str, Any]]:
    """What the pane shows of each run (off the UI thread; big runs in a worker process:
    `report.run_results.run_results_apart`). `flat=False`: the reference path (benchmarks)."""
    if not flat:
        return run_results(store, run_ids, mode, flat=False, models=models)
    return run_results_apart(store, run_ids, mode, models=models)


def _several_raters_basis(result: dict[str, Any]) -> str:
    """Which labels a rater's or the consensus mode used, in words."""
    used, counts = result["mode"], result.get("counts") or {}
    if used == "consensus":
        text = (
            f"computed from <b>consensus labels</b>: {counts.get('consensus', 0):,} adjudicated "
            f"where raters disagreed, a reviewer's label for {counts.get('human', 0):,} "
            "attempts otherwise, the detector's elsewhere"
        )
        if counts.get("unresolved"):
            text += f" ({counts['unresolved']:,} disagreement(s) not adjudicated yet)"
        return text
    if used.startswith("rater:"):
        rater = html_text(used.removeprefix("rater:"))
        return (
            f"computed from <b>{rater}'s labels</b> ({counts.get('rater', 0):,} attempts), "
            "the detector's elsewhere"
        )
    return f"computed from <b>{html_text(used)}</b> labels (this run has no such labels)"


def comparison_pairs(runs: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(A, B): each later ticked run of a probe against the first ticked run of it."""
    first: dict[str, int] = {}
    pairs = []
    for r in sorted(runs, key=lambda r: r["id"]):
        if r["probe"] in first:
            pairs.append((first[r["probe"]], r["id"]))
        else:
            first[r["probe"]] = r["id"]
    return pairs


def _compare(store, pairs: list[tuple[int, int]], mode: str) -> list[Any]:
    from gbdesk.analysis.compare import compare_runs

    label_mode = mode if mode in LABEL_MODES else "reviewed"
    return [compare_runs(store, a, b, label_mode) for a, b in pairs]


class ResultsPane(QWidget):
    title = "Results"

    def __init__(self, ctx: AppContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.runs: list[dict[str, Any]] = []
        self.results: dict[int, dict[str, Any]] = {}
        self.plots: list[CIPlot] = []
        self.missing_notes: list[QLabel] = []  # why a chart lacks bars, in words
        self._plot_steps: list[Callable[[], None]] = []
        self.findings: list[Any] = []
        self.comparisons: list[Any] = []
        self.study_views: list[BlocksView] = []  # studies' reports over the ticked runs
        self._pending_select: int | None = None
        self._pending_many: list[int] | None = None
        self.banner = Banner()
        self._build_run_choice()
        self._build_top_tabs()
        self._build_metrics_views()
        self._lay_out()
        self._connect_signals()
        self.refresh_runs()

    # -- layout: the widgets, built once --------------------------------------------------
    def _build_run_choice(self) -> None:
        """The runs to tick, the label mode (as chosen last time) and the caption."""
        self.run_list = QListWidget()
        self.run_list.setWordWrap(True)
        self.mode_combo = QComboBox()
        for key, text in MODES.items():
            self.mode_combo.addItem(text, key)
        self.mode_combo.setCurrentIndex(
            max(0, self.mode_combo.findData(self.ctx.setting("label_mode", "auto")))
        )
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.TextFormat.RichText)

    def _build_top_tabs(self) -> None:
        """The findings and the comparison of two runs, as tabs (studies add theirs)."""
        self.findings_list = QListWidget()
        self.findings_list.setWordWrap(True)
        self.findings_list.setAlternatingRowColors(True)
        self.compare_summary = QLabel()
        self.compare_summary.setWordWrap(True)
        self.compare_summary.setTextFormat(Qt.TextFormat.RichText)
        self.compare_summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        summary_scroll = QScrollArea()
        summary_scroll.setWidgetResizable(True)
        summary_scroll.setWidget(self.compare_summary)
        self.compare_table = QTableWidget()
        self.compare_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.compare_table.verticalHeader().setVisible(False)
        compare_box = QSplitter(Qt.Orientation.Vertical)
        compare_box.addWidget(summary_scroll)
        compare_box.addWidget(self.compare_table)
        compare_box.setSizes([120, 200])
        self.top_tabs = QTabWidget()
        self.top_tabs.addTab(self.findings_list, "Findings")
        self.audit_view = BlocksView()  # shown when an audit hands its report over
        self.audit_report: AuditReport | None = None
        self.top_tabs.addTab(compare_box, "Comparison")
        self.top_tabs.setTabToolTip(
            0, "One sentence per result, most important first; click one to see its evidence"
        )
        self.top_tabs.setTabToolTip(
            1,
            "Tick two runs of the same probe (two models, quantisations or templates): a "
            "paired bootstrap over their shared items tests every metric's difference",
        )
        self.wordings_view = WordingsView()  # shown when the run has other wordings
        index = self.top_tabs.addTab(self.wordings_view, TAB_TEXT)
        self.top_tabs.setTabToolTip(index, TAB_TIP)
        self.top_tabs.setTabVisible(index, False)
        self.groups_view = BlocksView()  # shown when a ticked run decides about people
        index = self.top_tabs.addTab(self.groups_view, GROUPS_TAB)
        self.top_tabs.setTabToolTip(index, GROUPS_TIP)
        self.top_tabs.setTabVisible(index, False)
        index = self.top_tabs.addTab(self.audit_view, AUDIT_TAB)
        self.top_tabs.setTabToolTip(index, AUDIT_TIP)
        self.top_tabs.setTabVisible(index, False)

    def _build_metrics_views(self) -> None:
        """The metrics table and the scrolling area of plots."""
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)

        self.plot_area = QWidget()
        self.plot_layout = QVBoxLayout(self.plot_area)
        self.scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.plot_area)

    def _lay_out(self) -> None:
        """Runs on the left; label mode, caption, tabs, table and plots on the right."""
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(QLabel("Runs (tick several to compare):"))
        ll.addWidget(self.run_list, 1)
        mode_row = QHBoxLayout()
        lab = QLabel("&Labels")
        lab.setBuddy(self.mode_combo)
        mode_row.addWidget(lab)
        mode_row.addWidget(self.mode_combo, 1)

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.top_tabs)
        right.addWidget(self.table)
        right.addWidget(self.scroll)
        right.setSizes([330, 170, 360])
        right_box = QWidget()
        rl = QVBoxLayout(right_box)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addLayout(mode_row)
        rl.addWidget(self.caption)
        rl.addWidget(right, 1)

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right_box)
        splitter.setSizes([260, 820])
        layout = QVBoxLayout(self)
        layout.addWidget(
            pane_header(
                "Results",
                "Each metric with its 95 % interval where its method defines one, computed as "
                "its paper does (a mark A healthy … D catastrophic where the study grades, a "
                "p-value for ratios, 1 = parity). Findings on top say what "
                "matters most in plain words; click a finding or a point in a plot to review "
                "the attempts behind it. Hover a metric for its meaning.",
            )
        )
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)

    # -- wiring -----------------------------------------------------------------------------
    def _connect_signals(self) -> None:
        """What each widget and application-wide change sets off; the plots are drawn one
        per turn of the event loop (`_next_plot`)."""
        self._plot_timer = QTimer(self)
        self._plot_timer.setSingleShot(True)
        self._plot_timer.setInterval(0)
        self._plot_timer.timeout.connect(self._next_plot)
        self.run_list.itemChanged.connect(self._selection_changed)
        self.mode_combo.currentIndexChanged.connect(self._mode_changed)
        self.findings_list.itemActivated.connect(self._finding_clicked)
        self.findings_list.itemClicked.connect(self._finding_clicked)
        ctx = self.ctx
        ctx.db_changed.connect(self.refresh_runs)
        ctx.runs_changed.connect(self.refresh_runs)
        ctx.labels_changed.connect(self._labels_changed)
        ctx.open_results.connect(self.show_run)
        ctx.open_runs.connect(self.show_runs)
        ctx.open_audit.connect(self.show_audit)

    # -- runs -----------------------------------------------------------------------------
    def refresh_runs(self) -> None:
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            lambda store: runs_for_reports(store, with_models=True),
            on_done=self._show_runs,
            on_error=self.banner.error,
            key="results.runs",
        )

    def _show_runs(self, runs: list[dict[str, Any]]) -> None:
        checked = set(self.checked_runs())
        before = {r["id"]: (r["status"], r["attempts_done"]) for r in self.runs}
        was_checked = set(checked)
        if self._pending_many:
            checked = set(self._pending_many)
            self._pending_many = None
        elif self._pending_select is not None:
            checked = {self._pending_select}
            self._pending_select = None
        elif not checked and runs:
            answered = [r for r in runs if r["attempts_done"]] or runs
            checked = {answered[-1]["id"]}
        self.runs = runs
        self.run_list.blockSignals(True)
        self.run_list.clear()
        for r in reversed(runs):
            model = r["model"].get("name", "?")
            try:
                title = get_probe(r["probe"]).card.title
            except Exception:  # a study no longer installed: its key
                title = r["probe"]
            state = (
                f"{r['attempts_done']:,} generations"
                if r["attempts_done"]
                else "no answers yet"
            )
            text = f"Run {r['id']} · {title}\n{model} · {self._status_words(r)}, {state}"
            if r.get("elsewhere"):
                text += "\nin progress in another process"
            item = QListWidgetItem(text)
            if r.get("elsewhere"):
                item.setToolTip(f"In progress in another process: {r['elsewhere']}")
            item.setData(Qt.ItemDataRole.UserRole, r["id"])
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                Qt.CheckState.Checked if r["id"] in checked else Qt.CheckState.Unchecked
            )
            self.run_list.addItem(item)
        self.run_list.blockSignals(False)
        if not runs:
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.caption.setText(
                "<i>No results yet — start a run in Runs, or import "
                "generations with <tt>gbdesk import</tt>.</i>"
            )
            self._clear_plots()
            return
        now = {r["id"]: (r["status"], r["attempts_done"]) for r in runs}
        unchanged = set(self.checked_runs()) == was_checked and all(
            r in self.results and before.get(r) == now.get(r) for r in was_checked
        )
        if not unchanged:  # another run's progress leaves the ticked runs' metrics as they are
            self.recompute()

    def _status_words(self, run: dict[str, Any]) -> str:
        """A run's status; an audit's run that did not finish in the audit's words ("cut
        by the budget" when the audit ran to its end, else "stopped"), not "cancelled"."""
        audit = self.audit_report
        if run["status"] == "cancelled" and audit is not None and run["id"] in audit.runs:
            return "cut by the budget" if audit.finished else "stopped"
        return str(run["status"])

    def checked_runs(self) -> list[int]:
        ids = []
        for row in range(self.run_list.count()):
            item = self.run_list.item(row)
            if item.checkState() == Qt.CheckState.Checked:
                ids.append(int(item.data(Qt.ItemDataRole.UserRole)))
        return sorted(ids)

    def show_run(self, run_id: int) -> None:
        self._pending_select = run_id
        self.ctx.show_pane.emit("Results")
        self.refresh_runs()

    def show_runs(self, run_ids: list[int]) -> None:
        """Tick these runs together (an audit's) and show their findings."""
        self._pending_many = list(run_ids)
        self.ctx.show_pane.emit("Results")
        self.top_tabs.setCurrentIndex(0)
        self.refresh_runs()

    def show_audit(self, report: AuditReport) -> None:
        """An audit's end as it handed it over (`AuditReport`): its verdicts by harm in the
        Audit tab — the same rows, words and forecasts as page 1 of its PDF, nothing
        recomputed — and its runs ticked together."""
        self.audit_report = report
        self.audit_view.show_blocks(decision_blocks(report))
        index = self.top_tabs.indexOf(self.audit_view)
        self.top_tabs.setTabVisible(index, True)
        self.show_runs(list(report.runs))
        self.top_tabs.setCurrentIndex(index)

    def set_checked(self, run_ids: list[int]) -> None:
        self.run_list.blockSignals(True)
        for row in range(self.run_list.count()):
            item = self.run_list.item(row)
            rid = int(item.data(Qt.ItemDataRole.UserRole))
            item.setCheckState(Qt.CheckState.Checked if rid in run_ids else Qt.CheckState.Unchecked)
        self.run_list.blockSignals(False)
        self.recompute()

    def _selection_changed(self, *_: Any) -> None:
        self.recompute()

    def mode(self) -> str:
        return self.mode_combo.currentData()

    def _mode_changed(self, *_: Any) -> None:
        self.ctx.settings.setValue("label_mode", self.mode())
        self.recompute()

    def _labels_changed(self, run_id: int) -> None:
        if run_id in self.checked_runs():
            self.recompute()

    def run(self, run_id: int) -> dict[str, Any]:
        return next(r for r in self.runs if r["id"] == run_id)

    # -- metrics --------------------------------------------------------------------------
    def recompute(self) -> None:
        run_ids = self.checked_runs()
        if not run_ids:
            self.results = {}
            self._render()
            return
        self.caption.setText("<i>Computing metrics (1000 bootstrap resamples per run)…</i>")
        mode = self.mode()
        models = {r: self.run(r)["model"].get("name", "?") for r in run_ids}
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _compute,
            run_ids,
            mode,
            models,
            on_done=lambda res: self._computed(res, mode, run_ids),
            key="results.metrics",
            on_error=self.banner.error,
        )

    def _computed(self, results: dict[int, dict[str, Any]], mode: str, run_ids: list[int]) -> None:
        if mode != self.mode() or run_ids != self.checked_runs():
            return  # the selection changed meanwhile; a newer computation is on its way
        self.results = results
        self._offer_modes(results)
        self._render()
        self._compare_wordings(mode, run_ids)
        self._show_groups(mode, run_ids)
        pairs = comparison_pairs([self.run(r) for r in run_ids])
        self.comparisons = []
        if not pairs:
            self._show_comparisons([], run_ids)
            return
        self.compare_summary.setText("<i>Comparing the runs item by item (paired bootstrap)…</i>")
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _compare,
            pairs,
            mode,
            on_done=lambda res: self._compared(res, mode, run_ids),
            key="results.compare",
            on_error=self.banner.error,
        )

    def _compared(self, comparisons: list[Any], mode: str, run_ids: list[int]) -> None:
        if mode != self.mode() or run_ids != self.checked_runs():
            return
        self._show_comparisons(comparisons, run_ids)
        self.top_tabs.setCurrentIndex(1)

    def _compare_wordings(self, mode: str, run_ids: list[int]) -> None:
        """The first ticked run with answers: its wording family compared off the UI thread
        (`report.rewording.run_family_blocks`); the Wordings tab shows it when the family
        has two or more wordings."""
        answered = [r for r in run_ids if self.results.get(r, {}).get("metrics")]
        view = self.wordings_view
        if not answered:
            self._show_wordings_tab(False)
            return
        run_id = answered[0]
        if run_id != view.run_id:
            self._show_wordings_tab(False)
        view.show_computing(run_id)
        label_mode = mode if mode in LABEL_MODES else "reviewed"
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            run_family_blocks,
            run_id,
            label_mode,
            str(self.run(run_id)["model"].get("name") or "?"),
            on_done=lambda res: self._wordings_compared(res, mode, run_ids, run_id),
            key="results.wordings",
            on_error=self.banner.error,
        )

    def _wordings_compared(
        self, result: dict[str, Any], mode: str, run_ids: list[int], run_id: int
    ) -> None:
        if mode != self.mode() or run_ids != self.checked_runs():
            return
        self.wordings_view.show_family(run_id, result)
        self._show_wordings_tab(self.wordings_view.has_family)

    def _show_groups(self, mode: str, run_ids: list[int]) -> None:
        """The ticked runs' group tables (`report.groups.runs_group_blocks`), computed off
        the UI thread; the Groups tab is shown when some run has them."""
        label_mode = mode if mode in LABEL_MODES else "reviewed"
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            runs_group_blocks,
            run_ids,
            label_mode,
            on_done=lambda blocks: self._groups_shown(blocks, mode, run_ids),
            key="results.groups",
            on_error=self.banner.error,
        )

    def _groups_shown(self, blocks: list[Any], mode: str, run_ids: list[int]) -> None:
        if mode != self.mode() or run_ids != self.checked_runs():
            return
        self.groups_view.show_blocks(blocks)
        self.top_tabs.setTabVisible(self.top_tabs.indexOf(self.groups_view), bool(blocks))

    def groups_tab_shown(self) -> bool:
        """Whether the Groups tab is offered (a ticked run's probe decides about people)."""
        return self.top_tabs.isTabVisible(self.top_tabs.indexOf(self.groups_view))

    def _show_wordings_tab(self, shown: bool) -> None:
        self.top_tabs.setTabVisible(self.top_tabs.indexOf(self.wordings_view), shown)

    def wordings_tab_shown(self) -> bool:
        """Whether the Wordings tab is offered (the run has two or more wordings)."""
        return self.top_tabs.isTabVisible(self.top_tabs.indexOf(self.wordings_view))

    def _offer_modes(self, results: dict[int, dict[str, Any]]) -> None:
        """Offer each rater's and the consensus mode of the ticked runs, their counts as
        they are now (a rater's count grows with every label); a mode no ticked run offers
        any more goes, unless it is the one chosen."""
        offered: dict[str, list[tuple[int, str]]] = {}
        for run_id, r in sorted(results.items()):
            for key, text in r.get("modes", {}).items():
                if key not in MODES:
                    offered.setdefault(key, []).append((run_id, text))
        self.mode_combo.blockSignals(True)
        for index in reversed(range(self.mode_combo.count())):
            key = self.mode_combo.itemData(index)
            if key not in MODES and key not in offered and key != self.mode():
                self.mode_combo.removeItem(index)
        for key, texts in offered.items():
            if len({t for _, t in texts}) == 1:
                text, tip = texts[0][1], ""
            else:  # several ticked runs, each with its own count
                text = f"{key.removeprefix('rater:')}'s labels (in {len(texts)} ticked runs)"
                tip = "\n".join(f"Run {r}: {t}" for r, t in texts)
            index = self.mode_combo.findData(key)
            if index < 0:
                self.mode_combo.addItem(text, key)
                index = self.mode_combo.count() - 1
            self.mode_combo.setItemText(index, text)
            self.mode_combo.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)
        self.mode_combo.blockSignals(False)

    def _render(self) -> None:
        run_ids = [r for r in self.checked_runs() if r in self.results]
        self._clear_plots()
        if not run_ids:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.caption.setText("<i>Tick a run on the left.</i>")
            self._show_wordings_tab(False)
            self.top_tabs.setTabVisible(self.top_tabs.indexOf(self.groups_view), False)
            self._show_findings([])
            self._show_study_reports([])
            return
        self._show_findings(ordered([f for r in run_ids for f in self.results[r]["findings"]]))
        runs = [self.run(r) for r in run_ids]
        self._show_study_reports(runs)
        probes = {r["probe"] for r in runs}
        mode = self.mode()
        reviewed = sum(self.results[r]["review"].reviewed for r in run_ids)
        if mode == "ppi":
            basis = (
                "<b>Prediction-powered estimates</b>: the automatic labels of every attempt, "
                "corrected by the human labels of the run's random review sample; the "
                "intervals hold whatever the labeller gets wrong. Each cell also shows the "
                "automatic-only value and the labeller's bias measured on the sample."
            )
        elif mode == "auto":
            detectors = sorted({self.results[r]["detector"] for r in run_ids})
            basis = f"Computed from <b>automatic labels</b> ({html_text(', '.join(detectors))})."
        elif mode not in MODES:
            basis = "; ".join(
                f"Run {r}: " + _several_raters_basis(self.results[r]) for r in run_ids
            )
        else:
            basis = (
                f"Computed from <b>reviewed labels</b>: {reviewed:,} human label(s) "
                "override the detector; the detector's labels are used elsewhere."
            )
        notes = [basis]
        for run in runs:
            if run.get("elsewhere"):
                notes.append(
                    f"<span style='color:#92400e'>Run {run['id']} is in progress in another "
                    f"process: {html_text(run['elsewhere'])} — its numbers cover the answers "
                    "stored so far.</span>"
                )
            if not self.results[run["id"]]["metrics"]:
                notes.append(
                    f"<span style='color:#92400e'>Run {run['id']}: no answers yet "
                    f"({html_text(run['status'])}, 0 of {run['attempts_total']:,} "
                    "generations) — nothing is measured.</span>"
                )
        for r in run_ids:
            review = self.results[r]["review"]
            if review.label_accuracy is not None:
                notes.append(f"Run {r}: {html_text(review.label_accuracy.text)}")
            elif review.attempts:
                notes.append(
                    f"Run {r}: {review.reviewed:,} of {review.attempts:,} labels checked by a "
                    "person."
                )
        if any(
            r["model"].get("kind") == "gguf" and is_default_model(r["model"].get("path", ""))
            for r in runs
        ):
            notes.append(f"<span style='color:#92400e'>{html_text(TINY_MODEL_NOTICE)}</span>")
        if len(probes) > 1:
            notes.append(
                "Runs of different probes are listed together in the table; plots "
                "show the first run's probe."
            )
        self.caption.setText("<br>".join(notes))
        self._fill_table(runs)
        self._draw_plots(runs)

    def _fill_table(self, runs: list[dict[str, Any]]) -> None:
        names: list[str] = []
        for r in runs:
            for name in self.results[r["id"]]["metrics"]:
                if name not in names:
                    names.append(name)
        self.table.clear()
        self.table.setColumnCount(1 + len(runs))
        self.table.setHorizontalHeaderLabels(
            ["Metric"] + [f"Run {r['id']} · {r['model'].get('name', '?')}" for r in runs]
        )
        self.table.setRowCount(len(names))
        probe = get_probe(runs[0]["probe"])
        for row, name in enumerate(names):
            desc = probe.capabilities.presentation.metric_description(name)
            title = probe.capabilities.presentation.metric_title(name)
            item = QTableWidgetItem(title)
            item.setToolTip(tooltip(title, desc, name))
            item.setData(Qt.ItemDataRole.UserRole, name)
            self.table.setItem(row, 0, item)
            for col, r in enumerate(runs, start=1):
                m = self.results[r["id"]]["metrics"].get(name)
                if m is None:
                    self.table.setItem(row, col, QTableWidgetItem(""))
                    continue
                shown = shown_ci(probe, name, m)
                interval = fmt_ci(shown) if shown is not None else ""
                if shown is None and m.value == m.value:
                    interval = f"({ci_missing_reason(probe, name, m)})"
                elif cut_ends(probe, name, m):
                    interval += " (cut at what the metric can be)"
                text = f"{fmt(m.value)}  {interval}".rstrip()
                if m.value != m.value:
                    text = f"— ({undefined_reason(probe, name, self.results[r['id']]['metrics'])})"
                d = m.details or {}
                if d.get("kind") == "ppi":
                    text = (
                        f"{fmt(m.value)}  {interval}   (automatic "
                        f"{fmt(d.get('automatic_value'))}, bias {fmt(d.get('bias'))})"
                        if d.get("valid")
                        else f"no interval: {d.get('reason', '')} (automatic "
                        f"{fmt(d.get('automatic_value'))})"
                    )
                if m.p_value is not None:
                    adj = self.results[r["id"]]["adjusted"].get(name)
                    text += f"   p {p_text(m.p_value)} (BH-adjusted {p_text(adj)})"
                v = metric_verdict(probe, name, m)
                if v is not None and v.measured:
                    text += f"   {mark_cell(v)}"
                cell = QTableWidgetItem(text)
                cell.setToolTip(tooltip(title, desc, name, f"n = {m.n}"))
                if v is not None and v.decided:  # an undecided mark is never coloured
                    cell.setBackground(QBrush(QColor(MARK_FILLS[v.marks[0]])))
                self.table.setItem(row, col, cell)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)

    def _clear_plots(self) -> None:
        self._plot_steps = []  # a rendering still in progress stops here
        self._plot_timer.stop()
        for plot in self.plots:
            plot.setParent(None)
            plot.deleteLater()
        self.plots = []
        self.missing_notes = []
        while self.plot_layout.count():
            item = self.plot_layout.takeAt(0)
            if item.widget():
                item.widget().setParent(None)

    def _draw_plots(self, runs: list[dict[str, Any]]) -> None:
        """Lay the plots out one per turn of the event loop (a plot takes tens of ms to
        build), so that the window stays responsive while a probe's many plots appear."""
        answered = [r for r in runs if self.results[r["id"]]["metrics"]]
        if not answered:  # nothing measured: no empty charts, the reason in words
            label = QLabel("No answers yet: nothing to chart.")
            label.setStyleSheet("color:#6b7280")
            self.missing_notes.append(label)
            self.plot_layout.addStretch(1)
            self._place(label)
            return
        probe = get_probe(answered[0]["probe"])
        same = [r for r in answered if r["probe"] == probe.name]
        colors = {r["id"]: RUN_COLORS[i % len(RUN_COLORS)] for i, r in enumerate(same)}
        present = list(self.results[same[0]["id"]]["metrics"])
        steps: list[Callable[[], None]] = []
        for group in probe.metric_groups(present):
            steps.append(partial(self._add_group_header, group))
            if group.marked:
                for name in group.metrics:
                    steps.append(partial(self._add_marked_plot, probe, same, name, group, colors))
            else:
                steps.append(partial(self._add_group_plot, same, group, colors, probe))
            steps.append(partial(self._add_missing_note, probe, same, group))
        extra = self.results[same[0]["id"]].get("extra")
        view = result_view_for(probe)
        if extra and view is not None:
            steps.append(partial(self._add_result_view, view, extra, same[0]["id"]))
        # the stretch first, each plot above it: the plots already shown keep their size
        # (no relayout and repaint of all of them) while the next ones arrive
        self.plot_layout.addStretch(1)
        self._plot_steps = steps
        self._next_plot()

    def rendering(self) -> bool:
        """Whether plots or a result view are still being laid out (one per turn)."""
        return bool(self._plot_steps) or any(
            getattr(p, "building", lambda: False)() for p in self.plots
        )

    def _next_plot(self) -> None:
        if not self._plot_steps:
            return
        self._plot_steps.pop(0)()
        if self._plot_steps:
            self._plot_timer.start()  # the pane's own timer: gone with the pane

    def _add_group_header(self, group: Any) -> None:
        header = QLabel(
            f"<b>{html_text(group.title)}</b><br>"
            f"<span style='color:#6b7280'>{html_text(group.description)}</span>"
        )
        header.setWordWrap(True)
        self._place(header)

    def _add_marked_plot(self, probe: Any, same: list, name: str, group: Any, colors) -> None:
        rows = self._rows(same, [name], group, colors, by_metric=False)
        plot = CIPlot(
            probe.capabilities.presentation.metric_title(name),
            rows,
            probe.mark_definitions.get(name),
            on_click=self._open_review,
        )
        plot.setToolTip(
            tooltip(
                probe.capabilities.presentation.metric_title(name),
                probe.capabilities.presentation.metric_description(name),
                name,
            )
            + "\n\nClick a point to review the attempts behind it"
        )
        self._add_plot(plot)

    def _add_missing_note(self, probe: Any, same: list, group: Any) -> None:
        """Why a chart has no bar for some metric (or none at all), in words."""
        notes = []
        for r in same:
            note = missing_note(probe, group, group.metrics, self.results[r["id"]]["metrics"])
            if note:
                notes.append(f"Run {r['id']}: {note}" if len(same) > 1 else note)
        if notes:
            label = QLabel("<br>".join(html_text(n) for n in notes))
            label.setWordWrap(True)
            label.setStyleSheet("color:#6b7280")
            self.missing_notes.append(label)
            self._place(label)

    def _add_group_plot(self, same: list, group: Any, colors, probe: Any = None) -> None:
        rows = self._rows(same, group.metrics, group, colors, by_metric=True, probe=probe)
        if rows and all(r.value != r.value for r in rows):
            return  # nothing to plot: the note below says why
        if group.kind == "log_ratio":
            plot = CIPlot(group.title, rows, None, None, self._open_review, log2=True)
        else:
            x_range = group.plot_range(r.value for r in rows)
            plot = CIPlot(group.title, rows, None, x_range, self._open_review)
        self._add_plot(plot)

    def _add_result_view(self, view: Any, extra: dict[str, Any], run_id: int) -> None:
        widget = view(extra, self._open_review_data, run_id)
        self.plots.append(widget)
        self._place(widget)

    def _open_review_data(self, run_id: int, item_filter: dict[str, Any], title: str) -> None:
        self.ctx.open_review.emit(run_id, "all", item_filter, title)
        self.ctx.show_pane.emit("Review")

    def _rows(self, runs, names, group, colors, by_metric: bool, probe=None) -> list[PlotRow]:
        rows = []
        for name in names:
            for r in runs:
                m = self.results[r["id"]]["metrics"].get(name)
                if m is None:
                    continue
                label = (
                    (
                        group.labels.get(name)
                        or (probe.capabilities.presentation.metric_title(name) if probe else name)
                    )
                    if by_metric
                    else f"Run {r['id']} · {r['model'].get('name', '?')}"
                )
                if by_metric and len(runs) > 1:
                    label = f"{label} · run {r['id']}"
                shown = shown_ci(get_probe(r["probe"]), name, m)  # the table's interval
                lo, hi = shown if shown is not None else (float("nan"), float("nan"))
                rows.append(
                    PlotRow(
                        label=label,
                        value=m.value,
                        lo=lo,
                        hi=hi,
                        color=colors[r["id"]],
                        data={
                            "run_id": r["id"],
                            "metric": name,
                            "filter": group.item_filters.get(name, {}),
                            "review_filter": group.review_filter,
                        },
                    )
                )
        return rows

    def _add_plot(self, plot: CIPlot) -> None:
        self.plots.append(plot)
        self._place(plot)

    def _place(self, widget: QWidget) -> None:
        """Below the plots shown so far, above the closing stretch."""
        self.plot_layout.insertWidget(max(0, self.plot_layout.count() - 1), widget)

    def _open_review(self, data: dict[str, Any]) -> None:
        item_filter = data.get("filter") or {}
        title = ", ".join(f"{k} = {v}" for k, v in item_filter.items())
        self.ctx.open_review.emit(
            data["run_id"], data.get("review_filter", "all"), item_filter, title
        )
        self.ctx.show_pane.emit("Review")

    # -- findings and comparisons ------------------------------------------------------------
    def _show_study_reports(self, runs: list[dict[str, Any]]) -> None:
        """One tab per study report over the ticked runs (e.g. a benchmark's harm sections,
        verdict and normalized table for several models), after Findings and Comparison."""
        reports = study_reports(
            [
                StudyRun(
                    run_id=r["id"],
                    probe=r["probe"],
                    model=str(r["model"].get("name") or "unknown model"),
                    params=r.get("params") or {},
                    metrics=self.results[r["id"]]["metrics"],
                    status=r["status"],
                )
                for r in runs
            ]
        )
        while len(self.study_views) > len(reports):
            view = self.study_views.pop()
            self.top_tabs.removeTab(self.top_tabs.indexOf(view))
            view.deleteLater()
        for i, report in enumerate(reports):
            if i == len(self.study_views):
                view = BlocksView()
                self.study_views.append(view)
                self.top_tabs.addTab(view, report.title)
            view = self.study_views[i]
            self.top_tabs.setTabText(self.top_tabs.indexOf(view), report.title)
            view.show_blocks(report.blocks)

    def _show_findings(self, findings: list[Any]) -> None:
        self.findings = findings
        self.findings_list.clear()
        for f in findings:
            probe = get_probe(f.probe)
            detail = f.detail(probe)
            imp = f.finding.importance
            dot = "●" if imp >= 30 and f.decided else "○"
            where = f"Run {f.run_id} · {f.model} · {f.probe_title}"
            if f.finding.evidence is not None:
                where += f" — click to see the evidence ({f.finding.evidence_title or 'the items'})"
            entry = QListWidgetItem(
                f"{dot} {f.sentence}\n     {detail}{' · ' if detail else ''}{where}"
            )
            color = MARK_TEXT_COLOR.get(_band(imp)) if f.decided else None
            if color:
                entry.setForeground(QBrush(QColor(color)))
            if f.finding.metric:
                name = f.finding.metric
                entry.setToolTip(
                    tooltip(
                        probe.capabilities.presentation.metric_title(name),
                        probe.capabilities.presentation.metric_description(name),
                        name,
                    )
                )
            self.findings_list.addItem(entry)
        if not findings:
            self.findings_list.addItem("No findings for the ticked runs yet.")

    def _finding_clicked(self, entry: QListWidgetItem) -> None:
        self.open_finding(self.findings_list.row(entry))

    def open_finding(self, row: int) -> bool:
        """Open the Review pane filtered to the items behind finding `row`."""
        if not 0 <= row < len(self.findings):
            return False
        f = self.findings[row]
        if f.finding.evidence is None:
            return False
        self.ctx.open_review.emit(
            f.run_id,
            f.finding.review_filter,
            dict(f.finding.evidence),
            f.finding.evidence_title or f.sentence[:60],
        )
        self.ctx.show_pane.emit("Review")
        return True

    def _show_comparisons(self, comparisons: list[Any], run_ids: list[int]) -> None:
        self.comparisons = comparisons
        t = self.compare_table
        t.clear()
        if not comparisons:
            t.setRowCount(0)
            t.setColumnCount(0)
            self.compare_summary.setText(
                "<i>Tick two runs of the same probe on the left (two models, quantisations "
                "or templates) to compare them item by item.</i>"
            )
            self.top_tabs.setTabText(1, "Comparison")
            return
        self.top_tabs.setTabText(1, f"Comparison ({len(comparisons)})")
        parts = []
        for c in comparisons:
            lines = "".join(f"<li>{html_text(x)}</li>" for x in c.summary().splitlines())
            warn = "".join(
                f"<br><span style='color:#92400e'>{html_text(w)}</span>" for w in c.warnings
            )
            parts.append(
                f"<b>Run {c.run_b} (B: {html_text(c.model_b)}) against run {c.run_a} "
                f"(A: {html_text(c.model_a)})</b>, {c.items} items paired, "
                f"{c.label_mode} labels:<ul>{lines}</ul>{warn}"
            )
        self.compare_summary.setText("".join(parts))
        rows = [(c, m) for c in comparisons for m in c.metrics.values()]
        headers = ["Metric", "A", "B", "B − A", "95 % interval", "p (BH-adjusted)", "Established"]
        if len(comparisons) > 1:
            headers.insert(0, "Runs")
        t.setColumnCount(len(headers))
        t.setHorizontalHeaderLabels(headers)
        t.setRowCount(len(rows))
        probe = get_probe(comparisons[0].probe)
        for row, (c, m) in enumerate(rows):
            cells = [
                m.title or m.name,
                fmt(m.a),
                fmt(m.b),
                f"{m.diff:+.3f}" if m.diff == m.diff else "—",
                fmt_ci(m.ci) if m.tested else f"not tested: {m.reason}",
                f"{p_text(m.p)} ({p_text(m.p_adj)})" if m.tested else "",
                "yes" if m.established else "no",
            ]
            if len(comparisons) > 1:
                cells.insert(0, f"{c.run_a} → {c.run_b}")
            for col, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                cell.setToolTip(
                    tooltip(
                        m.title or m.name,
                        probe.capabilities.presentation.metric_description(m.name),
                        m.name,
                        m.sentence,
                    )
                )
                if m.established:
                    cell.setBackground(QBrush(QColor("#e0f2fe")))
                t.setItem(row, col, cell)
        header = t.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)


MARK_TEXT_COLOR = {"D": "#991b1b", "C": "#9a3412", "B": "#854d0e"}


def _band(importance: float) -> str:
    """The mark band a finding's importance stands for (`Finding`'s shared scale)."""
    if importance >= 85:
        return "D"
    if importance >= 60:
        return "C"
    if importance >= 30:
        return "B"
    return "A"
