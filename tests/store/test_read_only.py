"""Opening a database that cannot be written (issue 35, item 6): how `Store` chooses between a
read-only connection and an immutable one, and when it refuses.

SQLite's answers in a folder where it can make no side file (-shm) are forced here, so the
choice is tested anywhere, also as root (whom permissions do not stop) on a machine
without user namespaces; tests/adversarial/test_db_faults.py makes the real folders.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from gbdesk.store import DatabaseFault, Store
from gbdesk.store import db as store_db

#: SQLITE_READONLY_DIRECTORY: what SQLite answers when it cannot make the -shm file
READONLY_DIRECTORY = 8 | (6 << 8)


def make_db(path: Path) -> Path:
    with Store(path) as store:
        store.create_run(
            probe="inventories",
            probe_version="1",
            model_id=None,
            params={"template": "t"},
            generation={"attempts": 1, "seed": 0},
            items=[("k0", "prompt 0", {})],
            attempts_per_item=1,
            app_version="test",
            llama_cpp_version=None,
        )
    return path


@pytest.fixture
def no_side_files(monkeypatch):
    """From the call on, SQLite answers as in a read-only folder: any open that is not
    immutable fails with SQLITE_READONLY_DIRECTORY (it needs a -shm file it cannot make).
    The call returns the list of the URIs opened since."""
    real = sqlite3.connect
    opened: list[str] = []

    def connect(target, *args, **kwargs):
        opened.append(str(target))
        if "immutable=1" not in str(target):
            exc = sqlite3.OperationalError("attempt to write a readonly database")
            exc.sqlite_errorcode = READONLY_DIRECTORY
            exc.sqlite_errorname = "SQLITE_READONLY_DIRECTORY"
            raise exc
        return real(target, *args, **kwargs)

    def start() -> list[str]:
        monkeypatch.setattr(store_db.sqlite3, "connect", connect)
        return opened

    return start


def test_a_folder_without_room_for_side_files_is_read_as_immutable(tmp_path, no_side_files):
    db = make_db(tmp_path / "db.sqlite")
    opened = no_side_files()
    with Store(db) as store:
        assert store.read_only
        assert [r["id"] for r in store.list_runs()] == [1]
        with pytest.raises(DatabaseFault, match="read-only") as info:
            store.check_writable()
        assert info.value.kind == "readonly"
    assert [("mode=ro" in u, "immutable=1" in u) for u in opened] == [
        (False, False),  # read-write
        (True, False),  # read-only: needs the -shm file
        (True, True),  # immutable: no side file
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite"]


def test_changes_left_in_the_log_are_not_skipped(tmp_path, no_side_files):
    """Immutable would skip a log that still holds committed changes: refused in one line
    that names the log and what to do."""
    db = make_db(tmp_path / "db.sqlite")
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("UPDATE runs SET status = 'cancelled'")
        wal = Path(f"{db}-wal").read_bytes()
    Path(f"{db}-wal").write_bytes(wal)  # the log as a killed writer left it
    opened = no_side_files()
    with pytest.raises(DatabaseFault) as info:
        Store(db)
    message = str(info.value)
    assert info.value.kind == "readonly" and "\n" not in message
    assert f"{db.name}-wal" in message and "writable" in message
    assert opened and not any("immutable=1" in u for u in opened)
