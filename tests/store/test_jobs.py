"""One job at a time on a database: a second run, audit or import is refused in one line
naming the first (its process and since when), or waits for it with --wait."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from gbdesk.store import Store, jobs
from gbdesk.store._runs import _owner_token
from tests import ROOT

HOLD = """
import sys, time
from gbdesk.store import Store, jobs
store = Store(sys.argv[1])
with jobs.job(store, "audit", "audit 7 of TinyModel"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(db, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), str(seconds)],
        stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_job_is_refused_naming_the_first(tmp_path):
    db = tmp_path / "g.sqlite"
    Store(db).close()
    proc = _holder(db, 30)
    try:
        with Store(db) as store:
            others = jobs.live_jobs(store, others_only=True)
            assert [j.what for j in others] == ["audit 7 of TinyModel"]
            with pytest.raises(jobs.DatabaseBusy) as caught, jobs.job(store, "run", "run 1"):
                pass
        message = str(caught.value)
        assert "\n" not in message
        assert "audit 7 of TinyModel" in message and f"process {proc.pid}" in message
        assert "running since" in message and "--wait" in message
    finally:
        proc.kill()
        proc.wait()


def test_waiting_takes_the_database_when_the_first_ends(tmp_path):
    db = tmp_path / "g.sqlite"
    Store(db).close()
    proc = _holder(db, 3)
    heard: list[str] = []
    try:
        with Store(db) as store:
            started = time.monotonic()
            with jobs.job(
                store, "run", "run 1", wait=True, on_wait=lambda j: heard.append(j.what),
                poll_s=0.2,
            ):  # fmt: skip
                waited = time.monotonic() - started
                assert [j.what for j in jobs.live_jobs(store)] == ["run 1"]
            assert jobs.live_jobs(store) == []
    finally:
        proc.kill()
        proc.wait()
    assert heard == ["audit 7 of TinyModel"]  # said once, not once per look
    assert waited > 0.5


def test_a_killed_jobs_row_is_removed_by_the_next_claim(tmp_path):
    db = tmp_path / "g.sqlite"
    Store(db).close()
    proc = _holder(db, 60)
    proc.kill()  # kill -9: its row stays behind
    proc.wait()
    with Store(db) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 1
        assert jobs.live_jobs(store) == []
        with jobs.job(store, "run", "run 2") as job_id:
            rows = store.conn.execute("SELECT id, what FROM jobs").fetchall()
            assert rows == [(job_id, "run 2")]


def test_the_same_process_nests_jobs_and_threads_share_it(store):
    with jobs.job(store, "audit", "audit 1") as outer:
        with jobs.job(store, "run", "run 3 (bbq)") as inner:
            assert {j.what for j in jobs.live_jobs(store)} == {"audit 1", "run 3 (bbq)"}
            assert jobs.live_jobs(store, others_only=True) == []
            assert inner != outer
        done = threading.Event()

        def other_thread() -> None:
            with Store(store.path) as s2, jobs.job(s2, "run", "run 4"):
                done.set()

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(10)
        assert done.is_set()
    assert jobs.live_jobs(store) == []


def test_another_machines_job_counts_while_its_heartbeat_is_fresh(store):
    token = _owner_token().rsplit(":", 2)
    far = f"elsewhere-{token[0]}:{token[1]}:{token[2]}"
    with store.transaction():
        store.conn.execute(
            "INSERT INTO jobs (kind, what, owner, pid, command, started_at, heartbeat_at) "
            "VALUES ('audit', 'audit 9', ?, 1, '', datetime('now'), ?)",
            (far, jobs.now()),
        )
    assert [j.what for j in jobs.live_jobs(store)] == ["audit 9"]
    with store.transaction():
        store.conn.execute("UPDATE jobs SET heartbeat_at = '2000-01-01T00:00:00+00:00'")
    assert jobs.live_jobs(store) == []


def test_cli_run_is_refused_in_one_line_while_an_audit_holds_the_database(tmp_path):
    db = tmp_path / "g.sqlite"
    Store(db).close()
    proc = _holder(db, 60)
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "gbdesk", "--db", str(db), "run", "--probe", "inventories",
             "--limit", "2", "--attempts", "1"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
        )  # fmt: skip
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 2, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, done.stderr
    assert "audit 7 of TinyModel" in lines[0] and f"process {proc.pid}" in lines[0]
    with Store(db) as store:
        assert store.list_runs() == []  # nothing planned, no model loaded


def test_a_heartbeat_from_the_future_never_blocks_and_a_stale_job_can_be_cleared(
    tmp_path, capsys
):
    """Issue 43 (15): another host's row with a heartbeat dated years ahead held the
    database until that date, and nothing said whose it was or how to clear it."""
    from gbdesk.cli import main

    db = tmp_path / "j.sqlite"
    far = "build-server-7:4242:1.000"
    with Store(db) as store, store.transaction():
        store.conn.execute(
            "INSERT INTO jobs (kind, what, owner, pid, command, started_at, heartbeat_at) "
            "VALUES ('audit', 'audit 9 of X', ?, 4242, 'gbdesk audit', datetime('now'), ?)",
            (far, "2031-01-01T00:00:00+00:00"),
        )
    with Store(db) as store:
        assert jobs.live_jobs(store) == []  # from the future: not a sign of life
        with jobs.job(store, "run", "run 1"):  # the database is not blocked
            pass
        # a fresh beat from the other machine holds it, and the refusal says how to clear it
        with store.transaction():
            store.conn.execute(
                "INSERT INTO jobs (kind, what, owner, pid, command, started_at, heartbeat_at) "
                "VALUES ('audit', 'audit 9 of X', ?, 4242, 'gbdesk audit', datetime('now'), ?)",
                (far, jobs.now()),
            )
        with pytest.raises(jobs.DatabaseBusy) as caught, jobs.job(store, "run", "run 1"):
            pass
        (job_id,) = store.conn.execute("SELECT id FROM jobs").fetchone()
    message = str(caught.value)
    assert "on build-server-7" in message and f"gbdesk jobs --clear {job_id}" in message
    assert main(["jobs", "--db", str(db), "--json"]) == 0
    assert '"host": "build-server-7"' in capsys.readouterr().out
    assert main(["jobs", "--clear", str(job_id), "--db", str(db)]) == 0
    with Store(db) as store:
        assert jobs.all_jobs(store) == []
