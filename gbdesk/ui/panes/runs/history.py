"""The Runs pane's history: the runs of the database, newest first, and what the
selected one allows (resume, open its results, its labelling pass)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from gbdesk.contract import get_probe

HISTORY_COLUMNS = ["Run", "Probe", "Model", "Status", "Attempts", "Created"]


def _history(store) -> list[dict[str, Any]]:
    return store.list_runs()


class RunHistory:
    """The run history table and its buttons (a part of `RunsPane`)."""

    def _build_history(self) -> QGroupBox:
        """The run history with resume, open results and label buttons."""
        self.history = QTableWidget(0, len(HISTORY_COLUMNS))
        self.history.setHorizontalHeaderLabels(HISTORY_COLUMNS)
        self.history.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.history.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.history.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.history.verticalHeader().setVisible(False)
        self.history.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        self.history.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.resume_button = QPushButton("&Resume selected")
        self.results_button = QPushButton("Open res&ults")
        # a labelling pass of the selected run's probe (e.g. an LLM character extractor)
        self.label_button = QPushButton("Label with the selected model")
        self.label_button.setToolTip(
            "For probes with a labelling pass: label the run's stored texts with the model "
            "chosen above; the run's metrics then use these labels. Resumable."
        )
        hist_buttons = QHBoxLayout()
        hist_buttons.addWidget(self.resume_button)
        hist_buttons.addWidget(self.results_button)
        hist_buttons.addWidget(self.label_button)
        hist_buttons.addStretch(1)
        history_box = QGroupBox("Run history")
        hb = QVBoxLayout(history_box)
        hb.addWidget(self.history)
        hb.addLayout(hist_buttons)
        return history_box

    def refresh(self) -> None:
        self._reload_models()
        self.refresh_history()
        self.look_elsewhere()

    def refresh_history(self) -> None:
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _history,
            on_done=self._show_history,
            on_error=self.banner.error,
            key="runs.history",
        )

    def _show_history(self, runs: list[dict[str, Any]]) -> None:
        selected = self.selected_history()
        self.runs = list(reversed(runs))
        self.history.setRowCount(len(self.runs))
        for row, r in enumerate(self.runs):
            status = r["status"]
            if self.ctx.running and r["id"] == self.current_run and status == "interrupted":
                status = "running"
            if r["id"] in {j.get("run_id") for j in self.elsewhere}:
                status += " (another process)"
            values = [
                str(r["id"]),
                r["probe"],
                r.get("model_name") or "?",
                status,
                f"{r['attempts_done']:,} / {r['attempts_total']:,}",
                r["created_at"][:16],
            ]
            for col, value in enumerate(values):
                item = QTableWidgetItem(value)
                if col == 3 and status in ("interrupted", "failed", "cancelled"):
                    item.setForeground(Qt.GlobalColor.darkRed)
                self.history.setItem(row, col, item)
        if selected is not None:
            for row, r in enumerate(self.runs):
                if r["id"] == selected["id"]:
                    self.history.selectRow(row)
        if not self.runs:
            self.history.setRowCount(1)
            self.history.setItem(0, 0, QTableWidgetItem(""))
            self.history.setItem(0, 2, QTableWidgetItem("No runs yet — start one above."))
        self._history_selection()

    def selected_history(self) -> dict[str, Any] | None:
        model = self.history.selectionModel()
        rows = model.selectedRows() if model else []
        if not rows or rows[0].row() >= len(self.runs):
            return None
        return self.runs[rows[0].row()]

    def _history_selection(self) -> None:
        run = self.selected_history()
        can_resume = (
            run is not None
            and run["status"] != "done"
            and run["source"] == "generated"
            and not self.ctx.running
        )
        self.resume_button.setEnabled(can_resume)
        self.results_button.setEnabled(run is not None)
        passes = (
            [p for p in get_probe(run["probe"]).capabilities.labelling.passes() if p.needs_model]
            if run
            else []
        )
        self.label_pass = passes[0].name if passes else None
        if passes:
            self.label_button.setText(
                "E&xtract: " + passes[0].title[0].lower() + passes[0].title[1:]
            )
            self.label_button.setToolTip(passes[0].description + " Resumable.")
        self.label_button.setEnabled(
            bool(passes)
            and run["attempts_done"] > 0
            and not self.ctx.running
            and self.selected_model() is not None
        )

    def _open_results(self, *_: Any) -> None:
        run = self.selected_history()
        if run is not None:
            self.ctx.open_results.emit(run["id"])
