"""The `metrics` table: a cache of a run's metrics, valid while its labels' fingerprint holds."""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any

from gbdesk.store._tables import TableFamily, now
from gbdesk.store.faults import fault_kind

log = logging.getLogger("gbdesk.store.db")  # the logger these messages always had


class MetricsCacheTables(TableFamily):
    """`Store`'s methods over `metrics`."""

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
