"""What the table families of the `Store` share: the connection they are mixed into, the
time stamp, JSON and LIKE helpers, and the memo of answers that hold while nothing is
written. Each family (`_models`, `_runs`, `_attempts`, `_labels`, `_facts`, `_coding`,
`_review`, `_metrics`, `_evidence`) is a mixin of `Store`'s methods over its own tables; `Store`
(`gbdesk.store.db`) composes them with the connection, the integrity guard and the
transactions, so callers see one object."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just wrote (sqlite3 types `lastrowid` as optional)."""
    if cur.lastrowid is None:
        raise TypeError("the statement inserted no row")
    return cur.lastrowid


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


class TableFamily:
    """The base of the table families: the attributes the `Store` gives them, and the
    reads every family uses."""

    path: Path
    conn: sqlite3.Connection
    db: sqlite_utils.Database
    _in_transaction: bool

    if TYPE_CHECKING:  # given by `Store` and by other families, for the type checker

        def _write(self) -> contextlib.AbstractContextManager[None]: ...
        def _run_row(self, run_id: int) -> dict[str, Any]: ...
        def count_attempts(self, run_id: int) -> int: ...
        def attempt_keys(self, run_id: int) -> set[tuple[str, int]]: ...
        def _put_auto_label(
            self,
            attempt_id: int,
            source: str,
            label: str,
            data: dict[str, Any] | None = None,
            evidence: list[Any] | None = None,
        ) -> None: ...

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        return list(self.db.query(sql, params))

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
