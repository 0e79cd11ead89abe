"""The `codebook`, `coding_selection` and `coding_selection_info` tables: a run's codes and the
attempts drawn for coding."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from gbdesk.store._tables import TableFamily, _loads, now


class CodingTables(TableFamily):
    """`Store`'s methods over a run's codebook and coding selection."""

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
