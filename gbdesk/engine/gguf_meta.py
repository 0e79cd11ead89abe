"""Read a GGUF file's header without loading its weights.

`gguf.GGUFReader` parses every vocabulary entry into NumPy objects (seconds for a
large vocabulary); this reader walks the header once, keeps only the scalar
key/values gbdesk shows (architecture, context length, chat template…), skips
arrays, and checks that every tensor's data lies inside the file so a truncated
download is reported before llama.cpp tries to load it. The type tables come from
the `gguf` package.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import gguf

from gbdesk.support.errors import UserError

_SCALARS = {
    0: "<B",  # UINT8
    1: "<b",  # INT8
    2: "<H",  # UINT16
    3: "<h",  # INT16
    4: "<I",  # UINT32
    5: "<i",  # INT32
    6: "<f",  # FLOAT32
    7: "<?",  # BOOL
    10: "<Q",  # UINT64
    11: "<q",  # INT64
    12: "<d",  # FLOAT64
}
_STRING, _ARRAY = 8, 9
_MAX_STRING = 64 * 1024 * 1024  # a sanity bound for corrupt length fields


class _Truncated(Exception):
    pass


@dataclass
class GGUFInfo:
    path: str
    file_name: str
    size_bytes: int
    architecture: str | None
    name: str | None
    parameters: int
    size_label: str | None
    quantization: str | None
    context_length: int | None
    chat_template: str | None
    block_count: int | None
    embedding_length: int | None
    head_count: int | None
    head_count_kv: int | None
    vocab_size: int | None
    gguf_version: int
    tensor_count: int
    license: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def has_chat_template(self) -> bool:
        return bool(self.chat_template)

    @property
    def parameters_label(self) -> str:
        return format_count(self.parameters)

    def kv_cache_bytes(self, n_ctx: int) -> int:
        """f16 K and V for every layer at `n_ctx` tokens (llama.cpp's default cache)."""
        if not (self.block_count and self.embedding_length and self.head_count):
            return 0
        head_dim = self.embedding_length // self.head_count
        kv_heads = self.head_count_kv or self.head_count
        return 2 * self.block_count * n_ctx * kv_heads * head_dim * 2

    def memory_estimate(self, n_ctx: int = 4096, n_batch: int = 512) -> int:
        """Rough bytes a load needs: weights + KV cache + logits/compute buffers."""
        logits = (self.vocab_size or 32000) * n_batch * 4
        return self.size_bytes + self.kv_cache_bytes(n_ctx) + logits + 64 * 1024 * 1024

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["has_chat_template"] = self.has_chat_template
        data.pop("metadata", None)
        return data


def format_count(n: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}".replace(".0", "")
    return str(n)


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit in ("B", "KB") else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


class _Reader:
    def __init__(self, fh: BinaryIO):
        self.fh = fh
        self.last_array_count = 0

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) != n:
            raise _Truncated()
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        length = self.unpack("<Q")
        if length > _MAX_STRING:
            raise ValueError("implausible string length")
        return self.read(length).decode("utf-8", errors="replace")

    def skip(self, n: int) -> None:
        self.fh.seek(n, os.SEEK_CUR)

    def value(self, vtype: int, keep: bool) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            if keep:
                return self.string()
            length = self.unpack("<Q")
            self.skip(length)
            return None
        if vtype == _ARRAY:
            etype = self.unpack("<I")
            count = self.unpack("<Q")
            self.last_array_count = count
            if etype in _SCALARS:
                size = struct.calcsize(_SCALARS[etype])
                if keep and count <= 64:
                    return [self.unpack(_SCALARS[etype]) for _ in range(count)]
                self.skip(size * count)
                return None
            if etype == _STRING:
                kept = []
                for _ in range(count):
                    length = self.unpack("<Q")
                    if keep and count <= 64:
                        kept.append(self.read(length).decode("utf-8", errors="replace"))
                    else:
                        self.skip(length)
                return kept if keep and count <= 64 else None
            raise ValueError(f"unsupported GGUF array element type {etype}")
        raise ValueError(f"unknown GGUF value type {vtype}")


def _read_metadata(reader: _Reader, kv_count: int) -> dict[str, Any]:
    """The header's key-value metadata; the tokenizer's long arrays skipped (the number of
    tokens kept as "tokenizer.ggml.tokens.count")."""
    meta: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string()
        vtype = reader.unpack("<I")
        keep = not key.startswith("tokenizer.ggml.") or key in (
            "tokenizer.ggml.model",
            "tokenizer.ggml.pre",
            "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id",
        )
        value = reader.value(vtype, keep)
        if value is not None:
            meta[key] = value
        if key == "tokenizer.ggml.tokens":
            meta["tokenizer.ggml.tokens.count"] = reader.last_array_count
    return meta


def _read_tensor_infos(reader: _Reader, tensor_count: int) -> tuple[int, list[int], dict[int, int]]:
    """(parameters, where each tensor's data ends after the data start, elements per tensor
    type) from the header's tensor infos."""
    parameters = 0
    extents = []
    type_counts: dict[int, int] = {}
    for _ in range(tensor_count):
        reader.string()  # tensor name
        n_dims = reader.unpack("<I")
        if n_dims > 8:
            raise ValueError("implausible tensor rank")
        dims = [reader.unpack("<Q") for _ in range(n_dims)]
        ttype = reader.unpack("<I")
        offset = reader.unpack("<Q")
        n_elements = 1
        for d in dims:
            n_elements *= d
        parameters += n_elements
        block, type_size = gguf.GGML_QUANT_SIZES.get(gguf.GGMLQuantizationType(ttype), (1, 0))
        extents.append(offset + n_elements // block * type_size)
        type_counts[ttype] = type_counts.get(ttype, 0) + n_elements
    return parameters, extents, type_counts


def read_gguf(path: str | os.PathLike) -> GGUFInfo:
    """Parse a GGUF header; raise `UserError` for a missing, foreign or truncated file."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"model file not found: {p}")
    if not p.is_file():
        raise UserError(f"not a file: {p}")
    size = p.stat().st_size
    try:
        with p.open("rb") as fh:
            reader = _Reader(fh)
            magic = fh.read(4)
            if magic != b"GGUF":
                raise UserError(f"not a GGUF model file (wrong magic bytes): {p}")
            version = reader.unpack("<I")
            if version == 1:
                tensor_count, kv_count = reader.unpack("<I"), reader.unpack("<I")
            else:
                tensor_count, kv_count = reader.unpack("<Q"), reader.unpack("<Q")
            meta = _read_metadata(reader, kv_count)
            parameters, extents, type_counts = _read_tensor_infos(reader, tensor_count)
            header_end = fh.tell()
    except _Truncated:
        raise UserError(f"the GGUF file is truncated (its header is incomplete): {p}") from None
    except (ValueError, struct.error, UnicodeError) as exc:
        raise UserError(f"not a valid GGUF model file ({exc}): {p}") from None
    except OSError as exc:
        raise UserError(f"cannot read the model file: {exc}") from None

    alignment = int(meta.get("general.alignment", gguf.GGUF_DEFAULT_ALIGNMENT))
    data_start = (header_end + alignment - 1) // alignment * alignment
    needed = data_start + (max(extents) if extents else 0)
    if needed > size:
        raise UserError(
            f"the GGUF file is truncated: it has {size:,} bytes but its tensors need "
            f"{needed:,} (an incomplete download?): {p}"
        )

    arch = meta.get("general.architecture")

    def arch_key(suffix: str) -> Any:
        return meta.get(f"{arch}.{suffix}") if arch else None

    vocab = arch_key("vocab_size") or meta.get("tokenizer.ggml.tokens.count")
    return GGUFInfo(
        path=str(p.resolve()),
        file_name=p.name,
        size_bytes=size,
        architecture=arch,
        name=meta.get("general.name"),
        parameters=parameters,
        size_label=meta.get("general.size_label"),
        quantization=_quantization(meta, type_counts),
        context_length=arch_key("context_length"),
        chat_template=meta.get("tokenizer.chat_template"),
        block_count=arch_key("block_count"),
        embedding_length=arch_key("embedding_length"),
        head_count=_first(arch_key("attention.head_count")),
        head_count_kv=_first(arch_key("attention.head_count_kv")),
        vocab_size=vocab,
        gguf_version=version,
        tensor_count=tensor_count,
        license=meta.get("general.license"),
        metadata={k: v for k, v in meta.items() if isinstance(v, (int, float, str, bool))},
    )


def _first(value: Any) -> int | None:
    if isinstance(value, list):
        return int(value[0]) if value else None
    return value


def _quantization(meta: dict[str, Any], type_counts: dict[int, int]) -> str | None:
    file_type = meta.get("general.file_type")
    if file_type is not None:
        try:
            return gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")
        except ValueError:
            pass
    if not type_counts:
        return None
    dominant = max(type_counts, key=lambda t: type_counts[t])
    try:
        return gguf.GGMLQuantizationType(dominant).name
    except ValueError:
        return None


def sha256_file(path: str | os.PathLike, chunk: int = 4 * 1024 * 1024) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
