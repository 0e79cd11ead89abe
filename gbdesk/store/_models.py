"""The `models` table: the GGUF files and endpoints runs were made with."""

from __future__ import annotations

from typing import Any

from gbdesk.store._tables import TableFamily, inserted_id, now
from gbdesk.support.errors import UserError


class ModelTables(TableFamily):
    """`Store`'s methods over `models`."""

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
            return inserted_id(cur)

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
        pk = self.db.table("models").insert(record).last_pk
        if pk is None:
            raise TypeError("the model row was not inserted")
        return int(pk)

    def update_model_row(self, model_id: int, fields: dict[str, Any]) -> None:
        """Change these columns of one model row (an endpoint's name or metadata)."""
        self.db.table("models").update(model_id, fields)

    def list_models(self) -> list[dict[str, Any]]:
        return self.query("SELECT * FROM models ORDER BY id")
