"""The memory fit: how much a model will use, how much the machine lets us use, and whether
one more member fits beside the ones already resident.

The footprint is estimated from the precheck's figures before anything is loaded, so a model
that cannot fit is refused with figures instead of pushing the machine into swap or the OOM
killer. The estimate is meant to be an upper bound: the weights, the KV for the whole window
at f16, and the compute buffers llama.cpp reserves for a batch.
"""

from __future__ import annotations

import os
from pathlib import Path

from caldrix.errors import NoFit
from caldrix.limits import DEFAULT_BATCH, DEFAULT_CTX, LEGACY_SCRATCH_BYTES
from caldrix.models.ggml_header import UNRECORDED_WINDOW
from caldrix.models.gguf import ModelInfo

#: The share of the machine's available memory the loaded models may use by default.
DEFAULT_MEMORY_SHARE = 0.75
#: Fixed part of the compute-buffer allowance (graph bookkeeping, small intermediates).
COMPUTE_BUFFER_BASE_BYTES = 16 * 1024 * 1024
#: Bytes per f32 element of the batch's largest intermediate (logits or attention scores).
COMPUTE_BYTES_PER_ELEMENT = 4
#: Where cgroup v2 and v1 publish the memory limit of this process's group.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: cgroup v1 writes "no limit" as a huge number; anything above this is treated as unlimited.
CGROUP_UNLIMITED_ABOVE = 1 << 60

#: llama.cpp rounds the window up to a multiple of this many KV cells (``--ctx 64`` holds 256).
KV_CELL_PADDING = 256

MIB = 1024 * 1024


def window_for(info: ModelInfo, requested: int | None) -> int:
    """The window a member gets: the flag's, else the model's training window at most
    ``DEFAULT_CTX`` (the rule of :class:`~caldrix.engine_seam.ServingFlags`)."""
    if requested is not None:
        return requested
    if info.context_length:
        return min(info.context_length, DEFAULT_CTX)
    # A legacy header that records no window (llama, falcon) gets the one the engine gives it.
    return UNRECORDED_WINDOW if info.is_legacy else DEFAULT_CTX


def kv_bytes(info: ModelInfo, n_ctx: int) -> int | None:
    """K and V for every layer across the window, or None when a figure is missing."""
    if not (info.n_layer and info.n_head_kv and info.head_dim_k and info.head_dim_v):
        return None
    per_row = info.n_layer * info.n_head_kv * (info.head_dim_k + info.head_dim_v)
    return per_row * n_ctx * info.kv_element_bytes


def compute_allowance(info: ModelInfo, n_ctx: int, batch: int = DEFAULT_BATCH) -> int | None:
    """The compute buffers one batch needs: the larger of the batch's logits and its
    attention scores (llama.cpp reuses one arena for both), plus a fixed base."""
    if not (info.n_vocab and info.n_head):
        return None
    logits = info.n_vocab * batch
    scores = n_ctx * batch * info.n_head
    # ggml's legacy loaders evaluate in a scratch buffer of their own besides.
    scratch = LEGACY_SCRATCH_BYTES if info.is_legacy else 0
    return COMPUTE_BUFFER_BASE_BYTES + scratch + max(logits, scores) * COMPUTE_BYTES_PER_ELEMENT


def estimate_footprint(info: ModelInfo, n_ctx: int, batch: int = DEFAULT_BATCH) -> int | None:
    """Weights + KV for ``n_ctx`` + the compute allowance, in bytes; None when unknown
    (legacy GGML files, or GGUF metadata without the figures)."""
    if info.tensor_bytes is None:
        return None
    if info.is_legacy and info.context_length:
        # Some legacy loaders keep the file's own window whatever is asked (gpt2's position
        # table has exactly that many rows), so their KV is sized by the larger of the two.
        n_ctx = max(n_ctx, info.context_length)
    n_ctx = -(-n_ctx // KV_CELL_PADDING) * KV_CELL_PADDING
    kv = kv_bytes(info, n_ctx)
    compute = compute_allowance(info, n_ctx, batch)
    if kv is None or compute is None:
        return None
    return info.tensor_bytes + kv + compute


def default_memory_limit(cgroup_root: Path = CGROUP_ROOT, meminfo: Path = Path("/proc/meminfo")) -> int:
    """``DEFAULT_MEMORY_SHARE`` of the memory available to this process: the machine's
    MemAvailable, or what the cgroup limit leaves, whichever is smaller."""
    available = _meminfo_available(meminfo)
    room = _cgroup_room(cgroup_root)
    candidates = [value for value in (available, room) if value is not None]
    if not candidates:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        candidates.append(pages)
    return int(min(candidates) * DEFAULT_MEMORY_SHARE)


def _meminfo_available(meminfo: Path) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room(root: Path) -> int | None:
    """Limit minus usage of this process's memory cgroup (v2 first, then v1), if limited."""
    for limit_file, usage_file in (
        (root / "memory.max", root / "memory.current"),
        (root / "memory" / "memory.limit_in_bytes", root / "memory" / "memory.usage_in_bytes"),
    ):
        limit = _read_bytes_figure(limit_file)
        if limit is None or limit >= CGROUP_UNLIMITED_ABOVE:
            continue
        usage = _read_bytes_figure(usage_file) or 0
        return max(limit - usage, 0)
    return None


def _read_bytes_figure(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return CGROUP_UNLIMITED_ABOVE
    try:
        return int(text)
    except ValueError:
        return None


def check_fit(
    new_footprint: int | None,
    resident_footprints: list[int | None],
    limit: int,
    budget_per_member: int = 0,
) -> None:
    """Refuse (:class:`NoFit`) unless the resident members and the new one, each with one
    context budget, fit ``limit``. A member of unknown footprint is only ever loaded alone."""
    if new_footprint is None:
        if resident_footprints:
            raise NoFit(
                f"the model's memory footprint is unknown, so it loads only alone; "
                f"{len(resident_footprints)} member(s) are resident — unload them first",
                footprint_bytes=None,
                resident_bytes=None,
                limit_bytes=limit,
            )
        return
    if any(footprint is None for footprint in resident_footprints):
        raise NoFit(
            "a resident member's memory footprint is unknown, so it must stay alone; unload it first",
            footprint_bytes=new_footprint,
            resident_bytes=None,
            limit_bytes=limit,
        )
    resident = sum(f for f in resident_footprints if f is not None)
    budgets = budget_per_member * (len(resident_footprints) + 1)
    needed = resident + new_footprint + budgets
    if needed <= limit:
        return
    if resident or budgets:
        figures = (
            f"the model needs {_mib(new_footprint)} MiB; with {_mib(resident)} MiB resident and "
            f"{_mib(budgets)} MiB of context budgets that is {_mib(needed)} MiB, over the "
            f"{_mib(limit)} MiB limit (use a smaller --ctx, unload a member, or raise --memory-limit)"
        )
    else:
        figures = (
            f"the model needs {_mib(new_footprint)} MiB, over the {_mib(limit)} MiB memory limit "
            "(use a smaller --ctx or raise --memory-limit)"
        )
    raise NoFit(
        figures,
        footprint_bytes=new_footprint,
        resident_bytes=resident,
        budget_bytes=budgets,
        needed_bytes=needed,
        limit_bytes=limit,
    )


def _mib(n_bytes: int) -> int:
    """Bytes as MiB, rounded up so a refusal never shows a figure that looks like it fits."""
    return -(-n_bytes // MIB)
