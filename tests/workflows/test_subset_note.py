"""What a --limit or --sample did, in words, where a run is planned (issue 26): the CLI's
first lines and the Runs pane's estimate ("12 of 149 items, chosen to keep every group").
The subset itself is `gbdesk.contract.running.balanced_subset`'s; inventories is given
groups here (its stereotype direction within each inventory) so the note can be shown on a
real probe."""

from __future__ import annotations

from typing import Any

import pytest

from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.studies.genderbench.probes.inventories.probe import InventoriesProbe
from gbdesk.workflows.runs import estimate_run, subset_note
from tests.fakes import FakeOpenAIServer

GROUPED = "12 of 149 items, chosen to keep every group (6 groups that the stereotype rate compares)"


@pytest.fixture
def grouped(monkeypatch):
    def balance_key(metadata: dict[str, Any]):
        return metadata.get("source"), metadata.get("gender")

    probe = get_probe("inventories")
    assert isinstance(probe, InventoriesProbe)
    caps = probe.capabilities
    audit = caps.audit.with_(balance_key=balance_key, balance_needed_for="the stereotype rate")
    monkeypatch.setitem(vars(probe), "capabilities", caps.with_(audit=audit))


def params(**kw):
    return get_probe("inventories").resolve_params(**kw)


def test_notes_say_what_a_limit_or_sample_kept(grouped):
    probe = get_probe("inventories")
    assert subset_note(probe, params(limit=12)) == GROUPED
    assert subset_note(probe, params()) == "all 149 items"
    assert subset_note(probe, params(sample=20)) == "a random sample of 20 of 149 items (seed 123)"
    assert subset_note(probe, params(sample=40, limit=12)) == (
        "12 of 149 items: a random sample of 40 of 149 items (seed 123), then 12 of those "
        "chosen to keep every group (6 groups that the stereotype rate compares)"
    )
    assert subset_note(probe, params(limit=500)) == "all 149 items"


def test_a_probe_without_groups_keeps_the_first_items():
    isear = get_probe("isear")
    assert subset_note(isear, isear.resolve_params(limit=5)) == "the first 5 of 7,332 items"
    # jobs_lum keeps both ends of the stereotype scale (its stereotype rate is a slope)
    jobs = get_probe("jobs_lum")
    assert subset_note(jobs, jobs.resolve_params(limit=5)).startswith(
        "5 of 339 items, chosen to keep every group (2 groups"
    )


def test_estimate_carries_the_note(store, grouped):
    est = estimate_run(store, "inventories", None, attempts=1, max_tokens=40, limit=12)
    assert est.items_note == GROUPED and est.generations == 12


def test_cli_run_prints_the_note(grouped, tmp_path, capsys):
    with FakeOpenAIServer(lambda content, seed: "He was kind.") as server:
        code = main([
            "run", "--probe", "inventories", "--limit", "12", "--max-tokens", "20",
            "--attempts", "1", "--endpoint", server.url, "--endpoint-model", "fake",
            "--db", str(tmp_path / "n.sqlite"), "--json",
        ])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"[run 1] {GROUPED}; 12 attempts" in err.splitlines()


def test_runs_pane_estimate_states_the_note(qtbot, tmp_path, grouped):
    from PySide6.QtCore import QSettings

    from gbdesk.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    window = MainWindow(str(tmp_path / "e.sqlite"), settings)
    qtbot.addWidget(window)
    pane = window.runs
    qtbot.waitUntil(lambda: pane.model_combo.count() > 0, timeout=60_000)
    pane.limit.setValue(12)
    pane.attempts.setValue(1)
    pane._update_estimate()
    qtbot.waitUntil(lambda: "chosen to keep every group" in pane.estimate.text(), timeout=60_000)
    assert pane.estimate.text().startswith(f"{GROUPED} → <b>12</b> generations")
