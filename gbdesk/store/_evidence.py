"""A run's stored rows as they are, in a fixed order, for the report's digest
(`gbdesk.report.digest`): the run and its model, its items, every attempt, every label (every
kind and every change), its scores, its random review sample, codebook and coding selection.

Nothing here decodes or reorders what is stored: the digest's canonical form is defined
by the report layer over these rows. Every query orders by the run's own order (the
items' `idx`, the attempt number) and then by row id, which never change on a read."""

from __future__ import annotations

import sqlite3
from typing import Any

from gbdesk.store._tables import TableFamily

#: the attempts of a run joined to their items, in run order
_IN_RUN_ORDER = (
    "JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item WHERE a.run_id = ? "
    "ORDER BY i.idx, a.attempt"
)


class EvidenceTables(TableFamily):
    """`Store`'s reads of a run's rows for the digest (`gbdesk.report.digest`)."""

    def run_row(self, run_id: int) -> dict[str, Any]:
        """The `runs` row as stored (JSON columns undecoded)."""
        return self._run_row(run_id)

    def model_row(self, model_id: int) -> dict[str, Any] | None:
        rows = self.query("SELECT * FROM models WHERE id = ?", (model_id,))
        return rows[0] if rows else None

    def item_rows(self, run_id: int) -> sqlite3.Cursor:
        """(idx, item, prompt, metadata_json, prompts_json) of every item, by idx."""
        return self.conn.execute(
            "SELECT idx, item, prompt, metadata_json, prompts_json FROM run_items "
            "WHERE run_id = ? ORDER BY idx",
            (run_id,),
        )

    def attempt_rows(self, run_id: int) -> sqlite3.Cursor:
        """(id, item, attempt, prompt, response, seed, tokens_in, tokens_out, latency_s,
        finish_reason, prompt_mode, created_at) of every attempt, in run order."""
        return self.conn.execute(
            "SELECT a.id, a.item, a.attempt, a.prompt, a.response, a.seed, a.tokens_in, "
            "a.tokens_out, a.latency_s, a.finish_reason, a.prompt_mode, a.created_at "
            f"FROM attempts a {_IN_RUN_ORDER}",
            (run_id,),
        )

    def label_rows(self, run_id: int) -> sqlite3.Cursor:
        """(id, attempt_id, kind, source, facet, label, data_json, evidence_json,
        created_at) of every label of the run — automatic, human and consensus, every
        change — in run order of their attempts, then as they were stored."""
        return self.conn.execute(
            "SELECT l.id, l.attempt_id, l.kind, l.source, l.facet, l.label, l.data_json, "
            "l.evidence_json, l.created_at FROM labels l JOIN attempts a ON a.id = l.attempt_id "
            "JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item WHERE a.run_id = ? "
            "ORDER BY i.idx, a.attempt, l.id",
            (run_id,),
        )

    def score_rows(self, run_id: int) -> sqlite3.Cursor:
        """(attempt_id, idx, grp, descriptor, axis, template, name, text, n_tokens,
        logprob_sum, ppl, apx) of every stored score, in run order."""
        return self.conn.execute(
            "SELECT s.attempt_id, s.idx, s.grp, s.descriptor, s.axis, s.template, s.name, "
            "s.text, s.n_tokens, s.logprob_sum, s.ppl, s.apx FROM scores s "
            "JOIN attempts a ON a.id = s.attempt_id "
            "JOIN run_items i ON i.run_id = a.run_id AND i.item = a.item WHERE s.run_id = ? "
            "ORDER BY i.idx, a.attempt, s.idx",
            (run_id,),
        )

    def coding_selection_rows(self, run_id: int) -> list[dict[str, Any]]:
        """The drawn selection to code with each attempt's place in it, by place."""
        return self.query(
            "SELECT attempt_id, position, category, reason FROM coding_selection "
            "WHERE run_id = ? ORDER BY position, attempt_id",
            (run_id,),
        )
