"""The desktop app, driven offscreen with pytest-qt."""

from __future__ import annotations

import re
import shutil
import time

import pypdf
import pytest
from PySide6.QtCore import Qt

from gbdesk.analysis.results import compute_metrics
from gbdesk.engine.default_model import default_model_path
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.gui_helpers import TIMEOUT, make_window, settle, wait_for

pytestmark = pytest.mark.gui

def test_models_pane_lists_default_and_adds_files(qtbot, tmp_path, settings):
    window = make_window(qtbot, str(tmp_path / "m.sqlite"), settings)
    pane = window.models
    wait_for(
        qtbot,
        lambda: pane.table.rowCount() >= 1 and pane.models and pane.models[0].get("sha256"),
        timeout=TIMEOUT,
    )
    first = pane.models[0]
    assert first["default"] and first["architecture"] == "llama"
    assert first["quantization"] == "Q4_1" and first["has_chat_template"]
    assert pane.table.item(0, 3).text() == "Q4_1"
    assert "fits" in pane.details.text()
    # a truncated file gives an inline error, not a crash
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(default_model_path().read_bytes()[:5_000_000])
    pane.add_files([str(broken)])
    wait_for(qtbot, lambda: pane.banner.kind == "error", timeout=TIMEOUT)
    assert "truncated" in pane.banner.text()
    # a valid copy is hashed off the UI thread and listed
    copy = tmp_path / "copy.gguf"
    shutil.copy(default_model_path(), copy)
    pane.add_files([str(copy)])
    wait_for(
        qtbot,
        lambda: any(m["path"] == str(copy) and m.get("sha256") for m in pane.models),
        timeout=TIMEOUT,
    )
    assert settings.value("model_path") == str(copy)


@pytest.mark.model
def test_short_run_reaches_100_percent_on_the_default_model(qtbot, tmp_path, settings):
    window = make_window(qtbot, str(tmp_path / "r.sqlite"), settings)
    pane = window.runs
    window.show_pane("Runs")
    wait_for(qtbot, lambda: pane.model_combo.count() > 0, timeout=TIMEOUT)
    pane.preset_combo.setCurrentText("Quick look (20 items, 1 attempt)")
    pane.limit.setValue(2)
    pane.max_tokens.setValue(16)
    assert pane.batch.currentText() == "Automatic"  # continuous batching by default
    qtbot.mouseClick(pane.start_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: window.ctx.running, timeout=TIMEOUT)
    wait_for(qtbot, lambda: not window.ctx.running, timeout=300_000)
    assert pane.progress.maximum() == 2 and pane.progress.value() == 2
    assert "complete" in pane.banner.text()
    settle(qtbot, window)
    assert pane.runs[0]["status"] == "done"
    assert pane.history.item(0, 3).text() == "done"
    with Store(str(tmp_path / "r.sqlite")) as store:
        run = store.get_run(pane.runs[0]["id"])
    assert run["generation"]["batch_size"] == 0 and run["engine"]["batching"]["slots"] >= 2


def test_pause_and_cancel_from_the_runs_pane(qtbot, tmp_path, settings):
    def slow_generate(backend, request):
        time.sleep(0.05)

    window = make_window(
        qtbot,
        str(tmp_path / "p.sqlite"),
        settings,
        lambda m, g: FakeBackend(on_generate=slow_generate),
    )
    pane = window.runs
    wait_for(qtbot, lambda: pane.model_combo.count() > 0, timeout=TIMEOUT)
    pane.limit.setValue(20)
    pane.attempts.setValue(2)
    pane.start()
    wait_for(qtbot, lambda: pane.progress.value() >= 2, timeout=TIMEOUT)
    pane.toggle_pause()
    wait_for(qtbot, lambda: "paused" in pane.progress_label.text(), timeout=TIMEOUT)
    done = pane.progress.value()
    qtbot.wait(300)
    assert pane.progress.value() == done  # nothing generated while paused
    pane.toggle_pause()
    wait_for(qtbot, lambda: pane.progress.value() > done, timeout=TIMEOUT)
    pane.cancel()
    wait_for(qtbot, lambda: not window.ctx.running, timeout=TIMEOUT)
    settle(qtbot, window)
    assert pane.runs[0]["status"] == "cancelled"


def test_worker_crash_shows_a_message_and_the_run_resumes(qtbot, tmp_path, settings):
    db = str(tmp_path / "c.sqlite")
    window = make_window(qtbot, db, settings, lambda m, g: FakeBackend(crash_after=3))
    pane = window.runs
    wait_for(qtbot, lambda: pane.model_combo.count() > 0, timeout=TIMEOUT)
    pane.limit.setValue(5)
    pane.attempts.setValue(1)
    pane.start()
    wait_for(qtbot, lambda: pane.banner.kind == "error", timeout=TIMEOUT)
    assert "stopped unexpectedly" in pane.banner.text()
    assert window.isVisible()
    settle(qtbot, window)
    wait_for(qtbot, lambda: pane.runs and pane.runs[0]["status"] == "interrupted", timeout=TIMEOUT)
    pane.history.selectRow(0)
    assert pane.resume_button.isEnabled()
    window.ctx.backend_factory = lambda m, g: FakeBackend()
    pane.resume_selected()
    wait_for(
        qtbot, lambda: not window.ctx.running and "complete" in pane.banner.text(), timeout=TIMEOUT
    )
    with Store(db) as store:
        assert store.count_attempts(1) == 5


def test_keyboard_review_stores_a_human_label_and_switches_metrics(qtbot, filled_db, settings):
    window = make_window(qtbot, filled_db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: len(review.items) == 60, timeout=TIMEOUT)
    first = review.current()
    assert first is not None and not first.reviewed
    target = "female" if first.auto_label != "female" else "male"
    qtbot.keyClick(review.queue, target[0].upper())
    wait_for(qtbot, lambda: not window.ctx.tasks.busy, timeout=TIMEOUT)
    with Store(filled_db) as store:
        human = store.labels(1, "human")
        assert human[first.attempt_id]["label"] == target
        assert human[first.attempt_id]["source"] == "human:ana"
        assert store.labels(1, "auto")[first.attempt_id]["label"] == first.auto_label
    assert review.queue.currentRow() == 1  # moved on to the next attempt
    assert "1</b> of 60 attempts reviewed" in review.stats.text()
    # Enter confirms the detector's label
    second = review.current()
    qtbot.keyClick(review.queue, Qt.Key.Key_Return)
    settle(qtbot, window)
    with Store(filled_db) as store:
        assert store.labels(1, "human")[second.attempt_id]["label"] == second.auto_label
    # arrows move back
    qtbot.keyClick(review.queue, Qt.Key.Key_Up)
    assert review.current().attempt_id == second.attempt_id

    results = window.results
    window.show_pane("Results")
    results.mode_combo.setCurrentIndex(results.mode_combo.findData("reviewed"))
    wait_for(qtbot, lambda: "reviewed labels" in results.caption.text(), timeout=TIMEOUT)
    with Store(filled_db) as store:
        auto = compute_metrics(store, 1, "auto")
        reviewed = compute_metrics(store, 1, "reviewed")
    assert auto != reviewed
    cell = results.table.item(0, 1).text()
    assert f"{reviewed['masculine_rate'].value:.3f}" in cell


def test_clicking_a_plot_point_opens_the_filtered_review(qtbot, filled_db, settings):
    window = make_window(qtbot, filled_db, settings)
    results = window.results
    window.show_pane("Results")
    wait_for(qtbot, lambda: len(results.plots) >= 4, timeout=TIMEOUT)
    by_source = next(p for p in results.plots if "by inventory" in p.getPlotItem().titleLabel.text)
    index = next(i for i, r in enumerate(by_source.rows) if r.data["filter"] == {"source": "bsri"})
    by_source.click_row(index)
    assert window.current_pane() == "Review"
    wait_for(qtbot, lambda: window.review.items and not window.ctx.tasks.busy, timeout=TIMEOUT)
    assert all(i.metadata["source"] == "bsri" for i in window.review.items)
    assert window.review.filter_chip.isVisible()


def test_pdf_export_from_the_reports_pane(qtbot, filled_db, settings, tmp_path):
    window = make_window(qtbot, filled_db, settings)
    reports = window.reports
    window.show_pane("Reports")
    wait_for(qtbot, lambda: reports.checked_runs() == [1], timeout=TIMEOUT)
    out = tmp_path / "report.pdf"
    reports.export_pdf(str(out))
    wait_for(qtbot, lambda: reports.banner.kind in ("ok", "error"), timeout=TIMEOUT)
    assert reports.banner.kind == "ok", reports.banner.text()
    reader = pypdf.PdfReader(str(out))
    assert len(reader.pages) >= 4
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in reader.pages))
    assert "SmolLM2-135M-Instruct" in text
    with Store(filled_db) as store:
        value = compute_metrics(store, 1, "reviewed")["masculine_rate"].value
    assert f"{value:.3f}" in text
    assert "SHA-256" in text and "Limitations" in text
    reports.export_csv(str(tmp_path / "csv"))
    wait_for(qtbot, lambda: (tmp_path / "csv" / "metrics.csv").exists(), timeout=TIMEOUT)


def test_preferences_persist(qtbot, tmp_path, settings):
    window = make_window(qtbot, str(tmp_path / "s.sqlite"), settings)
    window.resize(1111, 777)
    window.show_pane("Reports")
    window.review.reviewer.setText("ben")
    window.review.reviewer.editingFinished.emit()
    window.close()
    assert settings.value("pane") == "Reports"
    assert settings.value("reviewer") == "ben"
    saved = settings.value("geometry")
    assert saved is not None and len(saved) > 0
    again = make_window(qtbot, str(tmp_path / "s.sqlite"), settings)
    assert again.current_pane() == "Reports"
    assert again.restoreGeometry(saved)  # offscreen screens clamp the size, so no px check
    assert again.review.reviewer.text() == "ben"


def test_empty_database_shows_empty_states(qtbot, tmp_path, settings):
    window = make_window(qtbot, str(tmp_path / "empty.sqlite"), settings)
    assert "No runs yet" in window.runs.history.item(0, 2).text()
    assert "No generations yet" in window.review.queue.item(0).text()
    assert "No results yet" in window.results.caption.text()


def test_signal_emission_keeps_reference_counts(qtbot):
    """PySide6 6.12.0 loses a reference to True on every emit (and crashes the process
    after a few thousand); pyproject excludes it, this catches such a build."""
    import sys

    from PySide6.QtCore import QObject, Signal

    class Emitter(QObject):
        ping = Signal(str)

    emitter = Emitter()
    before = sys.getrefcount(True)
    for _ in range(500):
        emitter.ping.emit("x")
    assert sys.getrefcount(True) - before > -50


def test_dropping_a_gguf_file_on_the_window_adds_it(qtbot, tmp_path, settings):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    window = make_window(qtbot, str(tmp_path / "d.sqlite"), settings)
    copy = tmp_path / "dropped.gguf"
    shutil.copy(default_model_path(), copy)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(copy))])
    event = QDropEvent(
        QPointF(10, 10),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)
    assert window.current_pane() == "Models"
    wait_for(
        qtbot, lambda: any(m["path"] == str(copy) and m.get("sha256") for m in window.models.models)
    )


@pytest.fixture
def lf_db(tmp_path):
    """A Laissez-Faire run over the Learning prompts with recorded SmolLM2 stories."""
    from tests.fakes import recorded_laissez_faire

    path = str(tmp_path / "lf.sqlite")
    with Store(path) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=1, domains="Learning")
        execute_run(
            store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire())
        )
    return path


def _select(view, start: int, end: int) -> None:
    cursor = view.story.textCursor()
    cursor.setPosition(start)
    cursor.setPosition(end, cursor.MoveMode.KeepAnchor)
    view.story.setTextCursor(cursor)


def test_laissez_faire_character_review_by_keyboard(qtbot, lf_db, settings):
    from gbdesk.studies.laissez_faire._qt.views import CharacterReviewView

    window = make_window(qtbot, lf_db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: len(review.items) == 30)
    assert isinstance(review.view, CharacterReviewView)
    view = review.view
    # a power-laden story: two characters
    row = next(i for i, it in enumerate(review.items) if len(it.metadata["roles"]) == 2)
    review.queue.setCurrentRow(row)
    item = review.current()
    assert [b.title().split(" · ")[0] for b in view._boxes] == ["1", "2"]
    # select the story's first word and add it to character 2 (key "2")
    plain = view.story.toPlainText()
    word = plain.split()[0].strip(".,;:!?\"'")
    start = plain.index(word)
    _select(view, start, start + len(word))
    view.story.setFocus()
    qtbot.keyClick(view.story, "2")
    assert word in view.characters[1].reference_words
    assert word not in view.characters[0].reference_words
    # Alt+1 makes the selection character 1's name
    _select(view, start, start + len(word))
    qtbot.keyClick(view.story, "1", Qt.KeyboardModifier.AltModifier)
    assert view.characters[0].name == word and view._boxes[0].name.text() == word
    # Del removes the selected referring word of character 2
    box = view._boxes[1]
    box.refs.setCurrentRow(box.refs.count() - 1)
    before = len(view.characters[1].references)
    box.refs.setFocus()
    qtbot.keyClick(box.refs, Qt.Key.Key_Delete)
    assert len(view.characters[1].references) == before - 1
    # S swaps the two characters
    first_name, second_refs = view.characters[0].name, view.characters[1].reference_words
    view.story.setFocus()
    qtbot.keyClick(view.story, "S")
    assert view.characters[1].name == first_name
    assert view.characters[0].reference_words == second_refs
    # G cycles character 1's explicit gender: from its words → female
    qtbot.keyClick(view.story, "G")
    assert view.characters[0].gender == "Female"
    assert view._boxes[0].gender_combo.currentData() == "Female"
    expected = view.current_label()
    assert expected["data"]["characters"][0]["gender"] == "Female"
    # Enter saves the corrections as the reviewer's label and moves on
    qtbot.keyClick(view.story, Qt.Key.Key_Return)
    settle(qtbot, window)
    with Store(lf_db) as store:
        human = store.labels(1, "human")[item.attempt_id]
    assert human["source"] == "human:ana"
    assert human["data"]["characters"] == expected["data"]["characters"]
    assert human["data"]["characters"][1]["name"] == first_name
    assert review.current().attempt_id != item.attempt_id
    assert "Against the reviewed characters" in review.stats.text()


def test_laissez_faire_results_show_names_and_open_their_stories(qtbot, lf_db, settings):
    from gbdesk.studies.laissez_faire._qt.views import CharacterResultsView

    window = make_window(qtbot, lf_db, settings)
    results = window.results
    window.show_pane("Results")
    wait_for(qtbot, lambda: any(isinstance(p, CharacterResultsView) for p in results.plots))
    view = next(p for p in results.plots if isinstance(p, CharacterResultsView))
    titles = [p.getPlotItem().titleLabel.text for p in results.plots if hasattr(p, "rows")]
    assert "Gender subordination (power-laden stories)" in titles
    assert view.names.rowCount() > 0
    name = view.names.item(0, 1).text()
    view.names.cellDoubleClicked.emit(0, 1)
    assert window.current_pane() == "Review"
    wait_for(qtbot, lambda: window.review.items and not window.ctx.tasks.busy)
    assert all(name in i.response for i in window.review.items)
    assert name in window.review.filter_chip.text()


def test_laissez_faire_options_run_and_llm_extraction_from_the_runs_pane(qtbot, tmp_path, settings):
    from tests.fakes import recorded_laissez_faire

    db = str(tmp_path / "lfo.sqlite")
    window = make_window(qtbot, db, settings, lambda m, g: FakeBackend(recorded_laissez_faire()))
    pane = window.runs
    window.show_pane("Runs")
    wait_for(qtbot, lambda: pane.model_combo.count() > 0)
    row = next(
        i
        for i in range(pane.probe_list.count())
        if pane.probe_list.item(i).data(Qt.ItemDataRole.UserRole) == "laissez_faire"
    )
    pane.probe_list.setCurrentRow(row)
    assert pane.options_box.isVisible()
    assert pane.max_tokens.value() == 250  # the probe's own default
    domains = pane.option_widgets["domains"]
    assert [c.isChecked() for c in domains] == [True, True, True]
    for check in domains:
        check.setChecked(False)
    pane.start()
    assert "Choose at least one value for Domains" in pane.banner.text()
    domains[0].setChecked(True)  # Learning only
    table = pane.option_widgets["name_table"]
    table.setCurrentIndex(table.findData("census2020"))
    wait_for(qtbot, lambda: "<b>300</b> generations" in pane.estimate.text())  # 30 × 10
    pane.attempts.setValue(1)
    pane.start()
    wait_for(qtbot, lambda: window.ctx.running)
    wait_for(qtbot, lambda: not window.ctx.running)
    settle(qtbot, window)
    with Store(db) as store:
        run = store.get_run(1)
        assert run["params"]["domains"] == ["Learning"]
        assert run["params"]["name_table"] == "census2020"
        assert run["attempts_total"] == 30 and run["status"] == "done"
    # extract characters again with "the selected model" as labeler (here a fake whose
    # answers are not JSON, so every story falls back to the deterministic extractor)
    pane.history.selectRow(0)
    assert pane.label_button.isEnabled()
    qtbot.mouseClick(pane.label_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: not window.ctx.running and pane.banner.kind == "ok")
    assert "30 stories labelled by llm/1:" in pane.banner.text()
    assert "30 unreadable answers fell back" in pane.banner.text()
    with Store(db) as store:
        assert len(store.labels(1, "auto", "llm/")) == 30
        assert store.get_run(1)["params"]["extractor"] == "llm"


def test_globalbias_results_and_profile_review(qtbot, tmp_path, settings):
    """An imported APX table and the released profiles: the association view filters,
    the profile view shows ablation and top words, Review shows parsed fields."""
    from gbdesk.studies.globalbias._qt.views import (
        AssociationsView,
        ProfileResultsView,
        ProfileReviewView,
    )
    from gbdesk.support.paths import resource
    from gbdesk.workflows.importer import import_generations

    path = str(tmp_path / "gb.sqlite")
    apx = tmp_path / "apx.csv"
    rows = ["group,descriptor,template,apx"]
    for t in (1, 2, 3):
        for g in range(8):
            rows.append(f"G{g},a stutterer,{t},{10 if g == 0 else 20}")
            rows.append(f"G{g},Deaf,{t},{20 + g}")
    apx.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with Store(path) as store:
        apx_run = import_generations(store, "globalbias_apx", apx)["run_id"]
        profile_run = import_generations(
            store, "globalbias_profiles", resource("globalbias/10a_llama3_full.csv")
        )["run_id"]
    window = make_window(qtbot, path, settings)
    results = window.results
    window.show_pane("Results")

    def pick(run_id):
        for row in range(results.run_list.count()):
            item = results.run_list.item(row)
            item.setCheckState(
                Qt.CheckState.Checked
                if item.data(Qt.ItemDataRole.UserRole) == run_id
                else Qt.CheckState.Unchecked
            )

    wait_for(qtbot, lambda: results.run_list.count() == 2)
    pick(apx_run)
    wait_for(qtbot, lambda: any(isinstance(p, AssociationsView) for p in results.plots))
    view = next(p for p in results.plots if isinstance(p, AssociationsView))
    assert view.proxy.rowCount() == 1  # flagged only: G0 × a stutterer
    view.flagged_only.setChecked(False)
    assert view.proxy.rowCount() == 16
    view.search.setText("deaf g7")
    assert view.proxy.rowCount() == 1

    pick(profile_run)
    wait_for(
        qtbot,
        lambda: any(isinstance(p, ProfileResultsView) for p in results.plots),
        timeout=120_000,
    )
    prof = next(p for p in results.plots if isinstance(p, ProfileResultsView))
    assert prof.words.rowCount() > 0
    window.ctx.open_review.emit(profile_run, "all", {}, "profiles")
    window.show_pane("Review")
    wait_for(qtbot, lambda: window.review.items and not window.ctx.tasks.busy)
    assert isinstance(window.review.view, ProfileReviewView)
    text = window.review.view.text.toPlainText()
    assert "Parsed fields" in text and "Raw answer" in text and "occupation" in text


def test_intersectional_review_by_keyboard_and_heat_map(qtbot, tmp_path, settings):
    from gbdesk.studies.intersectional._qt.views import RoleAnswersView, SDegResultsView
    from gbdesk.workflows.importer import import_generations

    path = str(tmp_path / "sdeg.sqlite")
    answers = tmp_path / "answers.csv"
    lines = ["group,role,category,answer"]
    for r in range(4):
        lines += [f"White;old,role {r},Religiosity,Very important", f"White;old,role {r},8,Yes"]
        lines += [f"Black;young,role {r},Religiosity,{'Very important' if r % 2 else 'hm'}"]
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Store(path) as store:
        run_id = import_generations(store, "intersectional_sdeg", answers)["run_id"]
    window = make_window(qtbot, path, settings)
    window.ctx.open_review.emit(run_id, "all", {}, "roles")
    window.show_pane("Review")
    review = window.review
    wait_for(qtbot, lambda: review.items and not window.ctx.tasks.busy)
    view = review.view
    assert isinstance(view, RoleAnswersView)
    assert view.table.rowCount() == 16
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)  # category 2
    assert view.table.currentRow() == 1
    qtbot.keyClick(view, Qt.Key.Key_4)  # "Always"
    label = view.current_label()
    assert label["data"]["answers"]["2"]["option"] == "Always"
    review.save_label(label)
    settle(qtbot, window)
    with Store(path) as store:
        human = store.labels(run_id, "human")
    assert any(h["data"]["answers"]["2"]["option"] == "Always" for h in human.values())

    window.show_pane("Results")
    results = window.results
    wait_for(qtbot, lambda: any(isinstance(p, SDegResultsView) for p in results.plots))
    titles = [p.getPlotItem().titleLabel.text for p in results.plots if hasattr(p, "rows")]
    assert any(t.startswith("Groups ranked by SDeg") for t in titles)


def test_models_pane_adds_and_tests_an_http_endpoint(qtbot, tmp_path, settings, monkeypatch):
    """Add endpoint… dialog → a stored model row; Test connection runs off the UI thread
    against a small local OpenAI-compatible stub (the real server is in test_http_backend)."""
    import http.server
    import json
    import threading

    seen: list[str] = []

    class Stub(http.server.BaseHTTPRequestHandler):
        def _send(self, payload):
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            seen.append(self.headers.get("Authorization", ""))
            self._send({"object": "list", "data": [{"id": "stub-model", "owned_by": "test"}]})

        def do_POST(self):
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            tokens = min(3, int(asked.get("max_tokens") or 3))  # a server keeps to max_tokens
            self._send(
                {
                    "model": "stub-model",
                    "choices": [{"message": {"content": "Hello there."[: 4 * tokens]},
                                 "finish_reason": "stop" if tokens == 3 else "length"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": tokens},
                }
            )  # fmt: skip

        def log_message(self, *args):
            pass

    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    monkeypatch.setenv("GUI_TEST_KEY", "sk-gui-secret")
    db = str(tmp_path / "e.sqlite")
    try:
        window = make_window(qtbot, db, settings)
        pane = window.models
        qtbot.mouseClick(pane.endpoint_button, Qt.MouseButton.LeftButton)
        dialog = pane.endpoint_dialog
        assert dialog is not None and dialog.isVisible()
        dialog.url.setText("ftp://nowhere")
        dialog.accept()  # refused inline, the dialog stays open
        assert dialog.isVisible() and "http://" in dialog.error.text()
        dialog.url.setText(f"http://127.0.0.1:{stub.server_port}")
        dialog.model.setText("stub-model")
        dialog.key_env.setText("GUI_TEST_KEY")
        dialog.concurrency.setValue(3)
        dialog.accept()
        wait_for(qtbot, lambda: any(m.get("endpoint") for m in pane.models))
        entry = next(m for m in pane.models if m.get("endpoint"))
        assert entry["url"] == f"http://127.0.0.1:{stub.server_port}/v1"
        assert (entry["endpoint_model"], entry["concurrency"]) == ("stub-model", 3)
        row = pane.models.index(entry)
        assert pane.table.item(row, 1).text() == "endpoint"
        # adding tests the connection at once, off the UI thread
        wait_for(qtbot, lambda: "Connected to" in pane.test_result.text())
        assert "stub-model" in pane.test_result.text() and " ms" in pane.test_result.text()
        assert seen and seen[0] == "Bearer sk-gui-secret"
        pane.table.selectRow(row)
        assert pane.test_button.text() == "&Test connection" and pane.test_button.isEnabled()
        assert "OpenAI-compatible endpoint" in pane.details.text()
        with Store(db) as store:
            (stored,) = [m for m in store.list_models() if m["kind"] == "endpoint"]
            assert stored["path"] == entry["url"] and stored["sha256"] is None
            assert "sk-gui-secret" not in json.dumps(stored)
            assert resolve_model(store, entry["path"])["id"] == stored["id"]
        # a dead endpoint: the pane says so in one line
        stub.shutdown()
        stub.server_close()
        qtbot.mouseClick(pane.test_button, Qt.MouseButton.LeftButton)
        wait_for(qtbot, lambda: "cannot reach the endpoint" in pane.test_result.text())
    finally:
        stub.shutdown()


def test_review_keys_stay_where_the_reviewer_is(qtbot, filled_db, settings):
    """Issue 43 (20): Enter in the Reviewer field confirmed the detector's label of the
    current item and left the focus in the field; after the tenth label the queue re-sorted
    and the selection jumped. Enter in a text field now ends the typing (the focus goes
    back to the queue, nothing is labelled); the queue keeps its order while labelling."""
    window = make_window(qtbot, filled_db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: len(review.items) == 60, timeout=TIMEOUT)
    review.reviewer.setFocus()
    qtbot.keyClick(review.reviewer, Qt.Key.Key_Return)
    settle(qtbot, window)
    with Store(filled_db) as store:
        assert store.labels(1, "human") == {}  # Enter in the name field labels nothing
    assert review.queue.hasFocus() or window.focusWidget() is review.queue
    order = [i.attempt_id for i in review.items]
    for n in range(12):
        assert review.queue.currentRow() == n
        qtbot.keyClick(review.queue, Qt.Key.Key_Return)
        settle(qtbot, window)
        qtbot.wait(50)
        settle(qtbot, window)
        assert [i.attempt_id for i in review.items] == order, f"re-sorted after label {n + 1}"
        if n == 9:  # labels changed elsewhere meanwhile (another window, the CLI): reloaded
            window.ctx.labels_changed.emit(1)
            settle(qtbot, window)
    assert review.queue.currentRow() == 12
    assert "queue" in review.queue.styleSheet().lower() or ":focus" in review.queue.styleSheet()
