""" "Audit this model": choose a time budget, read the plan, run the audit, read each
verdict as it comes, get the report.

Thin: planning, running and the report are `gbdesk.workflows.audit`'s; this dialog shows the
plan, the verdicts after every look and the time left, and keeps the window responsive
(planning on a pool thread, the audit on its own thread).
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, QThread, QUrl, Signal
from PySide6.QtGui import QBrush, QColor, QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gbdesk.store import Store
from gbdesk.support.format import MARK_COLORS, display_name, duration
from gbdesk.support.guards import html_text
from gbdesk.ui.context import AppContext
from gbdesk.workflows.runs import RunControl

BUDGET_CHOICES = [
    ("30m", "30 minutes"),
    ("2h", "2 hours"),
    ("8h", "8 hours (overnight)"),
]
VERDICT_HEADERS = ["Probe", "Metric", "Value", "Audit interval", "Verdict", "Items",
                   "To decide"]  # fmt: skip
#: the setting that remembers the last harness audited
HARNESS_SETTING = "audit/harness"


def pending_text(audit: dict[str, Any]) -> str:
    """ "Audit 2 (a harness, 30m, 27 min left) is unfinished" — the offer to
    continue it."""
    state = audit.get("state") or {}
    left = max(0.0, float(audit.get("budget_s") or 0) - float(state.get("spent_s") or 0))
    what = f"{state['harness_title']}, " if state.get("harness_title") else ""
    return f"Audit {audit['id']} ({what}{audit.get('budget')}, {duration(left)} left) is unfinished"


def _pending(store: Store, model_spec: str) -> dict[str, Any] | None:
    """The model's unfinished audit, to offer it when the dialog opens (None: none)."""
    from gbdesk.workflows import runs
    from gbdesk.workflows.audit import get_audit, unfinished_audit

    model = runs.resolve_model(store, model_spec)
    pending = unfinished_audit(store, model["id"])
    return get_audit(store, pending) if pending is not None else None


def latest_pending(store: Store) -> tuple[dict[str, Any], str] | None:
    """The latest unfinished audit of any model and its model's path (the app offers it
    when it opens), or None."""
    from gbdesk.store import audits
    from gbdesk.workflows.audit import get_audit

    audit_id = audits.latest_unfinished(store)
    if audit_id is None:
        return None
    audit = get_audit(store, audit_id)
    if (audit.get("state") or {}).get("version") != 2 or not audit.get("model_id"):
        return None  # an earlier gbdesk's audit is not continued
    return audit, str(store.get_model(audit["model_id"]).get("path") or "default")


def plan_cells(p: Any) -> list[str]:
    """A probe's row of the plan table: its title, the first look as items × prompts ×
    attempts = answers, its time, and what an even share of the budget would reach."""
    items = p.sizes[0] if p.marked else int((p.fixed or {}).get("items") or 0)
    answers = items * p.prompts * p.attempts
    return [
        p.title,
        f"{items:,} × {p.prompts} × {p.attempts} = {answers:,}",
        duration(p.first_seconds()),
    ]


def is_endpoint(model_spec: str) -> bool:
    return str(model_spec).strip().lower().startswith(("http://", "https://"))


def _plan(
    store: Store,
    model_spec: str,
    budget: str,
    backend_factory: Any,
    harness: str | None = None,
    concurrency: int = 1,
    wordings: str | None = None,
) -> dict[str, Any]:
    from gbdesk.workflows import runs
    from gbdesk.workflows.audit import (
        SharedBackend,
        get_audit,
        measure_speed,
        parse_budget,
        plan_audit,
        unfinished_audit,
    )

    model = runs.resolve_model(store, model_spec)
    if model.get("kind") == "endpoint" and concurrency > 1:
        from gbdesk.engine.http import endpoint_entries, register_endpoint

        entry = next(e for e in endpoint_entries(store) if e["model_id"] == model["id"])
        model = register_endpoint(
            store, entry["url"], entry["endpoint_model"], api_key_env=entry["api_key_env"],
            concurrency=concurrency,
        )  # fmt: skip
    pending = unfinished_audit(store, model["id"])
    shared = SharedBackend(backend_factory or runs.llama_backend_factory, model)
    try:
        speed = measure_speed(store, model, shared, concurrency=concurrency)
    finally:
        shared.close()
    plan = plan_audit(
        store, model, parse_budget(budget), speed, budget_text=budget, harness=harness,
        concurrency=concurrency, wordings=wordings,
    )  # fmt: skip
    return {
        "model": model,
        "plan": plan,
        "pending": get_audit(store, pending) if pending is not None else None,
    }


def verdict_cells(v: dict[str, Any]) -> list[str]:
    """A verdict's row: no letter first unless decided ("no mark yet: A to C still
    possible · reference mark B"), and what deciding it would take."""
    from gbdesk.maths.verdicts import Verdict
    from gbdesk.report.audit_findings import more_text, undecided_words

    value, ci = v.get("value"), v.get("ci") or [None, None]
    interval = "—" if None in ci else f"{ci[0]:.2f} to {ci[1]:.2f}"
    items = int(v.get("items") or 0)
    verdict = Verdict(v["metric"], tuple(v.get("marks") or ()), v.get("study_mark"), items)
    words = undecided_words(verdict)
    if not verdict.decided and verdict.study_mark:
        words += f" · reference mark {verdict.study_mark}"
    return [
        v["probe"], v.get("title") or v["metric"], "—" if value is None else f"{value:.2f}",
        interval, words, f"{items:,}", more_text(v, verdict.decided),
    ]  # fmt: skip


class AuditThread(QThread):
    """Runs (or continues) a stored audit to its report (`gbdesk.workflows.audit.run_audit`)."""

    progress = Signal(object)  # gbdesk.workflows.audit.AuditProgress
    completed = Signal(object)  # the audit's `AuditReport` (`gbdesk.report.audit_report`)
    failed = Signal(str)

    def __init__(self, db_path: str, audit_id: int, backend_factory=None, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.audit_id = audit_id
        self.backend_factory = backend_factory
        self.control = RunControl()

    def run(self) -> None:
        from gbdesk.workflows.audit import run_audit_report

        try:
            with Store(self.db_path) as store:
                result = run_audit_report(
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
    """Budget → plan → rounds with verdicts → report, for one model."""

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
        self.setWindowTitle(f"Audit this model — {display_name(model_name or model_spec)}")
        self.resize(960, 640)
        self.plan: Any = None
        self.model: dict[str, Any] | None = None
        self.audit_id: int | None = None
        self.audit_id_pending: int | None = None
        self.thread: AuditThread | None = None
        self.result_payload: dict[str, Any] | None = None  # the report value's JSON
        self.report_value: Any = None  # the audit's `AuditReport`, as it ended
        self.verdicts: dict[tuple[str, str], dict[str, Any]] = {}
        self._stored_shown: tuple[Any, Any] | None = None  # (run, attempts) last reported
        self._build()
        self._lay_out()
        self._connect_signals()
        self._planning_since: float | None = None
        from PySide6.QtCore import QTimer

        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)
        self.ctx.tasks.with_store(
            self.ctx.db_path, _pending, self.model_spec, on_done=self._offer_pending,
            on_error=lambda _m: None, key="audit.pending",
        )  # fmt: skip

    # -- layout ----------------------------------------------------------------------------------
    def _build(self) -> None:
        self.intro = QLabel(
            "gbdesk measures how fast this model answers (seconds), then runs every probe in "
            "rounds: a first look at a small random draw of its items, then more items where "
            "a verdict is still open, until each verdict is decided or the time you give it "
            "is spent. A verdict names the marks its interval still allows — one mark is a "
            "decision; several mean <i>not enough answers to tell</i>. You can stop at any "
            "time; <i>Audit this model</i> later continues where it stopped. The report "
            "(PDF) is written at the end."
        )
        self.intro.setWordWrap(True)
        self.row = self._build_choice()
        self.summary = QLabel("<i>Choose a budget and press Plan.</i>")
        self.summary.setWordWrap(True)
        self.table = self._table()
        self.verdict_table = self._table()
        self.verdict_table.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.buttons = self._build_buttons()

    @staticmethod
    def _table() -> QTableWidget:
        table = QTableWidget()
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.verticalHeader().setVisible(False)
        return table

    def _lay_out(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addLayout(self.row)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.verdict_table, 2)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(self.buttons)

    def _build_choice(self) -> QHBoxLayout:
        """What to run (every probe, or a study's harness), the budget, requests in flight
        (a model behind a server), Plan."""
        self.budget = QComboBox()
        for key, text in BUDGET_CHOICES:
            self.budget.addItem(text, key)
        self.budget.setEditable(True)  # "45m", "1h30m" … also work
        self.budget.setToolTip("How long the audit may take: 30m, 2h, 8h, or e.g. 1h30m")
        self.what = QComboBox()
        self.what.addItem("Every probe of every study", None)
        from gbdesk.contract import harnesses

        for name, harness in harnesses().items():
            self.what.addItem(harness.title, name)
            self.what.setItemData(
                self.what.count() - 1, harness.description, Qt.ItemDataRole.ToolTipRole
            )
        self.what.setToolTip("What the audit runs: every probe, or a study's own harness")
        last = self.ctx.setting(HARNESS_SETTING)
        if last and self.what.findData(last) >= 0:
            self.what.setCurrentIndex(self.what.findData(last))
        # the harness chosen is remembered for the next audit (the app's QSettings)
        self.what.currentIndexChanged.connect(self._remember_harness)
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 256)
        self.concurrency.setValue(16 if is_endpoint(self.model_spec) else 1)
        self.concurrency.setEnabled(is_endpoint(self.model_spec))
        self.concurrency.setToolTip(
            "A model behind a server: how many requests are in flight at once (vLLM or "
            "llama-server hosts take 16–64). A local model decodes several at once by itself."
        )
        self.wordings = QCheckBox("Other &wordings too")
        self.wordings.setToolTip(
            "Also ask every drawn item in each other wording of its probe's prompt (about 5× "
            "the time per item): the report then says which verdicts depend on the wording. "
            "The verdicts stay those of the study's own wording."
        )
        self.plan_button = QPushButton("&Plan")
        row = QHBoxLayout()
        for text, widget, stretch in (
            ("&Run:", self.what, 1),
            ("Time &budget:", self.budget, 1),
            ("Requests in &flight:", self.concurrency, 0),
        ):
            label = QLabel(text)
            label.setBuddy(widget)
            row.addWidget(label)
            row.addWidget(widget, stretch)
        row.addWidget(self.wordings)
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
        self.results_button = QPushButton("See the &verdicts in Results")
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
    def _remember_harness(self, _index: int = 0) -> None:
        self.ctx.settings.setValue(HARNESS_SETTING, self.what.currentData() or "")

    def budget_text(self) -> str:
        """ "30m", "2h", "8h" for the listed choices, else what was typed."""
        text = self.budget.currentText().strip()
        return {label: key for key, label in BUDGET_CHOICES}.get(text, text)

    def set_budget(self, text: str) -> None:
        self.budget.setEditText(text)

    def _offer_pending(self, pending: dict[str, Any] | None) -> None:
        """An unfinished audit of this model, offered as soon as the dialog opens."""
        if pending is None or self.thread is not None:
            return
        self.audit_id_pending = pending["id"]
        self.continue_button.setText(f"&Continue audit {pending['id']}")
        self.continue_button.setVisible(True)
        self.continue_button.setEnabled(True)
        self.status.setText(f"{html_text(pending_text(pending))} — Continue goes on with it.")

    def _tick(self) -> None:
        """Planning's progress: the seconds it has taken so far."""

        if self._planning_since is None:
            return
        took = time.monotonic() - self._planning_since
        self.summary.setText(
            f"<i>Loading the model, measuring its speed and planning… {duration(took)} so far "
            "(not counted in the budget: its clock starts once the plan is made)</i>"
        )

    def plan_now(self) -> None:

        self.plan_button.setEnabled(False)
        self.start_button.setEnabled(False)
        self._remember_harness()
        self._planning_since = time.monotonic()
        self._tick()
        self._clock.start()
        self.progress.setVisible(True)
        self.progress.setRange(0, 0)
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _plan,
            self.model_spec,
            self.budget_text(),
            self.ctx.backend_factory,
            self.what.currentData(),
            self.concurrency.value(),
            "all" if self.wordings.isChecked() else None,
            on_done=self._planned,
            on_error=self._plan_failed,
            key="audit.plan",
        )

    def _plan_failed(self, message: str) -> None:
        self._planning_done()
        self.plan_button.setEnabled(True)
        self.summary.setText(f"<span style='color:#b91c1c'>{html_text(message)}</span>")

    def _planned(self, out: dict[str, Any]) -> None:
        from gbdesk.workflows.audit import even_items, projected_meaning

        self._planning_done()
        self.plan_button.setEnabled(True)
        self.plan, self.model = out["plan"], out["model"]
        self._offer_pending(out["pending"])
        plan = self.plan
        left = "".join(f"<br>Left out — {html_text(x)}" for x in plan.left_out)
        what = f"{html_text(plan.harness_title)} on " if plan.harness_title else ""
        self.summary.setText(
            f"Audit of {what}<b>{html_text(str(self.model.get('name', '?')))}</b> within "
            f"<b>{html_text(plan.budget)}</b>: {len(plan.probes)} probe(s); the first look at "
            f"every probe takes about {duration(plan.first_round_s)}, then more items where "
            f"a verdict is still open. Speed: {html_text(plan.speed.basis)}.{left}"
        )
        self._warn(plan)
        reach = even_items(plan)
        headers = [
            "Probe", "First look: items × prompts × attempts = answers", "About",
            "An even share of the budget",
        ]  # fmt: skip
        self.table.clear()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setRowCount(len(plan.probes))
        for row, p in enumerate(plan.probes):
            n = reach.get(p.probe)
            share = "one run (no marks)" if n is None else f"~{n:,} items"
            meaning = projected_meaning(p, n) if n is not None else ""
            cells = [*plan_cells(p), f"{share}{': ' + meaning if meaning else ''}"]
            for col, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                cell.setToolTip(text)
                self.table.setItem(row, col, cell)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.start_button.setEnabled(bool(plan.probes))
        if not plan.probes:
            self.status.setText("The budget fits no probe on this model; give it more time.")

    def _planning_done(self) -> None:
        self._planning_since = None
        self._clock.stop()
        self.progress.setVisible(False)

    def _warn(self, plan: Any) -> None:
        """Before Start: one plain sentence when the budget cannot give every probe its
        first look, naming the time that could."""
        warning = plan.budget_warning()
        self.status.setText(
            f"<span style='color:#92400e'><b>{html_text(warning)}</b></span>" if warning else ""
        )

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
        if p.status in ("done", "stopped"):
            return
        if p.items_total:
            self.progress.setRange(0, p.items_total)
            self.progress.setValue(p.items)
            self.progress.setFormat(
                f"{p.items:,} of {p.items_total:,} items drawn · {duration(p.seconds_left)} left"
            )
        if p.status == "look":
            for v in p.verdicts:
                self.verdicts[(v.probe, v.metric)] = v.to_json()
            self._show_verdicts()
        elif p.status == "step" and p.step:
            from gbdesk.workflows.audit import step_text

            s = p.step
            self.status.setText(
                f"{html_text(p.probe)}: {step_text(s)}, about "
                f"{duration(s['expected_s'])} ({duration(p.seconds_left)} of the budget left)"
            )
        elif p.status == "running" and p.run is not None:
            run = p.run
            flight = f" ({run.in_flight_text})" if run.in_flight_text else ""
            self.status.setText(
                f"{html_text(p.probe)} (run {p.run_id}): {run.done:,}/{run.total:,} answers"
                f"{flight}; {duration(p.seconds_left)} of the budget left"
            )
            stored = (p.run_id, run.done)
            if stored != self._stored_shown:  # not for answers in flight
                self._stored_shown = stored
                self.ctx.answers_stored(p.run_id)

    def _show_verdicts(self) -> None:
        """Every marked metric's latest verdict; a mark coloured only when decided."""
        rows = list(self.verdicts.values())
        table = self.verdict_table
        table.setVisible(True)
        table.clear()
        table.setColumnCount(len(VERDICT_HEADERS))
        table.setHorizontalHeaderLabels(VERDICT_HEADERS)
        table.setRowCount(len(rows))
        for row, v in enumerate(rows):
            for col, text in enumerate(verdict_cells(v)):
                cell = QTableWidgetItem(text)
                cell.setToolTip(text)
                if col == 4 and v.get("decided") and v.get("marks"):
                    cell.setForeground(QBrush(QColor(MARK_COLORS[v["marks"][0]])))
                elif col == 4:
                    cell.setForeground(QBrush(QColor("#4b5563")))
                table.setItem(row, col, cell)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)

    def _completed(self, report: Any) -> None:
        """The audit's end: its report value (`AuditReport`) shown as it is."""
        self.report_value = report
        self.result_payload = report.to_json()
        self.progress.setVisible(False)
        self.verdicts = {(v["probe"], v["metric"]): dict(v) for v in report.verdicts}
        self._show_verdicts()
        decided = sum(1 for v in report.verdicts if v.get("decided"))
        counts = f"{decided} of {len(report.verdicts)} verdicts decided"
        if report.error.get("error_statement"):  # the audit's error bound, in its mode
            counts += f" ({html_text(report.error['error_statement'])})"
        if report.report:
            self.status.setText(
                f"Audit {report.audit_id} finished in {duration(report.seconds)}: "
                f"{counts}. Report: {html_text(report.report)}"
            )
            self.open_button.setEnabled(True)
            self.results_button.setEnabled(True)
        else:
            self.status.setText(
                f"Stopped ({counts} so far). Everything answered is saved; Audit this model "
                "continues it."
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
            self.status.setText("Stopping: the answers under way finish and are kept…")

    def open_report(self) -> bool:
        if self.report_value is None or not self.report_value.report:
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(self.report_value.report))

    def show_findings(self) -> None:
        """The audit in the Results pane: its report value, shown as it is (the Audit tab),
        and its runs ticked together."""
        if self.report_value is not None and self.report_value.runs:
            self.ctx.open_audit.emit(self.report_value)
