"""Rule of gbdesk issue 27: every text that reaches the PDF or a Qt rich-text view has its
bidirectional and other control characters neutralised — shown as ``<U+202E>`` — so a
right-to-left override in a model name cannot turn "stereotype rate 0.25" into
"52.0 etar epytoerets" (finding 1).

Generated cases: per group of control characters (bidi embeddings and overrides, isolates,
marks, C0, C1 and DEL, separators, other format controls), a database whose every text
that a report shows — model names, prompts, a custom template, stories and roles, rater
and coder names, codebook names and definitions, memos — carries every character of the
group; its PDF (the HTML laid out, the chart labels, the text on the pages) and the app's
rich-text views (every label and text view while each run's items are shown) must hold
none of them raw.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gbdesk.store import Store
from gbdesk.support.guards import html_text, one_line, visible_controls

GROUPS = {
    "bidi-overrides": "\u202a\u202b\u202c\u202d\u202e",
    "bidi-isolates": "\u2066\u2067\u2068\u2069",
    "bidi-marks": "\u200e\u200f\u061c",
    "c0": "".join(chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"),
    "c1-del": "".join(chr(c) for c in range(0x7F, 0xA0)),
    "separators": "\u2028\u2029",
    "format": "\u206a\u206b\u206c\u206d\u206e\u206f\ufff9\ufffa\ufffb",
}
ALL = "".join(GROUPS.values())
RAW = re.compile(f"[{re.escape(ALL)}]")


# -- the functions ------------------------------------------------------------------------
@pytest.mark.parametrize("char", list(ALL), ids=[f"U+{ord(c):04X}" for c in ALL])
def test_every_control_is_shown_visibly(char):
    text = f"Model{char}RTL 0.25"
    shown = visible_controls(text)
    assert char not in shown and f"<U+{ord(char):04X}>" in shown
    assert shown.startswith("Model") and shown.endswith("RTL 0.25")
    assert char not in html_text(text) and "&lt;U+" in html_text(text)
    assert char not in one_line(text)


def test_ordinary_text_is_unchanged():
    for text in ("plain", "tab\tand\nnewline\r", "Ünïcode 名前 مرحبا עברית 😀", "a < b & c"):
        assert visible_controls(text) == text


# -- the PDF ----------------------------------------------------------------------------------
def _controls_db(folder: Path, chars: str) -> tuple[Path, list[int]]:
    """Runs whose every shown text carries `chars`: an LF run (generated: model name,
    template, stories, codebook, codings, memos, rater names), an imported inventories run
    (model name, responses) and an imported intersectional run (roles)."""
    from gbdesk.people import coding
    from gbdesk.studies.intersectional.data import load_categories, load_groups
    from gbdesk.workflows.importer import import_generations
    from gbdesk.workflows.runs import execute_run, plan_run
    from tests.fakes import FakeBackend, fake_model, recorded_laissez_faire

    tag = f"X{chars}Y"
    db = folder / "controls.sqlite"
    with Store(db) as store:
        model = fake_model(store, folder)
        store.conn.execute(
            "UPDATE models SET name = ? WHERE id = ?", (f"Model{tag}RTL", model["id"])
        )
        model = store.get_model(model["id"])
        stories = [s.replace(" ", f" {tag} ", 1) + f" Maria{chars} smiled." for s in
                   recorded_laissez_faire()]  # fmt: skip
        lf = plan_run(store, "laissez_faire", model, attempts=1, domains="Learning",
                      template="{prompt} " + tag)  # fmt: skip
        execute_run(store, lf, backend_factory=lambda m, g: FakeBackend(stories))
        attempts = store.attempts(lf)
        for rater in (f"ana{tag}", f"bo{tag}"):  # two raters: the agreement blocks
            for a in attempts[:6]:
                store.add_human_label(a["id"], rater, "reviewed", {"characters": []}, [])
        coding.draw_selection(store, lf, per_category=2, seed=1)
        key = coding.add_code(store, lf, f"code{tag}", f"definition{tag}", f"ana{tag}")
        for item in coding.coding_items(store, lf)[:4]:
            for rater in (f"ana{tag}", f"bo{tag}"):
                coding.save_coding(store, item.attempt_id, rater, [key], f"memo{tag}")
        rows = [["item", "prompt", "response"]] + [
            [i.key, i.prompt, f"He said {tag} she left."] for i in _inventory_items()[:6]
        ]
        inv = folder / "inv.csv"
        inv.write_text(_csv(rows), encoding="utf-8")
        inv_run = import_generations(store, "inventories", inv, model_name=f"Imported{tag}")
        group, category = load_groups()[0], load_categories()[0]
        ix = folder / "ix.jsonl"
        ix.write_text(
            json.dumps({"group": group["group"], "role": f"A role {tag}", "category": 1,
                        "answer": category["options"][0]}) + "\n",
            encoding="utf-8",
        )  # fmt: skip
        ix_run = import_generations(store, "intersectional_sdeg", ix, model_name=f"Roles{tag}")
    return db, [lf, inv_run["run_id"], ix_run["run_id"]]


def _inventory_items():
    from gbdesk.contract import get_probe

    probe = get_probe("inventories")
    return probe.items(probe.resolve_params())


def _csv(rows: list[list[str]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


@pytest.mark.parametrize("group", list(GROUPS))
def test_pdf_shows_controls_visibly(tmp_path, monkeypatch, group):
    """Every control of the group in every shown text: none reaches the page raw."""
    from pypdf import PdfReader
    from PySide6.QtGui import QPainter, QTextDocument

    from gbdesk.report.pdf import export_pdf

    chars = GROUPS[group]
    db, runs = _controls_db(tmp_path, chars)
    html: list[str] = []
    drawn: list[str] = []
    set_html, draw_text = QTextDocument.setHtml, QPainter.drawText
    monkeypatch.setattr(QTextDocument, "setHtml", lambda self, t: (html.append(t),
                        set_html(self, t))[1])  # fmt: skip

    def record(self, *args):
        drawn.extend(a for a in args if isinstance(a, str))
        return draw_text(self, *args)

    monkeypatch.setattr(QPainter, "drawText", record)
    with Store(db) as store:
        pdf = export_pdf(store, runs, tmp_path / "report.pdf", label_mode="consensus")
    laid_out = "".join(html)
    assert "&lt;U+" in laid_out  # the marks are shown…
    texts = [("html", laid_out), ("charts", " ".join(drawn))]
    reader = PdfReader(pdf)
    if group == "bidi-overrides":  # the pages themselves (text extraction is slow: once)
        page = " ".join(p.extract_text() for p in reader.pages[:8])
        assert all(name in page for name in ("Model", "Imported", "Roles"))
        texts.append(("pages", page))
    for where, text in texts:
        raw = sorted({f"U+{ord(c):04X}" for c in RAW.findall(text)})
        assert not raw, f"{where}: {raw}"  # …and nothing raw is left
    assert not RAW.search(reader.metadata.title or "")


def test_finding_1_rtl_override_in_a_model_name_keeps_figures_in_order(tmp_path):
    """`import --model-name $'Model\\u202eRTL'` then the PDF: the metric table reads in
    order ("95 % CI", the value), not reversed."""
    from pypdf import PdfReader

    from gbdesk.cli import main

    rows = [["item", "prompt", "response"]] + [
        [i.key, i.prompt, "He left." if n % 2 else "She left."]
        for n, i in enumerate(_inventory_items()[:8])
    ]
    path = tmp_path / "inv.csv"
    path.write_text(_csv(rows), encoding="utf-8")
    db = tmp_path / "db.sqlite"
    args = ["import", "--probe", "inventories", "--file", path, "--model-name", "Model\u202eRTL"]
    assert main([*map(str, args), "--db", str(db)]) == 0
    pdf = tmp_path / "r.pdf"
    assert main(["export", "1", "--pdf", str(pdf), "--db", str(db)]) == 0
    text = " ".join(p.extract_text() for p in PdfReader(pdf).pages)
    assert "Model<U+202E>RTL" in text and "\u202e" not in text
    assert "95 % CI" in " ".join(text.split()) and "IC % 59" not in text


def test_finding_12_runs_cuts_a_long_model_name(tmp_path, capsys):
    from gbdesk.cli import MODEL_CHARS, main

    rows = [["item", "prompt", "response"], [_inventory_items()[0].key, "", "He left."]]
    path = tmp_path / "inv.csv"
    path.write_text(_csv(rows), encoding="utf-8")
    db = tmp_path / "db.sqlite"
    name = "m" * 100_000 + "\u202e"
    assert main(["import", "--probe", "inventories", "--file", str(path), "--model-name", name,
                 "--db", str(db)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == 0
    line = capsys.readouterr().out.strip()
    assert len(line) < 150 and line.endswith("…") and "m" * MODEL_CHARS not in line
    assert main(["runs", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["model"] == name  # --json keeps it whole


# -- the app's rich-text views --------------------------------------------------------------------
def _rendered_texts(window) -> list[tuple[str, str]]:
    """(widget, text as shown) of every rich-text label and text view in the window."""
    from PySide6.QtGui import Qt, QTextDocument  # QtGui's Qt has mightBeRichText
    from PySide6.QtWidgets import QLabel, QTextEdit

    out = []
    for label in window.findChildren(QLabel):
        text = label.text()
        rich = label.textFormat() == Qt.TextFormat.RichText or (
            label.textFormat() == Qt.TextFormat.AutoText and Qt.mightBeRichText(text)
        )
        if rich:
            doc = QTextDocument()
            doc.setHtml(text)
            out.append((label.objectName() or type(label).__name__, doc.toPlainText()))
    for view in window.findChildren(QTextEdit):
        out.append((view.objectName() or type(view).__name__, view.toPlainText()))
    return out


@pytest.mark.gui
@pytest.mark.parametrize("group", ["bidi-overrides", "c0"])
def test_rich_text_views_show_controls_visibly(qtbot, tmp_path, group):
    from PySide6.QtCore import QSettings

    from gbdesk.ui.main_window import MainWindow

    db, runs = _controls_db(tmp_path, GROUPS[group])
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("reviewer", "ana")
    window = MainWindow(str(db), settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: not window.ctx.tasks.busy, timeout=60_000)
    review = window.review
    window.show_pane("Review")
    seen = 0
    for run_id in runs:
        index = review.run_combo.findData(run_id)
        assert index >= 0
        review.run_combo.setCurrentIndex(index)
        qtbot.waitUntil(lambda: review.items and not window.ctx.tasks.busy, timeout=60_000)
        for row in range(min(4, len(review.items))):
            review.queue.setCurrentRow(row)
            qtbot.wait(50)
            for widget, text in _rendered_texts(window):
                assert not RAW.search(text), (run_id, row, widget, text[:200])
                seen += "<U+" in text
    for pane in ("Results", "Runs"):
        window.show_pane(pane)
        qtbot.waitUntil(lambda: not window.ctx.tasks.busy, timeout=60_000)
        for widget, text in _rendered_texts(window):
            assert not RAW.search(text), (pane, widget, text[:200])
    assert seen  # the marks were shown somewhere
