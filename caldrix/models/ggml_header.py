"""Read enough of a legacy GGML file's header to name its architecture and size its KV.

Legacy GGML files (before GGUF) carry no architecture name. Each of ggml's example loaders
reads its own fixed list of int32 hparams after the magic, then the vocabulary, then tensors
by name — so the architecture can be told apart by trying each layout and checking that the
vocabulary parses and the first tensor's name uses that architecture's naming. Checking this
before ctransformers opens the file also matters because its loaders trust the header: the
wrong ``model_type`` on a file can make them allocate garbage sizes instead of failing.

llama (``ggmf``/``ggjt``) and falcon (``ggcc``) files are versioned and name their layout by
their magic. Every count a header gives is bounded by what the file can hold before anything
trusts it; ``ggml_tensors`` then walks the tensor records the same way.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

from caldrix.models.ggml_bounds import (
    LegacyHeaderInvalid,
    check_counts,
    check_weights,
    first_tensor_name,
    skip_merges_within,
    skip_vocab,
    skip_vocab_within,
)

#: Unversioned ggml files: gpt2, gptj, gpt_neox, mpt, replit, starcoder (and very old llama).
GGML_MAGIC = 0x67676D6C
#: Versioned llama files: "ggmf" (v1) and "ggjt" (v1–v3, mmap-able).
GGMF_MAGIC = 0x67676D66
GGJT_MAGIC = 0x67676A74
#: Falcon files written by ggllm.cpp.
GGCC_MAGIC = 0x67676363
#: The one ``ggcc`` version ggllm.cpp's loader reads (it starts at 10, apart from ``ggjt``'s).
GGCC_VERSION = 10
#: The falcons ggllm.cpp's loader knows: by layer count (7B, 40B), else by the header's
#: ``n_falcon_type``. It asserts on any other, which ends the process that loaded it.
FALCON_LAYER_COUNTS = frozenset({32, 60})
FALCON_TYPES = frozenset({7, 40})
#: The loader reads the first 12 vocabulary entries as its special tokens.
FALCON_MIN_VOCAB = 12
#: Why a falcon file in an older format than ``ggcc`` is refused.
OLD_FALCON_REFUSAL = (
    "it is a falcon file in a format older than ggcc, for which ggllm.cpp's loader reads "
    "tokenizer.json beside it and ends the process when it cannot; convert it to ggcc with ggllm.cpp"
)
#: GGUF files are not legacy: the llama.cpp engine opens them.
GGUF_MAGIC = 0x46554747
LEGACY_MAGICS = frozenset({GGML_MAGIC, GGMF_MAGIC, GGJT_MAGIC, GGCC_MAGIC})

#: The window for files whose header does not record one (llama ``ggjt``, falcon ``ggcc``):
#: LLaMA 1 and most models of that era were trained on 2,048 tokens. ``--ctx`` sets another.
UNRECORDED_WINDOW = 2048
#: How much of the file head is read to find the first tensor name (the vocabulary of a 50k
#: token model is well under a megabyte).
HEAD_BYTES = 8 * 1024 * 1024
MAX_VOCAB = 1_000_000
F32_BYTES = 4
F16_BYTES = 2
QNT_VERSION_FACTOR = 1000
#: The quantization format version whose block sizes ``ggml_tensors`` knows.
CURRENT_QNT_VERSION = 2


@dataclass(frozen=True)
class _Layout:
    model_type: str
    hparams: str
    """struct format of the hparams after the magic."""
    n_vocab_at: int
    n_ctx_at: int
    n_embd_at: int
    n_layer_at: int
    n_head_at: int
    vocab_counted: bool
    """Whether an int32 count precedes the vocabulary entries."""
    vocab_scored: bool
    """Whether a float32 score follows each vocabulary entry."""
    tensor_prefixes: tuple[str, ...]
    kv_element_bytes: int


_LAYOUTS: tuple[_Layout, ...] = (
    _Layout("gpt2", "<6i", 0, 1, 2, 4, 3, True, False, ("model/",), F32_BYTES),
    _Layout("gptj", "<7i", 0, 1, 2, 4, 3, True, False, ("transformer.", "lm_head."), F16_BYTES),
    _Layout("gpt_neox", "<8i", 0, 1, 2, 4, 3, False, False, ("gpt_neox.", "embed_out."), F16_BYTES),
    _Layout("mpt", "<5i2fi", 4, 1, 0, 3, 2, False, False, ("transformer.",), F16_BYTES),
    _Layout("replit", "<6i", 4, 1, 0, 3, 2, False, True, ("transformer.",), F16_BYTES),
)
#: Architectures whose files have another architecture's layout.
_SAME_LAYOUT_AS = {"starcoder": "gpt2", "dollyv2": "gpt_neox"}


@dataclass(frozen=True)
class GgmlHeader:
    """What the header says: the architecture where it can be told, and the KV shape."""

    magic: int
    model_type: str | None
    n_ctx: int | None = None
    n_embd: int | None = None
    n_layer: int | None = None
    kv_element_bytes: int = F16_BYTES
    tensors_at: int | None = None
    """Offset of the first tensor record, for the layouts whose vocabulary was walked."""
    qnt_version: int = 0
    """ggml's quantization format version (``ftype // 1000``); 2 is the last one."""
    n_vocab: int | None = None
    n_head: int | None = None
    tensor_alignment: int = 1
    """Tensor data starts at a multiple of this (32 in ``ggjt`` and ``ggcc`` files, packed
    elsewhere)."""
    n_head_kv: int | None = None
    """Heads of the KV cache where fewer than ``n_head`` (falcon's multi-query attention)."""

    @property
    def kv_heads(self) -> int | None:
        return self.n_head_kv or self.n_head


#: Bytes of a ``ggjt`` tensor's alignment, and the ``ggjt`` version whose quantized blocks
#: are those of :data:`CURRENT_QNT_VERSION`.
GGJT_ALIGNMENT = 32
GGJT_CURRENT_VERSION = 3


def read_magic(handle: BinaryIO) -> int:
    """The little-endian u32 at the start of the open file (0 when the file is shorter)."""
    handle.seek(0)
    head = handle.read(4)
    return struct.unpack("<I", head)[0] if len(head) == 4 else 0


def read_header(handle: BinaryIO) -> GgmlHeader:
    """Parse the header of the open legacy GGML file; ``model_type`` is None when it cannot be
    told. :class:`LegacyHeaderInvalid` when the header claims more than the file holds."""
    head, size = _head(handle)
    return parse_header(head, size)


def parse_header(head: bytes, size: int) -> GgmlHeader:
    """:func:`read_header` on the first :data:`HEAD_BYTES` of a file of ``size`` bytes."""
    magic = struct.unpack("<I", head[:4])[0] if len(head) >= 4 else 0
    if magic in (GGMF_MAGIC, GGJT_MAGIC):
        return _llama_header(magic, head, size)
    if magic == GGCC_MAGIC:
        return _falcon_header(head, size)
    if magic == GGML_MAGIC:
        for layout in _LAYOUTS:
            header = _try_layout(layout, head, size)
            if header is not None:
                return header
    return GgmlHeader(magic, None)


def header_for_type(handle: BinaryIO, model_type: str) -> GgmlHeader | None:
    """The open file's header read with ``model_type``'s layout; None when the file does not
    have it, and :class:`LegacyHeaderInvalid` when it does but claims more than the file
    holds (or is a falcon file whose loader would end the process).

    llama files are read as llama files whatever their older magic; falcon files must be
    ggllm.cpp's ``ggcc``, and a ``ggcc`` file is read as nothing else."""
    head, size = _head(handle)
    magic = struct.unpack("<I", head[:4])[0] if len(head) >= 4 else 0
    if model_type == "falcon":
        if magic in (GGML_MAGIC, GGMF_MAGIC, GGJT_MAGIC):
            raise LegacyHeaderInvalid(OLD_FALCON_REFUSAL)
        return _falcon_header(head, size) if magic == GGCC_MAGIC else None
    if model_type == "llama":
        return _llama_header(magic, head, size) if magic in (GGML_MAGIC, GGMF_MAGIC, GGJT_MAGIC) else None
    wanted = _SAME_LAYOUT_AS.get(model_type, model_type)
    layout = next((lay for lay in _LAYOUTS if lay.model_type == wanted), None)
    if layout is None or magic != GGML_MAGIC:
        return None
    header = _try_layout(layout, head, size)
    if header is None:
        return None
    return dataclasses.replace(header, model_type=model_type)


def _head(handle: BinaryIO) -> tuple[bytes, int]:
    handle.seek(0)
    return handle.read(HEAD_BYTES), os.fstat(handle.fileno()).st_size


def _llama_header(magic: int, head: bytes, size: int) -> GgmlHeader:
    """A llama file's header: ``ggmf``/``ggjt`` (a version, then scored vocabulary entries) or
    the unversioned ``ggml`` one. Its counts are checked against the file before anything
    trusts them: ggml's llama loader allocates by them."""
    versioned = magic in (GGMF_MAGIC, GGJT_MAGIC)
    offset = 8 if versioned else 4
    if len(head) < offset + 7 * 4:
        raise LegacyHeaderInvalid(f"the file ends inside its header ({size} bytes)")
    n_vocab, n_embd, n_mult, n_head, n_layer, _n_rot, _ftype = struct.unpack_from("<7i", head, offset)
    offset += 7 * 4
    version = struct.unpack_from("<I", head, 4)[0] if versioned else 0
    check_counts(n_vocab=n_vocab, n_embd=n_embd, n_head=n_head, n_layer=n_layer, n_ctx=1, size=size)
    if n_mult <= 0:
        raise LegacyHeaderInvalid(f"its header claims n_mult {n_mult}; it must be 1 or more")
    n_ff = -(-(2 * (4 * n_embd) // 3) // n_mult) * n_mult
    check_weights(n_vocab * n_embd * 2 + n_layer * (4 * n_embd * n_embd + 3 * n_embd * n_ff), size)
    tensors_at = skip_vocab_within(head, offset, n_vocab, scored=versioned, size=size)
    current = magic == GGJT_MAGIC and version == GGJT_CURRENT_VERSION
    return GgmlHeader(
        magic,
        "llama",
        None,
        n_embd,
        n_layer,
        F16_BYTES,
        tensors_at=tensors_at,
        qnt_version=CURRENT_QNT_VERSION if current else 0,
        n_vocab=n_vocab,
        n_head=n_head,
        tensor_alignment=GGJT_ALIGNMENT if magic == GGJT_MAGIC else 1,
    )


def _falcon_header(head: bytes, size: int) -> GgmlHeader:
    """A falcon file in ggllm.cpp's ``ggcc`` format: a version, eight hparams, the scored
    vocabulary, the BPE merges, then tensors aligned to 32 bytes. Its loader trusts every
    figure (it sizes its tables by them and asserts on a model it does not know, which ends
    the process), so each is checked against the file and the loader's own rules first."""
    hparams_at = 8
    if len(head) < hparams_at + 8 * 4:
        raise LegacyHeaderInvalid(f"the file ends inside its header ({size} bytes)")
    (version,) = struct.unpack_from("<I", head, 4)
    if version != GGCC_VERSION:
        raise LegacyHeaderInvalid(
            f"it is a ggcc file of version {version}; ggllm.cpp's falcon loader reads version {GGCC_VERSION}"
        )
    n_vocab, n_embd, n_head, n_head_kv, n_layer, falcon_type, _ftype, _merges = struct.unpack_from(
        "<8i", head, hparams_at
    )
    check_counts(n_vocab=n_vocab, n_embd=n_embd, n_head=n_head, n_layer=n_layer, n_ctx=1, size=size)
    if n_vocab < FALCON_MIN_VOCAB:
        raise LegacyHeaderInvalid(
            f"its header claims {n_vocab} vocabulary entries; "
            f"a falcon vocabulary has at least {FALCON_MIN_VOCAB}"
        )
    if not 0 < n_head_kv <= n_head or n_head % n_head_kv or n_embd % n_head:
        raise LegacyHeaderInvalid(
            f"its header claims {n_head_kv} KV heads for {n_head} heads of an embedding of {n_embd}; "
            "the heads must divide the embedding and the KV heads the heads"
        )
    if n_layer not in FALCON_LAYER_COUNTS and falcon_type not in FALCON_TYPES:
        raise LegacyHeaderInvalid(
            f"its header names a falcon of {n_layer} layers and type {falcon_type}; ggllm.cpp's loader "
            "knows 32 or 60 layers, or type 7 or 40"
        )
    check_weights(n_vocab * n_embd + n_layer * 2 * n_embd * n_embd, size)
    offset = skip_vocab_within(head, hparams_at + 8 * 4, n_vocab, scored=True, size=size)
    tensors_at = skip_merges_within(head, offset, size)
    return GgmlHeader(
        GGCC_MAGIC,
        "falcon",
        None,
        n_embd,
        n_layer,
        F16_BYTES,
        tensors_at=tensors_at,
        qnt_version=CURRENT_QNT_VERSION,
        n_vocab=n_vocab,
        n_head=n_head,
        tensor_alignment=GGJT_ALIGNMENT,
        n_head_kv=n_head_kv,
    )


def _try_layout(layout: _Layout, head: bytes, size: int) -> GgmlHeader | None:
    """The header read with ``layout``; None when the file does not have that layout, and
    :class:`LegacyHeaderInvalid` when it does but its counts claim more than the file holds."""
    offset = 4
    try:
        fields = struct.unpack_from(layout.hparams, head, offset)
        offset += struct.calcsize(layout.hparams)
        n_vocab = int(fields[layout.n_vocab_at])
        if not 0 < n_vocab <= MAX_VOCAB:
            return None
        if layout.vocab_counted:
            (count,) = struct.unpack_from("<i", head, offset)
            offset += 4
            if count != n_vocab:
                return None
        offset, starcoder = skip_vocab(head, offset, n_vocab, layout.vocab_scored)
        name = first_tensor_name(head, offset)
    except (struct.error, ValueError):
        return None
    if name is None or not name.startswith(layout.tensor_prefixes):
        return None
    model_type = "starcoder" if layout.model_type == "gpt2" and starcoder else layout.model_type
    n_ctx, n_embd = int(fields[layout.n_ctx_at]), int(fields[layout.n_embd_at])
    n_layer, n_head = int(fields[layout.n_layer_at]), int(fields[layout.n_head_at])
    # The layout is this file's: from here a count that lies is a refusal, not another guess.
    check_counts(n_vocab=n_vocab, n_embd=n_embd, n_head=n_head, n_layer=n_layer, n_ctx=n_ctx, size=size)
    # Every one of these architectures has a token table and at least two n_embd² matrices a
    # layer; gpt2's family also a table of n_ctx positions.
    positions = n_ctx * n_embd if layout.model_type == "gpt2" else 0
    check_weights(n_vocab * n_embd + positions + n_layer * 2 * n_embd * n_embd, size)
    return GgmlHeader(
        GGML_MAGIC,
        model_type,
        n_ctx=n_ctx,
        n_embd=n_embd,
        n_layer=n_layer,
        kv_element_bytes=layout.kv_element_bytes,
        tensors_at=offset,
        qnt_version=int(fields[-1]) // QNT_VERSION_FACTOR,
        n_vocab=n_vocab,
        n_head=n_head,
    )
