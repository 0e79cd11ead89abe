"""Widgets that keep the window responsive on big runs: the lazily described Review queue,
result views built over several turns, and the metric glossary lookups."""

from __future__ import annotations

import itertools
import re

import pytest

from gbdesk.support import glossary

pytestmark = pytest.mark.gui


def test_lazy_list_describes_only_the_rows_on_screen(qtbot):
    from gbdesk.ui.widgets import LazyList

    asked: list[int] = []

    def describe(row: int):
        asked.append(row)
        return f"row {row}", None

    view = LazyList()
    qtbot.addWidget(view)
    view.resize(300, 200)
    view.show()
    view.set_rows(500_000, describe)
    qtbot.waitExposed(view)
    view.grab()  # paints the visible rows
    assert view.count() == 500_000
    assert 0 < len(set(asked)) < 100  # a screenful, not half a million
    rows: list[int] = []
    view.currentRowChanged.connect(rows.append)
    view.setCurrentRow(250_000)
    assert view.currentRow() == 250_000 and rows[-1] == 250_000
    assert view.item(250_000).text() == "row 250000"
    assert view.item(500_000) is None
    before = asked.count(250_000)
    view.refresh_row(250_000)
    assert view.item(250_000).text() == "row 250000"
    assert asked.count(250_000) == before + 1  # described again after a change
    view.clear()
    view.addItem("No generations yet")
    assert view.count() == 1 and view.item(0).text() == "No generations yet"


def test_result_view_builds_its_later_parts_in_order(qtbot):
    from gbdesk.ui.result_views import ResultView

    view = ResultView({}, lambda *a: None, 1)
    qtbot.addWidget(view)
    done: list[int] = []
    view.later(lambda: done.append(1))
    view.later(lambda: done.append(2))
    assert view.building() and done == []
    qtbot.waitUntil(lambda: not view.building())
    assert done == [1, 2]


def test_glossary_terms_as_the_word_by_word_search():
    def one_by_one(*texts: str) -> list[str]:
        text = " " + " ".join(t.lower() for t in texts if t) + " "
        return [
            term
            for term, words in glossary._ALIASES.items()
            if any(
                re.search(re.escape(w) if w.startswith(" ") else rf"\b{re.escape(w)}", text)
                for w in words
            )
        ]

    texts = [
        ("Representation ratio", "how often a group appears; CI from items"),
        ("SDeg", "stereotype degree of each attempt"),
        ("p value", "Benjamini-Hochberg adjusted, undecidable stories"),
        ("subitem", "reviewing marks"),
        ("", ""),
    ]
    for pair in texts:
        assert glossary.terms_in(*pair) == one_by_one(*pair)
    found = glossary.terms_in("Representation ratio", "")
    found.append("changed")  # the cache hands out copies
    assert glossary.terms_in("Representation ratio", "") == ["ratio"]


def test_a_superseded_task_still_waiting_for_a_thread_is_not_run(qtbot):
    """A burst of refreshes (every run of an audit finishing) must not queue stale work
    ahead of the newest request: only the newest of a key runs once a thread is free."""
    import threading

    from gbdesk.ui.tasks import TaskRunner

    runner = TaskRunner()
    gate = threading.Event()
    ran: list[int] = []
    delivered: list[int] = []
    for _ in range(2):  # both pool threads held
        runner.submit(gate.wait, 10)
    for i in range(5):
        runner.submit(lambda i=i: ran.append(i) or i, on_done=delivered.append, key="k")
    runner.submit(lambda: ran.append(99) or 99, on_done=delivered.append)  # no key: runs
    gate.set()
    qtbot.waitUntil(lambda: not runner.busy, timeout=10_000)
    assert sorted(ran) == [4, 99] and sorted(delivered) == [4, 99]
    runner.shutdown()


def test_stored_answers_are_told_to_the_panes_once_per_run_and_then_every_few_seconds(
    qtbot, tmp_path, monkeypatch
):
    """One throttle for the Runs pane and the audit: a run not told of before at once,
    then at most every RUNS_CHANGED_EVERY_S however many answers it stores."""
    from PySide6.QtCore import QSettings

    import gbdesk.ui.context as context

    clock = [100.0]
    monkeypatch.setattr(context.time, "monotonic", lambda: clock[0])
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    ctx = context.AppContext(str(tmp_path / "db.sqlite"), settings)
    said: list[float] = []
    ctx.runs_changed.connect(lambda: said.append(clock[0]))
    for _ in range(500):  # 500 answers of run 1 within a second
        ctx.answers_stored(1)
        clock[0] += 0.002
    assert said == [100.0]
    ctx.answers_stored(2)  # a new run: at once
    assert len(said) == 2
    for _ in range(100):  # 10 s of answers of run 2, one every 0.1 s
        clock[0] += 0.1
        ctx.answers_stored(2)
    assert 4 <= len(said) - 2 <= 5  # every 2 s of the 10 (each a step of 0.1 after 2 s)
    gaps = [b - a for a, b in itertools.pairwise(said[1:])]
    assert min(gaps) >= context.RUNS_CHANGED_EVERY_S - 1e-9
