"""Exports that cannot be turned against their reader: spreadsheet formulas neutralised,
control characters escaped (reversibly), overlong texts cut in the PDF."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gbdesk.cli import main
from gbdesk.contract import get_probe
from gbdesk.report.csv_export import escape_text, safe_cell, unescape_cell
from gbdesk.store import Store
from gbdesk.studies.genderbench.pronouns import MAX_EVIDENCE
from gbdesk.support.limits import LABELLED_CHARS, MAX_LABELLED_CHARS, allow_big_csv_fields

INVENTORIES = get_probe("inventories")
PROMPTS = [i.prompt for i in INVENTORIES.items(INVENTORIES.resolve_params())]


@pytest.mark.parametrize(
    "text",
    [
        "=1+1",
        " =HYPERLINK(\"http://x\", \"click\")",
        "\t=1",
        "  \t +SUM(A1)",
        "-2+3",
        "@SUM(A1)",
        "\u3000=1",  # an ideographic space first
        "'=1",  # an apostrophe already there: one more, so reading back is exact
        "\n=1",
    ],
)
def test_formulas_are_neutralised_even_after_whitespace(text):
    cell = safe_cell(text)
    assert cell.startswith("'"), cell
    assert unescape_cell(cell) == text


@pytest.mark.parametrize("text", ["plain", "a = b", "x@y.z", "'quoted'", " spaced", "1-2"])
def test_ordinary_text_is_unchanged(text):
    assert safe_cell(text) == text


def test_a_carriage_return_before_a_formula_is_escaped_not_kept():
    assert safe_cell("\r=1") == "\\x0d=1"  # starts with a backslash: no formula


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("nul\x00byte", "nul\\x00byte"),
        ("bell\x07", "bell\\x07"),
        ("cr\r\nlf", "cr\\x0d\nlf"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("c1\x9bcsi\x85nel", "c1\\x9bcsi\\x85nel"),
        ("del\x7f", "del\\x7f"),
        ("sep\u2028par\u2029", "sep\\x{2028}par\\x{2029}"),
        ("bidi\u202eevil\u2066", "bidi\\x{202e}evil\\x{2066}"),
        ("a literal \\x1b stays readable", "a literal \\x5cx1b stays readable"),
        ("C:\\path\\file", "C:\\path\\file"),
        ("emoji \U0001f600 and Ünïcode", "emoji \U0001f600 and Ünïcode"),
    ],
)
def test_control_characters_are_escaped_reversibly(text, cell):
    assert escape_text(text) == cell
    assert unescape_cell(cell) == text


def test_numbers_stay_numbers():
    assert safe_cell(-5) == -5 and safe_cell(0.5) == "0.5" and safe_cell(None) == ""
    assert safe_cell(True) == "true" and safe_cell(float("nan")) == ""


def _import_jsonl(tmp_path: Path, records: list[dict]) -> tuple[Path, int]:
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    db = tmp_path / "db.sqlite"
    assert main(["import", "--probe", "inventories", "--file", str(path), "--db", str(db),
                 "--deal-rows"]) == 0  # fmt: skip
    with Store(db) as store:
        return db, store.list_runs()[0]["id"]


def _cells(path: Path) -> list[dict[str, str]]:
    allow_big_csv_fields()
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_exported_csv_holds_no_active_content_and_reads_back_exactly(tmp_path, capsys):
    texts = [
        " =HYPERLINK(\"http://evil\", \"x\")",
        "\x1b]8;;http://evil\x07link\x1b]8;;\x07 and \x1b[2J",
        "She\x00said\u202e\u2028so\r\n",
        "@cmd|' /C calc'!A0",
        "\t-1+1",
    ]
    db, run_id = _import_jsonl(
        tmp_path, [{"prompt": p, "response": t} for p, t in zip(PROMPTS, texts, strict=False)]
    )
    out = tmp_path / "csv"
    assert main(["export", str(run_id), "--csv", str(out), "--db", str(db)]) == 0
    rows = _cells(out / "attempts.csv")
    assert sorted(unescape_cell(r["response"]) for r in rows) == sorted(texts)
    for row in rows:
        for value in row.values():
            assert not any(ord(c) < 32 and c not in "\t\n" for c in value), value
            assert not any(0x7F <= ord(c) <= 0x9F for c in value), value
            assert not value.lstrip().startswith(("=", "+", "-", "@")), value


def test_a_10_mb_response_does_not_stall_the_report(tmp_path, capsys):
    """One 10 MB response (100,000 pronouns) and a 1 MB model name: the label counts the
    pronouns of the first MAX_LABELLED_CHARS characters (issue 35) and keeps at most
    MAX_EVIDENCE highlight spans (decoding megabytes of evidence at every label read made the
    report take 43 s), the PDF cuts overlong texts with a note, and the CSV keeps the whole
    response."""
    from pypdf import PdfReader

    long_text = ("She said nothing at all, " + "and the rain kept on falling " * 3) * 100_000
    assert len(long_text) > 10_000_000
    model = "m" * 1_000_000
    db, run_id = _import_jsonl(
        tmp_path,
        [
            {"prompt": PROMPTS[0], "response": long_text, "model": model},
            {"prompt": PROMPTS[1], "response": "He left.", "model": model},
        ],
    )
    with Store(db) as store:
        labels = store.labels(run_id, "auto")
    big = max(labels.values(), key=lambda lbl: lbl["data"]["female_count"])
    assert big["data"]["female_count"] == long_text[:MAX_LABELLED_CHARS].count("She")
    assert big["data"][LABELLED_CHARS] == MAX_LABELLED_CHARS
    assert len(big["evidence"]) == min(MAX_EVIDENCE, big["data"]["female_count"])

    pdf = tmp_path / "report.pdf"
    assert main(["export", str(run_id), "--pdf", str(pdf), "--db", str(db)]) == 0
    pages = [page.extract_text() for page in PdfReader(pdf).pages]
    text = " ".join(pages[:2])
    # the name is cut short in headings and findings, to 3,000 characters in the appendix
    assert "(whole in the appendix)" in " ".join(text.split())
    everything = " ".join(" ".join(pages).split())
    assert "characters cut; the full text is in the CSV export" in everything
    assert "m" * 3001 not in " ".join(pages).replace("\n", "")

    out = tmp_path / "csv"
    assert main(["export", str(run_id), "--csv", str(out), "--db", str(db)]) == 0
    rows = _cells(out / "attempts.csv")
    assert sorted(len(unescape_cell(r["response"])) for r in rows) == [8, len(long_text)]


def test_a_story_too_long_for_the_extractor_is_labelled_so():
    from gbdesk.studies.laissez_faire.probe import MAX_STORY_CHARS, TOO_LONG

    probe = get_probe("laissez_faire")
    meta = probe.items(probe.resolve_params())[0].metadata
    label = probe.label("Maria smiled. " * (MAX_STORY_CHARS // 10), meta)
    assert label["label"] == TOO_LONG and label["data"]["characters"] == []
    assert probe.capabilities.review.undecided(label["label"])


# -- the mark of escaped cells (issue 27) -----------------------------------------------------
def test_import_undoes_exactly_the_cells_the_export_marked(tmp_path):
    """Per row, the export names the columns it escaped; reading back undoes those cells
    and no other: a cell a person typed into an unmarked row or column stays as typed."""
    from gbdesk.contract.importing import read_rows
    from gbdesk.report.csv_export import write_csv
    from gbdesk.support.guards import ESCAPED_COLUMN

    path = tmp_path / "t.csv"
    write_csv(path, ["a", "b", "n"], [{"a": "=x", "b": "\\x41 \u202e", "n": -5},
                                      {"a": "plain", "b": "'quoted'", "n": 2}])  # fmt: skip
    with path.open(encoding="utf-8", newline="") as fh:
        raw = list(csv.reader(fh))
    assert raw[0] == ["a", "b", "n", ESCAPED_COLUMN]
    assert raw[1] == ["'=x", "\\x5cx41 \\x{202e}", "-5", "a;b"] and raw[2][3] == ""
    with path.open("a", encoding="utf-8", newline="") as fh:  # a row a person added
        csv.writer(fh).writerow(["'=typed", "\\x41", "3", ""])
    rows = [record for _, record in read_rows(path)]
    assert rows[0] == {"a": "=x", "b": "\\x41 \u202e", "n": "-5"}
    assert rows[1] == {"a": "plain", "b": "'quoted'", "n": "2"}
    assert rows[2] == {"a": "'=typed", "b": "\\x41", "n": "3"}  # as typed


def test_the_mark_survives_columns_learnt_on_the_way(tmp_path):
    """The spool writes rows under the columns known so far; when later rows bring new
    columns (or another order is asked), its rewrite keeps each row's mark with it."""
    from gbdesk.contract.importing import read_rows
    from gbdesk.report.csv_export import _Spool

    spool = _Spool(tmp_path, "t.csv")
    spool.add_columns(["a"])
    spool.write([{"a": "=first"}])
    spool.add_columns(["b"])
    spool.write([{"a": "second", "b": "\x1b[2J"}])
    pending, fh = spool.finish(["b", "a"])
    pending.finish(fh)
    pending.commit()
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary file left
    rows = [record for _, record in read_rows(tmp_path / "t.csv")]
    assert rows == [{"b": "", "a": "=first"}, {"b": "\x1b[2J", "a": "second"}]
