"""docs/adding_a_study.md works: its toy study, installed from a temporary package, runs
through the CLI (items, a run on a fake endpoint, metrics, CSV, PDF) and the app's panes
without any edit to gbdesk's own files."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tests as _tests
from tests.fakes import FakeOpenAIServer
from tests.helpers import read_csv

ROOT = _tests.ROOT
DOC = ROOT / "docs" / "adding_a_study.md"


def doc_files() -> dict[str, str]:
    """The files the page spells out: code blocks whose first line is `# file: PATH`."""
    files = {}
    text = DOC.read_text(encoding="utf-8")
    for block in re.findall(r"```(?:python|toml)\n(.*?)```", text, re.S):
        first, _, rest = block.partition("\n")
        if first.startswith("# file: "):
            files[first.removeprefix("# file: ").strip()] = rest
    return files


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory) -> Path:
    """The toy package built from the page and pip-installed into a temporary folder."""
    package = tmp_path_factory.mktemp("gbdesk-shirts")
    for name, text in doc_files().items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(package)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert (site / "gbdesk_shirts" / "probe.py").is_file()
    assert list(site.glob("gbdesk_shirts-*.dist-info/entry_points.txt"))
    return site


def answer(content: str, seed: int) -> str:
    """Deterministic fake answers: girls' names get pink more often."""
    h = int(hashlib.sha256(f"{content}|{seed}".encode()).hexdigest(), 16) % 10
    girl = any(n in content for n in ("Emma", "Olivia", "Sofia"))
    if h == 9:
        return "Green."
    return "Pink." if h < (7 if girl else 2) else "Blue."


def gbdesk(site: Path, *args: str, db: Path | None = None) -> subprocess.CompletedProcess:
    """`gbdesk ARGS` in a fresh process that sees the toy package (PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    extra = ["--db", str(db)] if db is not None else []
    return subprocess.run(
        [sys.executable, "-m", "gbdesk", *args, *extra],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_the_page_spells_out_a_whole_package():
    assert set(doc_files()) == {
        "pyproject.toml",
        "gbdesk_shirts/__init__.py",
        "gbdesk_shirts/probe.py",
    }


def test_toy_study_through_the_cli(toy_site, tmp_path):
    db = tmp_path / "toy.sqlite"
    probes = json.loads(gbdesk(toy_site, "probes", "--json").stdout)["probes"]
    toy = next(p for p in probes if p["name"] == "shirt_colour")
    assert toy["study"] == "shirts" and toy["items"] == 6
    assert {"inventories", "laissez_faire"} <= {p["name"] for p in probes}
    items = json.loads(gbdesk(toy_site, "items", "--probe", "shirt_colour", "--json").stdout)
    assert items["items"][0]["prompt"].startswith("Emma is six.")
    with FakeOpenAIServer(answer) as server:
        run = gbdesk(
            toy_site, "run", "--probe", "shirt_colour", "--endpoint", server.url,
            "--endpoint-model", "fake", "--json", db=db,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["status"] == "done" and summary["attempts"] == 24
    metrics = json.loads(gbdesk(toy_site, "metrics", "1", "--json", db=db).stdout)["metrics"]
    # the fake answers favour pink for girls' names: the gap is positive, within [-1, 1]
    assert 0 < metrics["pink_gap"]["value"] <= 1
    lo, hi = metrics["pink_gap"]["ci"]
    assert lo <= metrics["pink_gap"]["value"] <= hi
    out = tmp_path / "out"
    pdf = out / "toy.pdf"
    export = gbdesk(toy_site, "export", "1", "--csv", str(out), "--pdf", str(pdf), db=db)
    assert export.returncode == 0, export.stderr
    rows = read_csv(out / "attempts.csv")
    assert len(rows) == 24 and {r["detected"] for r in rows} <= {"pink", "blue", "other"}
    assert (out / "toy.pdf").stat().st_size > 5000
    from pypdf import PdfReader

    text = " ".join(" ".join(page.extract_text().split()) for page in PdfReader(pdf).pages)
    assert "Shirt colours (toy study)" in text and "Pink shirts by the name" in text
    assert "more often for girls' names" in text  # the study's own summary
    # the study's files are all the change: nothing in gbdesk's tree names it
    assert not list((ROOT / "gbdesk").rglob("*shirt*"))


@pytest.mark.gui
def test_toy_study_in_the_app(toy_site, tmp_path, qtbot, monkeypatch):
    from gbdesk.contract import registry as studies

    monkeypatch.syspath_prepend(str(toy_site))
    studies.reload()
    try:
        assert "shirt_colour" in studies.probe_names()
        db = tmp_path / "toy.sqlite"
        with FakeOpenAIServer(answer) as server:
            done = gbdesk(
                toy_site, "run", "--probe", "shirt_colour", "--endpoint", server.url,
                "--endpoint-model", "fake", "--limit", "2", "--json", db=db,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        from PySide6.QtCore import QSettings

        from gbdesk.ui.main_window import MainWindow

        settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
        window = MainWindow(str(db), settings)
        qtbot.addWidget(window)
        window.show()
        runs = window.runs
        titles = [runs.probe_list.item(i).text() for i in range(runs.probe_list.count())]
        assert any("Shirt colours (toy study)" in t for t in titles)
        review = window.review
        qtbot.waitUntil(lambda: review.run_combo.count() == 1, timeout=20000)
        qtbot.waitUntil(lambda: review.queue.count() == 8, timeout=20000)
        assert type(review.view).__name__ == "GenericReviewView"
        results = window.results
        window.show_pane("Results")
        qtbot.waitUntil(lambda: bool(results.results), timeout=30000)
        assert "pink_gap" in results.results[1]["metrics"]
        qtbot.waitUntil(lambda: results.plots and not results.rendering(), timeout=30000)
        # two items ran (no boys' names): the pink gap has no bar, and the pane says why
        notes = " ".join(m.text() for m in results.missing_notes)
        assert "Nothing to plot: Pink gap — not measurable with these items" in notes
    finally:  # forget the toy study: later tests see the built-in catalogue only
        monkeypatch.undo()
        importlib.invalidate_caches()
        studies.reload()
        assert "shirt_colour" not in studies.probe_names()
