"""Runs pane: probe catalogue and cards, parameters, start/pause/resume/cancel, history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gbdesk.contract import get_probe, probe_names
from gbdesk.contract.running import wording_kwargs
from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model
from gbdesk.support.guards import html_text, one_line
from gbdesk.ui.context import AppContext
from gbdesk.ui.tasks import LabelThread, RunThread
from gbdesk.ui.theme import duration
from gbdesk.ui.widgets import Banner, pane_header
from gbdesk.workflows.models import list_models
from gbdesk.workflows.runs import (
    NEW_TEXT,
    RecentRate,
    estimate_run,
    plan_run,
    resolve_model,
)

# None = the probe's own default (its attempts, temperature and max tokens)
PRESETS = {
    "Probe defaults": {
        "attempts": None,
        "limit": 0,
        "sample": 0,
        "temperature": None,
        "max_tokens": None,
    },
    "Quick look (20 items, 1 attempt)": {
        "attempts": 1,
        "limit": 20,
        "sample": 0,
        "temperature": 1.0,
        "max_tokens": 200,
    },
    "Laptop sample (200 random items)": {
        "attempts": None,
        "limit": 0,
        "sample": 200,
        "temperature": None,
        "max_tokens": None,
    },
}
HISTORY_COLUMNS = ["Run", "Probe", "Model", "Status", "Attempts", "Created"]
CHOOSE_FILE = "\0choose-file"  # the "Choose a file…" entry of an option combo
ALL = -1  # the wording combo's "every wording"


def _filled(options: dict[str, str]) -> dict[str, str]:
    """Options without empty values (an estimate while nothing is ticked uses defaults)."""
    return {k: v for k, v in options.items() if v}


def _preset_values(preset: dict[str, Any], probe) -> dict[str, Any]:
    """A preset's values with None filled from the probe's defaults."""
    return {
        "attempts": preset["attempts"] or probe.default_attempts,
        "limit": preset["limit"],
        "sample": preset["sample"],
        "temperature": preset["temperature"]
        if preset["temperature"] is not None
        else probe.default_generation["temperature"],
        "max_tokens": preset["max_tokens"] or probe.default_generation["max_tokens"],
    }


def card_html(probe_name: str) -> str:
    probe = get_probe(probe_name)
    card = probe.card
    e = html_text
    harms = "".join(f"<li>{e(h)}</li>" for h in card.harms)
    limits = "".join(f"<li>{e(x)}</li>" for x in card.limitations)
    metrics = "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in card.metrics.items())
    return (
        f"<h3>{e(card.title)}</h3><p>{e(card.measures)}</p>"
        f"<p><b>Harms</b></p><ul>{harms}</ul>"
        f"<p><b>Method.</b> {e(card.method)}</p>"
        f"<p><b>Data.</b> {e(card.data_source)}<br><b>Size.</b> {e(card.size)}<br>"
        f"<b>Licence.</b> {e(card.licence)}</p>"
        f"<p><b>Metrics</b></p><ul>{metrics}</ul>"
        f"<p><b>Limitations</b></p><ul>{limits}</ul>"
        f"<p style='color:#6b7280'>{e(card.citation)}</p>"
    )


def _history(store) -> list[dict[str, Any]]:
    return store.list_runs()


#: how often the Runs pane looks for runs and audits of other processes (their jobs beat
#: every 15 s, `gbdesk.store.jobs`)
ELSEWHERE_MS = 5000


def elsewhere(store) -> list[dict[str, Any]]:
    """What other processes do on this database now (a command-line run or audit), from
    their jobs' heartbeat: {"text": the job in words with its run's progress, "run_id",
    "done", "total"} each, oldest first."""
    from gbdesk.store.jobs import live_jobs

    out = []
    for job in live_jobs(store, others_only=True):
        item: dict[str, Any] = {"text": job.describe(command_chars=40), "run_id": job.run_id}
        if job.run_id is not None:
            try:
                run = store.get_run(job.run_id)
            except Exception:  # the run went meanwhile: the job's words are enough
                run = None
            if run is not None:
                item.update(done=run["attempts_done"], total=run["attempts_total"])
                try:
                    title = get_probe(run["probe"]).card.title
                except Exception:  # a study no longer installed: its key
                    title = run["probe"]
                item["text"] += (
                    f" — run {run['id']} ({title}): {run['attempts_done']:,} of "
                    f"{run['attempts_total']:,} generations"
                )
        out.append(item)
    return out


class RunsPane(QWidget):
    title = "Runs"

    def __init__(self, ctx: AppContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.models: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []
        self.current_run: int | None = None
        self._stored_shown = 0  # attempts stored this session when progress was last shown
        self.thread: RunThread | None = None
        self.elsewhere: list[dict[str, Any]] = []  # other processes' jobs (`elsewhere`)
        self._rate = RecentRate()
        self.label_pass: str | None = None  # the selected run's probe's labelling pass
        self.option_widgets: dict[str, Any] = {}
        self.queued: list[int] = []  # runs of other wordings, started one after another
        self._elsewhere_shown = False  # the bar shows another process's job
        self.banner = Banner()
        self._lay_out(self._build_catalogue(), self._build_middle(), self._build_history())
        self._connect_signals()
        self._restore_last_probe()

    # -- layout: the widgets, built once --------------------------------------------------
    def _build_catalogue(self) -> QSplitter:
        """The probe list above the selected probe's card."""
        self.probe_list = QListWidget()
        for name in probe_names():
            item = QListWidgetItem(f"{get_probe(name).card.title}\n  {name}")
            item.setData(Qt.ItemDataRole.UserRole, name)
            self.probe_list.addItem(item)
        self.card = QTextBrowser()
        self.card.setOpenExternalLinks(False)
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.probe_list)
        left.addWidget(self.card)
        left.setSizes([110, 600])
        return left

    def _build_parameters(self) -> QFormLayout:
        """The run's parameters: model, preset, template, sizes, sampling, batching."""
        self.model_combo = QComboBox()
        self.preset_combo = QComboBox()
        self.preset_combo.addItems([*PRESETS, "Custom"])
        self.template_combo = QComboBox()
        self.template_edit = QLineEdit()
        # the wordings of the probe's prompts (0: the study's own); "all": one run each
        self.wording_combo = QComboBox()
        self.wording_combo.setToolTip(
            "Ask the same items in another wording of the prompt, or in every wording (one "
            "run each, same items and seeds): Results then shows whether the verdict "
            "survives a rewording."
        )
        self.attempts = QSpinBox(minimum=1, maximum=10000)
        self.limit = QSpinBox(minimum=0, maximum=100000, specialValueText="all items")
        self.limit.setSuffix(" items")
        self.limit.setToolTip(
            "The first N items, or — for a probe whose metrics compare groups of items — a "
            "seeded subset that keeps every group; the estimate below says which."
        )
        self.sample = QSpinBox(minimum=0, maximum=100000, specialValueText="no sampling")
        self.temperature = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.1, decimals=2)
        self.max_tokens = QSpinBox(minimum=1, maximum=8192)
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1)
        # local models: sequences decoded at once (continuous batching); data = batch_size
        self.batch = QComboBox()
        self.batch.addItem("Automatic", 0)
        self.batch.addItem("1 — one at a time (slower)", 1)
        for n in (2, 4, 8, 16, 32):
            self.batch.addItem(f"{n} at once", n)
        self.batch.setToolTip(
            "Local models decode several generations at once and start the next as soon as "
            "one finishes. Automatic chooses from the model's size and the free memory. "
            "Texts do not depend on the number, but differ from one-at-a-time decoding. "
            "Kept with the run: resuming decodes the same way."
        )
        self.estimate = QLabel()
        self.estimate.setWordWrap(True)
        self.model_warning = QLabel()
        self.model_warning.setWordWrap(True)
        self.model_warning.setStyleSheet("color:#92400e")

        form = QFormLayout()
        form.addRow("&Model", self.model_combo)
        form.addRow("", self.model_warning)
        form.addRow("Pr&eset", self.preset_combo)
        form.addRow("&Template", self.template_combo)
        form.addRow("", self.template_edit)
        form.addRow("Wordin&g", self.wording_combo)
        form.addRow("&Attempts per prompt", self.attempts)
        form.addRow("&Limit to", self.limit)
        form.addRow("Random sa&mple of", self.sample)
        form.addRow("Tem&perature", self.temperature)
        form.addRow("Max &tokens", self.max_tokens)
        form.addRow("&Seed", self.seed)
        form.addRow("&Decode at once", self.batch)
        form.addRow("Estimate", self.estimate)
        return form

    def _build_controls(self) -> QHBoxLayout:
        """Start, pause and cancel."""
        self.start_button = QPushButton("&Start run")
        self.start_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.start_button.setToolTip("Start (Ctrl+Enter)")
        self.pause_button = QPushButton("&Pause")
        self.pause_button.setToolTip("Pause after the current generation (Ctrl+P)")
        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.setToolTip("Stop now; the run stays resumable (Ctrl+.)")
        controls = QHBoxLayout()
        for b in (self.start_button, self.pause_button, self.cancel_button):
            controls.addWidget(b)
        controls.addStretch(1)
        return controls

    def _build_middle(self) -> QWidget:
        """Parameters and probe options (scrolling), the controls, the progress and the
        latest generation."""
        form = self._build_parameters()
        controls = self._build_controls()
        self.progress = QProgressBar()
        self._idle_bar()
        self.progress_label = QLabel("No run in progress.")
        # a long line (another process's command, a server's waiting line) wraps: it never
        # widens the window past the screen
        self.progress_label.setWordWrap(True)
        self.progress_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.live = QPlainTextEdit()
        self.live.setReadOnly(True)
        self.live.setPlaceholderText("The latest generation streams here while a run is going.")
        self.live_caption = QLabel()
        self.live_caption.setStyleSheet("color:#4b5563")

        params_box = QGroupBox("Parameters")
        params_box.setLayout(form)
        self.options_box = QGroupBox("Probe options")
        self.options_form = QFormLayout(self.options_box)
        params_widget = QWidget()
        params_layout = QVBoxLayout(params_widget)
        params_layout.setContentsMargins(0, 0, 0, 0)
        params_layout.addWidget(params_box)
        params_layout.addWidget(self.options_box)
        params_layout.addStretch(1)
        middle = QWidget()
        mid_layout = QVBoxLayout(middle)
        mid_layout.setContentsMargins(0, 0, 0, 0)
        params_scroll = QScrollArea()
        params_scroll.setWidgetResizable(True)
        params_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        params_scroll.setWidget(params_widget)
        params_scroll.setMinimumHeight(150)
        mid_layout.addWidget(params_scroll, 5)
        mid_layout.addLayout(controls)
        mid_layout.addWidget(self.progress)
        mid_layout.addWidget(self.progress_label)
        mid_layout.addWidget(self.live_caption)
        mid_layout.addWidget(self.live, 2)
        return middle

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

    def _lay_out(self, left: QWidget, middle: QWidget, history_box: QWidget) -> None:
        """The catalogue on the left; parameters and progress above the history on the
        right; the pane's header and banner on top."""
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(middle)
        right.addWidget(history_box)
        right.setSizes([640, 200])
        # never squeezed below what they need: the buttons were drawn over the parameters
        right.setChildrenCollapsible(False)

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([380, 700])
        layout = QVBoxLayout(self)
        layout.addWidget(
            pane_header(
                "Runs",
                "Pick a probe, read its card, set the parameters and start. Every generation is "
                "saved as it completes: pause, cancel or close gbdesk at any time and resume "
                "later.",
            )
        )
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)

    # -- wiring -----------------------------------------------------------------------------
    def _connect_signals(self) -> None:
        """What each widget, shortcut and application-wide change sets off."""
        self.probe_list.currentItemChanged.connect(self._probe_changed)
        self.model_combo.currentIndexChanged.connect(self._model_changed)
        self.preset_combo.currentTextChanged.connect(self._apply_preset)
        self.template_combo.currentIndexChanged.connect(self._template_changed)
        self.wording_combo.currentIndexChanged.connect(self._wording_changed)
        self.template_edit.textEdited.connect(
            lambda _t: self.template_combo.setCurrentIndex(self.template_combo.count() - 1)
        )
        self.batch.currentIndexChanged.connect(self._params_edited)
        for w in (self.attempts, self.limit, self.sample, self.max_tokens, self.seed):
            w.valueChanged.connect(self._params_edited)
        self.temperature.valueChanged.connect(self._params_edited)
        self.start_button.clicked.connect(self.start)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.cancel_button.clicked.connect(self.cancel)
        QShortcut(QKeySequence("Ctrl+P"), self, self.toggle_pause)
        QShortcut(QKeySequence("Ctrl+."), self, self.cancel)
        self.history.itemSelectionChanged.connect(self._history_selection)
        self.history.doubleClicked.connect(self._open_results)
        self.resume_button.clicked.connect(self.resume_selected)
        self.results_button.clicked.connect(self._open_results)
        self.label_button.clicked.connect(self.label_selected)
        self._estimate_timer = QTimer(self, singleShot=True, interval=250)
        self._estimate_timer.timeout.connect(self._update_estimate)
        self._elsewhere_timer = QTimer(self, interval=ELSEWHERE_MS)
        self._elsewhere_timer.timeout.connect(self.look_elsewhere)
        self._elsewhere_timer.start()
        ctx = self.ctx
        ctx.db_changed.connect(self.refresh)
        ctx.models_changed.connect(self._reload_models)
        ctx.runs_changed.connect(self.refresh_history)
        ctx.runs_changed.connect(self.look_elsewhere)
        # the estimate counts this model's earlier generations: recount once a run is stored
        ctx.runs_changed.connect(self._runs_changed_estimate)

    # -- state ------------------------------------------------------------------------------
    def _restore_last_probe(self) -> None:
        """Idle controls, the probe chosen last time (else the first), the database's
        models and runs."""
        self._set_running(False)
        last = self.ctx.setting("probe", probe_names()[0] if probe_names() else "")
        for row in range(self.probe_list.count()):
            if self.probe_list.item(row).data(Qt.ItemDataRole.UserRole) == last:
                self.probe_list.setCurrentRow(row)
        if self.probe_list.currentRow() < 0:
            self.probe_list.setCurrentRow(0)
        self.refresh()

    # -- catalogue and parameters -------------------------------------------------------
    def probe_name(self) -> str:
        item = self.probe_list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item else probe_names()[0]

    def _probe_changed(self, *_: Any) -> None:
        name = self.probe_name()
        probe = get_probe(name)
        self.ctx.settings.setValue("probe", name)
        self.card.setHtml(card_html(name))
        self.template_combo.blockSignals(True)
        self.template_combo.clear()
        for preset, text in probe.templates.items():
            self.template_combo.addItem(preset, text)
        self.template_combo.addItem("Custom", None)
        self.template_combo.blockSignals(False)
        self.template_combo.setCurrentIndex(0)
        self._template_changed()
        self._fill_wordings(probe)
        self._build_options(probe)
        self._apply_preset(self.preset_combo.currentText())

    def _build_options(self, probe) -> None:
        """Form fields for the probe's own parameters (`Probe.options`)."""
        while self.options_form.rowCount():
            self.options_form.removeRow(0)
        self.option_widgets = {}
        for option in probe.options:
            if option.multiple:
                row = QWidget()
                box = QHBoxLayout(row)
                box.setContentsMargins(0, 0, 0, 0)
                chosen = set(option.default.split(","))
                checks = []
                for value, label in option.choices:
                    check = QCheckBox(label)
                    check.setChecked(value in chosen)
                    check.setProperty("value", value)
                    check.toggled.connect(lambda _on: self._estimate_timer.start())
                    box.addWidget(check)
                    checks.append(check)
                box.addStretch(1)
                widget, self.option_widgets[option.key] = row, checks
            else:
                combo = QComboBox()
                for value, label in option.choices:
                    combo.addItem(label, value)
                if option.file_filter:
                    combo.addItem("Choose a file…", CHOOSE_FILE)
                    combo.activated.connect(
                        lambda _i, c=combo, o=option: self._choose_option_file(c, o)
                    )
                combo.setCurrentIndex(max(0, combo.findData(option.default)))
                combo.currentIndexChanged.connect(lambda _i: self._estimate_timer.start())
                widget = self.option_widgets[option.key] = combo
            widget.setToolTip(option.help)
            self.options_form.addRow(option.title, widget)
        self.options_box.setVisible(bool(probe.options))

    def _choose_option_file(self, combo: QComboBox, option) -> None:
        if combo.currentData() != CHOOSE_FILE:
            combo.setProperty("previous", combo.currentIndex())
            return
        path, _ = QFileDialog.getOpenFileName(self, option.title, "", option.file_filter)
        if path:
            combo.insertItem(combo.count() - 1, Path(path).name, path)
            combo.setCurrentIndex(combo.count() - 2)
        else:
            combo.setCurrentIndex(int(combo.property("previous") or 0))

    def option_values(self) -> dict[str, str]:
        """The probe options as `plan_run` keywords (comma-joined for multiple choices)."""
        values = {}
        for key, widget in self.option_widgets.items():
            if isinstance(widget, list):
                values[key] = ",".join(c.property("value") for c in widget if c.isChecked())
            else:
                values[key] = widget.currentData()
        return values

    def _template_changed(self, *_: Any) -> None:
        text = self.template_combo.currentData()
        if text is not None:
            self.template_edit.setText(text)

    def _fill_wordings(self, probe) -> None:
        """The probe's wordings, and "all" when it has others than the study's own."""
        wordings = probe.capabilities.parameters.wordings()
        self.wording_combo.blockSignals(True)
        self.wording_combo.clear()
        for w in wordings:
            own = " (the study's own)" if w.id == 0 else f" · {w.kind}"
            self.wording_combo.addItem(f"{w.id} — {w.name}{own}", w.id)
            self.wording_combo.setItemData(
                self.wording_combo.count() - 1, w.note, Qt.ItemDataRole.ToolTipRole
            )
        if len(wordings) > 1:
            self.wording_combo.addItem(f"All {len(wordings)} wordings (one run each)", ALL)
        self.wording_combo.setCurrentIndex(0)
        self.wording_combo.setEnabled(len(wordings) > 1)
        self.wording_combo.blockSignals(False)
        self._wording_changed()

    def _wording_changed(self, *_: Any) -> None:
        """A wording brings its own template: the template fields only for wording 0."""
        own = self.wording_combo.currentData() in (0, None)
        self.template_combo.setEnabled(own)
        self.template_edit.setEnabled(own)

    def chosen_wordings(self) -> list[int]:
        """The wordings to run: one, or every one for "all"."""
        chosen = self.wording_combo.currentData()
        if chosen == ALL:
            return [w.id for w in get_probe(self.probe_name()).capabilities.parameters.wordings()]
        return [int(chosen or 0)]

    def _apply_preset(self, name: str) -> None:
        preset = PRESETS.get(name)
        if preset is None:
            return
        probe = get_probe(self.probe_name())
        widgets = (self.attempts, self.limit, self.sample, self.temperature, self.max_tokens)
        for w in widgets:
            w.blockSignals(True)
        values = _preset_values(preset, probe)
        self.attempts.setValue(values["attempts"])
        self.limit.setValue(values["limit"])
        self.sample.setValue(values["sample"])
        self.temperature.setValue(values["temperature"])
        self.max_tokens.setValue(values["max_tokens"])
        for w in widgets:
            w.blockSignals(False)
        self._estimate_timer.start()

    def _params_edited(self, *_: Any) -> None:
        name = self.preset_combo.currentText()
        preset = PRESETS.get(name)
        if preset is not None:
            values = _preset_values(preset, get_probe(self.probe_name()))
            same = (
                self.attempts.value() == values["attempts"]
                and self.limit.value() == values["limit"]
                and self.sample.value() == values["sample"]
                and abs(self.temperature.value() - values["temperature"]) < 1e-9
                and self.max_tokens.value() == values["max_tokens"]
            )
            if not same:
                self.preset_combo.blockSignals(True)
                self.preset_combo.setCurrentText("Custom")
                self.preset_combo.blockSignals(False)
        self._estimate_timer.start()

    def parameters(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts.value(),
            "limit": self.limit.value() or None,
            "sample": self.sample.value() or None,
            "temperature": self.temperature.value(),
            "max_tokens": self.max_tokens.value(),
            "seed": self.seed.value(),
            "batch_size": int(self.batch.currentData() or 0),
            "template": self.template_edit.text(),
            "options": self.option_values(),
        }

    # -- models ---------------------------------------------------------------------------
    def _reload_models(self) -> None:
        self.ctx.tasks.with_store(
            self.ctx.db_path, list_models, on_done=self._show_models, key="runs.models"
        )

    def _show_models(self, models: list[dict[str, Any]]) -> None:
        self.models = [m for m in models if not m.get("error")]
        wanted = self.ctx.setting("model_path")
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        for m in self.models:
            detail = (
                f"endpoint {m.get('url', '')}"
                if m.get("endpoint")
                else (m.get("quantization") or "?")
            )
            self.model_combo.addItem(f"{m['name']} · {detail}", m["path"])
        index = max(0, self.model_combo.findData(wanted)) if wanted else 0
        self.model_combo.setCurrentIndex(index)
        self.model_combo.blockSignals(False)
        self._model_changed()

    def selected_model(self) -> dict[str, Any] | None:
        index = self.model_combo.currentIndex()
        return self.models[index] if 0 <= index < len(self.models) else None

    def _model_changed(self, *_: Any) -> None:
        m = self.selected_model()
        warning = ""
        if m is not None:
            self.ctx.settings.setValue("model_path", m["path"])
            if not m.get("fits", True):
                allowed = self.ctx.setting(f"load_anyway/{m['path']}", False, bool)
                warning = f"⚠ needs ≈{m.get('memory_label')} but less memory is free. " + (
                    "Loading anyway, as you chose in Models."
                    if allowed
                    else "Tick “Load anyway” in Models to use it."
                )
            if is_default_model(m["path"]):
                warning = (warning + " " if warning else "") + (
                    "Tiny demonstration model: its texts support no conclusion about real models."
                )
                self.model_warning.setToolTip(TINY_MODEL_NOTICE)
        self.model_warning.setText(warning.strip())
        self.model_warning.setVisible(bool(warning))
        self.batch.setEnabled(not (m and m.get("endpoint")))  # endpoints: concurrency instead
        self._estimate_timer.start()
        self._set_running(self.ctx.running)

    def _model_allowed(self) -> bool:
        m = self.selected_model()
        if m is None:
            return False
        return m.get("fits", True) or bool(
            self.ctx.setting(f"load_anyway/{m['path']}", False, bool)
        )

    def _runs_changed_estimate(self) -> None:
        if not self.ctx.running:
            self._estimate_timer.start()

    def _update_estimate(self) -> None:
        m = self.selected_model()
        params = self.parameters()
        probe = self.probe_name()
        sha = m.get("sha256") if m else None
        speed = self.ctx.setting(f"speed/{m['path']}", None) if m else None

        def compute(store):
            slots = None
            if m and not m.get("endpoint"):
                slots = params["batch_size"]
                if slots == 0:
                    from gbdesk.engine.slots import choose_slots

                    slots, _ = choose_slots(m["path"], n_ctx_seq=params["max_tokens"] + 512)
            return estimate_run(
                store,
                probe,
                sha,
                attempts=params["attempts"],
                max_tokens=params["max_tokens"],
                limit=params["limit"],
                sample=params["sample"],
                fallback_tokens_per_s=float(speed) if speed else None,
                model_id=m.get("model_id") if m and m.get("endpoint") else None,
                concurrency=int(m.get("concurrency") or 1) if m and m.get("endpoint") else 1,
                slots=slots,
                **_filled(params["options"]),
            )

        def show(est) -> None:
            note = est.items_note[:1].upper() + est.items_note[1:]
            text = f"{html_text(note)} → " if note else ""
            text += f"<b>{est.generations:,}</b> {est.unit}"
            if est.seconds is not None and est.unit == "sentences":
                text += (
                    f" ≈ <b>{duration(est.seconds)}</b> at {est.tokens_per_s:.0f} sentences/s "
                    f"({est.basis})."
                )
            elif est.seconds is not None:
                text += (
                    f" ≈ <b>{duration(est.seconds)}</b> at {est.tokens_per_s:.0f} tokens/s "
                    f"and ~{est.tokens_per_generation:.0f} tokens each ({est.basis})."
                )
            else:
                text += f" — {est.basis}."
            self.estimate.setText(text)

        self.ctx.tasks.with_store(
            self.ctx.db_path,
            compute,
            on_done=show,
            key="runs.estimate",
            on_error=lambda m_: self.estimate.setText(html_text(m_)),
        )

    # -- running --------------------------------------------------------------------------
    def start(self) -> None:
        if self.ctx.running:
            self.banner.warn("A run is already in progress.")
            return
        m = self.selected_model()
        if m is None:
            self.banner.error("No model available — add one in Models.")
            return
        if not self._model_allowed():
            self.banner.error(
                f"{m['name']} may not fit in memory; tick “Load anyway” in "
                "Models if you want to try."
            )
            return
        probe = self.probe_name()
        params = self.parameters()
        empty = [k for k, v in params["options"].items() if not v]
        if empty:
            titles = {o.key: o.title for o in get_probe(probe).options}
            self.banner.error(
                f"Choose at least one value for {', '.join(titles[k] for k in empty)}."
            )
            return
        self.banner.info("Planning the run…")
        self.start_button.setEnabled(False)

        wordings = self.chosen_wordings()

        def plan(store):
            model = resolve_model(store, m["path"])
            return [
                plan_run(
                    store,
                    probe,
                    model,
                    attempts=params["attempts"],
                    seed=params["seed"],
                    temperature=params["temperature"],
                    max_tokens=params["max_tokens"],
                    batch_size=params["batch_size"],
                    template=None if w else params["template"],
                    limit=params["limit"],
                    sample=params["sample"],
                    **params["options"],
                    **wording_kwargs(w),
                )
                for w in wordings
            ]

        def failed(message: str) -> None:
            self.banner.error(message)
            self._set_running(False)

        self.ctx.tasks.with_store(self.ctx.db_path, plan, on_done=self._launch_all, on_error=failed)

    def _launch_all(self, run_ids: list[int]) -> None:
        """The first run now, the others (other wordings) one after another."""
        self.queued = list(run_ids[1:])
        if self.queued:
            self.banner.info(
                f"Runs {', '.join(map(str, run_ids))}: one per wording, one after another."
            )
        self._launch(run_ids[0])

    def resume_selected(self) -> None:
        run = self.selected_history()
        if run is None:
            return
        if run["status"] == "done":
            self.banner.info(f"Run {run['id']} is already complete.")
            return
        if run["source"] != "generated":
            self.banner.info(f"Run {run['id']} was imported; there is nothing to generate.")
            return
        self._launch(run["id"])

    def _launch(self, run_id: int) -> None:
        if self.ctx.running:
            return
        self.current_run = run_id
        self._stored_shown = 0
        self.live.clear()
        self.live_caption.clear()
        m = self.selected_model() or {}
        self.banner.info(
            f"Run {run_id}: connecting to the endpoint…"
            if m.get("endpoint")
            else f"Run {run_id}: loading the model in a worker process…"
        )
        thread = RunThread(self.ctx.db_path, run_id, self.ctx.backend_factory, self)
        thread.progress.connect(self._on_progress)
        thread.token.connect(self._on_token)
        thread.completed.connect(self._on_completed)
        thread.failed.connect(self._on_failed)
        thread.finished.connect(self._on_thread_finished)
        self.thread = thread
        self.ctx.run_thread = thread
        self._set_running(True)
        thread.start()
        self.ctx.runs_changed.emit()

    def label_selected(self) -> None:
        """Run the selected run's labelling pass with the selected model as labeler."""
        run, m = self.selected_history(), self.selected_model()
        if run is None or m is None or self.ctx.running or self.label_pass is None:
            return
        if not self._model_allowed():
            self.banner.error(f"{m['name']} may not fit in memory; tick “Load anyway” in Models.")
            return
        factory = self.ctx.backend_factory
        thread = LabelThread(
            self.ctx.db_path,
            run["id"],
            m["path"],
            (lambda model: factory(model, {})) if factory else None,
            self,
            pass_name=self.label_pass,
        )
        thread.progress.connect(self._on_label_progress)
        thread.completed.connect(self._on_labelled)
        thread.failed.connect(self._on_failed)
        thread.finished.connect(self._on_thread_finished)
        self.current_run = run["id"]
        self.thread = thread
        self.ctx.run_thread = thread
        self.banner.info(
            f"Run {run['id']}: labelling with {m['name']} (loading it in a worker process)…"
        )
        self._set_running(True)
        thread.start()

    def _on_label_progress(self, p) -> None:
        self._set_bar(p.done, p.total)
        eta = f" · about {duration(p.eta_s)} left" if p.eta_s is not None else ""
        self.progress_label.setText(
            f"Run {p.run_id}: labelled {p.done:,} / {p.total:,} attempts{eta}"
        )

    def _on_labelled(self, result: dict[str, Any]) -> None:
        run_id = result["run_id"]
        if result["status"] == "done":
            self.banner.ok(
                f"Run {run_id}: {result['labelled']:,} {result.get('unit', 'attempts')} labelled "
                f"by {result['source']}"
                + (
                    f" ({result['fallbacks']:,} unreadable answers fell back to the built-in "
                    "labeller)"
                    if result.get("fallbacks")
                    else ""
                )
                + ". Its metrics now use these labels."
            )
        else:
            self.banner.info(
                f"Run {run_id}: labelling {result['status']} after {result['labelled']:,} "
                f"{result.get('unit', 'attempts')}; press the button again to continue where it "
                "stopped."
            )
        self.ctx.labels_changed.emit(run_id)

    def toggle_pause(self) -> None:
        if not self.ctx.running or self.thread is None:
            return
        control = self.thread.control
        if control.paused:
            control.resume()
            self.pause_button.setText("&Pause")
            self.banner.info(f"Run {self.current_run} resumed.")
        else:
            control.pause()
            self.pause_button.setText("&Resume")
            self.banner.info(f"Run {self.current_run} will pause after the current generation.")

    def cancel(self) -> None:
        if self.ctx.running and self.thread is not None:
            self.thread.control.cancel(now=True)
            self.banner.info(f"Cancelling run {self.current_run}…")

    def _on_progress(self, p) -> None:
        self._set_bar(p.done, p.total)
        if p.waiting:  # an endpoint is silent: said until its next answer
            self.progress_label.setText(f"Run {p.run_id}: {p.waiting}")
            return
        if p.status == "loading":
            self.progress_label.setText(f"Run {p.run_id}: loading the model…")
            return
        if p.loaded_s is not None:  # loaded: generating from now on
            at_once = f", {p.slots} generations at once" if p.slots > 1 else ""
            self.banner.info(
                f"Run {p.run_id} is running: the model loaded in {p.loaded_s:.1f} s{at_once}."
            )
        parts = [f"Run {p.run_id}: {p.done:,} / {p.total:,} generations"]
        speed = self._rate.update(p)  # the last seconds' speed; tokens so far never drop
        if p.in_flight:
            parts.append(p.in_flight_words(self._rate.tokens))
        if speed:
            rate = f"{speed:.1f}" if speed < 10 else f"{speed:.0f}"
            parts.append(f"{rate} {p.rate_unit}")
        if p.status == "running":
            left = "measuring the speed" if p.eta_s is None else f"about {duration(p.eta_s)} left"
            parts.append(left)
        if p.status != "running":
            parts.append(p.status)
        self.progress_label.setText(" · ".join(parts))
        stored = p.session_done != self._stored_shown  # not an in-flight report
        self._stored_shown = p.session_done
        if p.last and stored:
            at_once = f" {p.slots} generations at once; the newest:" if p.slots > 1 else ""
            what = p.last.get("title") or p.last["item"]
            self.live_caption.setText(
                f"Last: {what} attempt {p.last['attempt'] + 1} → detected "
                f"{p.last['label']} ({p.last['tokens_out']} tokens)."
                + (at_once or " Next generation:")
            )
            if p.slots <= 1:  # batched: the streamed text is another sequence's
                self.live.clear()
        if p.status == "paused":
            self.banner.info(f"Run {p.run_id} is paused. Press Resume (Ctrl+P) to continue.")
        if stored and (p.session_done == 1 or (p.session_done and p.session_done % 10 == 0)):
            self.ctx.runs_changed.emit()

    def _on_token(self, text: str) -> None:
        if text.startswith(NEW_TEXT):  # continuous batching: another sequence's text
            self.live.clear()
            text = text[len(NEW_TEXT) :]
        self.live.moveCursor(self.live.textCursor().MoveOperation.End)
        self.live.insertPlainText(text)

    def _on_completed(self, outcome) -> None:
        if outcome.status != "done":
            self.queued = []  # paused or cancelled: the other wordings wait for Start
        if outcome.status == "done":
            self.banner.ok(
                f"Run {outcome.run_id} is complete: {outcome.attempts_done:,} "
                "generations. Its metrics are in Results."
            )
        else:
            self.banner.info(
                f"Run {outcome.run_id} {outcome.status} after "
                f"{outcome.attempts_done:,} of {outcome.attempts_total:,} "
                "generations; select it in the history and Resume to continue."
            )
        self.ctx.labels_changed.emit(outcome.run_id)

    def _on_failed(self, message: str, resumable: bool) -> None:
        text = message
        if resumable and "resume" not in message.lower():
            text += " The run is saved; select it below and press Resume to continue."
        self.banner.error(text)

    def _on_thread_finished(self) -> None:
        self.ctx.run_thread = None
        self.thread = None
        self.pause_button.setText("&Pause")
        self._set_running(False)
        self.ctx.runs_changed.emit()
        if self.queued:  # the next wording's run
            self._launch(self.queued.pop(0))

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running and self.selected_model() is not None)
        self.pause_button.setEnabled(running)
        self.cancel_button.setEnabled(running)
        self._history_selection()

    # -- runs and audits of other processes ------------------------------------------------
    def look_elsewhere(self) -> None:
        """Ask (off the UI thread) what other processes run on this database."""
        if self.ctx.running:
            return  # this window's own run fills the progress line
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            elsewhere,
            on_done=self._show_elsewhere,
            on_error=lambda message: None,  # the next look tries again
            key="runs.elsewhere",
        )

    def _show_elsewhere(self, jobs: list[dict[str, Any]]) -> None:
        """The progress line and bar of an idle window: another process's run or audit
        (from its heartbeat), else "No run in progress."."""
        self.elsewhere = jobs
        if self.ctx.running:
            return
        if not jobs:
            # the bar keeps this window's last run (its 100 %) until something else runs
            if self._elsewhere_shown or self.current_run is None:
                self.progress_label.setText("No run in progress.")
                self._idle_bar()
            self._elsewhere_shown = False
            return
        self._elsewhere_shown = True
        # the command cut, the process and the run's progress kept; the whole of them: gbdesk jobs
        shown = [one_line(j["text"], 260) for j in jobs[:2]]
        more = f"\n… and {len(jobs) - 2} more (gbdesk jobs lists them)" if len(jobs) > 2 else ""
        self.progress_label.setText(
            "In progress in another process (from its heartbeat):\n" + "\n".join(shown) + more
        )
        with_run = [j for j in jobs if j.get("total")]
        if with_run:
            self._set_bar(with_run[-1]["done"], with_run[-1]["total"])

    def _set_bar(self, done: int, total: int) -> None:
        """The bar at `done` of `total`, its figures with thousands separators."""
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        share = done / total if total else 0.0
        self.progress.setFormat(f"{done:,} / {total:,} ({share:.0%})")

    def _idle_bar(self) -> None:
        """No run: an empty bar without figures (not "0 / 1 (0%)")."""
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("")

    # -- history --------------------------------------------------------------------------
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
