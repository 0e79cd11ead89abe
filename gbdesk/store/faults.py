"""What kind of database fault an sqlite3 error is (read-only, locked, damaged, full disk, I/O
error, cannot open): the classification every table family and command shares. The one-line
messages that say what to do live with the `Store` (`gbdesk.store.db`), which knows its
busy timeout."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
from pathlib import Path

from gbdesk.support.errors import UserError


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
