"""Runs pane: probe catalogue and cards, parameters, start/pause/resume/cancel, history —
laid out and wired here; the form (`form`), the launcher (`launcher`) and the history
(`history`) are its parts."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gbdesk.contract import probe_names
from gbdesk.ui.context import AppContext
from gbdesk.ui.panes.runs.form import RunForm
from gbdesk.ui.panes.runs.history import RunHistory
from gbdesk.ui.panes.runs.launcher import ELSEWHERE_MS, RunLauncher
from gbdesk.ui.tasks import RunThread
from gbdesk.ui.widgets import Banner, pane_header
from gbdesk.workflows.runs import (
    RecentRate,
)


class RunsPane(RunForm, RunLauncher, RunHistory, QWidget):
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
