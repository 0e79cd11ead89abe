"""The Runs pane's form: the probe catalogue and its card, the run's parameters and the
probe's own options, the model to run, and the estimate of what the run will take."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QSplitter,
    QTextBrowser,
    QWidget,
)

from gbdesk.contract import get_probe, probe_names
from gbdesk.engine.default_model import TINY_MODEL_NOTICE, is_default_model
from gbdesk.support.guards import html_text
from gbdesk.ui.theme import duration
from gbdesk.workflows.models import list_models
from gbdesk.workflows.runs import (
    estimate_run,
)

# None = the probe's own default (its attempts, temperature and max tokens)
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


class RunForm:
    """What to run: the catalogue, the parameters and options, the model, the estimate
    (a part of `RunsPane`)."""

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
