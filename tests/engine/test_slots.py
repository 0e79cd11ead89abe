"""The automatic slot count for continuous batching (`gbdesk.engine.slots`)."""

from __future__ import annotations

from gbdesk.engine import slots as slots_mod
from gbdesk.engine.gguf_meta import GGUFInfo


def info(**kw) -> GGUFInfo:
    base = dict(
        path="m.gguf", file_name="m.gguf", size_bytes=1, architecture="llama", name=None,
        parameters=0, size_label=None, quantization=None, context_length=8192,
        chat_template=None, block_count=30, embedding_length=576, head_count=9,
        head_count_kv=3, vocab_size=49152, gguf_version=3, tensor_count=0,
    )  # fmt: skip
    base.update(kw)
    return GGUFInfo(**base)


def test_kv_bytes_per_cell_from_metadata():
    # SmolLM2-135M: 30 layers × 3 KV heads × (64 + 64) dims × 2 bytes
    assert slots_mod.kv_bytes_per_cell(info()) == 30 * 3 * 128 * 2
    # explicit key/value lengths win over embedding / heads (e.g. Gemma-2: 256, not 224)
    gemma = info(
        architecture="gemma2", block_count=42, embedding_length=3584, head_count=16,
        head_count_kv=8,
        metadata={"gemma2.attention.key_length": 256, "gemma2.attention.value_length": 256},
    )  # fmt: skip
    assert slots_mod.kv_bytes_per_cell(gemma) == 42 * 8 * 512 * 2
    assert slots_mod.kv_bytes_per_cell(info(block_count=None)) is None


def test_choose_slots_cpu_cap_memory_bound_and_override(monkeypatch):
    per_cell = 30 * 3 * 128 * 2
    monkeypatch.setattr(slots_mod, "kv_bytes_per_slot", lambda path, n: per_cell * n)
    n, why = slots_mod.choose_slots("m.gguf", n_ctx_seq=1024, available_bytes=64 << 30)
    assert n == slots_mod.CPU_SLOT_CAP and "measured" in why
    # 100 MB free, half of it for 22.5 MB streams (+1 spare): 1 slot
    n, why = slots_mod.choose_slots("m.gguf", n_ctx_seq=1024, available_bytes=100 << 20)
    assert n == 1 and "memory" in why
    n, why = slots_mod.choose_slots("m.gguf", n_ctx_seq=1024, available_bytes=64 << 30, override=3)
    assert n == 3 and "as set" in why
    n, _ = slots_mod.choose_slots("m.gguf", n_ctx_seq=1024, available_bytes=64 << 30, override=99)
    assert n == slots_mod.MAX_SLOTS
    n, _ = slots_mod.choose_slots("m.gguf", n_ctx_seq=1024, available_bytes=100 << 20, override=8)
    assert n == 1


def test_choose_slots_without_readable_model():
    n, why = slots_mod.choose_slots("/nonexistent.gguf", available_bytes=1 << 30)
    assert n == slots_mod.CPU_SLOT_CAP and "unknown" in why


def test_max_slots_matches_the_engine():
    from gbdesk.engine.continuous import MAX_SLOTS

    assert slots_mod.MAX_SLOTS == MAX_SLOTS
