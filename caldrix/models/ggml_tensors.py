"""Walk a legacy GGML file's tensor records before ctransformers reads them.

ggml's example loaders read tensor records until the end of the file and trust each one: the
gpt2 family reads a record's extents into a two-slot array on the stack (a record of three
dimensions overwrites it), every loader allocates a record's name by its claimed length, and
none notices a file that ends early, so a truncated download would load with weights
missing. Each record is checked here first: its dimensions, its name, its type and its
extents, and the bytes its data needs.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

from caldrix.models.ggml_bounds import MAX_NAME_BYTES, MAX_TENSOR_DIMS, LegacyHeaderInvalid
from caldrix.models.ggml_header import CURRENT_QNT_VERSION, GgmlHeader

#: The tensor types of the ggml ctransformers 0.2.27 bundles (4 and 5 were removed); a record
#: naming another would index past ggml's type table.
GGML_LEGACY_TYPES = frozenset({0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18})
#: Types whose record size is known: type -> (bytes per block, values per block). f32, f16 and
#: the integer types never changed; the quantized blocks are those of format version 2 (with
#: the k-quants of 256 values a block). These are the old ggml's numbers, not the current
#: one's, whose types 16 and up are other formats.
_PLAIN_TYPES = {0: (4, 1), 1: (2, 1), 16: (1, 1), 17: (2, 1), 18: (4, 1)}
_QUANTIZED_TYPES = {
    2: (18, 32),
    3: (20, 32),
    6: (22, 32),
    7: (24, 32),
    8: (34, 32),
    10: (84, 256),
    11: (110, 256),
    12: (144, 256),
    13: (176, 256),
    14: (210, 256),
}
_RECORD_HEAD = struct.Struct("<3i")


def missing_tensor_bytes(handle: BinaryIO, header: GgmlHeader) -> int:
    """How many bytes the open file's tensor records need beyond its end (0 when complete);
    :class:`LegacyHeaderInvalid` for a record no loader can read safely.

    At a type whose block size is not known (the quantized blocks of an older format version)
    the walk stops and reports 0: the records before it were checked."""
    if header.tensors_at is None:
        return 0
    known = dict(_PLAIN_TYPES)
    if header.qnt_version == CURRENT_QNT_VERSION:
        known.update(_QUANTIZED_TYPES)
    size = os.fstat(handle.fileno()).st_size
    offset = header.tensors_at
    while offset < size:
        handle.seek(offset)
        record = handle.read(_RECORD_HEAD.size + 4 * MAX_TENSOR_DIMS)
        if len(record) < _RECORD_HEAD.size:
            return _RECORD_HEAD.size - len(record)
        n_dims, name_len, ttype = _RECORD_HEAD.unpack_from(record)
        _check_record(offset, n_dims, name_len, ttype)
        if len(record) < _RECORD_HEAD.size + 4 * n_dims:
            return _RECORD_HEAD.size + 4 * n_dims - len(record)
        extents = struct.unpack_from(f"<{n_dims}i", record, _RECORD_HEAD.size)
        if min(extents) <= 0:
            # A walk by negative sizes would go backwards for ever: the record is corrupt.
            raise LegacyHeaderInvalid(f"the tensor record at byte {offset:,} has a size of 0 or less")
        if ttype not in known:
            return 0
        n_values = 1
        for extent in extents:
            n_values *= extent
        block_bytes, block_values = known[ttype]
        offset += _RECORD_HEAD.size + 4 * n_dims + name_len
        offset = -(-offset // header.tensor_alignment) * header.tensor_alignment
        offset += n_values // block_values * block_bytes
    return max(0, offset - size)


def _check_record(offset: int, n_dims: int, name_len: int, ttype: int) -> None:
    """Refuse a record whose head no loader reads safely."""
    where = f"the tensor record at byte {offset:,}"
    if not 1 <= n_dims <= MAX_TENSOR_DIMS:
        raise LegacyHeaderInvalid(
            f"{where} claims {n_dims} dimensions; legacy loaders read 1 or {MAX_TENSOR_DIMS}"
        )
    if not 0 < name_len <= MAX_NAME_BYTES:
        raise LegacyHeaderInvalid(
            f"{where} claims a name of {name_len:,} bytes; a tensor name takes 1 to {MAX_NAME_BYTES}"
        )
    if ttype not in GGML_LEGACY_TYPES:
        raise LegacyHeaderInvalid(f"{where} names tensor type {ttype}, which ggml does not have")
