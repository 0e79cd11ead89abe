from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory, monkeypatch):
    """Never touch the user's real gbdesk database."""
    data = tmp_path_factory.mktemp("gbdesk-data")
    monkeypatch.setenv("GBDESK_DATA_DIR", str(data))
    monkeypatch.delenv("GBDESK_DB", raising=False)


@pytest.fixture
def store(tmp_path):
    from gbdesk.store import Store

    s = Store(tmp_path / "test.sqlite")
    yield s
    s.close()


@pytest.fixture(scope="session", autouse=True)
def _qt_application_first():
    """One QApplication for the whole session, made before any test runs: the PDF writer
    makes a bare QGuiApplication when none exists, and a widget test after it would abort
    the process ("QWidget: Cannot create a QWidget without QApplication")."""
    try:
        from PySide6.QtWidgets import QApplication
    except ImportError:  # Qt-free environments still run the core tests
        yield None
        return
    yield QApplication.instance() or QApplication(["gbdesk-tests"])


@pytest.fixture(autouse=True)
def _no_modal_boxes(monkeypatch):
    """A modal box that nobody answers blocks a test for ever — pytest-timeout's signal
    cannot interrupt Qt's nested event loop. Offscreen, `QMessageBox.question` answers Yes
    (e.g. "stop the run and quit?" when a timed-out test's window closes at teardown) and
    a message box's `exec` returns at once; tests that check a box patch these themselves."""
    try:
        from PySide6.QtWidgets import QMessageBox
    except ImportError:
        yield
        return
    asked: list[str] = []

    def question(parent, title, text, *args, **kwargs):
        asked.append(f"{title}: {text}")
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    monkeypatch.setattr(QMessageBox, "exec", lambda self: int(QMessageBox.StandardButton.Ok))
    yield asked


@pytest.fixture
def settings(tmp_path):
    """The app's settings in a file of the test's own, with a reviewer's name set."""
    from PySide6.QtCore import QSettings

    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    s.setValue("reviewer", "ana")
    return s


@pytest.fixture
def filled_db(tmp_path):
    """A database with one complete fake inventories run (recorded texts, no model)."""
    from gbdesk.store import Store
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend

    path = str(tmp_path / "gui.sqlite")
    with Store(path) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "inventories", model, attempts=2, limit=30)
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    return path


@pytest.fixture
def recorded_lf_run(store):
    """A function making a complete Laissez-Faire run of `limit` recorded stories (no
    model) in the test's `store`, returning its id."""
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend, recorded_laissez_faire

    def make(limit: int) -> int:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=1, limit=limit)
        texts = recorded_laissez_faire()
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(texts))
        return run_id

    return make

