"""Where caldrix keeps things on disk (the socket's default path is the protocol's:
:func:`caldrix.protocol.transport.default_socket_path`). Every path follows the XDG variables so tests can
point them all at a temporary folder."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def model_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/caldrix/models``: downloaded and pulled model files."""
    return _xdg("XDG_CACHE_HOME", ".cache") / "caldrix" / "models"
