"""The log file: unexpected errors and background exceptions land in it with their
traceback; the CLI names it in one line; the app opens its folder."""

from __future__ import annotations

import logging
import threading

import pytest

from gbdesk import cli
from gbdesk.support import logs


@pytest.fixture
def log_file(tmp_path, monkeypatch):
    """A fresh log file in this test's data folder."""
    monkeypatch.setenv("GBDESK_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(logs, "_installed", None)
    before = list(logs.log.handlers)
    path = logs.setup_logging()
    yield path
    for handler in logs.log.handlers:
        if handler not in before:
            handler.close()
            logs.log.removeHandler(handler)


def test_unexpected_cli_error_is_one_line_and_logged(log_file, monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("something no one expected")

    monkeypatch.setitem(cli.COMMANDS, "runs", broken)
    monkeypatch.setattr(logs, "setup_logging", lambda: log_file)
    assert cli.main(["runs"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "unexpected error: RuntimeError: something no one expected" in err[0]
    assert str(log_file) in err[0]
    text = log_file.read_text()
    assert "Traceback (most recent call last)" in text and "something no one expected" in text


def test_user_errors_stay_out_of_the_traceback_path(log_file, capsys):
    assert cli.main(["card", "no_such_probe"]) == 2
    assert "unknown probe" in capsys.readouterr().err
    assert "Traceback" not in (log_file.read_text() if log_file.exists() else "")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_exceptions_in_threads_are_logged(log_file):
    def fail():
        raise ValueError("background failure")

    thread = threading.Thread(target=fail, name="worker-x")
    thread.start()
    thread.join()
    text = log_file.read_text()
    assert "uncaught exception in thread worker-x" in text and "ValueError" in text


def test_log_rotates(log_file):
    handler = next(
        h for h in logs.log.handlers if getattr(h, "baseFilename", None) == str(log_file)
    )
    handler.maxBytes = 2_000
    for i in range(200):
        logging.getLogger("gbdesk.test").warning("line %d %s", i, "x" * 50)
    assert log_file.exists() and (log_file.parent / "gbdesk.log.1").exists()


@pytest.mark.gui
def test_background_task_failure_and_log_folder_in_the_app(log_file, qtbot, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QDesktopServices

    from gbdesk.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(str(tmp_path / "db.sqlite"), settings)
    qtbot.addWidget(window)
    errors = []

    def boom():
        raise KeyError("a bug in a background task")

    window.ctx.tasks.submit(boom, on_error=errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=10000)
    assert "Open log folder" in errors[0]
    assert "KeyError" in log_file.read_text() and "Traceback" in log_file.read_text()
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    actions = [a.text() for m in window.menuBar().actions() for a in m.menu().actions()]
    assert "Open &log folder" in actions
    assert window.open_log_folder()
    assert opened[0].toLocalFile() == str(log_file.parent)
