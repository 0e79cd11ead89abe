"""`gbdesk run --probe direct --wordings …` through an OpenAI-compatible stand-in server with
a known wording effect (`tests.wording_fakes.SENTENCE_EFFECT`: it agrees with 10 % of the
stereotypes when asked for yes/no, a letter or agree/disagree, with 60 % when asked for a
sentence, wording 3): the verdict is found to depend on the wording, wording 3's interval
lies above wording 0's, and where no effect was put (the other wordings alone; the rates of
unreadable answers, none under any wording) none is found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import ROOT
from tests.fakes import FakeOpenAIServer
from tests.wording_fakes import SENTENCE_EFFECT

ITEMS = 120
NO_EFFECT_METRICS = ("undetected_rate_attempts", "undetected_rate_items")


def run_wordings(db: Path, wordings: str) -> dict[str, Any]:
    """`gbdesk run --probe direct --wordings WORDINGS --json` against the stand-in."""
    with FakeOpenAIServer(SENTENCE_EFFECT.answer) as server:
        done = subprocess.run(
            [sys.executable, "-m", "gbdesk", "--db", str(db), "run", "--probe", "direct",
             "--wordings", wordings, "--limit", str(ITEMS), "--endpoint", server.url,
             "--endpoint-model", "fake", "--concurrency", "16", "--json"],
            capture_output=True, text=True, cwd=ROOT, timeout=300,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "unexpected error" not in done.stderr
    return json.loads(done.stdout)


@pytest.mark.timeout(400)
def test_a_wording_effect_through_a_server_is_found(tmp_path):
    got = run_wordings(tmp_path / "all.sqlite", "all")
    assert list(got["runs"]) == ["0", "1", "2", "3", "4"]
    assert got["items_compared"] == ITEMS
    stable = got["wording_stable"]
    assert stable["fail_rate"] is False
    assert got["depends_on_wording"] == ["fail_rate"]
    for name in NO_EFFECT_METRICS:
        assert stable[name] is True, name
    by = got["by_wording"]
    for name in ("fail_rate", "sbic_fail_rate", "gest_fail_rate"):
        assert stable[name] is False, name
        assert by["3"][name]["ci"][0] > by["0"][name]["ci"][1], name
    assert by["0"]["fail_rate"]["ci"][0] <= SENTENCE_EFFECT.rate(0) <= by["0"]["fail_rate"]["ci"][1]
    assert by["3"]["fail_rate"]["ci"][0] <= SENTENCE_EFFECT.rate(3) <= by["3"]["fail_rate"]["ci"][1]
    fail = got["metrics"]["fail_rate"]
    assert fail["wording_p"] < 0.01 and fail["wording_share"] > 0.8
    assert fail["range"] > 0.3
    assert "depends on the wording" in fail["sentence"]


@pytest.mark.timeout(400)
def test_no_wording_effect_where_none_was_put(tmp_path):
    got = run_wordings(tmp_path / "alike.sqlite", "0,1,2,4")
    assert list(got["runs"]) == ["0", "1", "2", "4"]
    assert got["depends_on_wording"] == []
    for name, metric in got["metrics"].items():
        assert got["wording_stable"][name] is True, name
        assert metric["wording_p"] > 0.05, name
    assert got["metrics"]["fail_rate"]["range"] < 0.1
