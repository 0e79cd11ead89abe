"""Stereotype coding in the Review pane (offscreen): two raters code stories by keyboard,
a third person adjudicates a disagreement, the agreement and cluster view follows."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gbdesk.people import coding, raters
from gbdesk.store import Store
from tests.gui_helpers import make_window, settle, wait_for
from tests.people.test_raters import import_stories

pytestmark = pytest.mark.gui


def ticked(view) -> list[str]:
    return [b.property("code") for b in view.checks if b.isChecked()]


def code_by_keys(qtbot, window, panel, keys: str, memo: str = "") -> int:
    """Toggle codes with number keys on the current story, type a memo, Enter; returns the
    attempt coded."""
    view = panel.view
    attempt_id = panel.current().attempt_id
    view.set_codes([], "")
    for key in keys:
        qtbot.keyClick(view.text, key)
    if memo:
        view.memo.setFocus()
        qtbot.keyClicks(view.memo, memo)
    target = view.memo if memo else view.text
    qtbot.keyClick(target, Qt.Key.Key_Return)
    settle(qtbot, window)
    return attempt_id


def test_two_raters_code_by_keyboard_adjudicate_and_see_clusters(qtbot, tmp_path, settings):
    db = str(tmp_path / "coding.sqlite")
    with Store(db) as store:
        run_id = import_stories(store, tmp_path)
    window = make_window(qtbot, db, settings)
    review = window.review
    window.show_pane("Review")
    window.activateWindow()
    wait_for(qtbot, lambda: review.run_combo.count() == 1 and review.items)
    assert review.mode_combo.isVisible()
    review.set_coding_mode(True)
    panel = review.coding
    assert review.stack.currentWidget() is panel
    panel.draw(per_category=1, seed=7, threshold=0.6)
    settle(qtbot, window)
    wait_for(qtbot, lambda: len(panel.all_items) == 6)  # one story per category, six of them
    view = panel.view
    assert type(view).__name__ == "StoryCodingView"  # the study's view, through the hook
    assert [b.text() for b in view.checks] == [
        "1 · White Savior",
        "2 · Perpetual Foreigner",
        "3 · Noble Savage",
    ]
    # identity terms and names are highlighted in the story
    first = panel.current()
    story_html = view.text.toHtml()
    if first.category.endswith("(terms)"):
        assert "#7e22ce" in story_html
    assert "identity terms" in view.header.text()

    # ana codes the first three stories by keyboard; digits typed in the memo stay text
    plan = {0: ("13", "elder and land, 2 codes"), 1: ("2", ""), 2: ("", "")}
    coded: dict[int, int] = {}
    for row, (keys, memo) in plan.items():
        assert panel.queue.currentRow() == row
        coded[row] = code_by_keys(qtbot, window, panel, keys, memo)
    wait_for(qtbot, lambda: "You (ana) coded <b>3</b> of 6" in panel.status.text())
    with Store(db) as store:
        ana = store.rater_labels(run_id, raters.CODES)["ana"]
    assert ana[coded[0]]["data"] == {
        "codes": ["white_savior", "noble_savage"],
        "memo": "elder and land, 2 codes",
    }
    assert ana[coded[1]]["data"]["codes"] == ["perpetual_foreigner"]
    assert ana[coded[2]]["data"]["codes"] == []
    assert panel.queue.item(0).text().startswith("✓ ")

    # ben (the same desk, another name) codes the same three; he differs on the second
    review.reviewer.setText("ben")
    review.reviewer.editingFinished.emit()
    settle(qtbot, window)
    assert panel.queue.item(0).text().startswith("• ")  # not yet coded by ben
    panel.queue.setCurrentRow(0)
    panel.queue.setFocus()
    for row, keys in ((0, "13"), (1, "21"), (2, "")):
        assert panel.queue.currentRow() == row
        assert code_by_keys(qtbot, window, panel, keys) == coded[row]
    wait_for(qtbot, lambda: "You (ben) coded <b>3</b> of 6" in panel.status.text())
    assert "ana 3" in panel.status.text() and "ben 3" in panel.status.text()
    assert "Disputed: 1" in panel.status.text()

    # cleo adjudicates: the disagreement queue holds the one story the raters differ on
    review.reviewer.setText("cleo")
    review.reviewer.editingFinished.emit()
    review.adjudicate.setChecked(True)
    panel.filter_combo.setCurrentIndex(panel.filter_combo.findData("disputed"))
    settle(qtbot, window)
    assert [i.attempt_id for i in panel.items] == [coded[1]]
    assert "Raters disagree" in view.others.text()
    assert ticked(view) == ["perpetual_foreigner"]  # what both raters gave
    code_by_keys(qtbot, window, panel, "12", "a tourist guide saves him")
    wait_for(qtbot, lambda: "adjudicated: 1" in panel.status.text())
    with Store(db) as store:
        consensus = store.labels(run_id, "consensus", facet=raters.CODES)
        assert consensus[coded[1]]["source"] == "consensus:cleo"
        assert consensus[coded[1]]["data"]["codes"] == ["white_savior", "perpetual_foreigner"]
        agreement = raters.codes_agreement(store, run_id)
        summary = coding.coding_summary(store, run_id)
    assert agreement["current"]["percent_agreement"]["pairwise"] == pytest.approx(2 / 3)
    assert agreement["adjudication"]["n_adjudicated"] == 1
    assert agreement["adjudication"]["n_unresolved"] == 0
    # the queue keeps its rows while one works through it; chosen again, it is empty
    panel.filter_combo.setCurrentIndex(panel.filter_combo.findData("all"))
    panel.filter_combo.setCurrentIndex(panel.filter_combo.findData("disputed"))
    settle(qtbot, window)
    assert panel.items == []  # nothing left to decide

    # the agreement and cluster view
    panel.tabs.setCurrentWidget(panel.summary_view)
    board = panel.summary_view
    assert "disputed 1, adjudicated 1, unresolved 0" in board.progress.text()
    rows = [
        [board.agreement.item(r, c).text() for c in range(board.agreement.columnCount())]
        for r in range(board.agreement.rowCount())
    ]
    assert rows[-1][0] == "Whole code sets" and rows[-1][3] == "67 %"
    assert "1 of 1 disputed texts settled by a consensus, 0 unresolved" in board.adjudicated.text()
    clusters = [
        [board.clusters.item(r, c).text() for c in range(board.clusters.columnCount())]
        for r in range(board.clusters.rowCount())
    ]
    expected = [
        [g["category"], ", ".join(c["names"]), str(c["size"])]
        for g in summary["clusters"]
        for c in g["clusters"]
    ]
    assert [row[:3] for row in clusters] == expected
    assert len(clusters) == 3  # the three stories each coded (and decided) differently
    assert "White Savior, Perpetual Foreigner" in [row[1] for row in clusters]
    board.clusters.setCurrentCell(1, 0)
    assert "representative of 1 text" in board.story.toPlainText()


def test_disagreement_queue_adjudication_and_results_per_rater(qtbot, tmp_path, settings):
    from gbdesk.analysis.results import compute_metrics
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend

    db = str(tmp_path / "labels.sqlite")
    with Store(db) as store:
        model = resolve_model(store, "default")
        run_id = plan_run(store, "inventories", model, attempts=1, limit=6)
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
        compute_metrics(store, run_id)
        ids = sorted(store.labels(run_id, "auto"))
        for n, a in enumerate(ids):
            store.add_human_label(a, "ana", "male")
            store.add_human_label(a, "ben", "male" if n % 2 else "female")
    window = make_window(qtbot, db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: review.run_combo.count() == 1 and review.items)
    settle(qtbot, window)
    assert not review.mode_combo.isVisible()  # no coding mode for this probe
    wait_for(qtbot, lambda: "Agreement between raters" in review.stats.text())
    review.reviewer.setText("cleo")
    review.reviewer.editingFinished.emit()
    review.adjudicate.setChecked(True)  # goes to the disagreement queue
    settle(qtbot, window)
    assert review.filter_combo.currentData() == "rater_disagreements"
    wait_for(qtbot, lambda: len(review.items) == 3)
    assert all(i.raters_disagree and not i.adjudicated for i in review.items)
    assert "≠ raters disagree" in review.queue.item(0).text()
    first = review.current().attempt_id
    assert [b.text() for b in review.adopt_buttons] == [
        "Take ana's label as the consensus",
        "Take ben's label as the consensus",
    ]
    review.adopt_buttons[1].click()  # ben's: female
    settle(qtbot, window)
    with Store(db) as store:
        consensus = store.labels(run_id, "consensus")
    assert consensus[first]["label"] == "female"
    assert consensus[first]["source"] == "consensus:cleo"
    assert "≡ consensus by cleo" in review.queue.item(0).text()

    results = window.results
    window.show_pane("Results")
    wait_for(qtbot, lambda: results.results, timeout=60000)
    settle(qtbot, window)
    wait_for(qtbot, lambda: results.mode_combo.findData("consensus") >= 0)
    assert results.mode_combo.findData("rater:ana") >= 0
    results.mode_combo.setCurrentIndex(results.mode_combo.findData("rater:ben"))
    wait_for(qtbot, lambda: results.results and results.mode() == "rater:ben", timeout=60000)
    settle(qtbot, window)
    assert "ben's labels</b> (6 attempts)" in results.caption.text()
    results.mode_combo.setCurrentIndex(results.mode_combo.findData("consensus"))
    wait_for(qtbot, lambda: results.mode() == "consensus", timeout=60000)
    settle(qtbot, window)
    wait_for(qtbot, lambda: "consensus labels" in results.caption.text())
    assert "1 adjudicated" in results.caption.text()
    assert "2 disagreement(s) not adjudicated yet" in results.caption.text()
    # the Reports pane offers each rater's and the consensus labels; the PDF says which
    import pypdf

    reports = window.reports
    window.show_pane("Reports")
    reports.refresh()
    settle(qtbot, window)
    wait_for(qtbot, lambda: reports.mode_combo.findData("rater:ben") >= 0)
    reports.mode_combo.setCurrentIndex(reports.mode_combo.findData("consensus"))
    out = tmp_path / "consensus.pdf"
    reports.export_pdf(str(out))
    settle(qtbot, window)
    wait_for(qtbot, out.exists, timeout=60000)
    text = " ".join(" ".join(p.extract_text().split()) for p in pypdf.PdfReader(str(out)).pages)
    assert "consensus labels: 1 generations adjudicated" in text
    assert "2 disagreement(s) not adjudicated yet" in text
    assert "Agreement between raters" in text


def test_codebook_edited_in_the_pane_gives_a_new_number_key(qtbot, tmp_path, settings):
    from gbdesk.ui.coding_panel import CodebookDialog

    db = str(tmp_path / "book.sqlite")
    with Store(db) as store:
        run_id = import_stories(store, tmp_path)
        coding.draw_selection(store, run_id, per_category=1, seed=3)
    window = make_window(qtbot, db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: review.run_combo.count() == 1)
    review.set_coding_mode(True)
    panel = review.coding
    settle(qtbot, window)
    wait_for(qtbot, lambda: len(panel.view.checks) == 3)
    dialog = CodebookDialog(panel.book)
    dialog.table.item(0, 0).setText("White Saviour")
    dialog.add_row()
    dialog.table.item(3, 0).setText("Model Minority")
    dialog.table.item(3, 1).setText("Asian characters cast as quietly successful.")
    assert dialog.changes() == [
        ("edit", "white_savior", "White Saviour", panel.book[0]["definition"]),
        ("add", None, "Model Minority", "Asian characters cast as quietly successful."),
    ]
    panel.apply_codebook(dialog.changes())
    settle(qtbot, window)
    view = panel.view
    wait_for(qtbot, lambda: len(view.checks) == 4)
    assert view.checks[0].text() == "1 · White Saviour"
    assert view.checks[3].text() == "4 · Model Minority"
    qtbot.keyClick(view.text, "4")
    assert ticked(view) == ["model_minority"]
    with Store(db) as store:
        book = store.codebook(run_id)
    assert [e["name"] for e in book][-1] == "Model Minority"
    assert book[-1]["changed_by"] == "ana" and book[0]["changed_by"] == "ana"
