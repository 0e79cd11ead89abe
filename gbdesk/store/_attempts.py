"""The `attempts` and `scores` tables: every answer a model gave (stored as it completes, with
its automatic label) and, for perplexity probes, its sentences' scores."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gbdesk.store._facts import _INSERT_FACT, _fact_rows
from gbdesk.store._labels import _auto_label_row
from gbdesk.store._tables import _RUN_ATTEMPTS, TableFamily, inserted_id, now
from gbdesk.support.errors import UserError

_INSERT_SCORE = (
    "INSERT INTO scores (attempt_id, run_id, idx, grp, descriptor, axis, template, name, text, "
    "n_tokens, logprob_sum, ppl, apx) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _score_rows(
    attempt_id: int, run_id: int, scores: Sequence[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    return [
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
    ]


@dataclass
class PreparedAttempts:
    """Attempts made ready for `Store.add_attempts` (rows without the run id, labels and
    scores by (item, attempt)): the JSON encoding is done before the write lock."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    labels: dict[tuple[str, int], tuple[Any, ...]] = field(default_factory=dict)
    scores: dict[tuple[str, int], Sequence[dict[str, Any]]] = field(default_factory=dict)
    #: the automatic label's flat rows (`Probe.label_facts`), when the caller made them
    facts: dict[tuple[str, int], list[tuple[Any, ...]]] = field(default_factory=dict)


def prepare_attempts(attempts: Iterable[dict[str, Any]]) -> PreparedAttempts:
    """Rows for `Store.add_attempts`; a repeated (item, attempt) keeps its first occurrence,
    as `add_attempt` does."""
    stamp = now()
    prepared = PreparedAttempts()
    seen: set[tuple[str, int]] = set()
    for a in attempts:
        key = (a["item"], a["attempt"])
        if key in seen:
            continue
        seen.add(key)
        prepared.rows.append(
            (
                a["item"],
                a["attempt"],
                a["prompt"],
                a["response"],
                a.get("seed"),
                a.get("tokens_in"),
                a.get("tokens_out"),
                a.get("latency_s"),
                a.get("finish_reason"),
                a.get("prompt_mode"),
                stamp,
            )
        )
        if a.get("auto_label") is not None:
            prepared.labels[key] = _auto_label_row(stamp, **a["auto_label"])
        if a.get("scores"):
            prepared.scores[key] = a["scores"]
        if a.get("auto_label") is not None and a.get("facts") is not None:
            prepared.facts[key] = a["facts"]
    return prepared


class AttemptTables(TableFamily):
    """`Store`'s methods over `attempts` and `scores`."""

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
            attempt_id = inserted_id(cur)
            if auto_label is not None:
                self._put_auto_label(attempt_id, **auto_label)
            if scores:
                self.conn.executemany(_INSERT_SCORE, _score_rows(attempt_id, run_id, scores))
        return attempt_id

    def add_attempts(
        self, run_id: int, attempts: Sequence[dict[str, Any]] | PreparedAttempts
    ) -> int:
        """Store many attempts at once (an import) in one transaction; returns how many were
        new. `attempts`: dicts of `add_attempt`'s arguments (item, attempt, prompt, response,
        and optionally prompt_mode, auto_label, scores…), or `prepare_attempts` of them —
        prepared before `transaction()`, so other writers wait for the inserts only."""
        prepared = (
            attempts if isinstance(attempts, PreparedAttempts) else prepare_attempts(attempts)
        )
        with self._write():
            existing = self.attempt_keys(run_id) if self.count_attempts(run_id) else set()
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO attempts (run_id, item, attempt, prompt, response, seed, "
                "tokens_in, tokens_out, latency_s, finish_reason, prompt_mode, created_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                ((run_id, *row) for row in prepared.rows),
            )
            added = self.conn.total_changes - before
            if prepared.labels or prepared.scores:
                ids = {
                    (item, attempt): attempt_id
                    for attempt_id, item, attempt in self.conn.execute(
                        "SELECT id, item, attempt FROM attempts WHERE run_id = ?", (run_id,)
                    )
                    if (item, attempt) not in existing
                }
                self.conn.executemany(
                    "INSERT OR REPLACE INTO labels (attempt_id, kind, source, label, data_json, "
                    "evidence_json, created_at, flat) VALUES (?, 'auto', ?, ?, ?, ?, ?, ?)",
                    [
                        (ids[key], *row, 1 if key in prepared.facts else None)
                        for key, row in prepared.labels.items()
                        if key in ids
                    ],
                )
                if prepared.facts:
                    by_attempt = {attempt_id: key for key, attempt_id in ids.items()}
                    label_ids = {
                        by_attempt[attempt_id]: label_id
                        for label_id, attempt_id in self.conn.execute(
                            "SELECT l.id, l.attempt_id FROM labels l JOIN attempts a "
                            "ON a.id = l.attempt_id WHERE a.run_id = ? AND l.kind = 'auto' "
                            "AND l.flat = 1",
                            (run_id,),
                        )
                        if attempt_id in by_attempt
                    }
                    self.conn.executemany(
                        _INSERT_FACT,
                        (
                            row
                            for key, facts in prepared.facts.items()
                            if key in label_ids
                            for row in _fact_rows(label_ids[key], run_id, facts)
                        ),
                    )
                self.conn.executemany(
                    _INSERT_SCORE,
                    [
                        row
                        for key, scores in prepared.scores.items()
                        if key in ids
                        for row in _score_rows(ids[key], run_id, scores)
                    ],
                )
        return added

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

    def score_frame(self, run_id: int) -> Any:
        """`scores` without the sentences' texts, as a pandas frame in the same (run) order,
        read in chunks without SQLite sorting them."""
        import numpy as np
        import pandas as pd

        columns = ["group", "descriptor", "axis", "template", "name", "n_tokens",
                   "logprob_sum", "ppl", "apx", "attempt_id", "idx"]  # fmt: skip
        cur = self.conn.execute(
            "SELECT grp, descriptor, axis, template, name, n_tokens, logprob_sum, ppl, apx, "
            "attempt_id, idx FROM scores WHERE run_id = ?",
            (run_id,),
        )
        parts = []
        while rows := cur.fetchmany(200_000):
            parts.append(pd.DataFrame.from_records(rows, columns=columns))
        if not parts:
            return pd.DataFrame()
        frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        order = pd.DataFrame.from_records(
            self.conn.execute(
                "SELECT a.id, a.item, i.idx, a.attempt FROM attempts a JOIN run_items i "
                "ON i.run_id = a.run_id AND i.item = a.item WHERE a.run_id = ?",
                (run_id,),
            ).fetchall(),
            columns=["attempt_id", "item", "item_idx", "attempt"],
        ).set_index("attempt_id")
        at = order.loc[frame["attempt_id"].to_numpy()]
        keys = np.lexsort(
            (frame["idx"].to_numpy(), at["attempt"].to_numpy(), at["item_idx"].to_numpy())
        )
        frame["item"] = at["item"].to_numpy()
        frame = frame.drop(columns=["attempt_id", "idx"]).iloc[keys].reset_index(drop=True)
        return frame

    def attempts(self, run_id: int) -> list[dict[str, Any]]:
        return self.query(f"SELECT a.* {_RUN_ATTEMPTS}", (run_id,))

    def attempt_chunks(self, run_id: int, size: int) -> Iterator[list[dict[str, Any]]]:
        """`attempts(run_id)` in lists of at most `size` rows, read as they are used."""
        cur = self.conn.execute(f"SELECT a.* {_RUN_ATTEMPTS}", (run_id,))
        columns = [d[0] for d in cur.description]
        while rows := cur.fetchmany(size):
            yield [dict(zip(columns, row, strict=True)) for row in rows]

    def get_attempt(self, attempt_id: int) -> dict[str, Any]:
        rows = self.query("SELECT * FROM attempts WHERE id = ?", (attempt_id,))
        if not rows:
            raise UserError(f"no attempt {attempt_id}")
        return rows[0]
