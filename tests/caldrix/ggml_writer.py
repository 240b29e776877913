"""Write tiny legacy GGML model files with random weights, for the ctransformers tests: a gpt2
(below), a llama header, and a falcon in ggllm.cpp's ``ggcc`` format (at the end).

The layout is the one ggml's ``examples/gpt-2`` loader reads (ctransformers vendors it as
``models/llms/gpt2.cc``), with no padding anywhere:

1. the magic ``0x67676d6c`` ("ggml") as a little-endian u32;
2. six i32 hparams: ``n_vocab, n_ctx, n_embd, n_head, n_layer, ftype`` (0 = all f32);
3. the vocabulary: an i32 count, then per token a u32 length and the token's raw bytes
   (ggml's converters undo GPT-2's bytes-to-unicode mapping before writing);
4. the tensors until end of file, each: i32 ``n_dims``, i32 name length, i32 type (0 = f32),
   ``n_dims`` i32 extents innermost first, the name, then the f32 data.

The vocabulary holds the 256 single bytes (so a constraint can spell anything), a few merged
tokens (so tokenization is not trivially one token a byte) and ``<|endoftext|>`` last, which
ctransformers takes as the end-of-sequence token.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

GGML_MAGIC = 0x67676D6C
FTYPE_ALL_F32 = 0
TENSOR_TYPE_F32 = 0
END_OF_TEXT = b"<|endoftext|>"
MERGED_TOKENS: tuple[bytes, ...] = (
    b"th",
    b"he",
    b"the",
    b" the",
    b"in",
    b"er",
    b"an",
    b"  ",
    b'{"',
    b'":',
    b'",',
    b"ing",
)


@dataclass(frozen=True)
class TinyGpt2:
    """The hyperparameters of the tiny model; small enough to load and run in milliseconds."""

    n_ctx: int = 512
    n_embd: int = 32
    n_head: int = 4
    n_layer: int = 2
    seed: int = 1234


def tiny_vocab() -> list[bytes]:
    """The token texts by id: every single byte, then the merges, then ``<|endoftext|>``."""
    return [bytes([b]) for b in range(256)] + list(MERGED_TOKENS) + [END_OF_TEXT]


#: The gpt2 hparams in header order, as :func:`write_tiny_gpt2`'s ``claims`` names them.
GPT2_HPARAMS = ("n_vocab", "n_ctx", "n_embd", "n_head", "n_layer")


def write_tiny_gpt2(path: Path, shape: TinyGpt2 | None = None, claims: dict[str, int] | None = None) -> Path:
    """Write the model file at ``path`` and return ``path``. ``claims`` overrides hparams in
    the header only (the vocabulary and tensors stay the tiny model's): a header that lies."""
    shape = shape or TinyGpt2()
    vocab = tiny_vocab()
    rng = np.random.default_rng(shape.seed)
    with path.open("wb") as out:
        out.write(struct.pack("<I", GGML_MAGIC))
        figures = (len(vocab), shape.n_ctx, shape.n_embd, shape.n_head, shape.n_layer)
        real = dict(zip(GPT2_HPARAMS, figures, strict=True))
        hparams = [{**real, **(claims or {})}[name] for name in GPT2_HPARAMS]
        out.write(struct.pack("<6i", *hparams, FTYPE_ALL_F32))
        out.write(struct.pack("<i", len(vocab)))
        for token in vocab:
            out.write(struct.pack("<I", len(token)))
            out.write(token)
        for name, data in _tensors(shape, len(vocab), rng):
            _write_tensor(out, name, data)
    return path


def _tensors(shape: TinyGpt2, n_vocab: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Every tensor the gpt2 loader expects, as numpy arrays shaped outermost first."""
    e = shape.n_embd

    def weight(rows: int, cols: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, size=(rows, cols)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return rng.normal(0.0, 0.1, size=(n,)).astype(np.float32)

    ones = np.ones(e, dtype=np.float32)
    zeros = np.zeros(e, dtype=np.float32)
    tensors: list[tuple[str, np.ndarray]] = [
        ("model/ln_f/g", ones),
        ("model/ln_f/b", zeros),
        ("model/wte", weight(n_vocab, e)),
        ("model/wpe", weight(shape.n_ctx, e) * 0.2),
    ]
    for i in range(shape.n_layer):
        p = f"model/h{i}"
        tensors += [
            (f"{p}/ln_1/g", ones),
            (f"{p}/ln_1/b", zeros),
            (f"{p}/ln_2/g", ones),
            (f"{p}/ln_2/b", zeros),
            (f"{p}/attn/c_attn/w", weight(3 * e, e)),
            (f"{p}/attn/c_attn/b", bias(3 * e)),
            (f"{p}/attn/c_proj/w", weight(e, e)),
            (f"{p}/attn/c_proj/b", bias(e)),
            (f"{p}/mlp/c_fc/w", weight(4 * e, e)),
            (f"{p}/mlp/c_fc/b", bias(4 * e)),
            (f"{p}/mlp/c_proj/w", weight(e, 4 * e)),
            (f"{p}/mlp/c_proj/b", bias(e)),
        ]
    return tensors


def _write_tensor(out: BinaryIO, name: str, data: np.ndarray, alignment: int = 1) -> None:
    """One tensor record; its data starts at a multiple of ``alignment`` (1: packed)."""
    write = out.write
    encoded = name.encode()
    extents = tuple(reversed(data.shape))  # ggml lists the innermost extent first
    write(struct.pack("<3i", len(extents), len(encoded), TENSOR_TYPE_F32))
    write(struct.pack(f"<{len(extents)}i", *extents))
    write(encoded)
    write(bytes(-out.tell() % alignment))
    write(np.ascontiguousarray(data, dtype="<f4").tobytes())


GGJT_MAGIC = 0x67676A74
GGJT_VERSION = 3


@dataclass(frozen=True)
class LlamaHeader:
    """The hparams of a ``ggjt`` (llama) header: ``n_vocab, n_embd, n_mult, n_head, n_layer,
    n_rot, ftype``, each an i32 after the magic and the version."""

    n_vocab: int = 4
    n_embd: int = 8
    n_mult: int = 4
    n_head: int = 2
    n_layer: int = 1
    n_rot: int = 4
    ftype: int = 0


def write_llama_header(path: Path, header: LlamaHeader, vocab: list[bytes], tail: bytes) -> Path:
    """A ``ggjt`` v3 file: the header, ``vocab`` (each entry its u32 length, its bytes and an
    f32 score) and then ``tail`` as it is, no tensors (ggml's llama loader fails on it, after
    the precheck has nothing to say against the figures when they fit). Returns ``path``."""
    with path.open("wb") as out:
        out.write(struct.pack("<II", GGJT_MAGIC, GGJT_VERSION))
        out.write(
            struct.pack(
                "<7i",
                header.n_vocab,
                header.n_embd,
                header.n_mult,
                header.n_head,
                header.n_layer,
                header.n_rot,
                header.ftype,
            )
        )
        for token in vocab:
            out.write(struct.pack("<I", len(token)) + token + struct.pack("<f", 0.0))
        out.write(tail)
    return path


GGCC_MAGIC = 0x67676363
GGCC_VERSION = 10
#: ggllm.cpp's alignment of tensor data in ``ggcc`` files.
GGCC_ALIGNMENT = 32


@dataclass(frozen=True)
class TinyFalcon:
    """A falcon small enough to load in milliseconds, with the 7B's layout (one layernorm a
    layer, multi-query attention: one KV head). ``falcon_type`` 7 tells ggllm.cpp's loader the
    layout when the layer count is not the 7B's 32."""

    n_embd: int = 32
    n_head: int = 4
    n_head_kv: int = 1
    n_layer: int = 2
    falcon_type: int = 7
    seed: int = 4321


#: The falcon hparams in header order, as :func:`write_tiny_falcon`'s ``claims`` names them.
FALCON_HPARAMS = ("n_vocab", "n_embd", "n_head", "n_head_kv", "n_layer", "falcon_type")


def write_tiny_falcon(
    path: Path,
    shape: TinyFalcon | None = None,
    claims: dict[str, int] | None = None,
    *,
    version: int = GGCC_VERSION,
    merges: list[tuple[bytes, bytes]] | None = None,
) -> Path:
    """A ``ggcc`` file the way ggllm.cpp writes one (ctransformers vendors its loader as
    ``models/ggml/libfalcon.cpp``): the magic and ``version``, eight i32 hparams (``n_vocab,
    n_embd, n_head, n_head_kv, n_layer, n_falcon_type, ftype, n_bpe_merges``), the vocabulary
    (each entry a u32 length, its bytes and an f32 score), the BPE merges (a count, then pairs
    of length-prefixed strings), then every tensor the 7B layout names, its data aligned to 32
    bytes. ``claims`` overrides hparams in the header only. Returns ``path``."""
    shape = shape or TinyFalcon()
    vocab = tiny_vocab()
    merges = merges if merges is not None else [(b"t", b"h"), (b"th", b"e")]
    figures = (len(vocab), shape.n_embd, shape.n_head, shape.n_head_kv, shape.n_layer, shape.falcon_type)
    hparams = {**dict(zip(FALCON_HPARAMS, figures, strict=True)), **(claims or {})}
    rng = np.random.default_rng(shape.seed)
    with path.open("wb") as out:
        out.write(struct.pack("<II", GGCC_MAGIC, version))
        out.write(struct.pack("<6i", *(hparams[name] for name in FALCON_HPARAMS)))
        out.write(struct.pack("<2i", FTYPE_ALL_F32, len(merges)))
        for token in vocab:
            out.write(struct.pack("<I", len(token)) + token + struct.pack("<f", 0.0))
        out.write(struct.pack("<i", len(merges)))
        for left, right in merges:
            out.write(struct.pack("<I", len(left)) + left + struct.pack("<I", len(right)) + right)
        for name, data in _falcon_tensors(shape, len(vocab), rng):
            _write_tensor(out, name, data, alignment=GGCC_ALIGNMENT)
    return path


def _falcon_tensors(
    shape: TinyFalcon, n_vocab: int, rng: np.random.Generator
) -> list[tuple[str, np.ndarray]]:
    e = shape.n_embd
    head_dim = e // shape.n_head

    def weight(rows: int, cols: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, size=(rows, cols)).astype(np.float32)

    ones = np.ones(e, dtype=np.float32)
    zeros = np.zeros(e, dtype=np.float32)
    tensors: list[tuple[str, np.ndarray]] = [
        ("transformer.word_embeddings.weight", weight(n_vocab, e)),
        ("transformer.ln_f.weight", ones),
        ("transformer.ln_f.bias", zeros),
        ("lm_head.weight", weight(n_vocab, e)),
    ]
    for i in range(shape.n_layer):
        p = f"transformer.h.{i}"
        tensors += [
            (f"{p}.input_layernorm.weight", ones),
            (f"{p}.input_layernorm.bias", zeros),
            (
                f"{p}.self_attention.query_key_value.weight",
                weight((2 * shape.n_head_kv + shape.n_head) * head_dim, e),
            ),
            (f"{p}.self_attention.dense.weight", weight(e, e)),
            (f"{p}.mlp.dense_h_to_4h.weight", weight(4 * e, e)),
            (f"{p}.mlp.dense_4h_to_h.weight", weight(e, 4 * e)),
        ]
    return tensors
