"""How fast a model answered here, from the stored attempts: the sums the run and audit
estimates (`gbdesk.workflows.runs.measured_speed`, `measured_scoring_speed`) turn into rates.

An attempt's `latency_s` is its share of the time its batch took, so summed latencies are
the time the model spent; attempts without a latency (imported answers) do not count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gbdesk.store.db import Store

#: the slot count a continuous-batching run records with its engine
_SLOTS = "json_extract(r.engine_json, '$.batching.slots')"


def generation_totals(
    store: Store,
    *,
    model_sha256: str | None = None,
    model_id: int | None = None,
    slots: int | None = None,
    probe: str | None = None,
) -> tuple[int | None, float | None, int, float | None]:
    """(tokens generated, seconds, attempts, mean tokens per attempt) over the generated
    (not scored) attempts of one model — a GGUF by `model_sha256` wherever its file lay,
    else the model row `model_id`. `slots`: only runs decoded with that many sequences at
    once (1: one at a time, also the runs that recorded no batching); `probe`: only that
    probe's runs."""
    args: list[Any]
    if model_sha256:
        where, args = ["m.sha256 = ?"], [model_sha256]
    else:
        where, args = ["m.id = ?"], [model_id]
    if slots is not None:
        if int(slots) <= 1:
            where.append(f"({_SLOTS} IS NULL OR {_SLOTS} <= 1)")
        else:
            where.append(f"{_SLOTS} = ?")
            args.append(int(slots))
    if probe is not None:
        where.append("r.probe = ?")
        args.append(probe)
    tokens, seconds, count, mean_tokens = store.conn.execute(
        "SELECT SUM(a.tokens_out), SUM(a.latency_s), COUNT(*), AVG(a.tokens_out) "
        "FROM attempts a JOIN runs r ON r.id = a.run_id JOIN models m ON m.id = r.model_id "
        f"WHERE {' AND '.join(where)} AND a.latency_s > 0 "
        "AND COALESCE(a.prompt_mode, '') != 'score'",
        args,
    ).fetchone()
    return tokens, seconds, count, mean_tokens


def scoring_totals(store: Store, model_sha256: str) -> tuple[int | None, float | None]:
    """(sentences scored, seconds) over this model's stored scoring blocks (an attempt of
    a perplexity probe scores several sentences at once: its `scores` rows)."""
    sentences, seconds = store.conn.execute(
        "SELECT SUM(n), SUM(latency) FROM (SELECT a.latency_s AS latency, "
        "(SELECT COUNT(*) FROM scores s WHERE s.attempt_id = a.id) AS n "
        "FROM attempts a JOIN runs r ON r.id = a.run_id JOIN models m ON m.id = r.model_id "
        "WHERE m.sha256 = ? AND a.prompt_mode = 'score' AND a.latency_s > 0)",
        (model_sha256,),
    ).fetchone()
    return sentences, seconds
