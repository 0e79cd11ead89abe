"""Reports pane: export chosen runs as a PDF report and/or CSV files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gbdesk.analysis.results import runs_for_reports
from gbdesk.report.csv_export import export_leftovers, export_run_csv
from gbdesk.report.pdf import export_pdf
from gbdesk.support.guards import html_text
from gbdesk.ui.context import AppContext
from gbdesk.ui.widgets import Banner, pane_header


def _csv_export(store: Any, run_ids: list[int], folder: str) -> tuple[list[str], list[str]]:
    """The CSV files written, and the notes on what else the folder holds
    (`export_leftovers`)."""
    tables = export_run_csv(store, run_ids, folder)
    return [str(p) for p in tables], export_leftovers(Path(folder), tables)


class ReportsPane(QWidget):
    title = "Reports"

    def __init__(self, ctx: AppContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.runs: list[dict[str, Any]] = []
        self.last_files: list[str] = []
        self.banner = Banner()
        self.run_list = QListWidget()
        self.mode_combo = QComboBox()
        self.mode_combo.addItem("Reviewed labels (a reviewer's where present)", "reviewed")
        self.mode_combo.addItem("Automatic labels only", "auto")
        self.mode_combo.addItem(
            "Prediction-powered (automatic + the reviewed random sample)", "ppi"
        )
        self.mode_combo.addItem(
            "Consensus labels (adjudicated where raters disagreed, else a reviewer's)",
            "consensus",
        )
        self.pdf_button = QPushButton("Export &PDF report…")
        self.pdf_button.clicked.connect(self.choose_pdf)
        self.csv_button = QPushButton("Export C&SV files…")
        self.csv_button.clicked.connect(self.choose_csv)
        self.open_button = QPushButton("&Open last export")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(self._open_last)
        buttons = QHBoxLayout()
        for b in (self.pdf_button, self.csv_button, self.open_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        mode_row = QHBoxLayout()
        lab = QLabel("Metrics from")
        lab.setBuddy(self.mode_combo)
        mode_row.addWidget(lab)
        mode_row.addWidget(self.mode_combo, 1)
        about = QLabel(
            "The PDF holds a verdict table of marks per model, a short summary, each probe's "
            "charts with intervals over the mark bands, the probe cards and their limitations, "
            "the detector's quality against your reviews, and an appendix with everything "
            "needed to reproduce the runs (model file and SHA-256, quantisation, chat template, "
            "parameters and seeds, versions). CSV gives one row per generation "
            "(attempts.csv) and per metric (metrics.csv). Both are made offline."
        )
        about.setWordWrap(True)
        about.setStyleSheet("color:#4b5563")

        layout = QVBoxLayout(self)
        layout.addWidget(pane_header("Reports", "Choose runs and export them."))
        layout.addWidget(self.banner)
        layout.addWidget(QLabel("Runs to include:"))
        layout.addWidget(self.run_list, 2)
        layout.addLayout(mode_row)
        layout.addWidget(about)
        layout.addLayout(buttons)
        layout.addStretch(3)
        ctx.db_changed.connect(self.refresh)
        ctx.runs_changed.connect(self.refresh)
        ctx.labels_changed.connect(self._labels_changed)  # a new rater's labels: offered
        self.refresh()

    def _labels_changed(self, _run_id: int) -> None:
        self.refresh()

    def refresh(self) -> None:
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            lambda store: (runs_for_reports(store), store.raters()),
            on_done=self._show_runs_and_raters,
            on_error=self.banner.error,
            key="reports.runs",
        )

    def _show_runs_and_raters(self, loaded: tuple[list[dict[str, Any]], list[str]]) -> None:
        runs, raters = loaded
        self._offer_raters(raters)
        self._show(runs)

    def _offer_raters(self, raters: list[str]) -> None:
        """One "<rater>'s labels" choice per person who labelled (a run without that
        rater's labels cannot be exported with it: the export says so)."""
        for rater in raters:
            key = f"rater:{rater}"
            if self.mode_combo.findData(key) < 0:
                self.mode_combo.addItem(f"{rater}'s labels (the detector's elsewhere)", key)

    def _show(self, runs: list[dict[str, Any]]) -> None:
        checked = set(self.checked_runs())
        self.runs = runs
        self.run_list.clear()
        for r in reversed(runs):
            state = (
                f"{r['attempts_done']:,} generations" if r["attempts_done"] else "no answers yet"
            )
            text = f"Run {r['id']} · {r['probe']} · {r.get('model_name')} · {r['status']}, {state}"
            if r.get("elsewhere"):
                text += " · in progress in another process"
            item = QListWidgetItem(text)
            if r.get("elsewhere"):
                item.setToolTip(f"In progress in another process: {r['elsewhere']}")
            item.setData(Qt.ItemDataRole.UserRole, r["id"])
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                Qt.CheckState.Checked
                if (r["id"] in checked or not checked) and r["status"] == "done"
                else Qt.CheckState.Unchecked
            )
            self.run_list.addItem(item)
        if not runs:
            self.run_list.addItem("No runs yet — start one in Runs.")
        self.pdf_button.setEnabled(bool(runs))
        self.csv_button.setEnabled(bool(runs))

    def checked_runs(self) -> list[int]:
        ids = []
        for row in range(self.run_list.count()):
            item = self.run_list.item(row)
            data = item.data(Qt.ItemDataRole.UserRole)
            if data is not None and item.checkState() == Qt.CheckState.Checked:
                ids.append(int(data))
        return sorted(ids)

    def set_checked(self, run_ids: list[int]) -> None:
        for row in range(self.run_list.count()):
            item = self.run_list.item(row)
            data = item.data(Qt.ItemDataRole.UserRole)
            if data is not None:
                item.setCheckState(
                    Qt.CheckState.Checked if int(data) in run_ids else Qt.CheckState.Unchecked
                )

    # -- exports --------------------------------------------------------------------------
    def _need_runs(self) -> list[int] | None:
        run_ids = self.checked_runs()
        if not run_ids:
            self.banner.warn("Tick at least one run.")
            return None
        return run_ids

    def choose_pdf(self) -> None:
        if self._need_runs() is None:
            return
        default = str(Path(self.ctx.setting("export_dir", str(Path.home()))) / "gbdesk-report.pdf")
        path, _ = QFileDialog.getSaveFileName(self, "Export PDF report", default, "PDF (*.pdf)")
        if path:
            self.export_pdf(path)

    def export_pdf(self, path: str) -> None:
        run_ids = self._need_runs()
        if run_ids is None:
            return
        if not path.lower().endswith(".pdf"):
            path += ".pdf"
        self.ctx.settings.setValue("export_dir", str(Path(path).parent))
        mode = self.mode_combo.currentData()
        self.banner.info("Writing the PDF report…")
        # Metrics, layout and painting all happen off the UI thread (QTextDocument, QImage
        # and QPdfWriter may be used from a worker thread).
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            lambda store: [str(export_pdf(store, run_ids, path, mode))],
            on_done=self._exported,
            on_error=self.banner.error,
        )

    def choose_csv(self) -> None:
        if self._need_runs() is None:
            return
        folder = QFileDialog.getExistingDirectory(
            self, "Export CSV files into", self.ctx.setting("export_dir", str(Path.home()))
        )
        if folder:
            self.export_csv(folder)

    def export_csv(self, folder: str) -> None:
        run_ids = self._need_runs()
        if run_ids is None:
            return
        self.ctx.settings.setValue("export_dir", folder)
        self.banner.info("Writing CSV files…")
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            lambda store: _csv_export(store, run_ids, folder),
            on_done=self._exported,
            on_error=self.banner.error,
        )

    def _exported(self, files: list[str] | tuple[list[str], list[str]]) -> None:
        files, notes = files if isinstance(files, tuple) else (files, [])
        self.last_files = files
        self.open_button.setEnabled(True)
        listing = "<br>".join(html_text(f) for f in files)
        said = "".join(f"<br><b>Note:</b> {html_text(n)}" for n in notes)
        self.banner.show_message("warn" if notes else "ok", f"Written:<br>{listing}{said}",
                                 rich=True)  # fmt: skip
        self.ctx.message.emit(f"Exported {len(files)} file(s)")

    def _open_last(self) -> None:
        if self.last_files:
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.last_files[0]))
