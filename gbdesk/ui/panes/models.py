"""Models pane: the bundled default and added GGUF files, their metadata and memory needs,
and OpenAI-compatible HTTP endpoints (added with a dialog, tested off the UI thread)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gbdesk.engine.default_model import TINY_MODEL_NOTICE
from gbdesk.engine.endpoints import ENDPOINT_PRESETS, SERVERS_WITH
from gbdesk.engine.gguf_meta import format_bytes
from gbdesk.engine.http import (
    MAX_CONCURRENCY,
    capability_summary,
    capability_words,
    check_connection,
    normalize_base_url,
    register_endpoint,
    store_capabilities,
    with_endpoints,
)
from gbdesk.engine.secrets import DEFAULT_ENV_VAR, check_env_var_name
from gbdesk.support.errors import UserError
from gbdesk.support.guards import html_text
from gbdesk.ui.context import AppContext
from gbdesk.ui.widgets import Banner, pane_header
from gbdesk.workflows.models import list_models

COLUMNS = [
    "Name",
    "Architecture",
    "Parameters",
    "Quantisation",
    "Context",
    "Chat template",
    "File size",
    "Memory needed",
    "SHA-256",
]


def _catalogue(store) -> list[dict[str, Any]]:
    """GGUF files, then the stored endpoints."""
    return with_endpoints(list_models(store), store)


def _register(store, path: str) -> dict[str, Any]:
    from gbdesk.workflows.runs import resolve_model

    return resolve_model(store, path)


def _test_load(path: str) -> dict[str, Any]:
    from gbdesk.engine.base import GenerationRequest
    from gbdesk.engine.llama_backend import LlamaCppBackend

    with LlamaCppBackend(path) as backend:
        result = backend.generate(
            GenerationRequest(
                messages=[{"role": "user", "content": "Say hello in one sentence."}],
                seed=1,
                max_tokens=24,
            )
        )
        return {
            "load_time_s": backend.info.load_time_s,
            "tokens_per_s": result.tokens_per_s,
            "tokens": result.tokens_out,
            "text": result.text,
            "prompt_mode": backend.info.prompt_mode,
        }


def capabilities_html(found: dict[str, Any] | None) -> str:
    """What an endpoint can do, as found by its last check, with the probes each missing
    capability rules out and the servers that have it."""
    if not found:
        return (
            "<b>What it can do</b>: not checked yet — press <i>Test connection</i> (it asks "
            "the server one small request per capability)."
        )
    from gbdesk.contract import get_probe, probe_names
    from gbdesk.engine.endpoints import CAPABILITIES

    keys = list(CAPABILITIES)
    when = str(found.get("checked_at") or "?")[:16].replace("T", " ")
    lines = []
    for key, (what, ok, why) in zip(keys, capability_words(found), strict=True):
        mark = {True: "✓", False: "✗"}.get(ok, "?")
        color = {True: "#2e7d32", False: "#c0392b"}.get(ok, "#b45309")
        line = f"<span style='color:{color}'>{mark}</span> {html_text(what)}"
        if why:
            line += f" <span style='color:#6b7280'>— {html_text(why)}</span>"
        if not ok:
            needing = [
                get_probe(n).card.title
                for n in probe_names()
                if key in get_probe(n).capabilities.running.engine_needs
            ]
            if needing:
                line += (
                    f"<br>&nbsp;&nbsp;&nbsp;<i>Cannot run here: {html_text('; '.join(needing))}"
                    f" — servers that give {html_text(what)}: "
                    f"{html_text(SERVERS_WITH.get(key, ''))}.</i>"
                )
        lines.append(line)
    return (
        f"<b>What it can do</b> (checked {html_text(when)} UTC; <i>Test connection</i> "
        "checks again):<br>" + "<br>".join(lines)
    )


class EndpointDialog(QDialog):
    """URL, model name, API-key variable and concurrency of an OpenAI-compatible server."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Add an OpenAI-compatible endpoint")
        self.preset = QComboBox()
        self.preset.addItem("Another server (type its address)", "")
        for key, (title, url, _) in ENDPOINT_PRESETS.items():
            self.preset.addItem(f"{title} on this computer — {url}", key)
        self.preset.setToolTip(
            "Servers people already run. They generate text; the perplexity probes also need "
            f"log-probabilities of prompt tokens, which only {SERVERS_WITH['prompt_logprobs']} "
            "give."
        )
        self.preset.currentIndexChanged.connect(self._preset_chosen)
        self.preset_note = QLabel()
        self.preset_note.setWordWrap(True)
        self.preset_note.setStyleSheet("color:#4b5563")
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://127.0.0.1:8000/v1")
        self.model = QLineEdit()
        self.model.setPlaceholderText("the model name the server serves (see its /v1/models)")
        self.key_env = QLineEdit()
        self.key_env.setPlaceholderText(f"optional, e.g. {DEFAULT_ENV_VAR}")
        self.key_env.setToolTip(
            "The NAME of an environment variable holding the API key — not the key. Without "
            f"one, ${DEFAULT_ENV_VAR} and then the OS keyring (service 'gbdesk', user = the "
            "URL) are tried. The key is never stored."
        )
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, MAX_CONCURRENCY)
        self.concurrency.setValue(4)
        self.concurrency.setToolTip(
            "Requests in flight at once. A llama.cpp server handles as many as its --parallel "
            "slots; vLLM batches many."
        )
        self.error = QLabel()
        self.error.setStyleSheet("color:#c0392b")
        self.error.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("&Server", self.preset)
        form.addRow(self.preset_note)
        form.addRow("Base &URL", self.url)
        form.addRow("&Model name", self.model)
        form.addRow("API key &env var", self.key_env)
        form.addRow("&Concurrent requests", self.concurrency)
        form.addRow(self.error)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _preset_chosen(self, *_: Any) -> None:
        """Fill in a local server's usual address and say what it can do."""
        key = self.preset.currentData()
        if not key:
            self.preset_note.clear()
            return
        title, url, note = ENDPOINT_PRESETS[key]
        self.url.setText(url)
        self.preset_note.setText(f"{title}: {note}.")
        if key in ("ollama", "lmstudio"):
            self.concurrency.setValue(1)

    def values(self) -> dict[str, Any]:
        """The entered endpoint (`UserError` for an unusable URL, name or variable)."""
        url = normalize_base_url(self.url.text())
        model = self.model.text().strip()
        if not model:
            raise UserError("name the model the server serves")
        return {
            "url": url,
            "model": model,
            "api_key_env": check_env_var_name(self.key_env.text()),
            "concurrency": self.concurrency.value(),
        }

    def accept(self) -> None:
        try:
            self.values()
        except UserError as exc:
            self.error.setText(str(exc))
            return
        super().accept()


class ModelsPane(QWidget):
    title = "Models"
    model_chosen = Signal(str)

    def __init__(self, ctx: AppContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.models: list[dict[str, Any]] = []
        self.setAcceptDrops(True)

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selection_changed)

        self.add_button = QPushButton("&Add GGUF file…")
        self.add_button.setShortcut(QKeySequence.StandardKey.Open)
        self.add_button.clicked.connect(self._choose_file)
        self.rescan_button = QPushButton("&Rescan")
        self.rescan_button.clicked.connect(self.refresh)
        self.test_button = QPushButton("&Test load")
        self.test_button.clicked.connect(self._test_selected)
        self.use_button = QPushButton("&Use for new runs")
        self.use_button.clicked.connect(self._use_selected)
        self.endpoint_button = QPushButton("Add &endpoint…")
        self.endpoint_button.setToolTip(
            "An OpenAI-compatible server (llama-server, vLLM, Ollama, llama-cpp-python) "
            "on this or another machine"
        )
        self.endpoint_button.clicked.connect(self._choose_endpoint)
        self.endpoint_dialog: EndpointDialog | None = None
        buttons = QHBoxLayout()
        for b in (
            self.add_button,
            self.endpoint_button,
            self.rescan_button,
            self.test_button,
            self.use_button,
        ):
            buttons.addWidget(b)
        buttons.addStretch(1)

        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.load_anyway = QCheckBox("Load anyway (the estimate exceeds the free memory)")
        self.load_anyway.setVisible(False)
        self.load_anyway.toggled.connect(self._load_anyway_toggled)
        self.test_result = QLabel()
        self.test_result.setWordWrap(True)
        self.banner = Banner()

        layout = QVBoxLayout(self)
        layout.addWidget(
            pane_header(
                "Models",
                "The bundled default model and every GGUF file you add (button, or drag files "
                "onto this window). Files in the models/ folder are found automatically. Metadata "
                "is read from the file header; nothing is loaded until you test or run. "
                "Endpoints are OpenAI-compatible servers that run the model elsewhere.",
            )
        )
        layout.addWidget(self.banner)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        hint = QLabel(
            "Tip: drop .gguf files anywhere on this window to add them. A model "
            "without a chat template (a base model) is prompted in completion mode."
        )
        hint.setStyleSheet("color:#6b7280")
        hint.setWordWrap(True)
        layout.addWidget(hint)
        layout.addWidget(self.details)
        layout.addWidget(self.load_anyway)
        layout.addWidget(self.test_result)
        ctx.db_changed.connect(self.refresh)
        ctx.models_changed.connect(self._models_changed)  # e.g. `gbdesk models --add`
        self._saying = False
        self.refresh()

    # -- data --------------------------------------------------------------------------
    def refresh(self) -> None:
        self.banner.clear()
        self.ctx.tasks.with_store(
            self.ctx.db_path,
            _catalogue,
            on_done=self._show,
            on_error=self.banner.error,
            key="models.list",
        )

    def _show(self, models: list[dict[str, Any]]) -> None:
        selected = self.selected_path()
        self.models = models
        self.table.setRowCount(len(models))
        for row, m in enumerate(models):
            self._fill_row(row, m)
        chosen = (
            selected or self.ctx.setting("model_path") or (models[0]["path"] if models else None)
        )
        for row, m in enumerate(models):
            if m["path"] == chosen:
                self.table.selectRow(row)
        for m in models:
            if not m.get("error") and not m.get("sha256") and not m.get("endpoint"):
                self._hash(m["path"])
        self._say_models_changed()

    def _say_models_changed(self) -> None:
        self._saying = True
        try:
            self.ctx.models_changed.emit()
        finally:
            self._saying = False

    def _models_changed(self) -> None:
        """The catalogue changed elsewhere (another window, the CLI): list it again."""
        if not self._saying:
            self.refresh()

    def _fill_row(self, row: int, m: dict[str, Any]) -> None:
        tip = m.get("path", "")
        if m.get("endpoint"):
            values = [m["name"], "endpoint", "—", "—", "—", "server's", "—", "remote", m["url"]]
            tip = f"{m['url']}\n{capability_summary(m.get('capabilities'))}"
        elif m.get("error"):
            values = [m["name"], "unreadable", "", "", "", "", "", "", m["error"]]
        else:
            values = [
                m["name"],
                m.get("architecture") or "?",
                m.get("parameters_label") or "?",
                m.get("quantization") or "?",
                f"{m.get('context_length') or '?':,}" if m.get("context_length") else "?",
                "yes" if m.get("has_chat_template") else "no — completion mode",
                m.get("size_label", ""),
                ("⚠ " if not m.get("fits", True) else "") + m.get("memory_label", ""),
                (m.get("sha256") or "hashing…")[:16],
            ]
        for col, value in enumerate(values):
            item = QTableWidgetItem(str(value))
            item.setToolTip(tip)
            self.table.setItem(row, col, item)

    def _hash(self, path: str) -> None:
        def done(model: dict[str, Any]) -> None:
            for row, m in enumerate(self.models):
                if m["path"] == model["path"]:
                    m["sha256"] = model["sha256"]
                    m["model_id"] = model["id"]
                    self._fill_row(row, m)
            self._selection_changed()

        self.ctx.tasks.with_store(
            self.ctx.db_path, _register, path, on_done=done, on_error=self.banner.error
        )

    def add_files(self, paths: list[str]) -> None:
        """Register GGUF files (hashing off the UI thread), then refresh the list."""
        pending = [p for p in paths if p]
        if not pending:
            return

        def added(model: dict[str, Any]) -> None:
            self.ctx.message.emit(f"Added {model['file_name']}")
            self.ctx.settings.setValue("model_path", model["path"])
            self.refresh()

        for path in pending:
            if not path.lower().endswith(".gguf"):
                self.banner.error(f"{Path(path).name} is not a .gguf file")
                continue
            self.banner.info(f"Reading and hashing {Path(path).name}…")
            self.ctx.tasks.with_store(
                self.ctx.db_path, _register, path, on_done=added, on_error=self.banner.error
            )

    # -- selection ---------------------------------------------------------------------
    def selected(self) -> dict[str, Any] | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or rows[0].row() >= len(self.models):
            return None
        return self.models[rows[0].row()]

    def selected_path(self) -> str | None:
        m = self.selected()
        return m["path"] if m else None

    def _selection_changed(self) -> None:
        m = self.selected()
        self.test_result.clear()
        if m is None:
            self.details.setText("<i>No model selected.</i>")
            self.load_anyway.setVisible(False)
            return
        self.test_button.setText("&Test connection" if m.get("endpoint") else "&Test load")
        if m.get("endpoint"):
            key = f"${m['api_key_env']}, then " if m.get("api_key_env") else ""
            self.details.setText(
                f"<b>{html_text(m['name'])}</b> — OpenAI-compatible endpoint "
                f"{html_text(m['url'])}, model <code>{html_text(m['endpoint_model'])}</code>, "
                f"{m['concurrency']} concurrent request(s).<br>API key: {html_text(key)}"
                f"${DEFAULT_ENV_VAR}, then the OS keyring — looked up when a run starts, never "
                "stored. Seeds are sent with every request; only some servers honour them."
                f"<br>{capabilities_html(m.get('capabilities'))}"
            )
            self.load_anyway.setVisible(False)
            self.test_button.setEnabled(True)
            self.use_button.setEnabled(True)
            return
        if m.get("error"):
            self.details.setText(
                f"<b>{html_text(m['path'])}</b><br>"
                f"<span style='color:#c0392b'>{html_text(m['error'])}</span>"
            )
            self.load_anyway.setVisible(False)
            self.test_button.setEnabled(False)
            self.use_button.setEnabled(False)
            return
        fits = m.get("fits", True)
        ram = format_bytes(m.get("ram_available", 0))
        total = format_bytes(m.get("ram_total", 0))
        need = m.get("memory_label", "?")
        verdict = (
            f"<span style='color:#2e7d32'>fits: needs ≈{need} of {ram} free ({total} in all)</span>"
            if fits
            else f"<span style='color:#c0392b'><b>may not fit</b>: needs ≈{need} but only "
            f"{ram} of {total} is free — loading may fail or swap heavily</span>"
        )
        notice = f"<br><i>{html_text(TINY_MODEL_NOTICE)}</i>" if m.get("default") else ""
        self.details.setText(
            f"<b>{html_text(m['name'])}</b> — {html_text(m['path'])}<br>"
            f"Memory (weights + KV cache for {m.get('n_ctx', '?')} tokens + buffers): {verdict}"
            f"<br>SHA-256: {html_text(m.get('sha256') or 'computing…')}{notice}"
        )
        allowed = bool(self.ctx.setting(f"load_anyway/{m['path']}", False, bool))
        self.load_anyway.blockSignals(True)
        self.load_anyway.setChecked(allowed)
        self.load_anyway.blockSignals(False)
        self.load_anyway.setVisible(not fits)
        ok = fits or allowed
        self.test_button.setEnabled(ok)
        self.use_button.setEnabled(ok)

    def _load_anyway_toggled(self, checked: bool) -> None:
        m = self.selected()
        if m:
            self.ctx.settings.setValue(f"load_anyway/{m['path']}", checked)
            self._selection_changed()

    def _use_selected(self) -> None:
        m = self.selected()
        if m:
            self.ctx.settings.setValue("model_path", m["path"])
            self.ctx.message.emit(f"New runs will use {m['name']}")
            self.model_chosen.emit(m["path"])
            self._say_models_changed()

    def _test_selected(self) -> None:
        m = self.selected()
        if not m:
            return
        if m.get("endpoint"):
            self.test_endpoint(m)
            return
        self.test_button.setEnabled(False)
        self.test_result.setText(f"Loading {html_text(m['file_name'])} in a worker process…")

        def done(r: dict[str, Any]) -> None:
            self.test_button.setEnabled(True)
            self.ctx.settings.setValue(f"speed/{m['path']}", r["tokens_per_s"])
            self.test_result.setText(
                f"Loaded in {r['load_time_s']:.2f} s ({r['prompt_mode']} mode); generated "
                f"{r['tokens']} tokens at {r['tokens_per_s']:.0f} tokens/s: "
                f"<i>{html_text(r['text'][:160])}</i>"
            )

        def failed(message: str) -> None:
            self.test_button.setEnabled(True)
            self.test_result.setText(f"<span style='color:#c0392b'>{html_text(message)}</span>")

        self.ctx.tasks.submit(_test_load, m["path"], on_done=done, on_error=failed)

    # -- endpoints ---------------------------------------------------------------------
    def _choose_endpoint(self) -> None:
        dialog = EndpointDialog(self)
        self.endpoint_dialog = dialog

        def accepted() -> None:
            v = dialog.values()
            self.add_endpoint(v["url"], v["model"], v["api_key_env"], v["concurrency"])

        dialog.accepted.connect(accepted)
        dialog.open()

    def add_endpoint(
        self, url: str, model: str, api_key_env: str | None = None, concurrency: int = 1
    ) -> None:
        """Store an endpoint (a model row of kind "endpoint"), then test its connection."""

        def register(store) -> dict[str, Any]:
            row = register_endpoint(
                store, url, model, api_key_env=api_key_env, concurrency=concurrency
            )
            return next(e for e in with_endpoints([], store) if e["model_id"] == row["id"])

        def added(entry: dict[str, Any]) -> None:
            self.ctx.message.emit(f"Added endpoint {entry['name']}")
            self.ctx.settings.setValue("model_path", entry["path"])
            self.refresh()
            self.test_endpoint(entry)

        self.ctx.tasks.with_store(
            self.ctx.db_path, register, on_done=added, on_error=self.banner.error
        )

    def test_endpoint(self, m: dict[str, Any]) -> None:
        """Probe the endpoint and time a short generation, off the UI thread."""
        self.test_button.setEnabled(False)
        self.test_result.setText(f"Connecting to {html_text(m['url'])}…")

        def done(r: dict[str, Any]) -> None:
            self.test_button.setEnabled(True)
            self.ctx.settings.setValue(f"speed/{m['path']}", r["tokens_per_s"])
            for entry in self.models:  # what it can do, as just found and stored
                if entry.get("model_id") == m.get("model_id") and entry.get("endpoint"):
                    entry["capabilities"] = r["capabilities"]
            chosen = self.selected()
            if chosen is not None and chosen.get("model_id") == m.get("model_id"):
                self._selection_changed()
            listed = ", ".join(r["server_models"][:8]) or "none listed"
            models_ms = (
                f"{1000 * r['models_latency_s']:.0f} ms"
                if r["models_latency_s"] is not None
                else "no /models"
            )
            self.test_result.setText(
                f"Connected to {html_text(r['endpoint'])}: model list in "
                f"{html_text(models_ms)}, a one-token request in "
                f"{1000 * r['latency_s']:.0f} ms. The server lists: {html_text(listed)} "
                f"(runs record <code>{html_text(r['server_model'])}</code>). Generated "
                f"{r['tokens']} tokens in {r['generation_s']:.2f} s "
                f"({r['tokens_per_s']:.0f} tokens/s): <i>{html_text(r['text'][:160])}</i>"
                f"<br>JSON-schema decoding: {html_text(r['json_format'])}; API key: "
                f"{html_text(r['api_key'])}."
            )

        def failed(message: str) -> None:
            self.test_button.setEnabled(True)
            self.test_result.setText(f"<span style='color:#c0392b'>{html_text(message)}</span>")

        def check(store) -> dict[str, Any]:
            r = check_connection(m["url"], m["endpoint_model"], m.get("api_key_env"))
            if m.get("model_id") is not None:
                store_capabilities(store, m["model_id"], r["capabilities"])
            return r

        self.ctx.tasks.with_store(self.ctx.db_path, check, on_done=done, on_error=failed)

    def _choose_file(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Add GGUF model files", str(Path.home()), "GGUF models (*.gguf);;All files (*)"
        )
        self.add_files(paths)

    # -- drag and drop -----------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:
        if any(u.toLocalFile().lower().endswith(".gguf") for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        self.add_files([u.toLocalFile() for u in event.mimeData().urls()])
        event.acceptProposedAction()
