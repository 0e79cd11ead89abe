"""Open the real gbdesk window and save a PNG of each pane (run by screenshots.sh).

python scripts/screenshots.py DB OUT_DIR [LAISSEZ_FAIRE_DB]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from gbdesk.ui.main_window import MainWindow


def _helpers(app, window, out: Path):
    """pump(seconds), settle() and shot(name) for one window."""

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    def settle() -> None:
        pump(0.3)
        while window.ctx.tasks.busy:
            pump(0.1)
        pump(0.5)

    def shot(name: str) -> None:
        settle()
        screen = window.screen()
        image = screen.grabWindow(
            0,
            window.x(),
            window.y(),
            window.frameGeometry().width(),
            window.frameGeometry().height(),
        )
        if image.isNull():
            image = window.grab()
        image.save(str(out / f"{name}.png"))
        print("saved", out / f"{name}.png")

    return pump, settle, shot


def _window(db: str) -> MainWindow:
    """A 1440×900 window on `db` with fresh settings and the reviewer "ana"."""
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "shots.ini"), QSettings.Format.IniFormat)
    settings.setValue("reviewer", "ana")
    window = MainWindow(db, settings)
    window.resize(1440, 900)
    window.show()
    return window


def laissez_faire(app, db: str, out: Path) -> None:
    """The character review (a story with two characters) and the extra results."""
    window = _window(db)
    _pump, settle, shot = _helpers(app, window, out)
    settle()
    window.show_pane("Review")
    settle()
    review = window.review
    for row, item in enumerate(review.items):
        characters = (item.auto_data or {}).get("characters", [])
        if len(characters) == 2 and all(c.get("name") for c in characters):
            review.queue.setCurrentRow(row)
            break
    shot("7-review-laissez-faire")
    window.show_pane("Results")
    settle()
    # scroll to the racialized subordination curves and the names table
    from gbdesk.studies.laissez_faire._qt.views import CharacterResultsView

    view = next(w for w in window.results.plots if isinstance(w, CharacterResultsView))
    window.results.scroll.verticalScrollBar().setValue(view.y())
    shot("8-results-laissez-faire")
    window.close()


def main() -> int:
    db, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication(sys.argv[:1])
    if len(sys.argv) > 3:
        laissez_faire(app, sys.argv[3], out)
    window = _window(db)
    pump, settle, shot = _helpers(app, window, out)

    settle()
    window.show_pane("Models")
    window.models.table.selectRow(0)
    shot("1-models")

    # Review: label a few attempts with the keyboard flow's own entry point.
    window.show_pane("Review")
    settle()
    review = window.review
    for _ in range(5):
        item = review.current()
        if item is None:
            break
        # what a reviewer might do: a first-person text that says "I'm a … man" is male
        words = item.response.lower()
        if item.auto_label == "undetected" and (" male" in words or " man " in words):
            review.set_label("male")
        elif item.auto_label == "undetected" and (" female" in words or " woman" in words):
            review.set_label("female")
        else:
            review.confirm()
        settle()
    review.move(-1)
    shot("3-review")

    window.show_pane("Results")
    results = window.results
    results.set_checked([r["id"] for r in results.runs if r["probe"] == "inventories"][:2])
    settle()
    shot("4-results")

    window.show_pane("Reports")
    shot("5-reports")

    # Runs last: start a short run and capture it while it streams.
    window.show_pane("Runs")
    runs = window.runs
    settle()
    runs.preset_combo.setCurrentText("Quick look (20 items, 1 attempt)")
    runs.limit.setValue(3)
    runs.max_tokens.setValue(120)
    runs.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (
        runs.progress.value() < 1 or len(runs.live.toPlainText()) < 120
    ):
        pump(0.2)
    shot("2-runs")
    runs.cancel()
    while window.ctx.running:
        pump(0.2)
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
