"""The `selftests` table: checks run on a model, dated (e.g. `gbdesk selftest --determinism`:
the same prompts decoded alone and in a full batch, their texts byte-identical or not), so
a report's test log can say what was checked on its model and when.

One row per check run: the model, its `kind` ("determinism"), whether it passed (1, 0, or
NULL when it could not be run), one line in words ("24 of 24 identical") and the details as
JSON. `DETERMINISM` documents the details a determinism check stores.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gbdesk.store._tables import inserted_id, now

if TYPE_CHECKING:
    from gbdesk.store.db import Store

#: the kind of the determinism check, and the keys of its `result` (all optional but the first
#: three): `prompts` (how many were decoded), `identical` (how many gave the same bytes alone
#: and batched), `batch` (sequences decoded at once), `differing` (the prompts' indices that
#: differed), `max_tokens`, `seed`, `settings` (the engine's), `versions` (llama-cpp-python,
#: llama.cpp), `seconds`
DETERMINISM = "determinism"


def add_selftest(
    store: Store,
    model_id: int | None,
    kind: str,
    *,
    passed: bool | None,
    summary: str,
    result: dict[str, Any],
    app_version: str,
) -> int:
    """Store one check's result (its own transaction); its id."""
    with store.transaction():
        cur = store.conn.execute(
            "INSERT INTO selftests (model_id, kind, passed, summary, result_json, app_version, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                model_id,
                kind,
                None if passed is None else int(bool(passed)),
                summary,
                json.dumps(result, sort_keys=True),
                app_version,
                now(),
            ),
        )
    return inserted_id(cur)


def latest_selftest(store: Store, model_id: int | None, kind: str) -> dict[str, Any] | None:
    """The latest check of `kind` on this model: id, passed (True, False, None), summary,
    result (decoded), app_version, created_at — or None when none was run."""
    row = store.conn.execute(
        "SELECT id, passed, summary, result_json, app_version, created_at FROM selftests "
        "WHERE model_id IS ? AND kind = ? ORDER BY id DESC LIMIT 1",
        (model_id, kind),
    ).fetchone()
    if row is None:
        return None
    ident, passed, summary, result, version, created = row
    return {
        "id": int(ident),
        "passed": None if passed is None else bool(passed),
        "summary": summary,
        "result": json.loads(result or "{}"),
        "app_version": version,
        "created_at": created,
    }
