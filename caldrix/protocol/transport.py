"""Where a client finds the pool: the default socket path of protocol.md's Transport section."""

from __future__ import annotations

import os
from pathlib import Path


def default_socket_path() -> Path:
    """``$XDG_RUNTIME_DIR/caldrix/pool.sock``, else ``/tmp/caldrix-<uid>/pool.sock``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "caldrix" / "pool.sock"
    return Path(f"/tmp/caldrix-{os.getuid()}") / "pool.sock"
