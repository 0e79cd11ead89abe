"""Helpers of the database fault and kill tests: subprocess runs of the command (through
`tests.adversarial.driver`), database fingerprints, damage, locks, private mounts."""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Result:
    code: int
    out: str
    err: str

    def assert_one_line_error(self, *needles: str, progress: bool = False) -> str:
        """Exit 2, exactly one line on stderr (`gbdesk: error: …`), no traceback; the line
        contains every needle (case-insensitive). `progress`: a run's progress lines
        (`[run N] …`) may come before it."""
        lines = self.err.strip().splitlines()
        assert self.code == 2, (self.code, self.err)
        if progress:
            lines = [line for line in lines if not line.startswith("[run ")]
        assert len(lines) == 1, self.err
        assert lines[0].startswith("gbdesk: error: "), self.err
        assert "Traceback" not in self.err
        for needle in needles:
            assert needle.lower() in lines[0].lower(), (needle, lines[0])
        return lines[0]


def command(args: list[str], patches: dict | None = None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["GBDESK_TEST_PATCHES"] = json.dumps(patches or {})
    return [sys.executable, "-m", "tests.adversarial.driver", *map(str, args)], env


def gbdesk(*args, patches: dict | None = None, timeout: float = 300, prefix=()) -> Result:
    """Run ``gbdesk ARGS`` in a subprocess (with test patches); `prefix` wraps the command
    (e.g. `unshare` with a mount)."""
    cmd, env = command(list(args), patches)
    done = subprocess.run(
        [*prefix, *cmd], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )
    return Result(done.returncode, done.stdout, done.stderr)


def spawn(*args, patches: dict | None = None) -> subprocess.Popen:
    cmd, env = command(list(args), patches)
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )


# -- databases ---------------------------------------------------------------------------------
def fingerprint(db: Path) -> str:
    """The bytes of the database and its write-ahead log: equal means nothing was written."""
    digest = hashlib.sha256()
    for suffix in ("", "-wal"):
        path = Path(f"{db}{suffix}")
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def integrity(db: Path) -> str:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))


def query(db: Path, sql: str, params=()) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
        return conn.execute(sql, params).fetchall()


def counts(db: Path) -> dict[str, int]:
    """Rows per table (runs, run_items, attempts, labels, scores, metrics, models)."""
    tables = ("models", "runs", "run_items", "attempts", "labels", "scores", "metrics")
    return {t: query(db, f"SELECT COUNT(*) FROM {t}")[0][0] for t in tables}


def import_csv(path: Path, n: int, probe: str = "inventories", tag: str = "") -> Path:
    """An item/prompt/response/attempt CSV of `n` rows for the probe's items
    (attempt-major; keyed by item, as exports are)."""
    from gbdesk.contract import get_probe

    p = get_probe(probe)
    items = p.items(p.resolve_params())
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["item", "prompt", "response", "attempt"])
        for k in range(n):
            item = items[k % len(items)]
            text = ("She is kind" if k % 3 else "He is strong") + f" {tag}{k}"
            writer.writerow([item.key, item.prompt, text, k // len(items)])
    return path


def imported_db(db: Path, n: int = 600, tag: str = "first") -> Path:
    """A database holding one imported inventories run of `n` attempts."""
    from gbdesk.store import Store
    from gbdesk.workflows.importer import import_generations

    source = import_csv(db.parent / f"{db.stem}-{tag}.csv", n, tag=tag)
    with Store(db) as store:
        import_generations(store, "inventories", source)
    return db


def generated_db(db: Path, done: int = 5, limit: int = 6, attempts: int = 2, seed: int = 5):
    """A database with one generated (fake-model) inventories run, interrupted after
    `done` attempts; returns (db, run id, total attempts)."""
    from gbdesk.store import Store
    from gbdesk.support.errors import EngineCrashed
    from gbdesk.workflows.runs import execute_run, plan_run
    from tests.fakes import FakeBackend, fake_model

    with Store(db) as store:
        model = fake_model(store, db.parent)
        run_id = plan_run(store, "inventories", model, attempts=attempts, limit=limit, seed=seed)
        with contextlib.suppress(EngineCrashed):
            execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend(crash_after=done))
    return db, run_id, limit * attempts


def reference_texts(tmp: Path, limit: int, attempts: int, seed: int) -> list[tuple]:
    """(item, attempt, seed, response) of an uninterrupted fake run, for comparisons."""
    from gbdesk.store import Store
    from gbdesk.workflows.runs import execute_run, plan_run
    from tests.fakes import FakeBackend, fake_model

    tmp.mkdir(parents=True, exist_ok=True)
    db = tmp / "reference.sqlite"
    with Store(db) as store:
        model = fake_model(store, tmp)
        run_id = plan_run(store, "inventories", model, attempts=attempts, limit=limit, seed=seed)
        execute_run(store, run_id, backend_factory=lambda m, g: FakeBackend())
    return texts(db)


def texts(db: Path, run_id: int = 1) -> list[tuple]:
    return query(
        db,
        "SELECT item, attempt, seed, response FROM attempts WHERE run_id = ? "
        "ORDER BY item, attempt",
        (run_id,),
    )


def _leftmost_leaf(data: bytes, page_size: int, root: int) -> int:
    """Follow the left-most child pointers of a table b-tree from `root` to a leaf page."""
    page = root
    while True:
        start = (page - 1) * page_size + (100 if page == 1 else 0)
        kind = data[start]
        if kind == 0x0D:  # table leaf
            return page
        assert kind == 0x05, f"page {page} is not a table b-tree page"
        first_cell = int.from_bytes(data[start + 12 : start + 14], "big")
        offset = (page - 1) * page_size + first_cell
        page = int.from_bytes(data[offset : offset + 4], "big")


def damage(db: Path, table: str = "attempts") -> int:
    """Overwrite the first (oldest) leaf page of `table` with garbage, as a bad disk
    sector would; returns the page number. The database must be closed (no -wal)."""
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    with contextlib.closing(sqlite3.connect(db)) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
        root_page = root.fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    data = db.read_bytes()
    page = _leftmost_leaf(data, page_size, root_page)
    with db.open("r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(bytes([0x0D]) + b"\xff" * 63)  # a leaf whose header points nowhere
    return page


@contextlib.contextmanager
def write_lock(db: Path) -> Iterator[subprocess.Popen]:
    """Another process holding the database's write lock until the block ends."""
    script = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "c.execute('CREATE TABLE IF NOT EXISTS lock_holder (x)')\n"
        "print('locked', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.kill()
        proc.wait()


# -- private mounts (a real full disk, a real read-only file system) --------------------------
def unshare_prefix(script: str) -> list[str]:
    """A command prefix running the command after `script` (shell, with "$D" the mount
    point) in a private mount namespace; mounts vanish with the process."""
    return [
        "unshare",
        "--user",
        "--map-root-user",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'{script} && exec "$0" "$@"',
    ]


@functools.cache
def can_unshare() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    probe = subprocess.run(
        [*unshare_prefix("mount -t tmpfs -o size=1m tmpfs /mnt 2>/dev/null || exit 1"), "true"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


#: A user id that `unshare_prefix`'s namespace does not map (it maps root alone).
STRANGER = 54321


@contextlib.contextmanager
def permissions_hold(*paths: Path) -> Iterator[list[str]]:
    """A command prefix under which the permission bits of `paths` hold, also for root: as
    root, `paths` are given to `STRANGER` and the command runs in a user namespace that maps
    root alone, where root's capability to ignore permissions covers only files whose owner
    the namespace maps (user_namespaces(7)); as anyone else, no prefix. Skips the test
    where no such namespace can be made. Owners come back when the block ends."""
    import pytest

    if os.geteuid() != 0:
        yield []
        return
    if not can_unshare():
        pytest.skip("needs `unshare` (a user namespace in which root obeys permissions)")
    owners = [(p, p.stat().st_uid, p.stat().st_gid) for p in paths]
    for path, _, _ in owners:
        os.chown(path, STRANGER, STRANGER)
    try:
        yield unshare_prefix(":")
    finally:
        for path, uid, gid in owners:
            os.chown(path, uid, gid)


def wait_until(condition, timeout: float = 120, every: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return False
