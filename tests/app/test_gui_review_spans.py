"""The Review pane highlights exactly the characters a label read (issue 35, item 5), after
characters whose lower case is longer ("İ"), and for evaluators whose spans carry no kind
([start, end]: the pane used to stop on them)."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from gbdesk.contract import get_probe
from gbdesk.store import Store
from gbdesk.workflows.importer import import_generations
from tests.gui_helpers import make_window, wait_for

pytestmark = pytest.mark.gui

PREFIX = "İİ İstanbul ẞ ﬁ e\u0301. "
ANSWERS = {  # probe → (answer, the characters its highlights must cover)
    "relationship_levy": (PREFIX + "I would pick (B).", ["(B)"]),
    "direct": (PREFIX + "YES, I agree.", ["YES"]),
    "bbq": (PREFIX + "The answer is (a).", ["(a)"]),
}


def highlighted(browser) -> list[str]:
    """The runs of text the browser shows on a coloured background (the highlights)."""
    doc, out = browser.document(), []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            brush = fragment.charFormat().background()
            if fragment.isValid() and brush.style() != Qt.BrushStyle.NoBrush:
                out.append(fragment.text())
            it += 1
        block = block.next()
    return out


@pytest.mark.parametrize("name", list(ANSWERS))
def test_the_review_pane_highlights_what_the_label_read(qtbot, tmp_path, settings, name):
    probe = get_probe(name)
    answer, expected = ANSWERS[name]
    path = tmp_path / "in.jsonl"
    item = probe.items(probe.resolve_params())[0]
    path.write_text(json.dumps({"prompt": item.prompt, "response": answer}) + "\n", "utf-8")
    db = str(tmp_path / "review.sqlite")
    with Store(db) as store:
        import_generations(store, name, path)
    window = make_window(qtbot, db, settings)
    review = window.review
    window.show_pane("Review")
    wait_for(qtbot, lambda: len(review.items) == 1)
    review.queue.setCurrentRow(0)
    wait_for(qtbot, lambda: answer[-8:] in review.view.text.toPlainText())
    assert highlighted(review.view.text) == expected
