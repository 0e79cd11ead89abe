"""The `label_facts` table: the flat rows of each label that the fast metrics read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from gbdesk.store._tables import TableFamily, _like_prefix

_INSERT_FACT = (
    "INSERT INTO label_facts (label_id, idx, run_id, k, a, b, c, d, x) VALUES (?,?,?,?,?,?,?,?,?)"
)


def _fact_rows(
    label_id: int, run_id: int, facts: Sequence[tuple[Any, ...]]
) -> Iterator[tuple[Any, ...]]:
    """`label_facts` rows of one label: facts are (k, a, b, c, d, x) tuples."""
    for i, f in enumerate(facts):
        yield (label_id, i, run_id, *f)


class LabelFactTables(TableFamily):
    """`Store`'s methods over `label_facts` (and the reads that feed it)."""

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
