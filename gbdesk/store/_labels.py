"""The `labels` table: automatic, human and consensus labels of attempts (every change kept),
the raters they name, and the fingerprint that tells when a run's labels changed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from gbdesk.store._tables import _RUN_ATTEMPTS, TableFamily, _like_prefix, _loads, inserted_id, now


def _auto_label_row(
    stamp: str,
    source: str,
    label: str,
    data: dict[str, Any] | None = None,
    evidence: list[Any] | None = None,
) -> tuple[Any, ...]:
    """(source, label, data_json, evidence_json, created_at) of an automatic label."""
    return (
        source,
        label,
        json.dumps(data) if data is not None else None,
        json.dumps(evidence) if evidence is not None else None,
        stamp,
    )


class LabelTables(TableFamily):
    """`Store`'s methods over `labels`."""

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
            (attempt_id, *_auto_label_row(now(), source, label, data, evidence)),
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
        facet: str = "",
    ) -> int:
        """Record a reviewer's label; earlier human labels stay as history. `facet`: ''
        for the probe's own label, e.g. 'codes' for a codebook coding."""
        reviewer = reviewer.strip() or "reviewer"
        return self._add_label(
            attempt_id, "human", f"human:{reviewer}", label, data, evidence, facet
        )

    def add_consensus_label(
        self,
        attempt_id: int,
        decided_by: str,
        label: str,
        data: dict[str, Any] | None = None,
        evidence: list[Any] | None = None,
        facet: str = "",
    ) -> int:
        """Record an adjudicated label (raters disagreed; `decided_by` settled it)."""
        decided_by = decided_by.strip() or "reviewer"
        return self._add_label(
            attempt_id, "consensus", f"consensus:{decided_by}", label, data, evidence, facet
        )

    def _add_label(
        self,
        attempt_id: int,
        kind: str,
        source: str,
        label: str,
        data: dict[str, Any] | None,
        evidence: list[Any] | None,
        facet: str,
    ) -> int:
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO labels (attempt_id, kind, source, label, data_json, evidence_json, "
                "created_at, facet) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    attempt_id,
                    kind,
                    source,
                    label,
                    json.dumps(data) if data is not None else None,
                    json.dumps(evidence) if evidence is not None else None,
                    now(),
                    facet,
                ),
            )
        return inserted_id(cur)

    def _label_rows(
        self,
        run_id: int,
        kind: str,
        source_prefix: str | None,
        facet: str,
        attempt_ids: Sequence[int] | None = None,
    ) -> list[dict[str, Any]]:
        if attempt_ids is None:
            rows = self.query(
                """
                SELECT l.* FROM labels l JOIN attempts a ON a.id = l.attempt_id
                WHERE a.run_id = ? AND l.kind = ? AND l.source LIKE ? ESCAPE '\\'
                AND l.facet = ? ORDER BY l.id
                """,
                (run_id, kind, _like_prefix(source_prefix), facet),
            )
        else:  # driven by the ids (CROSS JOIN keeps that order): index labels_by_attempt
            rows = self.query(
                """
                SELECT l.* FROM json_each(?) j CROSS JOIN labels l ON l.attempt_id = j.value
                JOIN attempts a ON a.id = l.attempt_id
                WHERE a.run_id = ? AND l.kind = ? AND l.source LIKE ? ESCAPE '\\'
                AND l.facet = ? ORDER BY l.id
                """,
                (json.dumps(list(attempt_ids)), run_id, kind, _like_prefix(source_prefix), facet),
            )
        for row in rows:
            row["data"] = _loads(row.pop("data_json"))
            row["evidence"] = _loads(row.pop("evidence_json"))
        return rows

    def labels(
        self,
        run_id: int,
        kind: str,
        source_prefix: str | None = None,
        facet: str = "",
        attempt_ids: Sequence[int] | None = None,
    ) -> dict[int, dict[str, Any]]:
        """The latest label of `kind` ('auto', 'human' or 'consensus') per attempt of a
        run; with `source_prefix`, only labels whose source starts with it (one
        extractor's). `facet`: '' (the probe's own label) unless asked otherwise.
        `attempt_ids`: only these attempts' labels (a chunk of a big run)."""
        rows = self._label_rows(run_id, kind, source_prefix, facet, attempt_ids)
        return {row["attempt_id"]: row for row in rows}

    def label_texts(
        self, run_id: int, kind: str, facet: str = ""
    ) -> dict[int, tuple[str, str, str | None, str | None]]:
        """As `labels` (the latest label of `kind` per attempt), but only (source, label,
        data JSON, evidence JSON), the JSON left as stored: cheap for a whole big run."""
        rows = self.conn.execute(
            "SELECT l.attempt_id, l.source, l.label, l.data_json, l.evidence_json "
            "FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "WHERE a.run_id = ? AND l.kind = ? AND l.facet = ? ORDER BY l.id",
            (run_id, kind, facet),
        )
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def iter_attempt_texts(self, run_id: int) -> Iterator[tuple[int, str, int, str, str]]:
        """(id, item, attempt, prompt, response) of a run's attempts in `attempts` order,
        one row at a time."""
        yield from self.conn.execute(
            f"SELECT a.id, a.item, a.attempt, a.prompt, a.response {_RUN_ATTEMPTS}", (run_id,)
        )

    def rater_labels(
        self,
        run_id: int,
        facet: str = "",
        kind: str = "human",
        which: str = "latest",
        attempt_ids: Sequence[int] | None = None,
    ) -> dict[str, dict[int, dict[str, Any]]]:
        """rater → attempt id → that rater's label ("latest", or "first": the label the
        rater gave before any change). Raters are the `<name>` of `human:<name>` (of
        `consensus:<name>` for kind 'consensus'), in order of their first label.
        `attempt_ids`: only these attempts' labels."""
        if which not in ("latest", "first"):
            raise ValueError("which must be 'latest' or 'first'")
        out: dict[str, dict[int, dict[str, Any]]] = {}
        prefix = f"{kind}:"
        for row in self._label_rows(run_id, kind, prefix, facet, attempt_ids):
            by_attempt = out.setdefault(row["source"].removeprefix(prefix), {})
            if which == "latest" or row["attempt_id"] not in by_attempt:
                by_attempt[row["attempt_id"]] = row
        return out

    def human_label_rows(self, run_id: int) -> list[dict[str, Any]]:
        """Every person's label of a run, every facet and every change, oldest first: (id,
        attempt_id, source, label, data_json, created_at), the JSON as stored."""
        return self.query(
            "SELECT l.id, l.attempt_id, l.source, l.label, l.data_json, l.created_at "
            "FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "WHERE a.run_id = ? AND l.kind = 'human' ORDER BY l.id",
            (run_id,),
        )

    def raters(self) -> list[str]:
        """Every rater of the probes' own labels in the database (`human:<name>`), sorted."""
        rows = self.conn.execute(
            "SELECT DISTINCT source FROM labels WHERE kind = 'human' AND facet = ''"
        )
        return sorted({r[0].removeprefix("human:") for r in rows})

    def label_facets(self, run_id: int) -> list[str]:
        """The facets with a human or consensus label in this run ('' first)."""
        rows = self.conn.execute(
            "SELECT DISTINCT l.facet FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "WHERE a.run_id = ? AND l.kind != 'auto' ORDER BY l.facet",
            (run_id,),
        )
        return [r[0] for r in rows]

    def unlabelled_attempts(self, run_id: int, source_prefix: str | None) -> list[dict[str, Any]]:
        """Attempts of a run (id, item, attempt, response) without an automatic label whose source
        starts with `source_prefix`, in run order (reads only those attempts' texts)."""
        memo = self.__dict__.setdefault("_memo_values", {})
        key = ("all labelled", run_id, source_prefix)
        hit = memo.get(key)
        if hit is not None and hit[0] == self._unchanged_key():
            return []  # none was missing, and nothing was written since
        rows = self._unlabelled_attempts(run_id, source_prefix)
        if not rows:
            memo[key] = (self._unchanged_key(), True)
        return rows

    def _unlabelled_attempts(self, run_id: int, source_prefix: str | None) -> list[dict[str, Any]]:
        return self.query(
            """
            SELECT a.id, a.item, a.attempt, a.response FROM attempts a
            JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item
            WHERE a.run_id = ? AND NOT EXISTS (
                SELECT 1 FROM labels l WHERE l.attempt_id = a.id AND l.kind = 'auto'
                AND l.source LIKE ? ESCAPE '\\')
            ORDER BY i.idx, a.attempt
            """,
            (run_id, _like_prefix(source_prefix)),
        )

    def labels_of(
        self, attempt_ids: Iterable[int], kind: str, source_prefix: str | None = None
    ) -> dict[int, dict[str, Any]]:
        """`labels` of the given attempts only (the latest of `kind` per attempt)."""
        latest: dict[int, dict[str, Any]] = {}
        ids = sorted(set(attempt_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.query(
                f"SELECT * FROM labels WHERE attempt_id IN ({','.join('?' * len(chunk))}) "
                "AND kind = ? AND source LIKE ? ESCAPE '\\' ORDER BY id",
                (*chunk, kind, _like_prefix(source_prefix)),
            )
            for row in rows:
                row["data"] = _loads(row.pop("data_json"))
                row["evidence"] = _loads(row.pop("evidence_json"))
                latest[row["attempt_id"]] = row
        return latest

    def labels_fingerprint(self, run_id: int) -> str:
        """Changes whenever an attempt or a label of the run is added or replaced."""
        return self._memo(("fingerprint", run_id), lambda: self._labels_fingerprint(run_id))

    def _labels_fingerprint(self, run_id: int) -> str:
        n_attempts, max_attempt = self.conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM attempts WHERE run_id = ?", (run_id,)
        ).fetchone()
        n_labels, max_label = self.conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(l.id), 0) FROM labels l JOIN attempts a "
            "ON a.id = l.attempt_id WHERE a.run_id = ?",
            (run_id,),
        ).fetchone()
        return f"{n_attempts}:{max_attempt}:{n_labels}:{max_label}"
