"""How many sequences continuous batching keeps live: from the model and free memory.

Main-process code (reads the GGUF header only; no llama.cpp). The number is the
smallest of

* what helps on a CPU: past `CPU_SLOT_CAP` live sequences a decode step costs about as
  much more as it generates (measured with benchmarks/slots.py, see `CPU_SLOT_CAP`);
* what the memory holds: each slot is a KV stream of `n_ctx_seq` cells (f16 K and V for
  every layer: ``2 × layers × kv_heads × head_dim × 2 bytes`` per cell), plus one spare
  stream; at most `MEMORY_SHARE` of the memory available now goes to them;
* llama.cpp's limit for one generation step (`gbdesk.engine.continuous.MAX_SLOTS`).

An explicit count overrides the CPU cap (never the memory bound, which would fail the
load).
"""

from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from gbdesk.engine.gguf_meta import GGUFInfo

log = logging.getLogger(__name__)

# benchmarks/slots.py on SmolLM2-135M-Instruct Q4_1, 2 cores (shared machine), 32
# prompts × 128 tokens: aggregate tokens/s rises steeply up to 8 slots and levels off
# by 16 (see the docstring of benchmarks/slots.py for the figures).
CPU_SLOT_CAP = 16
MEMORY_SHARE = 0.5
MAX_SLOTS = 48  # = gbdesk.engine.continuous.MAX_SLOTS (not imported: llama_cpp-free)


def kv_bytes_per_cell(info: GGUFInfo) -> int | None:
    """f16 K and V bytes of one token over all layers, from the GGUF metadata (the
    attention key/value lengths when given, else embedding length / heads)."""
    meta = info.metadata
    arch = info.architecture or ""
    layers = info.block_count
    kv_heads = info.head_count_kv or info.head_count
    if not (layers and kv_heads):
        return None
    default_dim = (
        info.embedding_length // info.head_count
        if (info.embedding_length and info.head_count)
        else None
    )
    k_dim = meta.get(f"{arch}.attention.key_length") or default_dim
    v_dim = meta.get(f"{arch}.attention.value_length") or k_dim
    if not (k_dim and v_dim):
        return None
    return int(layers) * int(kv_heads) * (int(k_dim) + int(v_dim)) * 2


def kv_bytes_per_slot(model_path: str | os.PathLike[str], n_ctx_seq: int) -> int | None:
    """Bytes of one slot's f16 KV stream of `n_ctx_seq` cells; None if unknown."""
    try:
        stat = os.stat(model_path)
    except OSError as exc:
        log.warning("cannot read %s for the KV size: %s", model_path, exc)
        return None
    per_cell = _kv_bytes_per_cell_of(os.fspath(model_path), stat.st_mtime_ns, stat.st_size)
    return per_cell * n_ctx_seq if per_cell else None


@functools.lru_cache(maxsize=16)
def _kv_bytes_per_cell_of(path: str, mtime_ns: int, size: int) -> int | None:
    """`kv_bytes_per_cell` of a GGUF file, read once per file version (the header with its
    tokenizer arrays takes ~50 ms to read; estimates and audit plans ask many times)."""
    from gbdesk.engine.gguf_meta import read_gguf

    try:
        info = read_gguf(path)
    except Exception as exc:  # not a readable GGUF: no memory bound from it
        log.warning("cannot read %s for the KV size: %s", path, exc)
        return None
    return kv_bytes_per_cell(info)


def choose_slots(
    model_path: str | os.PathLike[str],
    *,
    n_ctx_seq: int = 1024,
    n_threads: int | None = None,
    override: int | None = None,
    available_bytes: int | None = None,
) -> tuple[int, str]:
    """(slots, a one-line reason for the UI)."""
    from gbdesk.engine.gguf_meta import format_bytes

    if available_bytes is None:
        available_bytes = int(psutil.virtual_memory().available)
    per_slot = kv_bytes_per_slot(model_path, n_ctx_seq)
    mem_cap = MAX_SLOTS
    if per_slot:
        mem_cap = max(1, int(available_bytes * MEMORY_SHARE // per_slot) - 1)
    memory_note = (
        f"KV cache {format_bytes(per_slot)} per sequence of {n_ctx_seq} tokens, "
        f"{format_bytes(available_bytes)} free"
        if per_slot
        else "KV size unknown"
    )
    if override is not None and int(override) > 0:
        slots = max(1, min(int(override), mem_cap, MAX_SLOTS))
        why = "as set" if slots == int(override) else f"{override} asked, at most {slots} possible"
        return slots, f"{slots} sequences at once ({why}; {memory_note})"
    threads = n_threads or psutil.cpu_count(logical=False) or 1
    slots = max(1, min(CPU_SLOT_CAP, mem_cap, MAX_SLOTS))
    if slots == mem_cap and mem_cap < CPU_SLOT_CAP:
        why = f"as many as half the free memory holds ({memory_note})"
    else:
        why = (
            f"more does not speed up a CPU ({threads} threads; measured); {memory_note}, "
            f"room for {mem_cap}"
        )
    return slots, f"{slots} sequences at once: {why}"
