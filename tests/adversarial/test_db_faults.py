"""Database faults answer in one line, exit 2, and leave the database as it was.

Read-only (a read-only file system), locked (another process holds the write lock longer
than the busy timeout), damaged (a leaf page overwritten), full disk (SQLite's page
limit, and a real small tmpfs), I/O errors (injected), newer schema, not a database, an
SQLite file of another program; and the copy made before a schema migration.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from gbdesk.store import DatabaseFault, Store
from gbdesk.store import db as store_db
from gbdesk.store import faults as store_faults
from gbdesk.store.migrations import LATEST_VERSION
from gbdesk.support.errors import UserError
from tests.adversarial.dbtools import (
    can_unshare,
    counts,
    damage,
    fingerprint,
    gbdesk,
    generated_db,
    import_csv,
    imported_db,
    integrity,
    permissions_hold,
    query,
    reference_texts,
    texts,
    unshare_prefix,
    write_lock,
)

FAKE = {"fake_backend": {"delay_s": 0}}
RUN_ARGS = ["run", "--probe", "inventories", "--limit", "6", "--attempts", "2", "--seed", "5"]


@pytest.fixture(autouse=True)
def _fresh_checks():
    store_db.forget_checks()  # each test's databases are checked afresh


@pytest.fixture
def small_csv(tmp_path) -> Path:
    return import_csv(tmp_path / "second.csv", 300, tag="second")


def commands(db: Path, small_csv: Path, out: Path) -> dict[str, list[str]]:
    """Each command of the table, on run 1 of `db` (a generated, interrupted run)."""
    return {
        "import": ["import", "--probe", "inventories", "--file", str(small_csv), "--db", db],
        "resume": ["resume", "1", "--db", db],
        "review": ["review", "1", "female", "--reviewer", "ana", "--db", db],
        "run": [*RUN_ARGS, "--db", db],
        "metrics": ["metrics", "1", "--db", db],
        "export": ["export", "1", "--csv", str(out), "--db", db],
        "runs": ["runs", "--db", db],
    }


# -- read-only -------------------------------------------------------------------------------
READ_ONLY = {  # command → refused (exit 2) or served (exit 0) from a read-only database
    "import": True,
    "resume": True,
    "review": True,
    "run": True,
    "metrics": False,
    "export": False,
    "runs": False,
}


@pytest.mark.parametrize("how", ["mount", "permissions"])
@pytest.mark.parametrize("name", list(READ_ONLY))
def test_read_only_database(tmp_path, small_csv, name, how):
    """A read-only file system (a private read-only bind mount), or a file and folder
    without write permission (for root too: `permissions_hold`). The reading commands
    read it (issue 35: the second failed with "read-only, so nothing was saved")."""
    if how == "mount" and not can_unshare():
        pytest.skip("needs `unshare` (a private read-only mount)")
    folder = tmp_path / "ro"
    folder.mkdir()
    db, _, _ = generated_db(folder / "db.sqlite")
    before = fingerprint(db)
    args = commands(db, small_csv, tmp_path / "out")[name]
    if how == "mount":
        ro = unshare_prefix(f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}")
        result = gbdesk(*args, patches=FAKE, prefix=ro)
    else:
        with permissions_hold(folder, *folder.iterdir()) as prefix:
            db.chmod(0o444)
            folder.chmod(0o555)
            try:
                result = gbdesk(*args, patches=FAKE, prefix=prefix)
            finally:
                folder.chmod(0o755)
                db.chmod(0o644)
    assert sorted(p.name for p in folder.iterdir()) == ["db.sqlite", "fake.gguf"]
    if READ_ONLY[name]:
        result.assert_one_line_error("read-only", str(db))
    else:
        assert result.code == 0, result.err
        assert "Traceback" not in result.err
    assert fingerprint(db) == before
    assert integrity(db) == "ok"


@pytest.mark.parametrize("index", [True, False], ids=["with-shm", "without-shm"])
def test_read_only_folder_with_changes_still_in_the_log(tmp_path, index):
    """A database whose write-ahead log still holds a committed change (its writer was
    killed), in a read-only folder. With the log's index (-shm) SQLite reads both
    read-only, and `runs` shows the change. Without it SQLite could only open the file as
    immutable, which skips the log and would show an older database: one line instead
    (sqlite.org/wal.html, "Read-Only Databases")."""
    import json
    import shutil

    db, _, _ = generated_db(tmp_path / "db.sqlite")
    folder = tmp_path / "ro"
    folder.mkdir()
    copy = folder / "db.sqlite"
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("UPDATE runs SET status = 'cancelled'")
        for suffix in ("", "-wal", "-shm") if index else ("", "-wal"):
            shutil.copy(f"{db}{suffix}", f"{copy}{suffix}")
    assert Path(f"{copy}-wal").stat().st_size > 0
    before = fingerprint(copy)
    with permissions_hold(folder, *folder.iterdir()) as prefix:
        for path in folder.iterdir():
            path.chmod(0o444)
        folder.chmod(0o555)
        try:
            result = gbdesk("runs", "--json", "--db", copy, prefix=prefix)
        finally:
            folder.chmod(0o755)
            for path in folder.iterdir():
                path.chmod(0o644)
    if index:
        assert result.code == 0, result.err
        assert [r["status"] for r in json.loads(result.out)] == ["cancelled"]
    else:
        result.assert_one_line_error(str(copy), "db.sqlite-wal", "writable")
    assert fingerprint(copy) == before


def test_read_only_connection_refuses_writes_in_one_line(tmp_path):
    """The same through the Store (any platform): a database only readable is read, and a
    write is refused with the read-only message; nothing changes."""
    db = imported_db(tmp_path / "db.sqlite", 50)
    before = fingerprint(db)
    store = Store(db)
    store.close()
    store._open(read_only=True)
    with pytest.raises(DatabaseFault, match="read-only") as info, store:
        assert store.count_attempts(1) == 50
        store.add_human_label(1, "ana", "female")
    assert info.value.kind == "readonly"
    assert fingerprint(db) == before


# -- locked ----------------------------------------------------------------------------------
LOCKED = {
    "import": True,
    "resume": True,
    "review": True,
    "run": True,
    "metrics": False,
    "export": False,
    "runs": False,
}


@pytest.mark.parametrize("name", list(LOCKED))
def test_locked_longer_than_the_busy_timeout(tmp_path, small_csv, name):
    db, _, _ = generated_db(tmp_path / "db.sqlite")
    before = counts(db)
    with write_lock(db):
        result = gbdesk(
            *commands(db, small_csv, tmp_path / "out")[name],
            patches={**FAKE, "busy_timeout_s": 0.5},
        )
    if LOCKED[name]:
        result.assert_one_line_error("locked", "0.5 s", "try again")
    else:
        assert result.code == 0, result.err  # WAL: readers are not blocked (no cache kept)
    after = counts(db)
    assert after == before
    assert integrity(db) == "ok"


# -- damaged ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["import", "resume", "review", "run", "metrics", "export"])
def test_damaged_database(tmp_path, small_csv, name):
    db, _, _ = generated_db(tmp_path / "db.sqlite", done=6, limit=60, attempts=2)
    damage(db, "attempts")
    before = fingerprint(db)
    result = gbdesk(*commands(db, small_csv, tmp_path / "out")[name], patches=FAKE)
    result.assert_one_line_error("damaged", "restore a backup")
    assert fingerprint(db) == before  # not one byte written


def test_damage_the_write_does_not_touch_is_still_refused(tmp_path):
    """The import appends to pages the damage is not on: without the integrity check it
    would succeed (and it did: exit 0 and a new run in a damaged file)."""
    db = imported_db(tmp_path / "db.sqlite", 2000)
    damage(db, "attempts")
    with Store(db) as store:  # reading what is intact still works …
        assert store.count_attempts(1) == 2000
        with pytest.raises(DatabaseFault, match="damaged") as info:
            store.add_human_label(2000, "ana", "female")  # … writing does not
    assert info.value.kind == "corrupt"
    assert query(db, "SELECT COUNT(*) FROM labels WHERE kind = 'human'") == [(0,)]


# -- full disk -------------------------------------------------------------------------------
def _pages(db: Path) -> int:
    return query(db, "PRAGMA page_count")[0][0]


def test_full_disk_during_an_import_keeps_what_was_committed(tmp_path):
    db = imported_db(tmp_path / "db.sqlite", 600)
    before = counts(db)
    big = import_csv(tmp_path / "big.csv", 5000, tag="big")
    result = gbdesk(
        "import",
        "--probe",
        "inventories",
        "--file",
        big,
        "--db",
        db,
        patches={"max_page_count": _pages(db) + 40},
    )
    result.assert_one_line_error("full", "free some disk space", "intact")
    assert counts(db) == before
    assert integrity(db) == "ok"
    assert gbdesk("import", "--probe", "inventories", "--file", big, "--db", db).code == 0
    assert counts(db)["attempts"] == 5600


def test_full_disk_during_a_run_then_resume_gives_the_same_texts(tmp_path):
    db = tmp_path / "db.sqlite"
    Store(db).close()
    args = ["run", "--probe", "inventories", "--limit", "30", "--attempts", "2", "--seed", "5"]
    result = gbdesk(*args, "--db", db, patches={**FAKE, "max_page_count": _pages(db) + 8})
    line = result.assert_one_line_error("full", "gbdesk resume 1", progress=True)
    saved = counts(db)["attempts"]
    assert 0 < saved < 60, line
    assert integrity(db) == "ok"
    resumed = gbdesk("resume", "1", "--db", db, "--json", patches=FAKE)
    assert resumed.code == 0, resumed.err
    assert texts(db) == reference_texts(tmp_path / "ref", limit=30, attempts=2, seed=5)
    keys = query(db, "SELECT item, attempt FROM attempts")
    assert len(keys) == len(set(keys)) == 60
    assert query(db, "SELECT COUNT(*) FROM labels WHERE kind = 'auto'") == [(60,)]
    assert integrity(db) == "ok"


@pytest.mark.skipif(not can_unshare(), reason="needs `unshare` (a private tmpfs)")
def test_real_full_disk_100k_row_import(tmp_path):
    """A 20 MB tmpfs: the first import fits, the 100,000-row one does not; the first run is
    intact, no attempt of the second is left, the log's space is given back."""
    disk = tmp_path / "disk"
    disk.mkdir()
    small = import_csv(tmp_path / "small.csv", 600, tag="small")
    big = import_csv(tmp_path / "big.csv", 100_000, tag="big")
    db = disk / "db.sqlite"
    keep = tmp_path / "kept.sqlite"
    script = (
        f"mount -t tmpfs -o size=20m tmpfs {disk} && "
        f'"$0" "$@" import --probe inventories --file {small} --db {db} >/dev/null && '
        f'"$0" "$@" import --probe inventories --file {big} --db {db} 2>{tmp_path}/err; '
        f"echo $? >{tmp_path}/code; ls -l {disk} >{tmp_path}/ls; cp {db} {keep}; exit 0"
    )
    from tests.adversarial.dbtools import command

    cmd, env = command([])
    import subprocess

    done = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            *cmd,
        ],
        capture_output=True,
        text=True,
        env={**env, "GBDESK_DATA_DIR": str(tmp_path / "data")},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    err = (tmp_path / "err").read_text()
    assert (tmp_path / "code").read_text().strip() == "2", err
    assert len(err.strip().splitlines()) == 1 and "is full" in err, err
    assert "db.sqlite-wal" not in (tmp_path / "ls").read_text()  # space given back
    assert integrity(keep) == "ok"
    assert query(keep, "SELECT COUNT(*) FROM runs") == [(1,)]
    assert query(keep, "SELECT COUNT(*) FROM attempts") == [(600,)]


# -- I/O errors ------------------------------------------------------------------------------
def test_io_error_during_an_import(tmp_path, small_csv):
    db = imported_db(tmp_path / "db.sqlite", 600)
    before = counts(db)
    result = gbdesk(
        "import",
        "--probe",
        "inventories",
        "--file",
        small_csv,
        "--db",
        db,
        patches={"io_error_after": 3},
    )
    result.assert_one_line_error("disk reported an error", "check the disk")
    assert counts(db) == before
    assert integrity(db) == "ok"


def test_io_error_during_a_run_then_resume(tmp_path):
    db = tmp_path / "db.sqlite"
    Store(db).close()
    # writes: the model row, the run, its claim, then one per attempt
    result = gbdesk(*RUN_ARGS, "--db", db, patches={**FAKE, "io_error_after": 24})
    result.assert_one_line_error("disk reported an error", "gbdesk resume 1", progress=True)
    assert 0 < counts(db)["attempts"] < 12
    assert gbdesk("resume", "1", "--db", db, patches=FAKE).code == 0
    assert texts(db) == reference_texts(tmp_path / "ref", limit=6, attempts=2, seed=5)


# -- files that are not (this gbdesk's) databases --------------------------------------------
def test_newer_schema_is_refused_unchanged(tmp_path, small_csv):
    db = imported_db(tmp_path / "db.sqlite", 50)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    before = fingerprint(db)
    for args in (["runs"], ["import", "--probe", "inventories", "--file", small_csv]):
        gbdesk(*args, "--db", db).assert_one_line_error("newer", "update gbdesk")
    assert fingerprint(db) == before


def test_not_a_database_and_another_programs_database(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"these are not the pages you are looking for\n" * 500)
    gbdesk("runs", "--db", junk).assert_one_line_error("not a gbdesk database")
    assert junk.read_bytes() == b"these are not the pages you are looking for\n" * 500

    other = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('Ada')")
    before = fingerprint(other)
    gbdesk("runs", "--db", other).assert_one_line_error("another program", "contacts")
    assert fingerprint(other) == before

    gbdesk("runs", "--db", tmp_path).assert_one_line_error("folder")


# -- the copy made before a migration --------------------------------------------------------
def test_a_migration_copies_the_database_first_and_says_where(tmp_path):
    db = imported_db(tmp_path / "gbdesk.sqlite", 300)
    assert query(db, "PRAGMA user_version") == [(LATEST_VERSION,)]
    before = counts(db)
    result = gbdesk("runs", "--db", db, patches={"extra_migration": True})
    assert result.code == 0, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "copy" in lines[0], result.err
    copies = sorted(tmp_path.glob(f"gbdesk.sqlite.v{LATEST_VERSION}-backup-*"))
    assert len(copies) == 1 and str(copies[0]) in lines[0]
    assert query(copies[0], "PRAGMA user_version") == [(LATEST_VERSION,)]
    assert counts(copies[0]) == before and integrity(copies[0]) == "ok"
    assert query(db, "PRAGMA user_version") == [(LATEST_VERSION + 1,)]
    assert counts(db) == before
    again = gbdesk("runs", "--db", db, patches={"extra_migration": True})
    assert again.code == 0 and again.err == ""  # migrated once, copied once
    assert len(list(tmp_path.glob("gbdesk.sqlite.v*-backup-*"))) == 1


def test_no_copy_of_a_new_database(tmp_path):
    # a command that writes makes the new file (one that only reads refuses a missing one)
    result = gbdesk(
        "models", "--add", "default", "--json", "--db", tmp_path / "new.sqlite",
        patches={"extra_migration": True},
    )  # fmt: skip
    assert result.code == 0 and result.err == ""
    assert (tmp_path / "new.sqlite").is_file()
    assert not list(tmp_path.glob("*-backup-*"))


def test_a_failed_copy_leaves_the_database_unmigrated(tmp_path, monkeypatch):
    from gbdesk.store import migrations
    from tests.adversarial.driver import dummy_migration

    db = imported_db(tmp_path / "gbdesk.sqlite", 50)
    before = fingerprint(db)
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, dummy_migration])
    real_connect = sqlite3.connect

    def connect(target, *args, **kwargs):
        if "-backup-" in str(target):
            raise sqlite3.OperationalError("database or disk is full")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(store_db.sqlite3, "connect", connect)
    with pytest.raises(DatabaseFault, match="nothing was changed") as info:
        Store(db)
    assert info.value.kind == "full"
    monkeypatch.setattr(store_db.sqlite3, "connect", real_connect)
    assert fingerprint(db) == before
    assert not list(tmp_path.glob("*-backup-*"))
    assert query(db, "PRAGMA user_version") == [(LATEST_VERSION,)]


# -- the pieces --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("attempt to write a readonly database", "readonly"),
        ("database is locked", "locked"),
        ("database disk image is malformed", "corrupt"),
        ("file is not a database", "notadb"),
        ("database or disk is full", "full"),
        ("disk I/O error", "ioerr"),
        ("unable to open database file", "cantopen"),
        ("no such table: runs", None),
        ("UNIQUE constraint failed: attempts.id", None),
    ],
)
def test_fault_kinds_from_messages(message, kind):
    assert store_db.fault_kind(sqlite3.OperationalError(message)) == kind


def test_fault_kinds_from_sqlite_codes(tmp_path):
    db = imported_db(tmp_path / "db.sqlite", 20)
    damage(db, "attempts")
    conn = sqlite3.connect(db)
    with pytest.raises(sqlite3.DatabaseError) as info:
        conn.execute("SELECT * FROM attempts").fetchall()
    conn.close()
    assert store_db.fault_kind(info.value) == "corrupt"
    fault = store_db.database_fault(info.value, db)
    assert fault is not None and "\n" not in str(fault) and str(db) in str(fault)


def test_a_transaction_sqlite_already_rolled_back_reports_the_real_error(tmp_path):
    """On a full disk SQLite rolls the transaction back itself; the ROLLBACK that follows
    used to fail ("no transaction is active") and hide the cause."""
    db = imported_db(tmp_path / "db.sqlite", 50)
    with Store(db) as store:
        store.conn.execute(f"PRAGMA max_page_count = {_pages(db)}")
        with pytest.raises(sqlite3.OperationalError, match="full"), store.transaction():
            store.add_attempts(
                1,
                [
                    {"item": f"x{i}", "attempt": 0, "prompt": "p", "response": "r" * 5000}
                    for i in range(50)
                ],
            )
        assert not store.conn.in_transaction
        assert store.count_attempts(1) == 50


def test_store_exit_turns_faults_into_one_line_user_errors(tmp_path):
    db = imported_db(tmp_path / "db.sqlite", 20)
    with pytest.raises(UserError, match="locked") as info, Store(db):
        raise sqlite3.OperationalError("database is locked")
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    with pytest.raises(sqlite3.IntegrityError), Store(db):  # a bug stays a bug
        raise sqlite3.IntegrityError("UNIQUE constraint failed")


def test_writes_are_recognised():
    assert store_db._is_write("  insert into x values (1)")
    assert store_db._is_write("BEGIN  IMMEDIATE")
    assert store_db._is_write("UPDATE runs SET x = 1")
    assert not store_db._is_write("BEGIN")
    assert not store_db._is_write("SELECT * FROM runs")
    assert not store_db._is_write("PRAGMA quick_check")


# -- the app -------------------------------------------------------------------------------------
@pytest.fixture
def settings(tmp_path):
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def _window(qtbot, db: Path, settings):
    from gbdesk.ui.main_window import MainWindow

    window = MainWindow(str(db), settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: not window.ctx.tasks.busy, timeout=60_000)
    return window


@pytest.mark.gui
def test_app_says_the_database_is_damaged(qtbot, tmp_path, settings):
    db = imported_db(tmp_path / "db.sqlite", 2000)
    damage(db, "attempts")
    window = _window(qtbot, db, settings)
    qtbot.waitUntil(lambda: window.db_banner.isVisible(), timeout=60_000)
    assert window.db_banner.kind == "error"
    assert "damaged" in window.db_banner.text() and "restore a backup" in window.db_banner.text()


@pytest.mark.gui
def test_app_says_where_the_copy_made_before_a_migration_is(qtbot, tmp_path, settings, monkeypatch):
    from gbdesk.store import migrations
    from tests.adversarial.driver import dummy_migration

    db = imported_db(tmp_path / "gbdesk.sqlite", 50)
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, dummy_migration])
    window = _window(qtbot, db, settings)
    qtbot.waitUntil(lambda: window.db_banner.isVisible(), timeout=60_000)
    copies = list(tmp_path.glob("gbdesk.sqlite.v*-backup-*"))
    assert len(copies) == 1
    assert window.db_banner.kind == "info"
    assert str(copies[0]) in window.db_banner.text()


# -- a full disk says so, whatever the command (issue 27, finding 10) --------------------------
@pytest.mark.skipif(not can_unshare(), reason="needs `unshare` (a private tmpfs)")
def test_real_full_disk_review_and_run_say_the_disk_is_full(tmp_path):
    """A small tmpfs filled up after an import: review, run (fake model) and import all
    give the full-disk line (review and run said "disk I/O error … check the disk or
    network drive": SQLite reports a small write that finds no room as SQLITE_IOERR)."""
    import subprocess

    from tests.adversarial.dbtools import command

    disk = tmp_path / "disk"
    disk.mkdir()
    small = import_csv(tmp_path / "small.csv", 50, tag="small")
    db = disk / "db.sqlite"
    cmd, env = command([], FAKE)
    run = " ".join(["run", "--probe", "inventories", "--limit", "3"])
    script = (
        f"mount -t tmpfs -o size=4m tmpfs {disk} && "
        f'"$0" "$@" import --probe inventories --file {small} --db {db} >/dev/null && '
        f"dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null; "
        f'"$0" "$@" review 1 female --reviewer ana --db {db} 2>{tmp_path}/review; '
        f"echo $? >{tmp_path}/review.code; "
        f'"$0" "$@" {run} --db {db} 2>{tmp_path}/run; echo $? >{tmp_path}/run.code; '
        f'"$0" "$@" import --probe inventories --file {small} --db {db} 2>{tmp_path}/import; '
        f"echo $? >{tmp_path}/import.code; exit 0"
    )
    unshare = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
    done = subprocess.run(
        [*unshare, "sh", "-c", script, *cmd],
        capture_output=True, text=True, env={**env, "GBDESK_DATA_DIR": str(tmp_path / "data")},
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("review", "run", "import"):
        err = (tmp_path / name).read_text()
        lines = [line for line in err.strip().splitlines() if not line.startswith("[run ")]
        assert (tmp_path / f"{name}.code").read_text().strip() == "2", (name, err)
        assert len(lines) == 1 and "is full" in lines[0] and "free some disk space" in lines[0], (
            name,
            err,
        )
        assert "disk I/O error" not in err and "network drive" not in err, (name, err)


def test_an_io_error_on_a_disk_without_free_space_is_a_full_disk(tmp_path, monkeypatch):
    """The same on any platform: the kind of an I/O error depends on the disk's free space."""
    import collections

    db = tmp_path / "db.sqlite"
    error = sqlite3.OperationalError("disk I/O error")
    assert store_db.database_fault(error, db).kind == "ioerr"  # room left: the disk's fault
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(store_faults.shutil, "disk_usage", lambda _path: usage(100, 100, 0))
    fault = store_db.database_fault(error, db)
    assert fault.kind == "full" and "free some disk space" in str(fault)
    assert store_db.fault_kind(error) == "ioerr"  # without the database's path: unknown
