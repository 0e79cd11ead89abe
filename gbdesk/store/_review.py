"""The `review_samples` and `review_sample_info` tables: a run's random review sample."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gbdesk.store._tables import TableFamily, now


class ReviewSampleTables(TableFamily):
    """`Store`'s methods over the random review sample."""

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
