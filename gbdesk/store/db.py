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
import json
import logging
import os
import re
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil
import sqlite_utils

from gbdesk.store.migrations import latest_version, migrate, refuse_foreign
from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)

ACTIVE_STATUSES = ("running", "paused")
FINAL_STATUSES = ("done",)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _owner_token() -> str:
    proc = psutil.Process(os.getpid())
    return f"{socket.gethostname()}:{proc.pid}:{proc.create_time():.3f}"


def owner_alive(owner: str | None) -> bool:
    """Is the process that claimed a run (host:pid:start-time) still running here?"""
    if not owner:
        return False
    try:
        host, pid, started = owner.rsplit(":", 2)
        if host != socket.gethostname():
            return True  # another machine's process: assume alive, cannot tell
        proc = psutil.Process(int(pid))
        return f"{proc.create_time():.3f}" == started and proc.status() != psutil.STATUS_ZOMBIE
    except (ValueError, psutil.Error):
        return False


def _like_prefix(prefix: str | None) -> str:
    if not prefix:
        return "%"
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


#: a run's attempts in run order (its items' order, then attempt number)
_RUN_ATTEMPTS = (
    "FROM attempts a JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item "
    "WHERE a.run_id = ? ORDER BY i.idx, a.attempt"
)


def _loads(text: str | None, default: Any = None) -> Any:
    return json.loads(text) if text else default


# -- database faults ----------------------------------------------------------------------------
class DatabaseFault(UserError):
    """The database file cannot be used as asked (read-only, locked, damaged, disk full, I/O
    error, cannot be opened). `kind` names which; the message is one line."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


# primary SQLite result codes (https://sqlite.org/rescode.html)
_KIND_BY_CODE = {
    3: "readonly",  # SQLITE_PERM
    5: "locked",  # SQLITE_BUSY
    6: "locked",  # SQLITE_LOCKED
    8: "readonly",  # SQLITE_READONLY
    10: "ioerr",  # SQLITE_IOERR
    11: "corrupt",  # SQLITE_CORRUPT
    13: "full",  # SQLITE_FULL
    14: "cantopen",  # SQLITE_CANTOPEN
    26: "notadb",  # SQLITE_NOTADB
}
_KIND_BY_MESSAGE = (  # Python < 3.11 has no sqlite_errorcode
    ("readonly database", "readonly"),
    ("access permission denied", "readonly"),
    ("database is locked", "locked"),
    ("database table is locked", "locked"),
    ("disk image is malformed", "corrupt"),
    ("file is not a database", "notadb"),
    ("database or disk is full", "full"),
    ("disk i/o error", "ioerr"),
    ("unable to open database file", "cantopen"),
)


#: Free bytes below which an I/O error on the database's disk is taken for a full disk.
FULL_DISK_BYTES = 1 << 20


def disk_full(path: str | os.PathLike | None) -> bool:
    """Whether the disk holding the database `path` has (next to) no free space left."""
    if path is None:
        return False
    folder = Path(path).parent
    try:
        return shutil.disk_usage(folder).free < FULL_DISK_BYTES
    except OSError:
        return False


def fault_kind(exc: BaseException, path: str | os.PathLike | None = None) -> str | None:
    """Which database fault an sqlite3 error is ("readonly", "locked", "corrupt", "notadb",
    "full", "ioerr", "cantopen"), or None for anything else (a bug: a constraint, bad SQL).

    A full disk is not always SQLITE_FULL: a big write that runs out of room is, but a
    small one fails earlier, as the shared-memory index or the log cannot grow, with an
    I/O error (SQLITE_IOERR_SHMSIZE, _WRITE …). Given the database's `path`, an I/O error
    on a disk without free space is "full", so every command says the same."""
    if isinstance(exc, DatabaseFault):
        return exc.kind
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _KIND_BY_CODE:
        kind: str | None = _KIND_BY_CODE[code & 0xFF]
    else:
        text = str(exc).lower()
        kind = next((kind for needle, kind in _KIND_BY_MESSAGE if needle in text), None)
    if kind == "ioerr" and disk_full(path):
        return "full"
    return kind


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


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


_INSERT_SCORE = (
    "INSERT INTO scores (attempt_id, run_id, idx, grp, descriptor, axis, template, name, text, "
    "n_tokens, logprob_sum, ppl, apx) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _score_rows(
    attempt_id: int, run_id: int, scores: Sequence[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    return [
        (
            attempt_id,
            run_id,
            i,
            s["group"],
            s["descriptor"],
            s.get("axis"),
            s["template"],
            s.get("name"),
            s.get("text"),
            s.get("n_tokens"),
            s.get("logprob_sum"),
            s.get("ppl"),
            s.get("apx"),
        )
        for i, s in enumerate(scores)
    ]


def _auto_label_row(
    stamp: str,
    source: str,
    label: str,
    data: dict[str, Any] | None = None,
    evidence: list[Any] | None = None,
) -> tuple[Any, ...]:
    """(source, label, data_json, evidence_json, created_at) of an automatic label."""
    return (
        source,
        label,
        json.dumps(data) if data is not None else None,
        json.dumps(evidence) if evidence is not None else None,
        stamp,
    )


@dataclass
class PreparedAttempts:
    """Attempts made ready for `Store.add_attempts` (rows without the run id, labels and
    scores by (item, attempt)): the JSON encoding is done before the write lock."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    labels: dict[tuple[str, int], tuple[Any, ...]] = field(default_factory=dict)
    scores: dict[tuple[str, int], Sequence[dict[str, Any]]] = field(default_factory=dict)
    #: the automatic label's flat rows (`Probe.label_facts`), when the caller made them
    facts: dict[tuple[str, int], list[tuple[Any, ...]]] = field(default_factory=dict)


def prepare_attempts(attempts: Iterable[dict[str, Any]]) -> PreparedAttempts:
    """Rows for `Store.add_attempts`; a repeated (item, attempt) keeps its first occurrence,
    as `add_attempt` does."""
    stamp = now()
    prepared = PreparedAttempts()
    seen: set[tuple[str, int]] = set()
    for a in attempts:
        key = (a["item"], a["attempt"])
        if key in seen:
            continue
        seen.add(key)
        prepared.rows.append(
            (
                a["item"],
                a["attempt"],
                a["prompt"],
                a["response"],
                a.get("seed"),
                a.get("tokens_in"),
                a.get("tokens_out"),
                a.get("latency_s"),
                a.get("finish_reason"),
                a.get("prompt_mode"),
                stamp,
            )
        )
        if a.get("auto_label") is not None:
            prepared.labels[key] = _auto_label_row(stamp, **a["auto_label"])
        if a.get("scores"):
            prepared.scores[key] = a["scores"]
        if a.get("auto_label") is not None and a.get("facts") is not None:
            prepared.facts[key] = a["facts"]
    return prepared


_INSERT_FACT = (
    "INSERT INTO label_facts (label_id, idx, run_id, k, a, b, c, d, x) VALUES (?,?,?,?,?,?,?,?,?)"
)


def _fact_rows(
    label_id: int, run_id: int, facts: Sequence[tuple[Any, ...]]
) -> Iterator[tuple[Any, ...]]:
    """`label_facts` rows of one label: facts are (k, a, b, c, d, x) tuples."""
    for i, f in enumerate(facts):
        yield (label_id, i, run_id, *f)


class Store:
    """A gbdesk database. Open one per thread (sqlite connections are per thread)."""

    BUSY_TIMEOUT_S = 30.0  # how long a write waits for another program's lock

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.backup_path: Path | None = None  # the copy made before migrating, if any
        if self.path.exists() and self.path.is_dir():
            raise UserError(f"--db points at a folder, not a database file: {self.path}")
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
            # A read-only file or file system: a read-only connection can still read it.
            # Where not even the WAL index can be made next to it, read it as immutable —
            # unless a write-ahead log holds committed pages (immutable would skip them).
            wal = Path(f"{self.path}-wal")
            try:
                try:
                    self._open(read_only=True)
                except sqlite3.Error as again:
                    if fault_kind(again) != "cantopen" or (wal.exists() and wal.stat().st_size):
                        raise
                    self._open(read_only=True, immutable=True)
            except sqlite3.Error as again:
                raise self._open_error(again) from None
            self.read_only = True
            log.info("opened %s read-only (%s)", self.path, exc)
        self.schema_version = latest_version()

    def _open(self, read_only: bool = False, immutable: bool = False) -> None:
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
            if known and known[0] == "ok" and (unchanged is None or known[1] == unchanged):
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

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        return list(self.db.query(sql, params))

    # -- models -------------------------------------------------------------------------
    def register_model(self, record: dict[str, Any]) -> int:
        """Insert or refresh a model row; the key is (kind, path, sha256)."""
        row = dict(record)
        row.setdefault("kind", "gguf")
        row.setdefault("added_at", now())
        columns = [c for c in row if c.isidentifier()]  # model rows are built by gbdesk
        with self._write():
            existing = self.conn.execute(
                "SELECT id FROM models WHERE kind = ? AND path = ? AND sha256 IS ?",
                (row["kind"], row["path"], row.get("sha256")),
            ).fetchone()
            if existing:
                update = [c for c in columns if c != "added_at"]
                self.conn.execute(
                    f"UPDATE models SET {', '.join(f'{c} = ?' for c in update)} WHERE id = ?",
                    [*(row[c] for c in update), existing[0]],
                )
                return int(existing[0])
            cur = self.conn.execute(
                f"INSERT INTO models ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})",
                [row[c] for c in columns],
            )
            return int(cur.lastrowid)

    def get_model(self, model_id: int) -> dict[str, Any]:
        rows = self.query("SELECT * FROM models WHERE id = ?", (model_id,))
        if not rows:
            raise UserError(f"no model with id {model_id} in {self.path}")
        return rows[0]

    def model_by_path(self, path: str, size: int, mtime: float) -> dict[str, Any] | None:
        """A cached row for an unchanged file (same size and mtime), to skip re-hashing."""
        rows = self.query(
            "SELECT * FROM models WHERE kind = 'gguf' AND path = ? AND size_bytes = ? "
            "AND mtime = ? ORDER BY id DESC LIMIT 1",
            (path, size, mtime),
        )
        return rows[0] if rows else None

    def models_of_kind(self, kind: str, path: str | None = None) -> list[dict[str, Any]]:
        """The model rows of `kind` (at `path`, when given), oldest first: one endpoint URL
        serves several models, each its own row sharing the path."""
        if path is None:
            return self.query("SELECT * FROM models WHERE kind = ? ORDER BY id", (kind,))
        return self.query(
            "SELECT * FROM models WHERE kind = ? AND path = ? ORDER BY id", (kind, path)
        )

    def add_model_row(self, record: dict[str, Any]) -> int:
        """Insert a model row as given (no key lookup, unlike `register_model`: endpoint rows
        share kind, path and a NULL sha256); its id."""
        return int(self.db["models"].insert(record).last_pk)

    def update_model_row(self, model_id: int, fields: dict[str, Any]) -> None:
        """Change these columns of one model row (an endpoint's name or metadata)."""
        self.db["models"].update(model_id, fields)

    def list_models(self) -> list[dict[str, Any]]:
        return self.query("SELECT * FROM models ORDER BY id")

    # -- runs -----------------------------------------------------------------------------
    def create_run(
        self,
        *,
        probe: str,
        probe_version: str,
        model_id: int | None,
        params: dict[str, Any],
        generation: dict[str, Any],
        items: Iterable[tuple[Any, ...]],
        attempts_per_item: int,
        app_version: str,
        llama_cpp_version: str | None,
        source: str = "generated",
        engine: dict[str, Any] | None = None,
    ) -> int:
        """Create a run and its planned items in one transaction: (key, prompt, metadata)
        or (key, prompt, metadata, prompts) where `prompts` ([{text, metadata}, …] or None)
        are an item's several prompts; `attempts_per_item` is per prompt."""
        items = [(*row, None) if len(row) == 3 else tuple(row) for row in items]
        total = sum(len(row[3] or ()) or 1 for row in items) * attempts_per_item
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO runs (probe, probe_version, model_id, source, params_json, "
                "generation_json, engine_json, app_version, llama_cpp_version, status, "
                "created_at, attempts_total) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    probe,
                    probe_version,
                    model_id,
                    source,
                    json.dumps(params, sort_keys=True),
                    json.dumps(generation, sort_keys=True),
                    json.dumps(engine or {}, sort_keys=True),
                    app_version,
                    llama_cpp_version,
                    "created",
                    now(),
                    total,
                ),
            )
            run_id = int(cur.lastrowid)
            self.conn.executemany(
                "INSERT INTO run_items (run_id, idx, item, prompt, metadata_json, prompts_json) "
                "VALUES (?,?,?,?,?,?)",
                [
                    (
                        run_id,
                        idx,
                        key,
                        prompt,
                        json.dumps(meta, sort_keys=True),
                        json.dumps(prompts, sort_keys=True) if prompts else None,
                    )
                    for idx, (key, prompt, meta, prompts) in enumerate(items)
                ],
            )
        return run_id

    def _run_row(self, run_id: int) -> dict[str, Any]:
        rows = self.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise UserError(f"no run {run_id} in {self.path}")
        return rows[0]

    def get_run(self, run_id: int) -> dict[str, Any]:
        row = self._run_row(run_id)
        row["params"] = _loads(row.pop("params_json"), {})
        row["generation"] = _loads(row.pop("generation_json"), {})
        row["engine"] = _loads(row.pop("engine_json"), {})
        row["status"] = self.effective_status(row)
        row["attempts_done"] = self.count_attempts(run_id)
        return row

    @staticmethod
    def effective_status(row: dict[str, Any]) -> str:
        """A run left "running" by a process that no longer exists is "interrupted"."""
        status = row["status"]
        if status in ACTIVE_STATUSES and not owner_alive(row.get("owner")):
            return "interrupted"
        return status

    def list_runs(self) -> list[dict[str, Any]]:
        rows = self.query(
            """
            SELECT r.*, m.name AS model_name, m.file_name AS model_file,
                   (SELECT COUNT(*) FROM attempts a WHERE a.run_id = r.id) AS attempts_done
            FROM runs r LEFT JOIN models m ON m.id = r.model_id
            ORDER BY r.id
            """
        )
        for row in rows:
            row["status"] = self.effective_status(row)
            row["params"] = _loads(row.pop("params_json"), {})
            row["generation"] = _loads(row.pop("generation_json"), {})
            row["engine"] = _loads(row.pop("engine_json"), {})
        return rows

    def generated_runs(
        self,
        probe: str,
        probe_version: str,
        *,
        model_sha256: str | None = None,
        model_id: int | None = None,
    ) -> list[tuple[int, str, str, str, str]]:
        """(run id, params JSON, generation JSON, model kind, model path) of the runs of this
        probe version generated here (not imported), newest first, for one model: a GGUF by
        `model_sha256` (the same weights wherever the file lay), else the row `model_id`.
        What `gbdesk run` compares to find a run it would make again."""
        select = (
            "SELECT r.id, r.params_json, r.generation_json, m.kind, m.path FROM runs r "
            "JOIN models m ON m.id = r.model_id "
            "WHERE r.probe = ? AND r.probe_version = ? AND r.source = 'generated' AND "
        )
        if model_sha256:
            sql, value = select + "m.sha256 = ? ORDER BY r.id DESC", model_sha256
        else:
            sql, value = select + "m.id = ? ORDER BY r.id DESC", model_id
        return self.conn.execute(sql, (probe, probe_version, value)).fetchall()

    def claim_run(self, run_id: int, engine: dict[str, Any] | None = None) -> None:
        """Mark a run as running in this process (refusing one another process runs)."""
        row = self._run_row(run_id)
        owner = row.get("owner")
        if row["status"] in ACTIVE_STATUSES and owner_alive(owner) and owner != _owner_token():
            raise UserError(f"run {run_id} is being run by another gbdesk process")
        fields: dict[str, Any] = {
            "status": "running",
            "owner": _owner_token(),
            "heartbeat_at": now(),
            "error": None,
        }
        if not row.get("started_at"):
            fields["started_at"] = now()
        if engine is not None:
            fields["engine_json"] = json.dumps(engine, sort_keys=True)
            versions = engine.get("versions", {})
            if versions.get("llama_cpp_python"):
                fields["llama_cpp_version"] = versions["llama_cpp_python"]
        self._update_run(run_id, fields)

    def _update_run(self, run_id: int, fields: dict[str, Any]) -> None:
        columns = list(fields)  # names chosen here, never from input
        with self._write():
            self.conn.execute(
                f"UPDATE runs SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?",
                [*(fields[c] for c in columns), run_id],
            )

    def update_run_params(self, run_id: int, params: dict[str, Any]) -> None:
        """Replace a run's analysis parameters (e.g. which extractor its metrics use)."""
        self._run_row(run_id)
        with self._write():
            self.conn.execute(
                "UPDATE runs SET params_json = ? WHERE id = ?",
                (json.dumps(params, sort_keys=True), run_id),
            )
            self.conn.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))

    def finish_import(self, run_id: int, attempts: int) -> None:
        """An imported run is complete: its attempt count and status."""
        with self._write():
            self.conn.execute(
                "UPDATE runs SET attempts_total = ?, status = 'done', finished_at = ? WHERE id = ?",
                (attempts, now(), run_id),
            )

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        fields: dict[str, Any] = {"status": status, "error": error, "heartbeat_at": now()}
        if status == "done":
            fields["finished_at"] = now()
        self._update_run(run_id, fields)

    def heartbeat(self, run_id: int) -> None:
        with self._write():
            self.conn.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", (now(), run_id))

    def run_items(self, run_id: int) -> list[dict[str, Any]]:
        """The run's items in order: {item, idx, prompt, metadata} and, for an item of
        several prompts, ``prompts`` ([{text, metadata}, …])."""
        rows = self.query(
            "SELECT item, idx, prompt, metadata_json, prompts_json FROM run_items "
            "WHERE run_id = ? ORDER BY idx",
            (run_id,),
        )
        for row in rows:
            row["metadata"] = _loads(row.pop("metadata_json"), {})
            prompts = row.pop("prompts_json")
            if prompts:
                row["prompts"] = _loads(prompts, None)
        return rows

    # -- attempts -------------------------------------------------------------------------
    def attempt_keys(self, run_id: int) -> set[tuple[str, int]]:
        return {
            (row[0], row[1])
            for row in self.conn.execute(
                "SELECT item, attempt FROM attempts WHERE run_id = ?", (run_id,)
            )
        }

    def count_attempts(self, run_id: int) -> int:
        return self.conn.execute(
            "SELECT COUNT(*) FROM attempts WHERE run_id = ?", (run_id,)
        ).fetchone()[0]

    def add_attempt(
        self,
        run_id: int,
        item: str,
        attempt: int,
        prompt: str,
        response: str,
        *,
        seed: int | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        latency_s: float | None = None,
        finish_reason: str | None = None,
        prompt_mode: str | None = None,
        auto_label: dict[str, Any] | None = None,
        scores: Sequence[dict[str, Any]] | None = None,
    ) -> int | None:
        """Store one attempt (with its automatic label and, for perplexity probes, the
        scores of its sentences) atomically.

        Returns the new id, or None when (run, item, attempt) was already stored —
        inserting twice is harmless, which makes resuming idempotent.
        """
        with self._write():
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO attempts (run_id, item, attempt, prompt, response, seed, "
                "tokens_in, tokens_out, latency_s, finish_reason, prompt_mode, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    item,
                    attempt,
                    prompt,
                    response,
                    seed,
                    tokens_in,
                    tokens_out,
                    latency_s,
                    finish_reason,
                    prompt_mode,
                    now(),
                ),
            )
            if cur.rowcount == 0:
                return None
            attempt_id = int(cur.lastrowid)
            if auto_label is not None:
                self._put_auto_label(attempt_id, **auto_label)
            if scores:
                self.conn.executemany(_INSERT_SCORE, _score_rows(attempt_id, run_id, scores))
        return attempt_id

    def add_attempts(
        self, run_id: int, attempts: Sequence[dict[str, Any]] | PreparedAttempts
    ) -> int:
        """Store many attempts at once (an import) in one transaction; returns how many were
        new. `attempts`: dicts of `add_attempt`'s arguments (item, attempt, prompt, response,
        and optionally prompt_mode, auto_label, scores…), or `prepare_attempts` of them —
        prepared before `transaction()`, so other writers wait for the inserts only."""
        prepared = (
            attempts if isinstance(attempts, PreparedAttempts) else prepare_attempts(attempts)
        )
        with self._write():
            existing = self.attempt_keys(run_id) if self.count_attempts(run_id) else set()
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO attempts (run_id, item, attempt, prompt, response, seed, "
                "tokens_in, tokens_out, latency_s, finish_reason, prompt_mode, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                ((run_id, *row) for row in prepared.rows),
            )
            added = self.conn.total_changes - before
            if prepared.labels or prepared.scores:
                ids = {
                    (item, attempt): attempt_id
                    for attempt_id, item, attempt in self.conn.execute(
                        "SELECT id, item, attempt FROM attempts WHERE run_id = ?", (run_id,)
                    )
                    if (item, attempt) not in existing
                }
                self.conn.executemany(
                    "INSERT OR REPLACE INTO labels (attempt_id, kind, source, label, data_json, "
                    "evidence_json, created_at, flat) VALUES (?, 'auto', ?, ?, ?, ?, ?, ?)",
                    [
                        (ids[key], *row, 1 if key in prepared.facts else None)
                        for key, row in prepared.labels.items()
                        if key in ids
                    ],
                )
                if prepared.facts:
                    by_attempt = {attempt_id: key for key, attempt_id in ids.items()}
                    label_ids = {
                        by_attempt[attempt_id]: label_id
                        for label_id, attempt_id in self.conn.execute(
                            "SELECT l.id, l.attempt_id FROM labels l JOIN attempts a "
                            "ON a.id = l.attempt_id WHERE a.run_id = ? AND l.kind = 'auto' "
                            "AND l.flat = 1",
                            (run_id,),
                        )
                        if attempt_id in by_attempt
                    }
                    self.conn.executemany(
                        _INSERT_FACT,
                        (
                            row
                            for key, facts in prepared.facts.items()
                            if key in label_ids
                            for row in _fact_rows(label_ids[key], run_id, facts)
                        ),
                    )
                self.conn.executemany(
                    _INSERT_SCORE,
                    [
                        row
                        for key, scores in prepared.scores.items()
                        if key in ids
                        for row in _score_rows(ids[key], run_id, scores)
                    ],
                )
        return added

    def scores(self, run_id: int) -> list[dict[str, Any]]:
        """Every stored score of a run, in run order (perplexity probes)."""
        return self.query(
            'SELECT s.grp AS "group", s.descriptor, s.axis, s.template, s.name, s.text, '
            "s.n_tokens, s.logprob_sum, s.ppl, s.apx, a.item FROM scores s "
            "JOIN attempts a ON a.id = s.attempt_id "
            "JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item "
            "WHERE s.run_id = ? ORDER BY i.idx, a.attempt, s.idx",
            (run_id,),
        )

    def score_frame(self, run_id: int) -> Any:
        """`scores` without the sentences' texts, as a pandas frame in the same (run) order,
        read in chunks without SQLite sorting them."""
        import numpy as np
        import pandas as pd

        columns = ["group", "descriptor", "axis", "template", "name", "n_tokens",
                   "logprob_sum", "ppl", "apx", "attempt_id", "idx"]  # fmt: skip
        cur = self.conn.execute(
            "SELECT grp, descriptor, axis, template, name, n_tokens, logprob_sum, ppl, apx, "
            "attempt_id, idx FROM scores WHERE run_id = ?",
            (run_id,),
        )
        parts = []
        while rows := cur.fetchmany(200_000):
            parts.append(pd.DataFrame.from_records(rows, columns=columns))
        if not parts:
            return pd.DataFrame()
        frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        order = pd.DataFrame.from_records(
            self.conn.execute(
                "SELECT a.id, a.item, i.idx, a.attempt FROM attempts a JOIN run_items i "
                "ON i.run_id = a.run_id AND i.item = a.item WHERE a.run_id = ?",
                (run_id,),
            ).fetchall(),
            columns=["attempt_id", "item", "item_idx", "attempt"],
        ).set_index("attempt_id")
        at = order.loc[frame["attempt_id"].to_numpy()]
        keys = np.lexsort(
            (frame["idx"].to_numpy(), at["attempt"].to_numpy(), at["item_idx"].to_numpy())
        )
        frame["item"] = at["item"].to_numpy()
        frame = frame.drop(columns=["attempt_id", "idx"]).iloc[keys].reset_index(drop=True)
        return frame

    def attempts(self, run_id: int) -> list[dict[str, Any]]:
        return self.query(f"SELECT a.* {_RUN_ATTEMPTS}", (run_id,))

    def attempt_chunks(self, run_id: int, size: int) -> Iterator[list[dict[str, Any]]]:
        """`attempts(run_id)` in lists of at most `size` rows, read as they are used."""
        cur = self.conn.execute(f"SELECT a.* {_RUN_ATTEMPTS}", (run_id,))
        columns = [d[0] for d in cur.description]
        while rows := cur.fetchmany(size):
            yield [dict(zip(columns, row, strict=True)) for row in rows]

    def get_attempt(self, attempt_id: int) -> dict[str, Any]:
        rows = self.query("SELECT * FROM attempts WHERE id = ?", (attempt_id,))
        if not rows:
            raise UserError(f"no attempt {attempt_id}")
        return rows[0]

    # -- labels ---------------------------------------------------------------------------
    def _put_auto_label(
        self,
        attempt_id: int,
        source: str,
        label: str,
        data: dict[str, Any] | None = None,
        evidence: list[Any] | None = None,
    ) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO labels (attempt_id, kind, source, label, data_json, "
            "evidence_json, created_at) VALUES (?, 'auto', ?, ?, ?, ?, ?)",
            (attempt_id, *_auto_label_row(now(), source, label, data, evidence)),
        )

    def set_auto_label(self, attempt_id: int, **label: Any) -> None:
        with self._write():
            self._put_auto_label(attempt_id, **label)

    def add_human_label(
        self,
        attempt_id: int,
        reviewer: str,
        label: str,
        data: dict[str, Any] | None = None,
        evidence: list[Any] | None = None,
        facet: str = "",
    ) -> int:
        """Record a reviewer's label; earlier human labels stay as history. `facet`: ''
        for the probe's own label, e.g. 'codes' for a codebook coding."""
        reviewer = reviewer.strip() or "reviewer"
        return self._add_label(
            attempt_id, "human", f"human:{reviewer}", label, data, evidence, facet
        )

    def add_consensus_label(
        self,
        attempt_id: int,
        decided_by: str,
        label: str,
        data: dict[str, Any] | None = None,
        evidence: list[Any] | None = None,
        facet: str = "",
    ) -> int:
        """Record an adjudicated label (raters disagreed; `decided_by` settled it)."""
        decided_by = decided_by.strip() or "reviewer"
        return self._add_label(
            attempt_id, "consensus", f"consensus:{decided_by}", label, data, evidence, facet
        )

    def _add_label(
        self,
        attempt_id: int,
        kind: str,
        source: str,
        label: str,
        data: dict[str, Any] | None,
        evidence: list[Any] | None,
        facet: str,
    ) -> int:
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO labels (attempt_id, kind, source, label, data_json, evidence_json, "
                "created_at, facet) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    attempt_id,
                    kind,
                    source,
                    label,
                    json.dumps(data) if data is not None else None,
                    json.dumps(evidence) if evidence is not None else None,
                    now(),
                    facet,
                ),
            )
        return int(cur.lastrowid)

    def _label_rows(
        self,
        run_id: int,
        kind: str,
        source_prefix: str | None,
        facet: str,
        attempt_ids: Sequence[int] | None = None,
    ) -> list[dict[str, Any]]:
        if attempt_ids is None:
            rows = self.query(
                """
                SELECT l.* FROM labels l JOIN attempts a ON a.id = l.attempt_id
                WHERE a.run_id = ? AND l.kind = ? AND l.source LIKE ? ESCAPE '\\'
                AND l.facet = ? ORDER BY l.id
                """,
                (run_id, kind, _like_prefix(source_prefix), facet),
            )
        else:  # driven by the ids (CROSS JOIN keeps that order): index labels_by_attempt
            rows = self.query(
                """
                SELECT l.* FROM json_each(?) j CROSS JOIN labels l ON l.attempt_id = j.value
                JOIN attempts a ON a.id = l.attempt_id
                WHERE a.run_id = ? AND l.kind = ? AND l.source LIKE ? ESCAPE '\\'
                AND l.facet = ? ORDER BY l.id
                """,
                (json.dumps(list(attempt_ids)), run_id, kind, _like_prefix(source_prefix), facet),
            )
        for row in rows:
            row["data"] = _loads(row.pop("data_json"))
            row["evidence"] = _loads(row.pop("evidence_json"))
        return rows

    def labels(
        self,
        run_id: int,
        kind: str,
        source_prefix: str | None = None,
        facet: str = "",
        attempt_ids: Sequence[int] | None = None,
    ) -> dict[int, dict[str, Any]]:
        """The latest label of `kind` ('auto', 'human' or 'consensus') per attempt of a
        run; with `source_prefix`, only labels whose source starts with it (one
        extractor's). `facet`: '' (the probe's own label) unless asked otherwise.
        `attempt_ids`: only these attempts' labels (a chunk of a big run)."""
        rows = self._label_rows(run_id, kind, source_prefix, facet, attempt_ids)
        return {row["attempt_id"]: row for row in rows}

    def label_texts(
        self, run_id: int, kind: str, facet: str = ""
    ) -> dict[int, tuple[str, str, str | None, str | None]]:
        """As `labels` (the latest label of `kind` per attempt), but only (source, label,
        data JSON, evidence JSON), the JSON left as stored: cheap for a whole big run."""
        rows = self.conn.execute(
            "SELECT l.attempt_id, l.source, l.label, l.data_json, l.evidence_json "
            "FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "WHERE a.run_id = ? AND l.kind = ? AND l.facet = ? ORDER BY l.id",
            (run_id, kind, facet),
        )
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def iter_attempt_texts(self, run_id: int) -> Iterator[tuple[int, str, int, str, str]]:
        """(id, item, attempt, prompt, response) of a run's attempts in `attempts` order,
        one row at a time."""
        yield from self.conn.execute(
            f"SELECT a.id, a.item, a.attempt, a.prompt, a.response {_RUN_ATTEMPTS}", (run_id,)
        )

    def rater_labels(
        self,
        run_id: int,
        facet: str = "",
        kind: str = "human",
        which: str = "latest",
        attempt_ids: Sequence[int] | None = None,
    ) -> dict[str, dict[int, dict[str, Any]]]:
        """rater → attempt id → that rater's label ("latest", or "first": the label the
        rater gave before any change). Raters are the `<name>` of `human:<name>` (of
        `consensus:<name>` for kind 'consensus'), in order of their first label.
        `attempt_ids`: only these attempts' labels."""
        if which not in ("latest", "first"):
            raise ValueError("which must be 'latest' or 'first'")
        out: dict[str, dict[int, dict[str, Any]]] = {}
        prefix = f"{kind}:"
        for row in self._label_rows(run_id, kind, prefix, facet, attempt_ids):
            by_attempt = out.setdefault(row["source"].removeprefix(prefix), {})
            if which == "latest" or row["attempt_id"] not in by_attempt:
                by_attempt[row["attempt_id"]] = row
        return out

    def human_label_rows(self, run_id: int) -> list[dict[str, Any]]:
        """Every person's label of a run, every facet and every change, oldest first: (id,
        attempt_id, source, label, data_json, created_at), the JSON as stored."""
        return self.query(
            "SELECT l.id, l.attempt_id, l.source, l.label, l.data_json, l.created_at "
            "FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "WHERE a.run_id = ? AND l.kind = 'human' ORDER BY l.id",
            (run_id,),
        )

    def raters(self) -> list[str]:
        """Every rater of the probes' own labels in the database (`human:<name>`), sorted."""
        rows = self.conn.execute(
            "SELECT DISTINCT source FROM labels WHERE kind = 'human' AND facet = ''"
        )
        return sorted({r[0].removeprefix("human:") for r in rows})

    def label_facets(self, run_id: int) -> list[str]:
        """The facets with a human or consensus label in this run ('' first)."""
        rows = self.conn.execute(
            "SELECT DISTINCT l.facet FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "WHERE a.run_id = ? AND l.kind != 'auto' ORDER BY l.facet",
            (run_id,),
        )
        return [r[0] for r in rows]

    def unlabelled_attempts(self, run_id: int, source_prefix: str | None) -> list[dict[str, Any]]:
        """Attempts of a run (id, item, attempt, response) without an automatic label whose source
        starts with `source_prefix`, in run order (reads only those attempts' texts)."""
        memo = self.__dict__.setdefault("_memo_values", {})
        key = ("all labelled", run_id, source_prefix)
        hit = memo.get(key)
        if hit is not None and hit[0] == self._unchanged_key():
            return []  # none was missing, and nothing was written since
        rows = self._unlabelled_attempts(run_id, source_prefix)
        if not rows:
            memo[key] = (self._unchanged_key(), True)
        return rows

    def _unlabelled_attempts(self, run_id: int, source_prefix: str | None) -> list[dict[str, Any]]:
        return self.query(
            """
            SELECT a.id, a.item, a.attempt, a.response FROM attempts a
            JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item
            WHERE a.run_id = ? AND NOT EXISTS (
                SELECT 1 FROM labels l WHERE l.attempt_id = a.id AND l.kind = 'auto'
                AND l.source LIKE ? ESCAPE '\\')
            ORDER BY i.idx, a.attempt
            """,
            (run_id, _like_prefix(source_prefix)),
        )

    def labels_of(
        self, attempt_ids: Iterable[int], kind: str, source_prefix: str | None = None
    ) -> dict[int, dict[str, Any]]:
        """`labels` of the given attempts only (the latest of `kind` per attempt)."""
        latest: dict[int, dict[str, Any]] = {}
        ids = sorted(set(attempt_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.query(
                f"SELECT * FROM labels WHERE attempt_id IN ({','.join('?' * len(chunk))}) "
                "AND kind = ? AND source LIKE ? ESCAPE '\\' ORDER BY id",
                (*chunk, kind, _like_prefix(source_prefix)),
            )
            for row in rows:
                row["data"] = _loads(row.pop("data_json"))
                row["evidence"] = _loads(row.pop("evidence_json"))
                latest[row["attempt_id"]] = row
        return latest

    # -- the flat table of label facts (fast metrics) ---------------------------------------
    def unflattened_labels(self, run_id: int) -> list[int]:
        """The ids of the run's labels without flat rows yet."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT l.id FROM labels l INDEXED BY labels_unflat JOIN attempts a "
                "ON a.id = l.attempt_id WHERE l.flat IS NULL AND a.run_id = ? ORDER BY l.id",
                (run_id,),
            )
        ]

    def labels_to_flatten(self, label_ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """(label id, label, data_json, response, item) of these labels (at most 900)."""
        marks = ",".join("?" * len(label_ids))
        return self.conn.execute(
            "SELECT l.id, l.label, l.data_json, a.response, a.item FROM labels l "
            f"JOIN attempts a ON a.id = l.attempt_id WHERE l.id IN ({marks})",
            tuple(label_ids),
        ).fetchall()

    def put_label_facts(self, run_id: int, facts: dict[int, Sequence[tuple[Any, ...]]]) -> None:
        """Store the flat rows of these labels (label id → (k, a, b, c, d, x) rows)."""
        with self._write():
            ids = [(label_id,) for label_id in facts]
            self.conn.executemany("DELETE FROM label_facts WHERE label_id = ?", ids)
            self.conn.executemany(
                _INSERT_FACT,
                (
                    row
                    for label_id, rows in facts.items()
                    for row in _fact_rows(label_id, run_id, rows)
                ),
            )
            self.conn.executemany("UPDATE labels SET flat = 1 WHERE id = ?", ids)

    def attempt_key_rows(self, run_id: int) -> sqlite3.Cursor:
        """(id, item, attempt) of a run's attempts in no particular order, as a cursor: the
        flat reader fetches a big run in chunks and sorts it itself."""
        return self.conn.execute(
            "SELECT id, item, attempt FROM attempts WHERE run_id = ?", (run_id,)
        )

    def probe_label_rows(self, run_id: int, auto_source: str | None) -> sqlite3.Cursor:
        """(label id, attempt id, 1 if a person's else 0) of a run's own labels (facet ''):
        the automatic ones whose source starts with `auto_source` and every person's, as
        a cursor (see `attempt_key_rows`)."""
        return self.conn.execute(
            "SELECT l.id, l.attempt_id, l.kind = 'human' FROM labels l "
            "JOIN attempts a ON a.id = l.attempt_id WHERE a.run_id = ? AND "
            "((l.kind = 'auto' AND l.source LIKE ? ESCAPE '\\') OR l.kind = 'human') "
            "AND l.facet = ''",
            (run_id, _like_prefix(auto_source)),
        )

    def label_fact_rows(self, run_id: int, first_label: int, last_label: int) -> sqlite3.Cursor:
        """(label_id, idx, k, a, b, c, d, x) of the run's flat rows with label ids between
        `first_label` and `last_label`, as a cursor: a range of the clustered key, read
        without lookups through the run index (the unary + keeps SQLite off it)."""
        return self.conn.execute(
            "SELECT label_id, idx, k, a, b, c, d, x FROM label_facts "
            "WHERE label_id BETWEEN ? AND ? AND +run_id = ?",
            (first_label, last_label, run_id),
        )

    def label_sources(self, run_id: int, kind: str, source_prefix: str | None = None) -> list[str]:
        """The distinct sources of a run's labels of `kind` (sorted)."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT l.source FROM labels l JOIN attempts a ON a.id = l.attempt_id "
                "WHERE a.run_id = ? AND l.kind = ? AND l.source LIKE ? ESCAPE '\\' "
                "ORDER BY l.source",
                (run_id, kind, _like_prefix(source_prefix)),
            )
        ]

    def _unchanged_key(self) -> tuple[int, int]:
        """Equal as long as nothing was written to the database: by this connection
        (`total_changes`) or by any other (`PRAGMA data_version`)."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        return (version, self.conn.total_changes)

    def _memo(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """`compute()`, or its value from the last call with the same key while the
        database is unchanged (queries over every attempt of a 500,000-story run)."""
        memo = self.__dict__.setdefault("_memo_values", {})
        stamp = self._unchanged_key()
        hit = memo.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = compute()
        memo[key] = (self._unchanged_key(), value)
        return value

    def labels_fingerprint(self, run_id: int) -> str:
        """Changes whenever an attempt or a label of the run is added or replaced."""
        return self._memo(("fingerprint", run_id), lambda: self._labels_fingerprint(run_id))

    def _labels_fingerprint(self, run_id: int) -> str:
        n_attempts, max_attempt = self.conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM attempts WHERE run_id = ?", (run_id,)
        ).fetchone()
        n_labels, max_label = self.conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(l.id), 0) FROM labels l JOIN attempts a "
            "ON a.id = l.attempt_id WHERE a.run_id = ?",
            (run_id,),
        ).fetchone()
        return f"{n_attempts}:{max_attempt}:{n_labels}:{max_label}"

    # -- codebooks and the attempts drawn for coding -------------------------------------
    def codebook(self, run_id: int) -> list[dict[str, Any]]:
        """The run's codes in order: code (a stable key), name, definition, origin,
        changed_by, changed_at."""
        return self.query(
            "SELECT code, name, definition, position, origin, changed_by, changed_at "
            "FROM codebook WHERE run_id = ? ORDER BY position, code",
            (run_id,),
        )

    def put_code(
        self,
        run_id: int,
        code: str,
        name: str,
        definition: str = "",
        *,
        origin: str = "",
        changed_by: str | None = None,
        position: int | None = None,
    ) -> None:
        """Add a code to the run's codebook, or change its name and definition (its key,
        which the stored codings refer to, stays)."""
        self._run_row(run_id)
        with self._write():
            existing = self.conn.execute(
                "SELECT position, origin FROM codebook WHERE run_id = ? AND code = ?",
                (run_id, code),
            ).fetchone()
            if existing is not None:
                self.conn.execute(
                    "UPDATE codebook SET name = ?, definition = ?, changed_by = ?, "
                    "changed_at = ? WHERE run_id = ? AND code = ?",
                    (name, definition, changed_by, now(), run_id, code),
                )
                return
            if position is None:
                position = self.conn.execute(
                    "SELECT COALESCE(MAX(position), -1) + 1 FROM codebook WHERE run_id = ?",
                    (run_id,),
                ).fetchone()[0]
            self.conn.execute(
                "INSERT INTO codebook (run_id, code, name, definition, position, origin, "
                "changed_by, changed_at) VALUES (?,?,?,?,?,?,?,?)",
                (run_id, code, name, definition, position, origin, changed_by, now()),
            )

    def save_coding_selection(
        self, run_id: int, rows: Iterable[dict[str, Any]], rule: dict[str, Any]
    ) -> None:
        """Replace the run's attempts drawn for coding (attempt_id, category, reason, in
        order) and the rule that drew them (codings already made stay)."""
        with self._write():
            self.conn.execute("DELETE FROM coding_selection WHERE run_id = ?", (run_id,))
            self.conn.executemany(
                "INSERT INTO coding_selection (run_id, attempt_id, position, category, reason) "
                "VALUES (?,?,?,?,?)",
                [
                    (run_id, int(r["attempt_id"]), i, r["category"], r.get("reason", ""))
                    for i, r in enumerate(rows)
                ],
            )
            self.conn.execute(
                "INSERT OR REPLACE INTO coding_selection_info (run_id, rule_json, drawn_at) "
                "VALUES (?, ?, ?)",
                (run_id, json.dumps(rule, sort_keys=True), now()),
            )

    def coding_selection(self, run_id: int) -> list[dict[str, Any]]:
        return self.query(
            "SELECT attempt_id, category, reason FROM coding_selection WHERE run_id = ? "
            "ORDER BY position",
            (run_id,),
        )

    def coding_selection_info(self, run_id: int) -> dict[str, Any] | None:
        rows = self.query("SELECT * FROM coding_selection_info WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        return {"rule": _loads(rows[0]["rule_json"], {}), "drawn_at": rows[0]["drawn_at"]}

    # -- the random review sample --------------------------------------------------------
    def save_review_sample(
        self, run_id: int, attempt_ids: Iterable[int], *, seed: int, size: int, unit: str
    ) -> None:
        """Replace the run's random review sample (its attempts, the units drawn, seed)."""
        with self._write():
            self.conn.execute("DELETE FROM review_samples WHERE run_id = ?", (run_id,))
            self.conn.executemany(
                "INSERT INTO review_samples (run_id, attempt_id) VALUES (?, ?)",
                [(run_id, int(a)) for a in attempt_ids],
            )
            self.conn.execute(
                "INSERT OR REPLACE INTO review_sample_info (run_id, unit, size, seed, drawn_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, unit, size, seed, now()),
            )
            self.conn.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))

    def review_sample(self, run_id: int) -> list[int]:
        """The attempt ids of the run's random review sample (empty when none was drawn)."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT attempt_id FROM review_samples WHERE run_id = ? ORDER BY attempt_id",
                (run_id,),
            )
        ]

    def review_sample_info(self, run_id: int) -> dict[str, Any] | None:
        rows = self.query("SELECT * FROM review_sample_info WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    # -- metrics cache --------------------------------------------------------------------
    def cached_metrics(
        self, run_id: int, label_mode: str, fingerprint: str
    ) -> dict[str, dict[str, Any]] | None:
        rows = self.query(
            "SELECT * FROM metrics WHERE run_id = ? AND label_mode = ? ORDER BY rowid",
            (run_id, label_mode),
        )
        if not rows or any(row["fingerprint"] != fingerprint for row in rows):
            return None
        return {row["name"]: row for row in rows}

    def save_metrics(
        self, run_id: int, label_mode: str, fingerprint: str, rows: list[dict[str, Any]]
    ) -> None:
        """Cache a run's metrics. The cache is optional: on a read-only or locked database or
        a full disk the metrics are still shown, just not kept (logged)."""
        try:
            self._save_metrics(run_id, label_mode, fingerprint, rows)
        except sqlite3.Error as exc:
            kind = fault_kind(exc, self.path)
            if self._in_transaction or kind not in ("readonly", "locked", "full"):
                raise
            log.warning("metrics of run %s not cached in %s: %s", run_id, self.path, exc)

    def _save_metrics(
        self, run_id: int, label_mode: str, fingerprint: str, rows: list[dict[str, Any]]
    ) -> None:
        with self._write():
            self.conn.execute(
                "DELETE FROM metrics WHERE run_id = ? AND label_mode = ?", (run_id, label_mode)
            )
            stamp = now()
            self.conn.executemany(
                "INSERT INTO metrics (run_id, label_mode, name, value, ci_lo, ci_hi, mark, n, "
                "p_value, fingerprint, computed_at, details_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        run_id,
                        label_mode,
                        r["name"],
                        r["value"],
                        r["ci_lo"],
                        r["ci_hi"],
                        r["mark"],
                        r["n"],
                        r.get("p_value"),
                        fingerprint,
                        stamp,
                        json.dumps(r["details"]) if r.get("details") else None,
                    )
                    for r in rows
                ],
            )
