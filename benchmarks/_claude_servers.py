"""The servers Claude Code's traffic is sent to in ``bench_claude_front.py``: caldrix's front on a
pool of its own, and llama.cpp's llama-server, on the same window."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from _llama_server import LlamaServer, start_llama_server

from tests.caldrix.front_harness import launch_front
from tests.caldrix.pool_harness import start_pool
from tests.default_model import default_model_path
from tests.openai_server import free_port

#: Rows of every setup's window: Claude Code's prompt and a few turns fit.
WINDOW: Final = 32768


@contextlib.contextmanager
def caldrix_front(
    folder: Path, threads: int, *flags: str, front_flags: Sequence[str] = (), model: Path | None = None
) -> Iterator[tuple[str, LlamaServer | None]]:
    """A pool on ``model`` (the default one unless given) with the pool ``flags``, and a front on
    it with ``front_flags``: its URL (and no llama-server), until the block ends."""
    loaded = str(model or default_model_path())
    pool = start_pool(folder, "--load", loaded, "--ctx", str(WINDOW), "--threads", str(threads), *flags)
    try:
        front = launch_front(folder, pool.socket_path, *front_flags)
        try:
            yield front.url, None
        finally:
            front.stop()
    finally:
        pool.stop()


@contextlib.contextmanager
def llama_server(
    folder: Path, threads: int, *flags: str, model: Path | None = None
) -> Iterator[tuple[str, LlamaServer | None]]:
    """llama-server on ``model`` (the default one unless given) with ``flags``: its URL and the
    server (whose log says the rows it prefilled), until the block ends."""
    server = start_llama_server(
        model or default_model_path(), folder, *flags, port=free_port(), ctx=WINDOW, threads=threads
    )
    try:
        yield server.url, server
    finally:
        server.stop()
