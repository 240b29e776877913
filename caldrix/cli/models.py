"""``caldrix models list|pull|check``: the model cache from the terminal.

Each action calls one function in :mod:`caldrix.models.references` (or the precheck and the fit) and
prints its result; errors travel up as :class:`~caldrix.errors.CaldrixError` and
:func:`caldrix.cli.main.main` prints their one line.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from caldrix.errors import NoFit
from caldrix.models.embedded import DEFAULT_MODEL_NAME
from caldrix.models.fit import MIB, check_fit, default_memory_limit, estimate_footprint, kv_bytes, window_for
from caldrix.models.gguf import ModelInfo, precheck
from caldrix.models.paths import model_cache_dir
from caldrix.models.references import (
    embedded_not_cached,
    list_cached,
    parse_reference,
    pull_reference,
    resolve_model,
)

#: Leading hex digits of a sha256 shown in the listing.
SHA_SHOWN = 12


def models_command(args: argparse.Namespace) -> int:
    console = Console(highlight=False, soft_wrap=True)  # paths stay whole, never wrapped
    action = args.models_command
    if action == "list":
        return _list(console)
    if action == "pull":
        return _pull(console, args.model)
    return _check(console, args.model, args.ctx)


def _list(console: Console) -> int:
    cached = list_cached()
    if not cached:
        hint = f"caldrix models pull {DEFAULT_MODEL_NAME}"
        console.print(f"the model cache ({model_cache_dir()}) is empty; try: {hint}")
    else:
        table = Table(box=None, pad_edge=False)
        for column in ("model", "size", "sha256", "state"):
            table.add_column(column, justify="right" if column == "size" else "left")
        for entry in cached:
            state = "ready" if entry.complete else "partial (resumes on the next pull)"
            sha = entry.sha256[:SHA_SHOWN] if entry.sha256 else "-"
            table.add_row(entry.reference, _size(entry.size), sha, state)
        console.print(table)
        console.print(f"cache: {model_cache_dir()}")
    if pullable := embedded_not_cached(cached):
        names = ", ".join(f"{model.name} ({_size(model.size)})" for model in pullable)
        console.print(f"embedded, not in the cache: {names}; caldrix models pull NAME")
    return 0


def _pull(console: Console, reference: str) -> int:
    parsed = parse_reference(reference)
    assert parsed.cache_path is not None
    if parsed.kind == "path":
        precheck(parsed.cache_path)
        console.print(f"{reference} is a local file, used where it is; nothing to pull")
        return 0
    if parsed.cache_path.is_file():
        info = precheck(parsed.cache_path)
        console.print(f"{reference} is already in the cache: {parsed.cache_path} ({_size(info.file_size)})")
        return 0
    path = pull_reference(parsed, progress=True)
    info = precheck(path)
    console.print(f"pulled {reference} → {path} ({_size(info.file_size)}, {_describe(info)})")
    return 0


def _check(console: Console, reference: str, ctx: int | None) -> int:
    resolved = resolve_model(reference, progress=True)
    info = resolved.info
    console.print(f"{reference}: {resolved.path}")
    console.print(f"  {_describe(info)}, {_size(info.file_size)}")
    if info.is_legacy:
        if info.n_layer is None:
            console.print(
                "  legacy GGML file for the ctransformers engine; its header does not tell the "
                "architecture (pass --model-type when loading), so its footprint is unknown (loads alone)"
            )
            return 0
        console.print(
            "  legacy GGML file for the ctransformers engine: it loads alone, beside no other member"
        )
    n_ctx = window_for(info, ctx)
    console.print(
        f"  layers {info.n_layer}, heads {info.n_head} (KV {info.n_head_kv}), embedding {info.n_embd}, "
        f"window {info.context_length or 'not recorded'}, vocabulary {info.n_vocab}"
    )
    kv = kv_bytes(info, n_ctx)
    footprint = estimate_footprint(info, n_ctx)
    limit = default_memory_limit()
    console.print(
        f"  at --ctx {n_ctx}: weights {_size(info.tensor_bytes)}, KV {_size(kv)}, "
        f"footprint {_size(footprint)}; memory limit {_size(limit)}"
    )
    try:
        check_fit(footprint, [], limit)
    except NoFit as exc:
        console.print(f"  does not fit: {exc.message}")
        return 1
    console.print("  fits")
    return 0


def _describe(info: ModelInfo) -> str:
    if info.is_legacy:
        version = f" v{info.version}" if info.version is not None else ""
        return f"legacy GGML ('{info.legacy_magic}'{version})"
    return f"GGUF v{info.version}, {info.architecture}, {info.tensor_count} tensors"


def _size(n_bytes: int | None) -> str:
    if n_bytes is None:
        return "unknown"
    return f"{n_bytes / MIB:.1f} MiB"
