"""Endpoints in the model catalogue: stored as model rows of kind "endpoint" (path = the
base URL, sha256 NULL, the served model name, the API-key variable's *name* and the
detected capabilities in metadata_json; the key itself is looked up at run time and never
stored), and the words for what a stored endpoint can do."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from gbdesk.engine.endpoints import CAPABILITIES, SERVERS_WITH
from gbdesk.engine.http.backend import ENDPOINT_KIND, MAX_CONCURRENCY, HttpBackend
from gbdesk.engine.http.urls import normalize_base_url, parse_endpoint_spec
from gbdesk.engine.secrets import check_env_var_name
from gbdesk.support.errors import UserError


def _meta(row: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(row.get("metadata_json") or "{}")
    except ValueError:
        return {}


def find_endpoint(store: Any, base_url: str, model: str | None) -> dict[str, Any] | None:
    """The stored endpoint row for (URL, model) — the only one at that URL if `model` is
    None and there is exactly one — or None."""
    rows = store.models_of_kind(ENDPOINT_KIND, normalize_base_url(base_url))
    if model is None:
        return rows[0] if len(rows) == 1 else None
    for row in rows:
        if (_meta(row).get("endpoint_model") or row.get("file_name")) == model:
            return row
    return None


def register_endpoint(
    store: Any,
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Store (or update) an endpoint model row: kind "endpoint", path = the base URL,
    sha256 NULL, metadata = the served model name, the API-key variable's name and the
    number of concurrent requests (and the capabilities found earlier, kept). The key
    itself is never stored."""
    from gbdesk.store.db import now

    base = normalize_base_url(base_url)
    model = (model or "").strip()
    if not model:
        raise UserError("name the model the endpoint serves")
    if not 1 <= int(concurrency) <= MAX_CONCURRENCY:
        raise UserError(f"concurrency must be between 1 and {MAX_CONCURRENCY}")
    meta: dict[str, Any] = {
        "endpoint_model": model,
        "api_key_env": check_env_var_name(api_key_env),
        "concurrency": int(concurrency),
    }
    existing = find_endpoint(store, base, model)
    if existing and _meta(existing).get("capabilities"):  # what it can do stays known
        meta["capabilities"] = _meta(existing)["capabilities"]
    record = {
        "kind": ENDPOINT_KIND,
        "name": f"{model} @ {urlsplit(base).netloc}",
        "path": base,
        "file_name": model,
        "sha256": None,
        "metadata_json": json.dumps(meta, sort_keys=True),
    }
    if existing:
        store.update_model_row(existing["id"], record)
        return store.get_model(existing["id"])
    record["added_at"] = now()
    return store.get_model(store.add_model_row(record))


def resolve_endpoint(store: Any, spec: str) -> dict[str, Any]:
    """The model row for an ``URL#model`` spec, registering it when it is new."""
    parsed = parse_endpoint_spec(spec)
    if parsed is None:
        raise UserError(f"not an endpoint: {spec!r}")
    base, model = parsed
    row = find_endpoint(store, base, model)
    if row is not None:
        return row
    if model is None:
        raise UserError(f"say which model of {base} to use: {base}#MODEL-NAME")
    return register_endpoint(store, base, model)


def endpoint_entries(store: Any) -> list[dict[str, Any]]:
    """Catalogue entries (the shape of `gbdesk.workflows.models.list_models`) for stored endpoints;
    "path" is the ``URL#model`` spec that `gbdesk.workflows.runs.resolve_model` accepts."""
    out = []
    for row in store.models_of_kind(ENDPOINT_KIND):
        meta = _meta(row)
        model = meta.get("endpoint_model") or row.get("file_name") or row["name"]
        out.append(
            {
                "kind": ENDPOINT_KIND,
                "endpoint": True,
                "name": row["name"],
                "path": f"{row['path']}#{model}",
                "url": row["path"],
                "file_name": model,
                "endpoint_model": model,
                "api_key_env": meta.get("api_key_env"),
                "concurrency": int(meta.get("concurrency") or 1),
                "capabilities": meta.get("capabilities"),
                "model_id": row["id"],
                "sha256": None,
                "default": False,
                "fits": True,
                "architecture": None,
                "quantization": None,
                "has_chat_template": None,
            }
        )
    return out


def with_endpoints(models: list[dict[str, Any]], store: Any) -> list[dict[str, Any]]:
    """`models` plus the stored endpoints not already among them (by path)."""
    seen = {m.get("path") for m in models}
    return models + [e for e in endpoint_entries(store) if e["path"] not in seen]


# -- what a stored endpoint can do ------------------------------------------------------------
def endpoint_capabilities(row: dict[str, Any]) -> dict[str, Any] | None:
    """The capabilities stored with an endpoint row (`HttpBackend.capabilities`), or None
    when they were never checked."""
    found = _meta(row).get("capabilities")
    return found if isinstance(found, dict) else None


def store_capabilities(store: Any, model_id: int, found: dict[str, Any]) -> dict[str, Any]:
    """Store what an endpoint can do in its row's metadata; the updated row."""
    row = store.get_model(model_id)
    meta = _meta(row)
    meta["capabilities"] = found
    store.update_model_row(model_id, {"metadata_json": json.dumps(meta, sort_keys=True)})
    return store.get_model(model_id)


def check_capabilities(store: Any, row: dict[str, Any]) -> dict[str, Any]:
    """Connect to a stored endpoint, find what it can do and store it; the capabilities.
    `UserError` (one line) when the endpoint cannot be reached."""
    with HttpBackend.from_model_row(row) as backend:
        found = backend.capabilities()
    store_capabilities(store, row["id"], found)
    return found


def capability_words(found: dict[str, Any] | None) -> list[tuple[str, bool | None, str]]:
    """(what, yes/no/unknown, why) per capability, in `CAPABILITIES` order; [] when the
    endpoint was never checked."""
    if not found:
        return []
    out = []
    for key, words in CAPABILITIES.items():
        entry = found.get(key) or {}
        out.append((words, entry.get("ok"), str(entry.get("note") or "")))
    return out


def capability_summary(found: dict[str, Any] | None) -> str:
    """One line: "✓ chat generation · ✗ log-probabilities of prompt tokens · …"."""
    if not found:
        return "not checked yet"
    marks = {True: "✓", False: "✗", None: "?"}
    return " · ".join(f"{marks[ok]} {what}" for what, ok, _ in capability_words(found))


def unmet_capability(probe_title: str, row: dict[str, Any], need: str, found: dict) -> str:
    """The one line that refuses a probe on an endpoint lacking `need`: what is missing,
    why (as detected), and the servers that have it."""
    entry = found.get(need) or {}
    model = _meta(row).get("endpoint_model") or row.get("file_name") or row.get("name")
    lacks = "does not give" if entry.get("ok") is False else "could not be shown to give"
    note = f": {entry['note']}" if entry.get("note") else ""
    return (
        f"{probe_title} needs {CAPABILITIES.get(need, need)}, which the endpoint "
        f"{row['path']} (model {model}) {lacks}{note}; servers that give them: "
        f"{SERVERS_WITH.get(need, 'see docs/remote_engines.md')}"
    )
