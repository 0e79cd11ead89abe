"""The `jobs` table: the long writing work a process does on a database — a run, an
audit, an import — who does it and since when.

One database takes one job at a time: a second run, audit or import while one is under
way is refused in one line naming the first (its command, process and since when), or
waits for it when the caller asks (`wait=True`, `gbdesk … --wait`). Without this the
second would wait silently on SQLite's lock, or two audits would share the CPU and
both blow their budgets. The same process may nest jobs (an audit runs its probes' runs).

A job's row lives while its `job()` block runs; a thread of its own refreshes
`heartbeat_at` every `BEAT_S` seconds through its own connection, so the app and a second
command can tell a job that is alive (its process exists here, or another machine's
heartbeat is fresh) from one a kill left behind, whose row the next claim deletes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from gbdesk.store._runs import _owner_token, owner_alive
from gbdesk.store._tables import inserted_id, now
from gbdesk.support.errors import UserError
from gbdesk.support.guards import one_line

if TYPE_CHECKING:
    from gbdesk.store.db import Store

log = logging.getLogger(__name__)

#: seconds between two heartbeats of a job
BEAT_S = 15.0
#: a job of another machine without a heartbeat for this long is taken as gone
STALE_S = 120.0
#: seconds between two looks while waiting for another job
WAIT_POLL_S = 2.0


@dataclass(frozen=True)
class Job:
    id: int
    kind: str  # "run", "audit", "import"
    what: str  # in words: "audit 3 of SmolLM2-135M-Instruct"
    owner: str  # host:pid:start-time
    pid: int | None
    command: str
    run_id: int | None
    audit_id: int | None
    started_at: str
    heartbeat_at: str

    @property
    def mine(self) -> bool:
        return self.owner == _owner_token()

    @property
    def host(self) -> str:
        return self.owner.rsplit(":", 2)[0]

    @property
    def here(self) -> bool:
        """Its process is (or was) on this machine."""
        return self.host == _owner_token().rsplit(":", 2)[0]

    def alive(self) -> bool:
        """Its process still runs here, or another machine's job beat recently: within
        `STALE_S` either way — a heartbeat from the future (another clock far ahead, a
        stamp written by hand) never holds the database until that date."""
        if self.here:
            return owner_alive(self.owner)
        return abs(_age_s(self.heartbeat_at)) < STALE_S

    def describe(self, command_chars: int | None = None) -> str:
        """"audit 3 of SmolLM2 (gbdesk audit --budget 6m), process 4242, running since
        10:42:07 (last sign of life 4 s ago)"; another machine's job names its host.
        `command_chars`: the command cut to that many characters (a progress line that
        must keep the process and its run in view; `gbdesk jobs` shows it whole)."""
        command = f" ({one_line(self.command, command_chars)})" if self.command else ""
        where = "" if self.here else f" on {self.host}"
        pid = f", process {self.pid}{where}" if self.pid else where
        beat = _age_s(self.heartbeat_at)
        life = (
            f"last sign of life {beat:.0f} s ago"
            if beat >= 0
            else f"its last sign of life is stamped {-beat:.0f} s in the future"
        )
        return f"{self.what}{command}{pid}, running since {_local_time(self.started_at)} ({life})"


class DatabaseBusy(UserError):
    """Another process's job holds the database."""

    def __init__(self, message: str, job: Job):
        super().__init__(message)
        self.job = job


def _age_s(stamp: str) -> float:
    """Seconds since `stamp` (negative for a stamp in the future; infinite when
    unreadable)."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return float("inf")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - when).total_seconds()


def _local_time(stamp: str) -> str:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    local = when.astimezone()
    today = datetime.now().astimezone().date()
    return local.strftime("%H:%M:%S" if local.date() == today else "%Y-%m-%d %H:%M")


_COLUMNS = (
    "id, kind, what, owner, pid, command, run_id, audit_id, started_at, heartbeat_at"
)


def _rows(conn: sqlite3.Connection) -> list[Job]:
    try:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM jobs ORDER BY id").fetchall()
    except sqlite3.OperationalError as exc:  # a database of an older layout, read-only
        if "no such table" in str(exc):
            return []
        raise
    return [Job(*row) for row in rows]


def live_jobs(store: Store, *, others_only: bool = False) -> list[Job]:
    """The jobs under way on this database (oldest first); `others_only`: of other
    processes."""
    jobs = [j for j in _rows(store.conn) if j.alive()]
    return [j for j in jobs if not j.mine] if others_only else jobs


def busy_message(job: Job, path: Any) -> str:
    """Whose job holds the database and what to do; another machine's job, which cannot
    be checked from here, also says how to clear it (`clear_job`)."""
    clear = (
        ""
        if job.here
        else f"; if nothing runs on {job.host} any more, clear it with: gbdesk jobs --clear "
        f"{job.id} --db {path}"
    )
    return (
        f"the database {path} is busy: {job.describe()} — wait for it to end (add --wait), "
        f"or stop it first{clear}"
    )


def clear_job(store: Store, job_id: int) -> Job:
    """Remove a job's row a person says is gone (another machine's, which gbdesk cannot
    check); a job of a process alive on this machine is refused (`UserError`)."""
    found = next((j for j in _rows(store.conn) if j.id == job_id), None)
    if found is None:
        raise UserError(f"there is no job {job_id} (gbdesk jobs lists them)")
    if found.here and owner_alive(found.owner):
        raise UserError(
            f"job {job_id} is {found.describe()}: its process runs on this machine — stop it "
            "instead"
        )
    with store.transaction():
        store.conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
    log.warning("job cleared by hand: %s", found.describe())
    return found


def all_jobs(store: Store) -> list[Job]:
    """Every job row, alive or not (`gbdesk jobs`)."""
    return _rows(store.conn)


def _command_line() -> str:
    args = [os.path.basename(sys.argv[0] or "gbdesk"), *sys.argv[1:]]
    if args[0] in ("__main__.py", "-m"):
        args[0] = "gbdesk"
    text = " ".join(args)
    return text if len(text) <= 120 else text[:119] + "…"


def _claim(
    store: Store, kind: str, what: str, run_id: int | None, audit_id: int | None
) -> tuple[int | None, Job | None]:
    """(the new row's id, None), or (None, the other process's job that holds the database).
    In one write transaction: rows of dead jobs are deleted first."""
    me = _owner_token()
    with store.transaction():
        jobs = _rows(store.conn)
        for job in jobs:
            if not job.alive():
                store.conn.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
                log.info("removed the job of a process that is gone: %s", job.describe())
        other = next((j for j in jobs if j.alive() and j.owner != me), None)
        if other is not None:
            return None, other
        cur = store.conn.execute(
            "INSERT INTO jobs (kind, what, owner, pid, command, run_id, audit_id, started_at, "
            "heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, what, me, os.getpid(), _command_line(), run_id, audit_id, now(), now()),
        )
    return inserted_id(cur), None


class _Beat(threading.Thread):
    """Refreshes one job's heartbeat through a connection of its own."""

    def __init__(self, path: Any, job_id: int):
        super().__init__(name=f"gbdesk-job-{job_id}", daemon=True)
        self.path, self.job_id = path, job_id
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(BEAT_S):
            try:
                conn = sqlite3.connect(str(self.path), timeout=5.0)
                try:
                    with conn:
                        conn.execute(
                            "UPDATE jobs SET heartbeat_at = ? WHERE id = ?", (now(), self.job_id)
                        )
                finally:
                    conn.close()
            except sqlite3.Error as exc:  # the next beat tries again
                log.warning("job %d: heartbeat not written: %s", self.job_id, exc)


@contextlib.contextmanager
def job(
    store: Store,
    kind: str,
    what: str,
    *,
    run_id: int | None = None,
    audit_id: int | None = None,
    wait: bool = False,
    on_wait: Callable[[Job], None] | None = None,
    poll_s: float = WAIT_POLL_S,
) -> Iterator[int | None]:
    """Hold the database for one job while the block runs (see the module docstring).

    Raises `DatabaseBusy` naming the other process's job, or — with `wait` — waits for it
    to end, calling `on_wait(job)` once per job waited for. The same process may nest jobs.
    A read-only database takes no job (it cannot be written anyway). Yields the row id."""
    if getattr(store, "read_only", False):
        yield None
        return
    announced: set[int] = set()
    while True:
        job_id, other = _claim(store, kind, what, run_id, audit_id)
        if other is None:
            break
        if not wait:
            raise DatabaseBusy(busy_message(other, store.path), other)
        if on_wait is not None and other.id not in announced:
            on_wait(other)
        announced.add(other.id)
        time.sleep(poll_s)
    beat = _Beat(store.path, int(job_id))  # type: ignore[arg-type]
    beat.start()
    try:
        yield job_id
    finally:
        beat.stop.set()
        try:
            with store.transaction():
                store.conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
        except sqlite3.Error as exc:  # a kill or a fault: the next claim removes it
            log.warning("job %s: row not removed: %s", job_id, exc)


def set_job_ids(
    store: Store, job_id: int | None, *, run_id: int | None = None, audit_id: int | None = None
) -> None:
    """Name the run or audit a job works on once it is known (an audit stores its plan
    after it took the database)."""
    if job_id is None:
        return
    with store.transaction():
        store.conn.execute(
            "UPDATE jobs SET run_id = COALESCE(?, run_id), audit_id = COALESCE(?, audit_id) "
            "WHERE id = ?",
            (run_id, audit_id, job_id),
        )
