"""The core never imports Qt: every module outside gbdesk.ui and the studies' private `_qt`
packages imports without PySide6 (studies included)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Modules that draw with Qt by design (and __main__, which would start the app).
QT_MODULES = ("gbdesk.ui", "gbdesk.report.pdf", "gbdesk.__main__")


def test_core_modules_do_not_import_qt():
    code = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        import gbdesk
        skipped = {QT_MODULES!r}
        names = []
        for info in pkgutil.walk_packages(gbdesk.__path__, "gbdesk."):
            if info.name.startswith(skipped) or "._qt" in info.name:
                continue
            importlib.import_module(info.name)
            names.append(info.name)
        qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "PyQt5", "PyQt6",
                                                                   "pyqtgraph", "shiboken6"))
        assert len(names) > 10, names
        assert any(n.startswith("gbdesk.studies.") for n in names), names
        assert not qt, qt
        print(len(names))
    """)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
