"""Entry point of the desktop app (`gbdesk` without arguments)."""

from __future__ import annotations

import os
import sys

from gbdesk.errors import UserError


def _check_display() -> None:
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
    ):
        raise UserError(
            "no display found for the desktop app; use the headless commands "
            "(gbdesk --help) or set QT_QPA_PLATFORM=offscreen"
        )


def main() -> int:
    from gbdesk.logs import setup_logging

    setup_logging()
    _check_display()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from gbdesk.paths import default_db_path
    from gbdesk.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("gbdesk")
    app.setApplicationName("gbdesk")
    settings = QSettings()
    db_path = str(settings.value("db_path", "") or default_db_path())
    window = MainWindow(db_path, settings)
    window.show()
    return app.exec()
