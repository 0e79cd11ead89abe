"""Report content (no Qt) and the PDF written by the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pypdf
import pytest

from gbdesk.report.content import build_report, configuration
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend

EVIL = "<b>Evil</b> & <script>alert(1)</script> model"


@pytest.fixture
def two_runs(tmp_path):
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        model = resolve_model(store, "default")
        a = plan_run(store, "inventories", model, attempts=2, limit=24, seed=1)
        execute_run(store, a, backend_factory=lambda m, g: FakeBackend())
        b = plan_run(store, "jobs_lum", model, attempts=1, limit=30, seed=2)
        execute_run(store, b, backend_factory=lambda m, g: FakeBackend())
        evil = store.register_model({"kind": "external", "name": EVIL, "path": "external:x"})
        store.db["runs"].update(b, {"model_id": evil})
    return path


def export_pdf_cli(db, run_ids: list[int], out) -> None:
    """`gbdesk export RUN… --pdf OUT --labels auto` in a fresh process."""
    args = ["export", *map(str, run_ids), "--pdf", str(out), "--db", str(db), "--labels", "auto"]
    result = subprocess.run(
        [sys.executable, "-m", "gbdesk", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr


def test_content_has_verdict_summary_and_configuration(two_runs):
    with Store(two_runs) as store:
        data = build_report(store, [1, 2], "auto")
    columns, rows = data.verdict()
    assert ("inventories", "masculine_rate") in columns and ("jobs_lum", "disparity") in columns
    assert [r["model"] for r in rows] == ["SmolLM2-135M-Instruct (bundled default)", EVIL]


def test_verdict_keeps_repeated_runs_of_a_probe_apart(two_runs):
    with Store(two_runs) as store:
        model = resolve_model(store, "default")
        again = plan_run(store, "inventories", model, attempts=1, limit=24, seed=9)
        execute_run(store, again, backend_factory=lambda m, g: FakeBackend())
        data = build_report(store, [1, again], "auto")
    _, rows = data.verdict()
    assert [r["runs"] for r in rows] == [[1], [again]]
    summary = data.summary()
    assert "masculine rate" in summary[0] and "tiny 135M-parameter" in summary[0]
    config = dict(configuration(data.runs[0]))
    assert len(config["SHA-256"]) == 64
    assert config["Quantisation"] == "Q4_1"
    assert "seed 1" in config["Generation"] and "temperature 1.0" in config["Generation"]
    assert "llama-cpp-python" in config["Versions"]


def test_cli_pdf_report(two_runs, tmp_path):
    out = tmp_path / "report.pdf"
    export_pdf_cli(two_runs, [1, 2], out)
    reader = pypdf.PdfReader(str(out))
    assert len(reader.pages) >= 5
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in reader.pages))
    assert "SmolLM2-135M-Instruct" in text
    assert EVIL in text  # escaped: shown literally, never interpreted as markup
    metrics = json.loads(
        subprocess.run(
            [sys.executable, "-m", "gbdesk", "metrics", "1", "--db", str(two_runs), "--json"],
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout
    )["metrics"]
    assert f"{metrics['masculine_rate']['value']:.3f}" in text
    for heading in (
        "Verdict",
        "Summary",
        "Probe cards",
        "Limitations",
        "Appendix",
        "Chat template",
        "Detector quality",
    ):
        assert heading in text, heading


def test_laissez_faire_report(tmp_path):
    from tests.fakes import recorded_laissez_faire

    db = tmp_path / "lf.sqlite"
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "laissez_faire", model, attempts=2, seed=3)
        execute_run(
            store, run_id, backend_factory=lambda m, g: FakeBackend(recorded_laissez_faire())
        )
        data = build_report(store, [run_id], "auto")
        section = data.runs[0]
        assert section.extra["not_measured"] == ["MENA", "NHPI"]
        assert "% of characters have a name" in data.summary()[0]
        metrics = section.metrics
    out = tmp_path / "lf.pdf"
    export_pdf_cli(db, [run_id], out)
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in pypdf.PdfReader(out).pages))
    for heading in (
        "Gender representation (power-neutral stories)",
        "Race subordination",
        "Racialized subordination curves",
        "Most frequent names per race",
        "Not measured: MENA, NHPI",
        "Identity-proxy terms",
    ):
        assert heading in text, heading
    female = metrics["subordination/All/gender/Female"]
    assert f"{female.value:.3f}" in text
    assert re.search(r"All \d+ metrics .*Metric Value 95 % CI p p, BH-adjusted n", text)
    # page 1 opens with the findings, in words; metric names for people, not keys
    first = pypdf.PdfReader(out).pages[0].extract_text()
    assert "Findings" in first
    assert "Subordination of women (all domains)" in text
    assert "subordination/All/gender/Female" not in text
