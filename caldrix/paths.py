"""Where caldrix keeps things on disk. Every path follows the XDG variables so tests can
point them all at a temporary folder."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def default_socket_path() -> Path:
    """``$XDG_RUNTIME_DIR/caldrix/pool.sock``, else ``/tmp/caldrix-<uid>/pool.sock``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "caldrix" / "pool.sock"
    return Path(f"/tmp/caldrix-{os.getuid()}") / "pool.sock"


def model_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/caldrix/models``: downloaded and pulled model files."""
    return _xdg("XDG_CACHE_HOME", ".cache") / "caldrix" / "models"
