""" "Audit this model": choose a time budget, read the plan, run every probe, get the report.

Thin: planning, running and the report are `gbdesk.workflows.audit`'s; this dialog shows the plan
and the progress and keeps the window responsive (planning on a pool thread, the runs on
their own thread).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QThread, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gbdesk.store import Store
from gbdesk.support.format import duration
from gbdesk.support.guards import html_text
from gbdesk.ui.context import AppContext
from gbdesk.workflows.runs import RunControl

BUDGET_CHOICES = [
    ("30m", "30 minutes"),
    ("2h", "2 hours"),
    ("8h", "8 hours (overnight)"),
]


def _plan(
    store: Store, model_spec: str, budget: str, backend_factory: Any, harness: str | None = None
) -> dict[str, Any]:
    from gbdesk.workflows.audit import (
        get_audit,
        measure_speed,
        parse_budget,
        plan_audit,
        unfinished_audit,
    )
    from gbdesk.workflows.runs import resolve_model

    model = resolve_model(store, model_spec)
    pending = unfinished_audit(store, model["id"])
    speed = measure_speed(store, model, backend_factory)
    plan = plan_audit(
        store, model, parse_budget(budget), speed, budget_text=budget, harness=harness
    )
    return {
        "model": model,
        "plan": plan,
        "pending": get_audit(store, pending) if pending is not None else None,
    }


class AuditThread(QThread):
    """Runs (or continues) a stored audit to its report (`gbdesk.workflows.audit.run_audit`)."""

    progress = Signal(object)  # gbdesk.workflows.audit.AuditProgress
    completed = Signal(object)  # {"plan", "runs", "report", "audit_id"}
    failed = Signal(str)

    def __init__(self, db_path: str, audit_id: int, backend_factory=None, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.audit_id = audit_id
        self.backend_factory = backend_factory
        self.control = RunControl()

    def run(self) -> None:
        from gbdesk.workflows.audit import run_audit

        try:
            with Store(self.db_path) as store:
                result = run_audit(
                    store,
                    self.audit_id,
                    backend_factory=self.backend_factory,
                    control=self.control,
                    on_progress=self.progress.emit,
                )
        except Exception as exc:  # shown in the dialog; the audit stays resumable
            import logging

            logging.getLogger(__name__).exception("audit %s failed", self.audit_id)
            self.failed.emit(f"{exc} — the audit is saved; Audit this model continues it")
        else:
            self.completed.emit(result)


class AuditDialog(QDialog):
    """Budget → plan → run → report, for one model."""

    def __init__(
        self,
        ctx: AppContext,
        model_spec: str = "default",
        model_name: str = "",
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.ctx = ctx
        self.model_spec = model_spec
        self.setWindowTitle(f"Audit this model — {model_name or model_spec}")
        self.resize(900, 560)
        self.plan: Any = None
        self.model: dict[str, Any] | None = None
        self.audit_id: int | None = None
        self.audit_id_pending: int | None = None
        self.thread: AuditThread | None = None
        self.result_payload: dict[str, Any] | None = None
        self._stored_shown: tuple[Any, Any] | None = None  # (run, attempts) last reported
        intro = QLabel(
            "gbdesk measures how fast this model writes, then sizes every probe so that the "
            "whole audit fits the time you give it: more time gives more items and "
            "attempts, and narrower intervals. Read the plan, then start. You can stop at "
            "any time; <i>Audit this model</i> later continues where it stopped. The report "
            "(PDF) is written at the end."
        )
        intro.setWordWrap(True)
        row = self._build_choice()
        self.summary = QLabel("<i>Choose a budget and press Plan.</i>")
        self.summary.setWordWrap(True)
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.status = QLabel()
        self.status.setWordWrap(True)
        buttons = self._build_buttons()

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(row)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self._connect_signals()

    def _build_choice(self) -> QHBoxLayout:
        """What to run (every probe, or a study's harness), the time budget, Plan."""
        self.budget = QComboBox()
        for key, text in BUDGET_CHOICES:
            self.budget.addItem(text, key)
        self.budget.setEditable(True)  # "45m", "1h30m" … also work
        self.budget.setToolTip("How long the audit may take: 30m, 2h, 8h, or e.g. 1h30m")
        self.what = QComboBox()
        self.what.addItem("Every probe of every study", None)
        from gbdesk.studies import harnesses

        for name, harness in harnesses().items():
            self.what.addItem(harness.title, name)
            self.what.setItemData(
                self.what.count() - 1, harness.description, Qt.ItemDataRole.ToolTipRole
            )
        self.what.setToolTip(
            "What the audit runs: every probe, or a study's own harness (its probes with "
            "their own templates and sizes, cut to the budget)"
        )
        self.plan_button = QPushButton("&Plan")
        row = QHBoxLayout()
        what_label = QLabel("&Run:")
        what_label.setBuddy(self.what)
        row.addWidget(what_label)
        row.addWidget(self.what, 1)
        budget_label = QLabel("Time &budget:")
        budget_label.setBuddy(self.budget)
        row.addWidget(budget_label)
        row.addWidget(self.budget, 1)
        row.addWidget(self.plan_button)
        return row

    def _build_buttons(self) -> QHBoxLayout:
        """Continue, start, stop, open the report, see the findings; close."""
        self.start_button = QPushButton("&Start audit")
        self.start_button.setEnabled(False)
        self.continue_button = QPushButton("&Continue unfinished audit")
        self.continue_button.setVisible(False)
        self.stop_button = QPushButton("S&top")
        self.stop_button.setEnabled(False)
        self.open_button = QPushButton("&Open report")
        self.open_button.setEnabled(False)
        self.results_button = QPushButton("See the &findings")
        self.results_button.setEnabled(False)
        self.close_button = QPushButton("C&lose")
        self.close_button.setToolTip(
            "Close this window (a running audit goes on; Audit this model shows it again)"
        )
        buttons = QHBoxLayout()
        for b in (
            self.continue_button,
            self.start_button,
            self.stop_button,
            self.open_button,
            self.results_button,
        ):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        return buttons

    def _connect_signals(self) -> None:
        """What each button sets off."""
        self.plan_button.clicked.connect(self.plan_now)
        self.start_button.clicked.connect(self.start)
        self.continue_button.clicked.connect(self.continue_pending)
        self.stop_button.clicked.connect(self.stop)
        self.open_button.clicked.connect(self.open_report)
        self.results_button.clicked.connect(self.show_findings)
        self.close_button.clicked.connect(self.close)

    # -- plan ----------------------------------------------------------------------------------
    def budget_text(self) -> str:
        """ "30m", "2h", "8h" for the listed choices, else what was typed."""
        text = self.budget.currentText().strip()
        return {label: key for key, label in BUDGET_CHOICES}.get(text, text)

    def set_budget(self, text: str) -> None:
        self.budget.setEditText(text)

    def plan_now(self) -> None:
        self.plan_button.setEnabled(False)
        self.start_button.setEnabled(False)
        self.summary.setText(
            "<i>Measuring the model's speed (it may load the model: a few seconds to a "
            "minute) and planning…</i>"
        )
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _plan,
            self.model_spec,
            self.budget_text(),
            self.ctx.backend_factory,
            self.what.currentData(),
            on_done=self._planned,
            on_error=self._plan_failed,
            key="audit.plan",
        )

    def _plan_failed(self, message: str) -> None:
        self.plan_button.setEnabled(True)
        self.summary.setText(f"<span style='color:#b91c1c'>{html_text(message)}</span>")

    def _planned(self, out: dict[str, Any]) -> None:
        self.plan_button.setEnabled(True)
        self.plan, self.model = out["plan"], out["model"]
        pending = out["pending"]
        if pending is not None:
            self.audit_id_pending = pending["id"]
            self.continue_button.setText(
                f"&Continue unfinished audit {pending['id']} ({pending['budget']})"
            )
            self.continue_button.setVisible(True)
        plan = self.plan
        left = "".join(f"<br>Left out — {html_text(x)}" for x in plan.left_out)
        what = f"{html_text(plan.harness)} on " if plan.harness else ""
        self.summary.setText(
            f"Audit of {what}<b>{html_text(str(self.model.get('name', '?')))}</b>: "
            f"<b>{len(plan.probes)} probe(s), about {duration(plan.expected_s)}</b> of the "
            f"{html_text(plan.budget)} budget. Speed: {html_text(plan.speed.basis)}.{left}"
        )
        headers = [
            "Probe",
            "Items",
            "Attempts",
            "Work",
            "Expected time",
            "Interval it reaches",
            "What that interval can tell",
        ]
        self.table.clear()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setRowCount(len(plan.probes))
        for row, p in enumerate(plan.probes):
            reach = (
                f"±{p.half_width:.2f} on {p.precision_title or p.precision_metric}"
                if p.half_width is not None
                else "see tooltip"
            )
            cells = [
                p.title,
                f"{p.items:,}",
                str(p.attempts),
                f"{p.generations:,} {p.unit}",
                duration(p.seconds),
                reach,
                p.meaning or "—",
            ]
            for col, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                cell.setToolTip(p.precision or "")
                self.table.setItem(row, col, cell)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.start_button.setEnabled(bool(plan.probes))
        if not plan.probes:
            self.status.setText("The budget fits no probe on this model; give it more time.")

    # -- run -------------------------------------------------------------------------------------
    def start(self) -> None:
        """Store the plan and run it."""
        from gbdesk.workflows.audit import save_audit

        if self.plan is None or self.ctx.running:
            if self.ctx.running:
                self.status.setText("A run is in progress; wait for it or stop it first.")
            return
        with Store(self.ctx.db_path) as store:
            self.audit_id = save_audit(store, self.plan)
        self._run(self.audit_id)

    def continue_pending(self) -> None:
        if self.ctx.running or self.audit_id_pending is None:
            return
        self.audit_id = self.audit_id_pending
        self._run(self.audit_id)

    def _run(self, audit_id: int) -> None:
        self.thread = AuditThread(self.ctx.db_path, audit_id, self.ctx.backend_factory, self)
        self.thread.progress.connect(self._progress)
        self.thread.completed.connect(self._completed)
        self.thread.failed.connect(self._failed)
        self.thread.finished.connect(self._thread_finished)
        self.ctx.run_thread = self.thread  # one model at a time; closing the window asks
        for b in (self.start_button, self.plan_button, self.continue_button):
            b.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.progress.setVisible(True)
        self.progress.setRange(0, 0)
        self.status.setText(f"Audit {audit_id} starting…")
        self.thread.start()

    def _progress(self, p: Any) -> None:
        if p.status == "report":
            self.progress.setRange(0, 0)
            self.status.setText("Writing the report…")
            return
        if p.status == "done":
            return
        run = p.run
        if run is not None and run.total:
            self.progress.setRange(0, run.total)
            self.progress.setValue(run.done)
            eta = f", about {duration(run.eta_s)} left in this probe" if run.eta_s else ""
            flight = f" ({run.in_flight_text})" if run.in_flight_text else ""
            self.status.setText(
                f"Probe {p.step + 1} of {p.steps}: {html_text(p.probe)} (run {p.run_id}) — "
                f"{run.done}/{run.total}{flight}{eta}"
            )
        else:
            self.status.setText(f"Probe {p.step + 1} of {p.steps}: {html_text(p.probe)}…")
        stored = (p.run_id, run.done if run is not None else None)
        if stored != self._stored_shown:  # not for answers in flight
            self._stored_shown = stored
            self.ctx.runs_changed.emit()

    def _completed(self, result: dict[str, Any]) -> None:
        self.result_payload = result
        self.progress.setVisible(False)
        if result.get("report"):
            self.status.setText(
                f"Audit {result['audit_id']} finished: runs "
                f"{', '.join(map(str, result['runs']))}. Report: "
                f"{html_text(result['report'])}"
            )
            self.open_button.setEnabled(True)
            self.results_button.setEnabled(True)
        else:
            self.status.setText(
                "Stopped. Everything generated so far is saved; Audit this model continues it."
            )
        self.ctx.runs_changed.emit()

    def _failed(self, message: str) -> None:
        self.progress.setVisible(False)
        self.status.setText(f"<span style='color:#b91c1c'>{html_text(message)}</span>")

    def _thread_finished(self) -> None:
        self.ctx.run_thread = None
        self.stop_button.setEnabled(False)
        self.plan_button.setEnabled(True)

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.control.cancel()
            self.status.setText("Stopping after the attempt in progress…")

    def open_report(self) -> bool:
        if not self.result_payload or not self.result_payload.get("report"):
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(self.result_payload["report"]))

    def show_findings(self) -> None:
        if self.result_payload and self.result_payload.get("runs"):
            self.ctx.open_runs.emit(list(self.result_payload["runs"]))
