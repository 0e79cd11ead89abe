"""The main window's longest event-loop stall while the Results pane loads a big run.

A 10 ms `QTimer` runs on the UI thread; each tick records how late it fired (the time
since the previous tick minus 10 ms). The main window is opened on the database (its panes
start their queries; Results computes the newest run — the biggest one here — off the UI
thread) and shown on the Results pane; the measurement ends when the run's metrics,
plots and extra results are on screen and no background task is left. Reported: the worst
and the 99th-percentile lateness, the worst while the results were being computed (before
they arrive; after, the UI thread lays out the plots), and the time until the results were
shown. The window settles (its panes' tasks done, Results' plots laid out) before the timer
starts, and the measurement lasts until Results has laid out every plot of the run. Rounds:

  new   the Results pane as it is (metrics and extra results from the flat table);
  old   the same window with the pane's query on the reference path (`_compute(…,
        flat=False)`: every label's JSON and every text) — skipped with `--no-old`
        (at 500,000 stories it takes minutes).

  stream  (with `--stream N`) a Laissez-Faire run of N generations started in the Runs pane
        and streamed token by token (a fake backend replaying recorded stories, one word
        every `--token-ms` ms) on a copy of the database; measured from Start until the run
        is done and the panes have refreshed.

The metrics cache is emptied before each Results round. Target: worst stall < 100 ms.

    QT_QPA_PLATFORM=offscreen python benchmarks/ui_latency.py --db PATH [--run ID] [--no-old]
        [--stream N [--token-ms MS]] [--no-new]

The database is one `benchmarks/scale.py` built (its first run holds 500,000 stories);
the window is opened and left to settle first (Results shows the newest run), then the
timer starts and Results is asked for `--run` (default 1) as "Show results" does.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def measure(db: Path, run_id: int, settings_dir: Path, old: bool, timeout_s: float) -> dict:
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QSettings, QTimer

    import gbdesk.ui.panes.results as results_pane
    from gbdesk.store import Store
    from gbdesk.ui.main_window import MainWindow

    with Store(db) as store:
        store.conn.execute("DELETE FROM metrics")
    original = results_pane._compute
    if old:
        results_pane._compute = functools.partial(original, flat=False)
    settings = QSettings(str(settings_dir / f"{'old' if old else 'new'}.ini"),
                         QSettings.Format.IniFormat)  # fmt: skip
    settings.setValue("label_mode", "auto")
    # the window opens and settles first (its panes load; Results shows the newest run)
    window = MainWindow(str(db), settings)
    window.show()
    window.ctx.show_pane.emit("Results")
    settle = QEventLoop()
    idle = QTimer()
    idle.setInterval(50)
    idle.timeout.connect(
        lambda: None if window.ctx.tasks.busy or window.results.rendering() else settle.quit()
    )
    idle.start()
    settle.exec()
    idle.stop()
    late: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]

    loading: list[float] = []  # lateness before the results arrived (computing them)

    def tick() -> None:
        now = clock.nsecsElapsed()
        late.append(max(0.0, (now - last[0]) / 1e6 - 10.0))
        if run_id not in window.results.results:
            loading.append(late[-1])
        last[0] = now

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    timer.start()
    started = time.perf_counter()
    try:
        pane = window.results
        window.ctx.open_results.emit(run_id)
        loop = QEventLoop()
        shown = [None]

        def check() -> None:
            if run_id in pane.results and pane.checked_runs() == [run_id]:
                if shown[0] is None:
                    shown[0] = time.perf_counter() - started
                if not window.ctx.tasks.busy and not pane.rendering():
                    loop.quit()
            if time.perf_counter() - started > timeout_s:
                loop.quit()

        poll = QTimer()
        poll.setInterval(50)
        poll.timeout.connect(check)
        poll.start()
        loop.exec()
        poll.stop()
        window.close()
        window.deleteLater()
    finally:
        timer.stop()
        results_pane._compute = original
    ordered = sorted(late)
    return {
        "loading_worst_ms": max(loading, default=0.0),
        "worst_ms": ordered[-1] if ordered else 0.0,
        "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] if ordered else 0.0,
        "ticks": len(late),
        "shown_s": shown[0],
        "total_s": time.perf_counter() - started,
    }


class _Lateness:
    """A 10 ms timer on the UI thread recording how late each tick fires."""

    def __init__(self) -> None:
        from PySide6.QtCore import QElapsedTimer, QTimer

        self.late: list[float] = []
        self.clock = QElapsedTimer()
        self.clock.start()
        self.last = self.clock.nsecsElapsed()
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        now = self.clock.nsecsElapsed()
        self.late.append(max(0.0, (now - self.last) / 1e6 - 10.0))
        self.last = now

    def stop(self) -> dict:
        self.timer.stop()
        ordered = sorted(self.late)
        return {
            "worst_ms": ordered[-1] if ordered else 0.0,
            "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] if ordered else 0.0,
            "ticks": len(ordered),
        }


def _wait(condition, timeout_s: float) -> bool:
    """Run the event loop until `condition()` or the timeout; whether it held."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    end = time.perf_counter() + timeout_s
    poll = QTimer()
    poll.setInterval(50)
    poll.timeout.connect(lambda: loop.quit() if condition() or time.perf_counter() > end else None)
    poll.start()
    loop.exec()
    poll.stop()
    return bool(condition())


def measure_stream(
    db: Path, settings_dir: Path, generations: int, token_ms: float, timeout_s: float
) -> dict:
    """The window's lateness while a run streams in the Runs pane (see the module doc)."""
    from PySide6.QtCore import QSettings, Qt

    from gbdesk.ui.main_window import MainWindow
    from tests.fakes import FakeBackend, recorded_laissez_faire

    class PacedBackend(FakeBackend):
        """The fake backend, one word every `token_ms` like a model generating."""

        def generate(self, request, on_token=None):
            def paced(text: str) -> None:
                time.sleep(token_ms / 1000)
                on_token(text)

            return super().generate(request, paced if on_token else None)

    stories = recorded_laissez_faire()
    settings = QSettings(str(settings_dir / "stream.ini"), QSettings.Format.IniFormat)
    settings.setValue("label_mode", "auto")
    settings.setValue("pane", "Runs")
    window = MainWindow(str(db), settings, lambda m, g: PacedBackend(stories))
    window.show()
    pane = window.runs
    window.ctx.show_pane.emit("Runs")
    _wait(
        lambda: (
            pane.model_combo.count() > 0
            and not window.ctx.tasks.busy
            and not window.results.rendering()
        ),
        timeout_s,
    )
    row = next(
        i
        for i in range(pane.probe_list.count())
        if pane.probe_list.item(i).data(Qt.ItemDataRole.UserRole) == "laissez_faire"
    )
    pane.probe_list.setCurrentRow(row)
    pane.attempts.setValue(1)
    pane.limit.setValue(generations)
    _wait(lambda: not window.ctx.tasks.busy, timeout_s)
    lateness = _Lateness()
    started = time.perf_counter()
    pane.start()
    _wait(lambda: window.ctx.running, timeout_s)
    ran = time.perf_counter()
    _wait(lambda: not window.ctx.running, timeout_s)
    ran = time.perf_counter() - ran
    _wait(lambda: not window.ctx.tasks.busy and not window.results.rendering(), timeout_s)
    got = lateness.stop()
    got.update(
        {
            "run_s": ran,
            "total_s": time.perf_counter() - started,
            "banner": pane.banner.text(),
        }
    )
    window.close()
    window.deleteLater()
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--run", type=int, default=1)
    parser.add_argument("--no-old", action="store_true")
    parser.add_argument("--no-new", action="store_true", help="skip the Results rounds")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--stream",
        type=int,
        default=0,
        metavar="N",
        help="also measure a streamed run of N generations (on a copy)",
    )
    parser.add_argument("--token-ms", type=float, default=5.0)
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    from gbdesk.store import Store

    app = QApplication.instance() or QApplication(sys.argv[:1])
    rounds = [] if args.no_new else [False] if args.no_old else [False, True]
    if rounds:
        with Store(args.db) as store:
            n = store.count_attempts(args.run)
            probe = store.get_run(args.run)["probe"]
        print(f"run {args.run}: {probe}, {n:,} attempts")
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for old in rounds:
            r = measure(args.db, args.run, Path(tmp), old, args.timeout)
            name = "old" if old else "new"
            got[name] = r
            shown = "not shown" if r["shown_s"] is None else f"shown after {r['shown_s']:.1f} s"
            print(
                f"{name}: worst stall {r['worst_ms']:.0f} ms, 99th percentile "
                f"{r['p99_ms']:.0f} ms over {r['ticks']} ticks (while computing: worst "
                f"{r['loading_worst_ms']:.0f} ms; the rest is laying out the plots); {shown}; "
                f"all tasks done after {r['total_s']:.1f} s",
                flush=True,
            )
        if args.stream:
            import shutil

            copy = Path(tmp) / "stream.sqlite"
            shutil.copy(args.db, copy)
            r = measure_stream(copy, Path(tmp), args.stream, args.token_ms, args.timeout)
            print(
                f"stream: worst stall {r['worst_ms']:.0f} ms, 99th percentile "
                f"{r['p99_ms']:.0f} ms over {r['ticks']} ticks while {args.stream} "
                f"generations streamed (one word every {args.token_ms:g} ms; run "
                f"{r['run_s']:.1f} s, until the panes refreshed {r['total_s']:.1f} s); "
                f"{r['banner']}",
                flush=True,
            )
    if "old" in got:
        print(
            f"worst stall old / new: {got['old']['worst_ms'] / max(got['new']['worst_ms'], 1):.1f}×"
        )
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
