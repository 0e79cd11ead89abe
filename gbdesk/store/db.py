"""The SQLite store (through sqlite-utils): models, runs, attempts, labels, metrics.

One file holds any number of runs of any number of models. WAL mode lets the GUI
read while a run writes; every attempt is committed, with its automatic label, the
moment it completes, so a crash loses at most the attempt in flight.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psutil
import sqlite_utils

from gbdesk.errors import UserError
from gbdesk.store.migrations import LATEST_VERSION, migrate

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


def _loads(text: str | None, default: Any = None) -> Any:
    return json.loads(text) if text else default


class Store:
    """A gbdesk database. Open one per thread (sqlite connections are per thread)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise UserError(f"--db points at a folder, not a database file: {self.path}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path), timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.DatabaseError as exc:
            raise UserError(f"cannot open the database {self.path}: {exc}") from None
        except OSError as exc:
            raise UserError(f"cannot create the database {self.path}: {exc}") from None
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        self.conn = conn
        self.db = sqlite_utils.Database(conn)
        self._in_transaction = False
        try:
            self.migrated_from = migrate(conn)
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path} is not a gbdesk database: {exc}") from None
        self.schema_version = LATEST_VERSION

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction around several store calls: all of them are committed
        together or none is (an exception rolls everything back)."""
        if self._in_transaction:
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
        finally:
            self._in_transaction = False

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """A write: its own immediate transaction, or part of `transaction()`'s."""
        if self._in_transaction:
            yield
            return
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            yield

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        items: Iterable[tuple[str, str, dict[str, Any]]],
        attempts_per_item: int,
        app_version: str,
        llama_cpp_version: str | None,
        source: str = "generated",
        engine: dict[str, Any] | None = None,
    ) -> int:
        """Create a run and its planned items (key, prompt, metadata) in one transaction."""
        items = list(items)
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
                    len(items) * attempts_per_item,
                ),
            )
            run_id = int(cur.lastrowid)
            self.conn.executemany(
                "INSERT INTO run_items (run_id, idx, item, prompt, metadata_json) "
                "VALUES (?,?,?,?,?)",
                [
                    (run_id, idx, key, prompt, json.dumps(meta, sort_keys=True))
                    for idx, (key, prompt, meta) in enumerate(items)
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
        self.db["runs"].update(run_id, fields)

    def update_run_params(self, run_id: int, params: dict[str, Any]) -> None:
        """Replace a run's analysis parameters (e.g. which extractor its metrics use)."""
        self._run_row(run_id)
        self.conn.execute(
            "UPDATE runs SET params_json = ? WHERE id = ?",
            (json.dumps(params, sort_keys=True), run_id),
        )
        self.conn.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))

    def finish_import(self, run_id: int, attempts: int) -> None:
        """An imported run is complete: its attempt count and status."""
        with self._write():
            self.conn.execute(
                "UPDATE runs SET attempts_total = ?, status = 'done', finished_at = ? "
                "WHERE id = ?",
                (attempts, now(), run_id),
            )

    def set_run_status(self, run_id: int, status: str, error: str | None = None) -> None:
        fields: dict[str, Any] = {"status": status, "error": error, "heartbeat_at": now()}
        if status == "done":
            fields["finished_at"] = now()
        self.db["runs"].update(run_id, fields)

    def heartbeat(self, run_id: int) -> None:
        self.conn.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", (now(), run_id))

    def run_items(self, run_id: int) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT item, idx, prompt, metadata_json FROM run_items WHERE run_id = ? ORDER BY idx",
            (run_id,),
        )
        for row in rows:
            row["metadata"] = _loads(row.pop("metadata_json"), {})
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
                self.conn.executemany(
                    "INSERT INTO scores (attempt_id, run_id, idx, grp, descriptor, axis, "
                    "template, name, text, n_tokens, logprob_sum, ppl, apx) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [
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
                    ],
                )
        return attempt_id

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

    def attempts(self, run_id: int) -> list[dict[str, Any]]:
        return self.query(
            "SELECT a.* FROM attempts a "
            "JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item "
            "WHERE a.run_id = ? ORDER BY i.idx, a.attempt",
            (run_id,),
        )

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
            (
                attempt_id,
                source,
                label,
                json.dumps(data) if data is not None else None,
                json.dumps(evidence) if evidence is not None else None,
                now(),
            ),
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
    ) -> int:
        """Record a reviewer's label; earlier human labels stay as history."""
        reviewer = reviewer.strip() or "reviewer"
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO labels (attempt_id, kind, source, label, data_json, evidence_json, "
                "created_at) VALUES (?, 'human', ?, ?, ?, ?, ?)",
                (
                    attempt_id,
                    f"human:{reviewer}",
                    label,
                    json.dumps(data) if data is not None else None,
                    json.dumps(evidence) if evidence is not None else None,
                    now(),
                ),
            )
        return int(cur.lastrowid)

    def labels(
        self, run_id: int, kind: str, source_prefix: str | None = None
    ) -> dict[int, dict[str, Any]]:
        """The latest label of `kind` ('auto' or 'human') per attempt of a run; with
        `source_prefix`, only labels whose source starts with it (one extractor's)."""
        rows = self.query(
            """
            SELECT l.* FROM labels l JOIN attempts a ON a.id = l.attempt_id
            WHERE a.run_id = ? AND l.kind = ? AND l.source LIKE ? ESCAPE '\\'
            ORDER BY l.id
            """,
            (run_id, kind, _like_prefix(source_prefix)),
        )
        latest: dict[int, dict[str, Any]] = {}
        for row in rows:
            row["data"] = _loads(row.pop("data_json"))
            row["evidence"] = _loads(row.pop("evidence_json"))
            latest[row["attempt_id"]] = row
        return latest

    def labels_fingerprint(self, run_id: int) -> str:
        """Changes whenever an attempt or a label of the run is added or replaced."""
        n_attempts, max_attempt = self.conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM attempts WHERE run_id = ?", (run_id,)
        ).fetchone()
        n_labels, max_label = self.conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(l.id), 0) FROM labels l JOIN attempts a "
            "ON a.id = l.attempt_id WHERE a.run_id = ?",
            (run_id,),
        ).fetchone()
        return f"{n_attempts}:{max_attempt}:{n_labels}:{max_label}"

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
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
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
