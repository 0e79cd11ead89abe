"""The `runs` and `run_items` tables: a run, its planned items, its status and who runs it."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable
from typing import Any

import psutil

from gbdesk.store._tables import TableFamily, _loads, inserted_id, now
from gbdesk.support.errors import UserError

ACTIVE_STATUSES = ("running", "paused")
FINAL_STATUSES = ("done",)


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


class RunTables(TableFamily):
    """`Store`'s methods over `runs` and `run_items`."""

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
            run_id = inserted_id(cur)
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
        value: str | int | None
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

    def extend_run(
        self, run_id: int, items: Iterable[tuple[Any, ...]], params: dict[str, Any]
    ) -> int:
        """Add planned items after a run's own (an audit growing its sample), with the
        parameters that now give them, in one transaction; items already in the run are
        skipped. Returns the new attempts total. Rows as `create_run` takes them.

        A run is "done" only while every attempt it plans is made: one that was done and
        gets new items goes back to "created" (its new attempts are to be made; `gbdesk
        resume`, the Runs pane and an audit continue it), without a finishing time."""
        run = self.get_run(run_id)
        per_item = int(run["generation"]["attempts"])
        known = {r["item"] for r in self.run_items(run_id)}
        rows = [(*row, None) if len(row) == 3 else tuple(row) for row in items]
        rows = [row for row in rows if row[0] not in known]
        added = sum(len(row[3] or ()) or 1 for row in rows) * per_item
        with self._write():
            start = self.conn.execute(
                "SELECT COALESCE(MAX(idx), -1) + 1 FROM run_items WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            self.conn.executemany(
                "INSERT INTO run_items (run_id, idx, item, prompt, metadata_json, prompts_json) "
                "VALUES (?,?,?,?,?,?)",
                [
                    (
                        run_id,
                        start + n,
                        key,
                        prompt,
                        json.dumps(meta, sort_keys=True),
                        json.dumps(prompts, sort_keys=True) if prompts else None,
                    )
                    for n, (key, prompt, meta, prompts) in enumerate(rows)
                ],
            )
            total = int(run["attempts_total"]) + added
            self.conn.execute(
                "UPDATE runs SET attempts_total = ?, params_json = ? WHERE id = ?",
                (total, json.dumps(params, sort_keys=True), run_id),
            )
            if added and run["status"] in FINAL_STATUSES:
                self.conn.execute(
                    "UPDATE runs SET status = 'created', finished_at = NULL WHERE id = ?",
                    (run_id,),
                )
            self.conn.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
        return total

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
