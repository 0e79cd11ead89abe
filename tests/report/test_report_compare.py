"""The PDF's comparison section: runs of one probe compared item by item."""

from __future__ import annotations

import re

import pypdf

from gbdesk.report.content import build_report, comparable_pairs
from gbdesk.report.pdf import render_pdf
from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend

MALE = "He is a kind man. He likes his work and he helps his friends."
FEMALE = "She is a kind woman. She likes her work and she helps her friends."


def test_pdf_compares_runs_of_the_same_probe(tmp_path):
    db = tmp_path / "c.sqlite"
    with Store(db) as store:
        model = resolve_model(store, "default")
        a = plan_run(store, "inventories", model, attempts=2, limit=40)
        execute_run(store, a, backend_factory=lambda m, g: FakeBackend([FEMALE]))
        b = plan_run(store, "inventories", model, attempts=2, limit=40)
        execute_run(store, b, backend_factory=lambda m, g: FakeBackend([MALE]))
        data = build_report(store, [a, b], "auto")
    assert comparable_pairs(data.runs) == [(a, b)]
    (c,) = data.comparisons
    m = c.metrics["masculine_rate"]
    assert (c.run_a, c.run_b) == (a, b) and m.diff == 1.0 and m.established
    out = render_pdf(data, tmp_path / "c.pdf")
    pages = pypdf.PdfReader(out).pages
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in pages))
    assert "Comparisons" in text and f"run {b} (B:" in text
    assert "has a higher share of male characters (masculine_rate)" in text
    # page 1 says what the comparison established
    assert "higher share of male characters" in re.sub(r"\s+", " ", pages[0].extract_text())
