"""A read-only look at a database that another connection writes: what the app's database
watcher (`gbdesk.ui.watcher`) reads to notice a run, a labelling pass or an import of the
CLI or another window.

Its own connection, never the `Store`'s: SQLite's data version changes only when *another*
connection committed, and a read-only connection cannot take a write lock the app needs.
Every read is cheap (a counter, the runs table, a few maxima), because it runs on the UI
thread once a second. `sqlite3.Error` goes to the caller, which closes and retries later.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Snapshot:
    """What the panes show that another process can change, read cheaply."""

    runs: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    attempts_max: int = 0
    labels_max: int = 0
    per_run: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # samples, codings
    models: str = ""


#: per-run tables a pane shows (review samples, coding selections, codebooks): one row per
#: run that changes whenever one of them does
_PER_RUN = (
    ("review_sample_info", "SELECT run_id, drawn_at, size FROM review_sample_info"),
    ("coding_selection_info", "SELECT run_id, drawn_at, '' FROM coding_selection_info"),
    ("codebook", "SELECT run_id, MAX(changed_at), COUNT(*) FROM codebook GROUP BY run_id"),
)


class WatchConnection:
    """A read-only connection on `path` for the database watcher (see the module
    docstring). Opening it raises `sqlite3.Error` when the file cannot be read."""

    def __init__(self, path: Path, timeout: float = 0.2):
        self._conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=True,
        )

    def close(self) -> None:
        self._conn.close()

    def data_version(self) -> int:
        """SQLite's data version: it changes only when another connection committed, so
        asking it is all a quiet second costs."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _one(self, sql: str) -> int:
        row = self._conn.execute(sql).fetchone()
        return int(row[0] or 0) if row else 0

    def snapshot(self) -> Snapshot:
        """The runs table, the highest attempt and label ids, the per-run review samples
        and codings, and a digest of the model rows; empty for a database not made yet."""
        conn = self._conn
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "runs" not in tables:  # a new database, not made yet
            return Snapshot()
        runs = {
            int(r[0]): tuple(r[1:])
            for r in conn.execute(
                "SELECT id, status, attempts_total, finished_at, model_id, error FROM runs"
            )
        }
        per_run: dict[int, list[Any]] = {}
        for table, sql in _PER_RUN:
            if table in tables:  # older databases lack some
                for run_id, a, b in conn.execute(sql):
                    per_run.setdefault(int(run_id), []).append((table, a, b))
        digest = hashlib.sha256()
        for row in conn.execute("SELECT id, kind, path, sha256, metadata_json FROM models"):
            digest.update(repr(row).encode())
        return Snapshot(
            runs=runs,
            attempts_max=self._one("SELECT MAX(id) FROM attempts"),
            labels_max=self._one("SELECT MAX(id) FROM labels"),
            per_run={k: tuple(v) for k, v in per_run.items()},
            models=digest.hexdigest(),
        )

    def runs_labelled_since(self, label_id: int) -> set[int]:
        """The runs whose labels have ids above `label_id` (labels written since)."""
        return {
            int(r[0])
            for r in self._conn.execute(
                "SELECT DISTINCT a.run_id FROM labels l JOIN attempts a ON a.id = l.attempt_id "
                "WHERE l.id > ?",
                (label_id,),
            )
        }

    def runs_with_attempts_since(self, attempt_id: int) -> set[int]:
        """The runs whose attempts have ids above `attempt_id` (runs that progressed)."""
        return {
            int(r[0])
            for r in self._conn.execute(
                "SELECT DISTINCT run_id FROM attempts WHERE id > ?", (attempt_id,)
            )
        }
