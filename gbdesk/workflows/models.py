"""The model catalogue: the bundled default, registered GGUF files and the models folders."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import psutil

from gbdesk.engine.default_model import DEFAULT_MODEL_LABEL, default_model_path, is_default_model
from gbdesk.engine.gguf_meta import GGUFInfo, format_bytes, read_gguf
from gbdesk.engine.llama_backend import DEFAULT_N_CTX
from gbdesk.store import Store
from gbdesk.support.errors import UserError
from gbdesk.support.paths import models_dirs


def describe_gguf(info: GGUFInfo, n_ctx: int = DEFAULT_N_CTX) -> dict[str, Any]:
    """Metadata plus a memory estimate set against this machine's RAM."""
    ctx = min(n_ctx, info.context_length or n_ctx)
    need = info.memory_estimate(ctx)
    ram = psutil.virtual_memory()
    data = info.to_json()
    data.update(
        {
            "name": DEFAULT_MODEL_LABEL
            if is_default_model(info.path)
            else (info.name or info.file_name),
            "default": is_default_model(info.path),
            "parameters_label": info.parameters_label,
            "size_label": format_bytes(info.size_bytes),
            "memory_bytes": need,
            "memory_label": format_bytes(need),
            "n_ctx": ctx,
            "ram_total": ram.total,
            "ram_available": ram.available,
            "fits": need < ram.available,
        }
    )
    return data


def scan_folders() -> list[Path]:
    found = []
    for folder in models_dirs():
        found += sorted(p for p in folder.rglob("*.gguf") if p.is_file())
    return found


def list_models(store: Store | None = None) -> list[dict[str, Any]]:
    """Bundled default first, then registered and scanned GGUF files (each once)."""
    paths: list[Path] = []
    with contextlib.suppress(UserError):
        paths.append(default_model_path())
    if store is not None:
        paths += [Path(m["path"]) for m in store.list_models() if m["kind"] == "gguf"]
    paths += scan_folders()
    seen: set[str] = set()
    out = []
    for path in paths:
        key = str(path.resolve()) if path.exists() else str(path)
        if key in seen:
            continue
        seen.add(key)
        try:
            entry = describe_gguf(read_gguf(path))
        except UserError as exc:
            entry = {"name": path.name, "path": key, "file_name": path.name, "error": str(exc)}
        if store is not None and "error" not in entry:
            stat = path.stat()
            cached = store.model_by_path(key, stat.st_size, stat.st_mtime)
            entry["sha256"] = cached["sha256"] if cached else None
            entry["model_id"] = cached["id"] if cached else None
        out.append(entry)
    if store is not None:
        from gbdesk.engine.http import with_endpoints

        out = with_endpoints(out, store)
    return out
