"""The model a run uses: a name, a GGUF file or an endpoint resolved to its stored row
(no Qt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gbdesk.store import Store
from gbdesk.support.errors import UserError


def resolve_model(store: Store, spec: str | None) -> dict[str, Any]:
    """Register the GGUF named by `spec` ("default" or a path) and return its row.

    The sha256 is computed once per file version (path, size, mtime) and cached. An
    ``http(s)://BASE-URL#MODEL`` spec names an OpenAI-compatible endpoint model instead
    (`gbdesk.engine.http`; nothing is contacted here).
    """
    if spec and spec.strip().lower().startswith(("http://", "https://")):
        from gbdesk.engine.http import resolve_endpoint

        return resolve_endpoint(store, spec)
    from gbdesk.engine.default_model import (
        DEFAULT_MODEL_LABEL,
        default_model_path,
        is_default_model,
    )
    from gbdesk.engine.gguf_meta import read_gguf, sha256_file

    path = default_model_path() if spec in (None, "", "default") else Path(spec).expanduser()
    info = read_gguf(path)  # UserError for missing, foreign or truncated files
    stat = Path(info.path).stat()
    cached = store.model_by_path(info.path, stat.st_size, stat.st_mtime)
    if cached and cached.get("sha256"):
        return cached
    record = {
        "kind": "gguf",
        "name": DEFAULT_MODEL_LABEL
        if is_default_model(info.path)
        else (info.name or info.file_name),
        "path": info.path,
        "file_name": info.file_name,
        "sha256": sha256_file(info.path),
        "size_bytes": stat.st_size,
        "mtime": stat.st_mtime,
        "architecture": info.architecture,
        "parameters": info.parameters,
        "quantization": info.quantization,
        "context_length": info.context_length,
        "has_chat_template": int(info.has_chat_template),
        "chat_template": info.chat_template,
        "metadata_json": _json({k: v for k, v in info.to_json().items() if k != "chat_template"}),
    }
    model_id = store.register_model(record)
    return store.get_model(model_id)


def _json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def verify_model_file(model: dict[str, Any]) -> None:
    """Refuse to resume on a model file that changed since the run was planned."""
    from gbdesk.engine.gguf_meta import sha256_file

    path = Path(model["path"])
    if not path.is_file():
        raise UserError(f"the run's model file is missing: {path}")
    stat = path.stat()
    if stat.st_size == model["size_bytes"] and stat.st_mtime == model["mtime"]:
        return
    if sha256_file(path) != model["sha256"]:
        raise UserError(
            f"the model file {path} changed since this run started (sha256 differs); "
            "start a new run instead of resuming"
        )
