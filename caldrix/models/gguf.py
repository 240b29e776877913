"""The precheck: read a model file's header and metadata before any engine touches it.

llama.cpp reports a bad file by aborting in native code or with a vague "failed to load
model". Everything that can be decided from the bytes — the magic, the GGUF version, the
architecture, whether the tensor data is all there — is decided here first, in Python, and
each failure is a :class:`~caldrix.errors.PrecheckFailed` with one line that names it.

The same read yields the figures the memory fit needs (layers, KV heads, head size, window,
vocabulary, tensor bytes), so the footprint is known before loading.

Legacy GGML files (``ggml``/``ggmf``/``ggjt`` magics) are recognised and described as legacy
files for the ctransformers engine; their hyperparameters depend on the model type, so only
the magic, the version and the size are read.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from caldrix.errors import PrecheckFailed, quoted
from caldrix.models.architectures import ENCODER_ONLY_ARCHITECTURES, LLAMA_CPP_ARCHITECTURES
from caldrix.models.files import open_regular_file
from caldrix.models.ggml_bounds import LegacyHeaderInvalid
from caldrix.models.ggml_header import HEAD_BYTES, parse_header
from caldrix.models.ggml_tensors import missing_tensor_bytes

GGUF_MAGIC = b"GGUF"
SUPPORTED_GGUF_VERSIONS: tuple[int, ...] = (2, 3)
#: Tensor data starts at a multiple of this unless ``general.alignment`` says otherwise.
DEFAULT_GGUF_ALIGNMENT = 32
#: ggml tensors have at most four dimensions; more means the tensor table is corrupt.
GGML_MAX_DIMS = 4

#: ggml tensor types: id → (elements per block, bytes per block). Checked against
#: ``ggml_blck_size``/``ggml_type_size`` of the bundled ggml.
GGML_TYPE_LAYOUT: dict[int, tuple[int, int]] = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
    39: (32, 17),
    40: (64, 36),
    41: (128, 18),
}

#: Legacy GGML magics, as the little-endian u32 at the start of the file, with their names.
GGML_MODEL_MAGICS: dict[int, str] = {
    0x67676D6C: "ggml",
    0x67676D66: "ggmf",
    0x67676A74: "ggjt",
    0x67676363: "ggcc",  # Falcon, as ggllm.cpp writes it
}
#: Legacy magics that are not models at all, with what they are.
GGML_OTHER_MAGICS: dict[int, str] = {
    0x67676C61: "a GGML LoRA adapter ('ggla')",
    0x6767736E: "a llama.cpp session file ('ggsn')",
    0x67677371: "a llama.cpp sequence-state file ('ggsq')",
}

# GGUF metadata value types.
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL = range(8)
_STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = 8, 9, 10, 11, 12
_SCALAR_FORMATS: dict[int, str] = {
    _UINT8: "<B",
    _INT8: "<b",
    _UINT16: "<H",
    _INT16: "<h",
    _UINT32: "<I",
    _INT32: "<i",
    _FLOAT32: "<f",
    _BOOL: "<?",
    _UINT64: "<Q",
    _INT64: "<q",
    _FLOAT64: "<d",
}
#: Numeric arrays up to this length are kept (per-layer head counts); longer ones are skipped.
_KEPT_ARRAY_LEN = 4096


@dataclass(frozen=True)
class ModelInfo:
    """What the precheck learned about a model file."""

    path: Path
    format: Literal["gguf", "ggml"]
    file_size: int
    version: int | None = None
    architecture: str | None = None
    name: str | None = None
    tensor_count: int = 0
    tensor_bytes: int | None = None
    n_layer: int | None = None
    n_head: int | None = None
    n_head_kv: int | None = None
    n_embd: int | None = None
    head_dim_k: int | None = None
    head_dim_v: int | None = None
    context_length: int | None = None
    n_vocab: int | None = None
    has_chat_template: bool = False
    legacy_magic: str | None = None
    kv_element_bytes: int = 2
    """Bytes of one K or V element (f16 in llama.cpp; some legacy loaders keep f32)."""

    @property
    def is_legacy(self) -> bool:
        return self.format == "ggml"


@dataclass(frozen=True)
class _Array:
    """A metadata array: its length, and its values when short and numeric."""

    count: int
    values: tuple[int | float | bool, ...] | None


MetaValue = int | float | bool | str | _Array


class _Truncated(Exception):
    """The header claims bytes past the end of the file."""


class _Invalid(Exception):
    """The file cannot be served; ``args[0]`` is the reason, without the path."""


class _Reader:
    """Reads little-endian GGUF fields from a memory map, refusing to read past its end."""

    def __init__(self, data: mmap.mmap | bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int | float | bool:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise _Truncated
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def u32(self) -> int:
        return int(self.take("<I"))

    def u64(self) -> int:
        return int(self.take("<Q"))

    def skip(self, n_bytes: int) -> None:
        if n_bytes < 0 or self.pos + n_bytes > len(self.data):
            raise _Truncated
        self.pos += n_bytes

    def string(self) -> str:
        length = self.u64()
        start = self.pos
        self.skip(length)
        return bytes(self.data[start : self.pos]).decode("utf-8", errors="replace")

    def value(self, value_type: int) -> MetaValue:
        if value_type == _STRING:
            return self.string()
        if value_type == _ARRAY:
            return self.array()
        fmt = _SCALAR_FORMATS.get(value_type)
        if fmt is None:
            raise _Invalid(f"metadata value type {value_type} is unknown (corrupt header)")
        return self.take(fmt)

    def array(self) -> _Array:
        item_type = self.u32()
        count = self.u64()
        fmt = _SCALAR_FORMATS.get(item_type)
        if fmt is not None and count <= _KEPT_ARRAY_LEN:
            return _Array(count, tuple(self.take(fmt) for _ in range(count)))
        if fmt is not None:
            self.skip(count * struct.calcsize(fmt))
        elif item_type == _STRING:
            for _ in range(count):  # each string is at least 8 bytes, so this ends at EOF
                self.skip(self.u64())
        else:
            for _ in range(count):
                self.value(item_type)
        return _Array(count, None)


def precheck(path: Path) -> ModelInfo:
    """Read ``path``'s header and check it can be served; :class:`PrecheckFailed` otherwise."""
    try:
        with open_regular_file(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 8:
                raise _Invalid(f"not a model file ({size} bytes)")
            head = handle.read(8)
            if head[:4] == GGUF_MAGIC:
                with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    return _read_gguf(path, data, size)
            return _read_legacy(path, handle, head, size)
    except _Invalid as exc:
        reason = str(exc)
        raise PrecheckFailed(f"{path}: {reason}", path=str(path), reason=reason) from None
    except OSError as exc:
        raise PrecheckFailed(f"{path}: cannot read the file ({exc.strerror})", path=str(path)) from exc


def _read_legacy(path: Path, handle: BinaryIO, head: bytes, size: int) -> ModelInfo:
    """A legacy file's magic and version, and, when its header tells its architecture, the
    figures the fit needs — every count first bounded by what the file can hold, since the
    legacy loaders allocate by the header before they read a weight."""
    (magic,) = struct.unpack_from("<I", head, 0)
    if magic in GGML_OTHER_MAGICS:
        raise _Invalid(f"this is {GGML_OTHER_MAGICS[magic]}, not a model")
    name = GGML_MODEL_MAGICS.get(magic)
    if name is None:
        raise _Invalid(f"not a GGUF file (magic {head[:4]!r}); caldrix reads GGUF and legacy GGML models")
    version = None if name == "ggml" else struct.unpack_from("<I", head, 4)[0]
    info = ModelInfo(path=path, format="ggml", file_size=size, version=version, legacy_magic=name)
    try:
        header = parse_header(head + handle.read(HEAD_BYTES - len(head)), size)
        missing = missing_tensor_bytes(handle, header)
    except LegacyHeaderInvalid as exc:
        raise _Invalid(f"not a usable legacy GGML file: {exc}") from None
    if missing:
        raise _Invalid(f"file is truncated: its tensors need {missing:,} bytes past its end")
    if not (header.n_layer and header.n_embd and header.n_head):
        return info
    head_dim = header.n_embd // header.n_head
    return dataclasses.replace(
        info,
        tensor_bytes=size,
        n_layer=header.n_layer,
        n_head=header.n_head,
        n_head_kv=header.kv_heads,
        n_embd=header.n_embd,
        head_dim_k=head_dim,
        head_dim_v=head_dim,
        context_length=header.n_ctx,
        n_vocab=header.n_vocab,
        kv_element_bytes=header.kv_element_bytes,
    )


def _read_gguf(path: Path, data: mmap.mmap, size: int) -> ModelInfo:
    reader = _Reader(data)
    reader.skip(4)
    try:
        version = reader.u32()
        if version == 1:
            raise _Invalid("GGUF version 1 is not supported; convert the model again with current llama.cpp")
        if version not in SUPPORTED_GGUF_VERSIONS:
            raise _Invalid(f"GGUF version {version} is not supported (caldrix reads versions 2 and 3)")
        tensor_count = reader.u64()
        metadata = _read_metadata(reader, reader.u64())
        tensor_end = _read_tensor_table(reader, tensor_count, metadata)
    except _Truncated:
        raise _Invalid(f"file is truncated: its header runs past the end of its {size} bytes") from None
    architecture = _checked_architecture(metadata)
    expected_size, tensor_bytes = tensor_end
    if size < expected_size:
        raise _Invalid(f"file is truncated: {size} of {expected_size} bytes")
    return _model_info(path, size, version, tensor_count, tensor_bytes, architecture, metadata)


def _read_metadata(reader: _Reader, count: int) -> dict[str, MetaValue]:
    metadata: dict[str, MetaValue] = {}
    for _ in range(count):
        key = reader.string()
        metadata[key] = reader.value(reader.u32())
    return metadata


def _read_tensor_table(reader: _Reader, count: int, metadata: dict[str, MetaValue]) -> tuple[int, int]:
    """Read the tensor infos; return (the file size they imply, the tensor bytes)."""
    data_end = 0
    total = 0
    for _ in range(count):
        name = reader.string()
        n_dims = reader.u32()
        if n_dims > GGML_MAX_DIMS:
            raise _Invalid(f"tensor {quoted(name)} claims {n_dims} dimensions (corrupt tensor table)")
        elements = 1
        for _ in range(n_dims):
            elements *= reader.u64()
        tensor_type = reader.u32()
        offset = reader.u64()
        layout = GGML_TYPE_LAYOUT.get(tensor_type)
        if layout is None:
            raise _Invalid(f"tensor {quoted(name)} has ggml type {tensor_type}, unknown to this llama.cpp")
        block_elements, block_bytes = layout
        n_bytes = elements // block_elements * block_bytes
        total += n_bytes
        data_end = max(data_end, offset + n_bytes)
    alignment = metadata.get("general.alignment", DEFAULT_GGUF_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0:
        raise _Invalid(f"general.alignment is {alignment!r} (corrupt header)")
    data_start = -(-reader.pos // alignment) * alignment
    return data_start + data_end, total


def _checked_architecture(metadata: dict[str, MetaValue]) -> str:
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str):
        raise _Invalid("the metadata has no general.architecture; the file is not a llama.cpp model")
    if architecture in ENCODER_ONLY_ARCHITECTURES:
        raise _Invalid(
            f"architecture {quoted(architecture)} is an embedding model; caldrix serves text generation"
        )
    if architecture not in LLAMA_CPP_ARCHITECTURES:
        raise _Invalid(f"architecture {quoted(architecture)} is not supported by llama.cpp")
    return architecture


def _model_info(
    path: Path,
    size: int,
    version: int,
    tensor_count: int,
    tensor_bytes: int,
    architecture: str,
    metadata: dict[str, MetaValue],
) -> ModelInfo:
    def number(key: str) -> int | None:
        return _as_int(metadata.get(f"{architecture}.{key}"))

    n_embd = number("embedding_length")
    n_head = number("attention.head_count")
    n_head_kv = number("attention.head_count_kv") or n_head
    default_head_dim = n_embd // n_head if n_embd and n_head else None
    tokens = metadata.get("tokenizer.ggml.tokens")
    n_vocab = tokens.count if isinstance(tokens, _Array) else number("vocab_size")
    name = metadata.get("general.name")
    return ModelInfo(
        path=path,
        format="gguf",
        file_size=size,
        version=version,
        architecture=architecture,
        name=name if isinstance(name, str) else None,
        tensor_count=tensor_count,
        tensor_bytes=tensor_bytes,
        n_layer=number("block_count"),
        n_head=n_head,
        n_head_kv=n_head_kv,
        n_embd=n_embd,
        head_dim_k=number("attention.key_length") or default_head_dim,
        head_dim_v=number("attention.value_length") or default_head_dim,
        context_length=number("context_length"),
        n_vocab=n_vocab,
        has_chat_template=isinstance(metadata.get("tokenizer.chat_template"), str),
    )


def _as_int(value: MetaValue | None) -> int | None:
    """A metadata number as an int; a per-layer array counts as its largest entry (the KV
    is sized for the widest layer, which keeps the footprint an upper bound)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, _Array) and value.values:
        return max(int(v) for v in value.values)
    return None
