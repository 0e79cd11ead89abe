"""The SQLite store (through sqlite-utils): models, runs, attempts, labels, metrics.

One file holds any number of runs of any number of models. WAL mode lets the GUI
read while a run writes; every attempt is committed, with its automatic label, the
moment it completes, so a crash loses at most the attempt in flight.

Database faults — a read-only file, a lock held by another program for longer than the
busy timeout, a damaged file, a full disk, an I/O error — become a `DatabaseFault` (a
`UserError`: one line saying what happened and what to do) when they leave a
`with Store(...)` block or `Store()` itself. Before its first write, each process checks
a database once with `PRAGMA quick_check` and writes nothing into one that fails it.
Before a schema migration the database is copied next to itself with SQLite's backup API.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from gbdesk.store._attempts import AttemptTables, PreparedAttempts, prepare_attempts
from gbdesk.store._coding import CodingTables
from gbdesk.store._evidence import EvidenceTables
from gbdesk.store._facts import LabelFactTables
from gbdesk.store._labels import LabelTables
from gbdesk.store._metrics import MetricsCacheTables
from gbdesk.store._models import ModelTables
from gbdesk.store._review import ReviewSampleTables
from gbdesk.store._runs import ACTIVE_STATUSES, FINAL_STATUSES, RunTables, owner_alive
from gbdesk.store._tables import now
from gbdesk.store.faults import (
    FULL_DISK_BYTES,
    DatabaseFault,
    _one_line,
    disk_full,
    fault_kind,
)
from gbdesk.store.migrations import latest_version, migrate, refuse_foreign
from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)

#: names other modules import from here (the table families moved to their own modules)
__all__ = [
    "ACTIVE_STATUSES",
    "FINAL_STATUSES",
    "FULL_DISK_BYTES",
    "DatabaseFault",
    "PreparedAttempts",
    "Store",
    "backup_notice",
    "check_db_path",
    "database_fault",
    "disk_full",
    "fault_kind",
    "fault_message",
    "forget_checks",
    "now",
    "owner_alive",
    "prepare_attempts",
    "take_backup_notices",
]


# -- database faults ----------------------------------------------------------------------------
def database_fault(
    exc: BaseException, path: str | os.PathLike | None, busy_timeout_s: float | None = None
) -> DatabaseFault | None:
    """The one-line `DatabaseFault` for an sqlite3 error, or None if it is no database fault."""
    if isinstance(exc, DatabaseFault):
        return exc
    kind = fault_kind(exc, path)
    if kind is None:
        return None
    return DatabaseFault(fault_message(kind, path, str(exc), busy_timeout_s), kind)


def fault_message(
    kind: str, path: str | os.PathLike | None, detail: str, busy_timeout_s: float | None = None
) -> str:
    """What happened to the database and what to do, in one line."""
    where = f"the database {path}" if path else "the database"
    detail = _one_line(detail)
    if len(detail) > 200:
        detail = detail[:197] + "..."
    wait = busy_timeout_s if busy_timeout_s is not None else Store.BUSY_TIMEOUT_S
    messages = {
        "readonly": f"{where} is read-only, so nothing was saved ({detail}): make the file and "
        "its folder writable, or work on a copy in a writable folder",
        "unmerged": f"{where} cannot be read here: its folder is read-only and "
        f"{Path(path or 'DATABASE').name}-wal beside it still holds changes never merged into "
        "it, which SQLite reads only where it may write: make the folder writable once (the "
        "next gbdesk command merges them), or copy the database together with that file to a "
        "writable folder",
        "locked": f"{where} is locked by another program (another gbdesk, or a database tool "
        f"with unsaved changes) and stayed locked for more than {wait:g} s, so this step was "
        "not saved: wait for that program to finish or close it, then try again",
        "corrupt": f"{where} is damaged ({detail}); gbdesk writes nothing into it: restore a "
        "backup copy, or rescue what is readable with the sqlite3 tool "
        f"(sqlite3 {path or 'DATABASE'} .recover | sqlite3 rescued.sqlite) and open the rescue",
        "notadb": f"{path or 'this file'} is not a gbdesk database, or its first page is damaged "
        f"({detail}): choose another file, or restore a backup copy",
        "full": f"the disk holding {where} is full, so this step was not saved (everything "
        "saved before is intact): free some disk space, then try again",
        "ioerr": f"the disk reported an error while gbdesk used {where} ({detail}), so this "
        "step was not saved: check the disk or network drive, then try again",
        "cantopen": f"cannot open {where} ({detail}): check that its folder exists and that "
        "gbdesk may read and write there",
    }
    return messages[kind]


_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")
_WRITE_BEGINS = ("BEGIN IMMEDIATE", "BEGIN EXCLUSIVE")


def _is_write(sql: str) -> bool:
    head = sql.lstrip()[:16].upper()
    return head.startswith(_WRITES) or " ".join(head.split())[:15] in _WRITE_BEGINS


class _GuardedConnection(sqlite3.Connection):
    """A connection that calls `guard` once before its first writing statement (the
    integrity check: nothing is written into a damaged database)."""

    guard: Any = None
    guard_passed = False

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if not self.guard_passed and self.guard is not None and _is_write(sql):
            self.guard()
            self.guard_passed = True
        try:
            return super().execute(sql, parameters)
        except OverflowError as exc:  # the edges check numbers; this is the last net
            raise UserError(OUT_OF_RANGE) from exc

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        if not self.guard_passed and self.guard is not None and _is_write(sql):
            self.guard()
            self.guard_passed = True
        try:
            return super().executemany(sql, parameters)
        except OverflowError as exc:
            raise UserError(OUT_OF_RANGE) from exc


#: A Python int beyond SQLite's signed 64-bit INTEGER reached a statement (the commands and
#: importers check their numbers first, so this says what a missed check would have hidden).
OUT_OF_RANGE = (
    "a whole number is outside what the database holds (-9,223,372,036,854,775,808 to "
    "9,223,372,036,854,775,807); nothing of this step was saved"
)


_checks_lock = threading.Lock()
# (st_dev, st_ino) → (quick_check's verdict, the files' signature when it was last known good)
_checked: dict[tuple[int, int], tuple[str, tuple[int, ...]]] = {}
_backups_lock = threading.Lock()
_backups: dict[str, list[tuple[Path, int]]] = {}  # database → [(copy, version it had)]


#: what `check_db_path` says a new database file is made by (the --db help says the same)
WRITING_COMMANDS = "commands that write (run, import, audit, label, models --add …)"


def check_db_path(path: str | os.PathLike, *, create: bool) -> None:
    """Refuse a database path a person chose that looks mistyped, before anything is made:
    its folder must exist (a missing folder is never created), and unless `create` (a
    command that writes, the app) the file must exist too. Raises `UserError` (one line)."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise UserError(f"--db points at a folder, not a database file: {target}")
    folder = target.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise UserError(
            f"the folder of the database {target} {what} (a mistyped path?); nothing was "
            "created — create the folder first or choose another path"
        )
    if not create and not target.exists():
        raise UserError(
            f"no database at {target} (a mistyped path?); nothing was created — "
            f"{WRITING_COMMANDS} create a new database in an existing folder"
        )


#: the tables a new database's rows of value are in (`remove_if_empty`)
_VALUE_TABLES = ("runs", "audits", "labels", "codebook", "review_samples", "models")


def remove_if_empty(path: str | os.PathLike) -> bool:
    """Remove a database file (and its -wal, -shm, -journal) that holds no run, audit,
    label, codebook, review sample or model (an endpoint's capabilities, found before a
    refusal) — the one a refused command had just created; True when removed. A database
    holding anything of value is never touched."""
    target = Path(path)
    try:
        with contextlib.closing(sqlite3.connect(target)) as conn:
            for table in _VALUE_TABLES:
                try:
                    if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone():
                        return False
                except sqlite3.OperationalError:  # no such table (an older layout)
                    continue
    except sqlite3.Error:
        return False
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(f"{target}{suffix}").unlink()
    return True


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _signature(path: Path) -> tuple[int, ...]:
    """Size and modification time of the database and its write-ahead log: any change made
    by another program (or process) changes it."""
    sig: list[int] = []
    for file in (path, Path(f"{path}-wal")):
        try:
            st = file.stat()
        except OSError:
            sig += [0, 0]
            continue
        # an empty log is no change (each connection may create or remove one)
        sig += [st.st_size, st.st_mtime_ns if st.st_size else 0]
    return tuple(sig)


def forget_checks() -> None:
    """Check every database again before its next write in this process."""
    with _checks_lock:
        _checked.clear()


def take_backup_notices(path: str | os.PathLike) -> list[str]:
    """One sentence per copy this process made of `path` before migrating it (each is
    given once), e.g. for the app to say where the copy is."""
    with _backups_lock:
        made = _backups.pop(str(Path(path).resolve()), [])
    return [backup_notice(Path(path), copy, version) for copy, version in made]


def backup_notice(path: Path, copy: Path, version: int) -> str:
    return (
        f"gbdesk updated the database {path} to a newer layout; a copy of it as it was "
        f"before (layout v{version}) is at {copy}"
    )


class Store(
    ModelTables,
    RunTables,
    AttemptTables,
    LabelTables,
    LabelFactTables,
    CodingTables,
    ReviewSampleTables,
    MetricsCacheTables,
    EvidenceTables,
):
    """A gbdesk database. Open one per thread (sqlite connections are per thread).

    This class holds the connection: opening (read-only when it must), the integrity guard,
    the copy made before a migration, and transactions. Its methods over the tables come
    from one mixin per table family (`gbdesk.store._models`, `_runs`, `_attempts`,
    `_labels`, `_facts`, `_coding`, `_review`, `_metrics`, `_evidence`), so one object serves every
    caller while each family's SQL sits in a file of its own."""

    BUSY_TIMEOUT_S = 30.0  # how long a write waits for another program's lock
    conn: _GuardedConnection

    def __init__(self, path: str | os.PathLike, *, reader: bool = False):
        self.path = Path(path)
        self.backup_path: Path | None = None  # the copy made before migrating, if any
        if self.path.exists() and self.path.is_dir():
            raise UserError(f"--db points at a folder, not a database file: {self.path}")
        if reader:
            self._open_reader()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the database {self.path}: {exc}") from None
        self.read_only = False  # opened read-only (a read-only file or file system)
        try:
            self._open()
        except sqlite3.Error as exc:
            if fault_kind(exc) not in ("cantopen", "readonly") or not self.path.is_file():
                raise self._open_error(exc) from None
            self._open_read_only(exc)
        self.schema_version = latest_version()

    def _open_read_only(self, why: sqlite3.Error) -> None:
        """Open a database that cannot be written (a read-only file, folder or file system)
        for reading; writes are then refused by `check_writable` and `_GuardedConnection`.

        A read-only connection (`mode=ro`) reads a WAL-mode file with its log only beside
        the log's index (-shm): one already there, or one SQLite makes, which a read-only
        folder forbids. There SQLite reads the file only as immutable (`immutable=1`: no
        side file, no lock), and an immutable file's log is ignored — so that is done only
        when the log holds nothing; a log still holding committed changes (its writer was
        killed) is refused in one line rather than shown as an older database
        (sqlite.org/wal.html, "Read-Only Databases"; sqlite.org/uri.html)."""
        try:
            self._open(read_only=True)
        except sqlite3.Error as again:
            if fault_kind(again) not in ("cantopen", "readonly"):
                raise self._open_error(again) from None
            wal = Path(f"{self.path}-wal")
            try:
                unmerged = wal.stat().st_size > 0
            except OSError:
                unmerged = False  # no log (or none we can see): nothing immutable would skip
            if unmerged:
                message = fault_message("unmerged", self.path, str(again))
                raise DatabaseFault(message, "readonly") from None
            try:
                self._open(read_only=True, immutable=True)
            except sqlite3.Error as last:
                raise self._open_error(last) from None
            log.info("opened %s as immutable (%s; %s)", self.path, why, again)
        self.read_only = True
        log.info("opened %s read-only (%s)", self.path, why)

    def _open_reader(self) -> None:
        """`Store(path, reader=True)`: an existing database opened for reading only, as it
        is — `mode=ro`, never migrated (a database of another layout is refused in one
        line), every write refused before it reaches SQLite. What `gbdesk verify` opens: a
        check that the data did not change must not change it."""
        if not self.path.is_file():
            raise UserError(f"no database at {self.path}")
        self.read_only = True
        try:
            self._open(read_only=True, migrating=False)
        except sqlite3.Error as exc:
            raise self._open_error(exc) from None
        self.conn.guard = self._refuse_write
        self.conn.guard_passed = False
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        self.migrated_from = version
        self.schema_version = version
        if version != latest_version():
            self.conn.close()
            when = "older" if version < latest_version() else "newer"
            raise UserError(
                f"the database {self.path} has layout v{version}, {when} than this gbdesk's "
                f"(v{latest_version()}); it is read as it is, never updated, so "
                + (
                    "open it once with this gbdesk (which updates it) and try again"
                    if version < latest_version()
                    else "use the gbdesk that wrote it"
                )
            )

    def _refuse_write(self) -> None:
        """The guard of a reader's connection: no statement that writes is run."""
        detail = "opened for reading only"
        raise DatabaseFault(fault_message("readonly", self.path, detail), "readonly")

    def _open(
        self, read_only: bool = False, immutable: bool = False, migrating: bool = True
    ) -> None:
        target = str(self.path)
        if read_only:
            target = f"{self.path.resolve().as_uri()}?mode=ro{'&immutable=1' if immutable else ''}"
        conn = sqlite3.connect(
            target,
            timeout=self.BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
            factory=_GuardedConnection,
            uri=read_only,
        )
        try:
            conn.guard = self._guard
            refuse_foreign(conn, f"the database {self.path}")  # before WAL changes its header
            if not read_only:
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA busy_timeout = {int(self.BUSY_TIMEOUT_S * 1000)}")
            self.conn = conn
            self.db = sqlite_utils.Database(conn)
            self._in_transaction = False
            if migrating:
                self.migrated_from = migrate(
                    conn, backup=self._backup_before_migration, name=f"the database {self.path}"
                )
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            raise

    def _open_error(self, exc: sqlite3.Error) -> UserError:
        fault = database_fault(exc, self.path, self.BUSY_TIMEOUT_S)
        writable = os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)
        if fault is not None and fault.kind == "cantopen" and self.path.is_file() and not writable:
            fault = DatabaseFault(fault_message("readonly", self.path, str(exc)), "readonly")
        return fault or UserError(f"cannot open the database {self.path}: {exc}")

    def close(self) -> None:
        unchanged = _signature(self.path)
        try:
            self.conn.close()
        except sqlite3.Error as exc:  # nothing to save any more; say so in the log
            log.warning("closing %s: %s", self.path, exc)
        self._still_good(unchanged)  # closing may copy the log into the file

    def _still_good(self, unchanged: tuple[int, ...] | None = None) -> None:
        """After this process's own write (or close): the database is as good as when it
        was checked — if it was good, and (with `unchanged`) nothing else changed it since."""
        key = _file_key(self.path)
        with _checks_lock:
            known = _checked.get(key) if key else None
            if key and known and known[0] == "ok" and (unchanged is None or known[1] == unchanged):
                _checked[key] = ("ok", _signature(self.path))

    # -- integrity and backups --------------------------------------------------------------
    def _guard(self) -> None:
        """Refuse to write into a database that fails `PRAGMA quick_check` — checked at the
        first write of a connection, skipped when this process checked the file before and
        nothing but this process changed it since (size and mtime of the file and its log).
        Costs about 0.3 s per 100 MB when the file is in the OS cache."""
        key = _file_key(self.path)
        signature = _signature(self.path)
        with _checks_lock:
            known = _checked.get(key) if key else None
        verdict = known[0] if known is not None and known[1] == signature else None
        if verdict is None:
            started = time.perf_counter()
            try:
                rows = [r[0] for r in self.conn.execute("PRAGMA quick_check").fetchall()]
                verdict = "ok" if rows == ["ok"] else "; ".join(rows[:3])
            except sqlite3.DatabaseError as exc:
                if fault_kind(exc) not in ("corrupt", "notadb"):
                    raise
                verdict = str(exc)
            log.info(
                "quick_check of %s: %s (%.2f s)", self.path, verdict, time.perf_counter() - started
            )
            if key is not None:
                with _checks_lock:
                    _checked[key] = (verdict, signature)
        if verdict != "ok":
            message = fault_message("corrupt", self.path, f"quick_check: {verdict}")
            raise DatabaseFault(message, "corrupt")

    def check_integrity(self) -> None:
        """Run the write guard now (a `DatabaseFault` if the database is damaged), e.g. before
        loading a model for a run that would then find it cannot save anything."""
        if not self.conn.guard_passed:
            self._guard()
            self.conn.guard_passed = True

    def check_writable(self) -> None:
        """Fail now, in one line, if this database cannot take a write (damaged, read-only,
        locked longer than the busy timeout) — before a command loads a model or reads a
        large file only to find that it cannot save anything."""
        if self.read_only:
            detail = "a read-only file or file system"
            raise DatabaseFault(fault_message("readonly", self.path, detail), "readonly")
        self.check_integrity()
        with self.transaction():
            pass  # takes the write lock, and gives it back at once

    def _backup_before_migration(self, version: int) -> None:
        """Copy the database (at schema `version`) next to itself with SQLite's backup API;
        called by `migrate` under the write lock, before the first step."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}.v{version}-backup-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.v{version}-backup-{stamp}-{n}")
        source = sqlite3.connect(str(self.path))  # a reader: sees the committed database
        copy: sqlite3.Connection | None = None
        try:
            copy = sqlite3.connect(str(target))
            source.backup(copy)
            copy.close()
            copy = None
        except sqlite3.Error as exc:
            if copy is not None:
                copy.close()
            for leftover in (target, Path(f"{target}-journal"), Path(f"{target}-wal")):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            fault = database_fault(exc, target)
            reason = str(fault) if fault else _one_line(str(exc))
            raise DatabaseFault(
                f"the database {self.path} needs a layout update, but copying it first failed "
                f"— {reason}; nothing was changed",
                fault.kind if fault else "ioerr",
            ) from None
        finally:
            source.close()
        log.info("copied %s (layout v%d) to %s before migrating it", self.path, version, target)
        self.backup_path = target
        with _backups_lock:
            _backups.setdefault(str(self.path.resolve()), []).append((target, version))

    # -- transactions -----------------------------------------------------------------------
    def _rollback(self, exc: BaseException) -> None:
        """Undo the open transaction (SQLite may have undone it already, e.g. on a full
        disk); on a full disk, also give the write-ahead log's space back."""
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error as err:
                log.warning("rollback in %s failed: %s", self.path, err)
        if fault_kind(exc, self.path) == "full":
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction around several store calls: all of them are committed
        together or none is (an exception, a full disk or a kill rolls everything back)."""
        if self._in_transaction:
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback(exc)
            raise
        finally:
            self._in_transaction = False
        self._still_good()

    def _write(self) -> contextlib.AbstractContextManager[None]:
        """A write: its own immediate transaction, or part of `transaction()`'s."""
        return self.transaction()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        if isinstance(exc, sqlite3.Error):
            fault = database_fault(exc, self.path, self.BUSY_TIMEOUT_S)
            if fault is not None:
                raise fault from exc
