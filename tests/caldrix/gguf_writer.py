"""Write small GGUF files for the precheck and download tests.

The layout is GGUF's: the magic ``GGUF``, a u32 version, u64 tensor and metadata counts, the
metadata (u64-length strings, u32 value types), the tensor infos (name, u32 n_dims, u64
extents, u32 ggml type, u64 offset), then the tensor data from the next 32-byte boundary.
Tensors here are f32 (type 0) and filled with zeros.
"""

from __future__ import annotations

import struct
from pathlib import Path

_ALIGNMENT = 32
_TYPE_UINT32 = 4
_TYPE_STRING = 8


def _string(text: str) -> bytes:
    encoded = text.encode()
    return struct.pack("<Q", len(encoded)) + encoded


def _value(value: int | str) -> bytes:
    if isinstance(value, str):
        return struct.pack("<I", _TYPE_STRING) + _string(value)
    return struct.pack("<I", _TYPE_UINT32) + struct.pack("<I", value)


def gguf_bytes(
    metadata: dict[str, int | str],
    tensors: dict[str, tuple[int, ...]] | None = None,
    version: int = 3,
) -> bytes:
    """A whole GGUF file with ``metadata`` and zero-filled f32 ``tensors`` (name → extents)."""
    tensors = tensors or {}
    header = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, value in metadata.items():
        header += _string(key) + _value(value)
    data = b""
    for name, extents in tensors.items():
        data += b"\0" * (-len(data) % _ALIGNMENT)
        header += _string(name) + struct.pack("<I", len(extents))
        header += struct.pack(f"<{len(extents)}Q", *extents)
        header += struct.pack("<IQ", 0, len(data))
        count = 1
        for extent in extents:
            count *= extent
        data += b"\0" * (4 * count)
    header += b"\0" * (-len(header) % _ALIGNMENT)
    return header + data


def tiny_llama_metadata(architecture: str = "llama") -> dict[str, int | str]:
    """Metadata with the figures the fit reads, for a toy model of that architecture."""
    return {
        "general.architecture": architecture,
        "general.name": "toy",
        f"{architecture}.block_count": 2,
        f"{architecture}.context_length": 256,
        f"{architecture}.embedding_length": 64,
        f"{architecture}.attention.head_count": 4,
        f"{architecture}.attention.head_count_kv": 2,
        f"{architecture}.vocab_size": 100,
    }


#: One small tensor, so the data section and the size check are exercised.
TOY_TENSORS: dict[str, tuple[int, ...]] = {"token_embd.weight": (64, 100)}


def write_gguf(
    path: Path,
    metadata: dict[str, int | str] | None = None,
    tensors: dict[str, tuple[int, ...]] | None = None,
    version: int = 3,
) -> Path:
    """Write a toy GGUF at ``path`` (by default a valid two-layer llama) and return ``path``."""
    chosen = TOY_TENSORS if tensors is None else tensors
    path.write_bytes(gguf_bytes(metadata or tiny_llama_metadata(), chosen, version))
    return path
