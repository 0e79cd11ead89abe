"""Reports that never overstate (issue 36), on the real CLI, CSV and PDF text.

One database holds what an interrupted GenderBench harness audit leaves: a probe run with
one generation (run 1), a run whose answers the evaluator never reads (run 2: its metrics
are undefined), a run planned but without answers (run 3), and a run of a model with a
300-character name with an emoji (run 4). `gbdesk export` writes its CSV files and PDF once.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata

import pypdf
import pytest

from gbdesk.store import Store
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.helpers import read_csv

LONG_NAME = "Model 🦄 " + "x" * 292  # 300 characters
PRESET = "genderbench-1.1"


def gbdesk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gbdesk", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def pdf_text(path) -> str:
    """The PDF's text, whitespace folded, ligatures (ﬀ, ﬁ) as letters."""
    text = " ".join(p.extract_text() for p in pypdf.PdfReader(path).pages)
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text))


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """The database and its export: {"db", "csv", "pdf", "text", "stderr"}."""
    tmp = tmp_path_factory.mktemp("overstate")
    db = tmp / "a.sqlite"
    with Store(db) as store:
        model = resolve_model(store, "default")
        one = plan_run(store, "gest_creative", model, attempts=1, limit=1, template=PRESET)
        execute_run(
            store, one, backend_factory=lambda m, g: FakeBackend(["He is brave. He leads."])
        )
        unread = plan_run(store, "hiring_bloomberg", model, attempts=1, limit=4, template=PRESET)
        execute_run(
            store,
            unread,
            backend_factory=lambda m, g: FakeBackend(["I would rather not rank anyone."]),
        )
        plan_run(store, "isear", model, attempts=1, limit=5, template=PRESET)  # no answers
        named = plan_run(store, "jobs_lum", model, attempts=2, limit=30, seed=2)
        execute_run(store, named, backend_factory=lambda m, g: FakeBackend())
        long = store.register_model({"kind": "external", "name": LONG_NAME, "path": "ext:x"})
        store.db["runs"].update(named, {"model_id": long})
    out = tmp / "csv"
    pdf = tmp / "report.pdf"
    done = gbdesk(
        "export", "1", "2", "3", "4", "--csv", str(out), "--pdf", str(pdf), "--db", str(db),
        "--labels", "auto",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"db": db, "csv": out, "pdf": pdf, "text": pdf_text(pdf), "stderr": done.stderr}


def metrics_json(db, run_id: int) -> dict:
    done = gbdesk("metrics", str(run_id), "--db", str(db), "--json", "--labels", "auto")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- 1. no false zeros -----------------------------------------------------------------------
def test_probes_not_run_and_undefined_metrics_are_missing_never_zero(audit):
    rows = read_csv(audit["csv"] / "genderbench_normalized.csv")
    row = next(r for r in rows if r["model"].startswith("SmolLM2"))
    # 1.1.0's max(0, nan) made these 0: a probe that never ran, and run 2's stereotype
    # rate, undefined on answers that never rank anyone
    for column in ("BusinessVocabulary.mean_diff", "Gest.stereotype_rate", "Bbq.stereotype_rate",
                   "HiringBloomberg.stereotype_rate", "HiringAn.diff_regression"):  # fmt: skip
        assert row[column] == "", column
    assert row["Average"] == ""
    skip = ("model", "Average", "values", "gbdesk_escaped")  # values: what the table holds
    present = [float(v) for k, v in row.items() if k not in skip and v]
    text = audit["text"]
    assert f"({len(present)} of 19)" in text  # the mean of the values present counts only them
    assert "not run" in text and "not measurable (1)" in text
    assert "Not measurable: (1)" in text
    # the metrics.csv row of the undefined value: empty, with its reason in words
    metrics = read_csv(audit["csv"] / "metrics.csv")
    stereo = next(r for r in metrics if r["run_id"] == "2" and r["metric"] == "stereotype_rate")
    assert stereo["value"] == "" and stereo["reason"]


# -- 2. no certainty from one answer ---------------------------------------------------------
def test_one_generation_gives_no_zero_width_interval_nor_decided_mark(audit):
    text = audit["text"]
    first = pypdf.PdfReader(audit["pdf"]).pages[0].extract_text()
    first = re.sub(r"\s+", " ", first)
    assert "Only 1 item: not enough answers to tell (a verdict needs 10)" in first
    assert "100 % to 100 %" not in text and "catastrophic" not in first
    assert "are in the run sections" not in text  # every finding is in the report itself
    payload = metrics_json(audit["db"], 1)["metrics"]["masculine_rate"]
    assert payload["ci"] == [1.0, 1.0]  # the bootstrap's, as it came
    lo, hi = payload["ci_shown"]  # the exact interval of one answer: nearly all of 0–1
    assert lo < 0.05 and hi == 1.0
    assert payload["verdict"]["decided"] is False
    assert payload["verdict"]["marks"] == ["A", "B", "C", "D"]
    # small-sample findings rank below the measured ones (run 4 has 30 items)
    from gbdesk.analysis.findings import ordered, run_findings
    from gbdesk.analysis.results import compute_metrics
    from gbdesk.contract import get_probe

    with Store(audit["db"]) as store:
        found = ordered(
            [
                f
                for r in (1, 4)
                for f in run_findings(
                    r, "m", get_probe(store.get_run(r)["probe"]),
                    compute_metrics(store, r, "auto"), {}, {},
                )
            ]
        )  # fmt: skip
    flags = [f.too_few for f in found]
    assert True in flags and flags == sorted(flags)  # measured first, small samples after


# -- 3. the marks an interval allows, wherever a mark is shown -------------------------------
def test_marks_are_shown_with_what_their_interval_allows(audit):
    done = gbdesk("metrics", "1", "--db", str(audit["db"]), "--labels", "auto")
    line = next(x for x in done.stdout.splitlines() if x.startswith("Share of male characters "))
    assert "D (A–D, n<10)" in line  # GenderBench's letter, never alone
    rows = read_csv(audit["csv"] / "metrics.csv")
    share = next(r for r in rows if r["run_id"] == "1" and r["metric"] == "masculine_rate")
    assert share["mark"] == "D" and share["marks_allowed"] == "A B C D"
    assert share["verdict"].startswith("only 1 item: not enough answers to tell")
    text = audit["text"]
    assert "D (A–D)" in text  # Report 1.1's verdict by harm: the letter and what it allows
    # every undecided verdict in the CSV says so in words
    for r in rows:
        if r["marks_allowed"] and len(r["marks_allowed"].split()) > 1:
            assert "not enough answers to tell" in r["verdict"]


# -- 4. one interval everywhere --------------------------------------------------------------
def test_one_interval_cut_at_bounds_in_every_view(audit):
    from gbdesk.contract import get_probe

    rows = read_csv(audit["csv"] / "metrics.csv")
    payload = metrics_json(audit["db"], 4)["metrics"]
    for r in rows:
        if not r["ci_shown_low"]:
            continue
        bounds = get_probe(r["probe"]).capabilities.presentation.metric_bounds(r["metric"])
        lo, hi = float(r["ci_shown_low"]), float(r["ci_shown_high"])
        if bounds is not None:
            assert bounds[0] <= lo <= hi <= bounds[1], r
        if r["value"]:  # the interval to quote holds its own value
            assert lo <= float(r["value"]) <= hi, r
    for name, m in payload.items():
        assert "ci_shown" in m, name  # always there: the interval every view prints


def test_every_genderbench_metric_has_its_bounds():
    """Shares, rates, gaps and counts of all fourteen probes are cut where they end (the
    names of 1.1.0's own results); only the regression slopes have none."""
    from gbdesk.contract import get_probe
    from tests import genderbench_fixtures as gbf

    for probe_name in gbf.probes():
        probe = get_probe(probe_name)
        for name in gbf.point_metrics(gbf.case(probe_name)):
            bounds = probe.capabilities.presentation.metric_bounds(name)
            assert (bounds is None) == ("regression" in name and name != "diff_regression"), (
                probe_name,
                name,
            )


# -- 5. every export works on every run ------------------------------------------------------
def test_a_run_without_answers_exports_headers_and_says_so(audit, tmp_path):
    out, pdf = tmp_path / "csv", tmp_path / "empty.pdf"
    done = gbdesk("export", "3", "--csv", str(out), "--pdf", str(pdf), "--db", str(audit["db"]))
    assert done.returncode == 0, done.stderr
    assert "no answers yet" in done.stderr
    for name in ("attempts.csv", "metrics.csv"):
        lines = (out / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) == 1 and lines[0].startswith(("run_id,",))
    assert "No answers yet" in pdf_text(pdf)
    # the harness count counts probes with answers only (run 3 has none)
    assert "3 of the harness's 14 probes ran" in audit["text"]  # runs 1, 2 and 4
    assert "No answers yet (nothing of these is measured or counted): run 3" in audit["text"]


# -- 6. words, not keys ----------------------------------------------------------------------
def test_normalized_table_in_words_and_csv_reasons(audit):
    text = audit["text"]
    assert (
        "Dreaddit.max_diff_stress_rate" not in text
        and "max(0, x) /" not in text.split("GenderBench's formulas")[0]
    )
    assert "below 0 counts as 0, then halved" in text
    assert "Stereotype effect on hiring" in text  # HiringAn.diff_regression in words
    rows = read_csv(audit["csv"] / "metrics.csv")
    assert "reason" in rows[0] and "title" in rows[0]
    titles = {r["metric"]: r["title"] for r in rows if r["run_id"] == "1"}
    assert titles["masculine_rate_3"] == "Share of male characters, GEST 3: Women are empathetic"
    # the CSV keeps 1.1.0's column names
    normalized = read_csv(audit["csv"] / "genderbench_normalized.csv")
    assert "Dreaddit.max_diff_stress_rate" in normalized[0]


# -- 8. names and emoji ----------------------------------------------------------------------
def test_long_model_name_is_cut_in_headers_and_whole_in_the_appendix(audit):
    text = audit["text"]
    assert "(whole in the appendix)" in text
    appendix = text[text.index("Appendix: configuration") :]
    assert "x" * 200 in appendix.replace(" ", "")
    head = text[: text.index("Appendix: configuration")]
    assert "x" * 200 not in head.replace(" ", "")


def test_characters_without_a_font_are_named_not_boxes():
    from gbdesk.report.pdf import _has_glyph, drawable

    shown = drawable("a 🦄 and 中 and ✓")
    assert all(ord(c) < 0x2000 or _has_glyph(ord(c)) for c in shown if not c.isspace())
    assert "✓" in shown or "[check mark]" in shown


def test_audit_verdicts_on_page_one_with_the_marks_they_allow(audit, tmp_path):
    """The audit's verdicts (`AuditVerdict.to_json()`, passed as `audit["verdicts"]`) open
    the report: interval cut at the metric's bounds, the marks allowed, no colour unless
    decided."""
    from gbdesk.report.pdf import export_pdf

    info = {
        "budget": "6m", "model": LONG_NAME, "speed": "1 tokens/s", "note": "",
        "plan": [{"probe": "jobs_lum", "title": "Occupations", "items": 30, "attempts": 2,
                  "generations": 60, "expected_s": 12.0, "run_id": 4, "runs": [4]}],
        "verdicts": [{"probe": "jobs_lum", "metric": "masculine_rate", "title": "x",
                      "value": 0.31, "ci": [-0.05, 0.6], "ci_95": [0.1, 0.5],
                      "marks": ["B", "C", "D"], "decided": False, "study_mark": "B",
                      "verdict": "between B and D: not enough answers to tell", "items": 30,
                      "generations": 60, "level": 0.01}],
    }  # fmt: skip
    with Store(audit["db"]) as store:
        out = export_pdf(store, [4], tmp_path / "audit.pdf", "auto", audit=info)
    first = re.sub(r"\s+", " ", pypdf.PdfReader(out).pages[0].extract_text())
    assert first.startswith("Gender-bias audit of")  # page 1 is the decision, nothing before
    assert "0 of 3 verdicts decided" in first  # every marked metric of the probe
    assert "0.00 to 0.60" in first  # cut at 0: a share
    # no letter first: "no mark yet", the reference mark in small print beside it
    assert "no mark yet: between B and D still possible" in first
    assert "reference mark B" in first and "study's mark" not in first
    assert "run 4" in first and "x" * 100 not in first
