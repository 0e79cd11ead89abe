"""What a reader sees cannot mislead (issue 26): an unfinished run says so on page 1 and
in the CLI, intervals of shares stay within 0–100 % with a note, missing values say why,
precision and recall carry their sample sizes, and no internal key reaches the text."""

from __future__ import annotations

import math

import pypdf
import pytest

from gbdesk.cli import main
from gbdesk.errors import EngineCrashed
from gbdesk.format import ci_cells, ci_text, clip_ci, unfinished_note
from gbdesk.report.pdf import export_pdf
from gbdesk.runs import execute_run, plan_run
from gbdesk.store import Store
from tests.fakes import FakeBackend, fake_model


def test_intervals_are_cut_at_what_the_metric_can_be():
    assert clip_ci((-0.157, 0.484), (0.0, 1.0)) == ((0.0, 0.484), [-0.157])
    assert clip_ci((0.1, 0.2), (0.0, 1.0)) == ((0.1, 0.2), [])
    assert clip_ci((math.nan, math.nan), (0.0, 1.0))[1] == []
    text = ci_text((-0.157, 0.484), (0.0, 1.0), percent=True)
    assert text.startswith("95 % CI 0 % to 48 %") and "reached -16 %" in text
    assert ci_cells((0.06, 0.63), (0.0, 0.5)) == ("[0.060, 0.500]", True)
    assert "no interval" in ci_text((math.nan, math.nan))


def test_unfinished_note():
    run = {"status": "interrupted", "attempts_done": 16, "attempts_total": 745}
    assert unfinished_note(run) == "unfinished: 16 of 745 generations made (interrupted)"
    assert unfinished_note({"status": "done", "attempts_done": 3, "attempts_total": 3}) is None


@pytest.fixture
def interrupted(tmp_path):
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        model = fake_model(store, tmp_path)
        run_id = plan_run(store, "inventories", model, attempts=1, sample=12)
        with pytest.raises(EngineCrashed):
            execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(crash_after=9))
    return path, run_id


def test_cli_metrics_of_an_unfinished_run_say_so_and_use_words(interrupted, capsys):
    db, run_id = interrupted
    assert main(["metrics", str(run_id), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"run {run_id} — Gender inventories")
    assert lines[1].startswith("UNFINISHED RUN — 9 of 12 generations made (interrupted)")
    assert lines[2].split()[0] == "what"
    table = out.split("Findings:")[0]
    # words, not keys, in the table (the keys are in --json)
    assert "Share of male characters" in table and "masculine_rate" not in table
    assert "undetected_rate" not in table


def test_pdf_page_one_marks_an_unfinished_run(interrupted, tmp_path):
    db, run_id = interrupted
    out = tmp_path / "r.pdf"
    with Store(db) as store:
        export_pdf(store, [run_id], out, "auto")
    page1 = pypdf.PdfReader(out).pages[0].extract_text()
    flat = " ".join(page1.replace("\ufb01", "fi").replace("\ufb02", "fl").split())
    assert "Unfinished run" in flat and "9 of 12 generations made (interrupted)" in flat
    assert "pronoun_counter" not in flat  # the detector in words
    assert "the pronoun detector" in flat
