"""Entry point of the desktop app (`gbdesk` without arguments)."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)

#: Debian/Ubuntu packages of the libraries Qt's xcb display plugin loads
XCB_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}


def _not_found(ldd_output: str) -> list[str]:
    return re.findall(r"^\s*(\S+) => not found", ldd_output, flags=re.MULTILINE)


def missing_display_packages(ldd_outputs: list[str] | None = None) -> list[str]:
    """The system packages Qt's xcb display plugin lacks on this Linux machine (from
    `ldd` of the plugin and its Qt library); [] when nothing is missing or it cannot
    tell."""
    if ldd_outputs is None:
        ldd = shutil.which("ldd")
        if ldd is None:
            return []
        try:
            import PySide6

            qt = Path(PySide6.__file__).parent / "Qt"
        except ImportError:
            return []
        targets = [qt / "plugins" / "platforms" / "libqxcb.so", qt / "lib" / "libQt6XcbQpa.so.6"]
        ldd_outputs = []
        for target in targets:
            if not target.exists():
                continue
            try:
                done = subprocess.run(
                    [ldd, str(target)], capture_output=True, text=True, timeout=20, check=False
                )
                ldd_outputs.append(done.stdout)
            except (OSError, subprocess.SubprocessError) as exc:
                log.info("ldd %s: %s", target, exc)
    packages: list[str] = []
    for out in ldd_outputs:
        for lib in _not_found(out):
            package = XCB_PACKAGES.get(lib, lib)
            if package not in packages:
                packages.append(package)
    return packages


def display_plugin_message(packages: list[str]) -> str:
    """One line: what is missing and the apt-get command that installs it."""
    return (
        f"the desktop app cannot open a window: Qt's display plugin (xcb) needs "
        f"{', '.join(packages)}; install with: sudo apt-get install -y {' '.join(packages)}"
    )


#: what to do without a display: get one (a desktop session, X forwarding over ssh), or use
#: the commands, which need none. Never Qt's offscreen platform or a bare virtual display:
#: both start an app nobody can see.
NO_DISPLAY = (
    "no display found for the desktop app (DISPLAY and WAYLAND_DISPLAY are not set): start "
    "it from a desktop session, or from another computer with a display over `ssh -X` "
    "(X forwarding); without a display, use the commands, which need none: `gbdesk --help` "
    "(e.g. gbdesk run, gbdesk audit, gbdesk export --pdf)"
)


def _check_display() -> None:
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
    ):
        raise UserError(NO_DISPLAY)


def _check_display_plugin() -> None:
    """On Linux with X11, name the missing system packages before Qt aborts with its own
    plugin message."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or platform not in ("", "xcb"):
        return
    if not os.environ.get("DISPLAY") or (os.environ.get("WAYLAND_DISPLAY") and not platform):
        return
    packages = missing_display_packages()
    if packages:
        raise UserError(display_plugin_message(packages))


def main(db_path: str | None = None) -> int:
    """The app; `db_path`: open it on this database (and remember it), else the last one."""
    from gbdesk.support.logs import setup_logging

    setup_logging()
    if db_path:  # refuse a mistyped path before any window (a new file only in a folder)
        from gbdesk.store.db import check_db_path

        check_db_path(db_path, create=True)
    _check_display()
    _check_display_plugin()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from gbdesk.support.paths import default_db_path
    from gbdesk.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("gbdesk")
    app.setApplicationName("gbdesk")
    settings = QSettings()
    unreachable = None
    if db_path:
        db_path = str(Path(db_path).expanduser().resolve())
        settings.setValue("db_path", db_path)
    else:
        db_path = str(settings.value("db_path", "") or default_db_path())
        if not Path(db_path).parent.is_dir():  # e.g. an unmounted drive: never re-create it
            unreachable, db_path = db_path, str(default_db_path())
    window = MainWindow(db_path, settings)
    if unreachable:
        window._db_notice(
            f"the last database, {unreachable}, cannot be reached (its folder does not "
            "exist); the default database is open instead — File → Open database… to choose"
        )
    window.show()
    return app.exec()
