"""Driving the desktop app offscreen (pytest-qt): open a window on a database, wait for its
background tasks. The fixtures the GUI tests share (`settings`, `filled_db`) are in conftest.py."""

from __future__ import annotations

TIMEOUT = 60_000  # ms


def make_window(qtbot, db_path, settings, backend_factory=None):
    from gbdesk.ui.main_window import MainWindow

    window = MainWindow(db_path, settings, backend_factory)
    qtbot.addWidget(window)
    window.show()
    wait_for(qtbot, lambda: not window.ctx.tasks.busy, timeout=TIMEOUT)
    return window


def wait_for(qtbot, condition, timeout=TIMEOUT):
    qtbot.waitUntil(lambda: bool(condition()), timeout=timeout)


def settle(qtbot, window):
    wait_for(qtbot, lambda: not window.ctx.tasks.busy, timeout=TIMEOUT)
