"""Bounded reads of a legacy GGML file's head: each count a header gives checked against what
the file can hold, and each vocabulary, merge list or tensor name read only inside the bytes
read, so a header that lies is a refusal in words (:class:`LegacyHeaderInvalid`) and never an
allocation sized by the lie."""

from __future__ import annotations

import struct

from caldrix.limits import LEGACY_MIN_BYTES_PER_WEIGHT, LEGACY_VOCAB_ENTRY_MIN_BYTES

#: The longest vocabulary entry and tensor name read as one; longer is not a legacy header.
MAX_TOKEN_BYTES = 4096
MAX_NAME_BYTES = 512
#: Every ctransformers loader reads one or two extents a tensor; the falcon and llama ones
#: refuse more, the gpt2 family overflows the two-slot array it reads them into.
MAX_TENSOR_DIMS = 2
#: Vocabulary entries that only StarCoder-family tokenizers hold (same layout as gpt2).
STARCODER_MARKERS = (b"<fim_prefix>", b"<fim-prefix>")


class LegacyHeaderInvalid(ValueError):
    """A legacy header claims more than its file can hold; ``args[0]`` says what, in words."""


def skip_merges_within(head: bytes, offset: int, size: int) -> int:
    """The offset past a ``ggcc`` file's BPE merges (a count, then pairs of length-prefixed
    strings), which must lie inside the file's head like its vocabulary."""
    try:
        (count,) = struct.unpack_from("<i", head, offset)
        if count < 0:
            raise ValueError("negative count")
        offset += 4
        for _ in range(count):
            for _side in range(2):
                (length,) = struct.unpack_from("<I", head, offset)
                if length > MAX_TOKEN_BYTES or offset + 4 + length > len(head):
                    raise ValueError("not a merge")
                offset += 4 + length
    except (struct.error, ValueError):
        raise LegacyHeaderInvalid(
            f"its BPE merges do not fit in the file's first {min(size, len(head)):,} bytes"
        ) from None
    return offset


def check_counts(*, n_vocab: int, n_embd: int, n_head: int, n_layer: int, n_ctx: int, size: int) -> None:
    """Refuse counts no file of ``size`` bytes can back: each must be 1 or more, a vocabulary
    of N entries takes at least N length fields, and a head has at least one dimension."""
    for name, value in (("n_vocab", n_vocab), ("n_embd", n_embd), ("n_head", n_head), ("n_layer", n_layer)):
        if value <= 0:
            raise LegacyHeaderInvalid(f"its header claims {name} {value}; it must be 1 or more")
    if n_ctx <= 0:
        raise LegacyHeaderInvalid(f"its header claims a window of {n_ctx} tokens; it must be 1 or more")
    if n_vocab * LEGACY_VOCAB_ENTRY_MIN_BYTES > size:
        raise LegacyHeaderInvalid(
            f"its header claims {n_vocab:,} vocabulary entries, more than its {size:,} bytes can hold "
            f"(each takes at least {LEGACY_VOCAB_ENTRY_MIN_BYTES} bytes)"
        )
    if n_head > n_embd:
        raise LegacyHeaderInvalid(f"its header claims {n_head:,} heads for an embedding of {n_embd:,}")


def check_weights(weights: int, size: int) -> None:
    """Refuse a header whose figures imply more weights than the file holds."""
    needed = int(weights * LEGACY_MIN_BYTES_PER_WEIGHT)
    if needed > size:
        raise LegacyHeaderInvalid(
            f"its header's figures imply {weights:,} weights, at least {needed:,} bytes, but it has "
            f"{size:,}: the file is incomplete or its header is wrong"
        )


def skip_vocab_within(head: bytes, offset: int, n_vocab: int, *, scored: bool, size: int) -> int:
    """The offset past a vocabulary that must lie inside the file's head."""
    try:
        end, _ = skip_vocab(head, offset, n_vocab, scored)
    except (struct.error, ValueError):
        raise LegacyHeaderInvalid(
            f"its vocabulary of {n_vocab:,} entries does not fit in the file's first "
            f"{min(size, len(head)):,} bytes"
        ) from None
    return end


def skip_vocab(head: bytes, offset: int, n_vocab: int, scored: bool) -> tuple[int, bool]:
    """Offset just past the vocabulary, and whether it holds StarCoder's FIM tokens."""
    starcoder = False
    for _ in range(n_vocab):
        (length,) = struct.unpack_from("<I", head, offset)
        if length > MAX_TOKEN_BYTES or offset + 4 + length > len(head):
            raise ValueError("not a vocabulary entry")
        token = head[offset + 4 : offset + 4 + length]
        starcoder = starcoder or token in STARCODER_MARKERS
        offset += 4 + length + (4 if scored else 0)
    return offset, starcoder


def first_tensor_name(head: bytes, offset: int) -> str | None:
    n_dims, name_len, _ttype = struct.unpack_from("<3i", head, offset)
    if not (1 <= n_dims <= MAX_TENSOR_DIMS and 0 < name_len <= MAX_NAME_BYTES):
        return None
    start = offset + 12 + 4 * n_dims
    raw = head[start : start + name_len]
    if len(raw) != name_len:
        return None
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return None
