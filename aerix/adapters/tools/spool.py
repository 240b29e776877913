"""``DirectorySpool``: the ``SpoolWriter`` port as plain files in one folder (the session's
spool folder, chosen by whoever owns the session's paths)."""

from __future__ import annotations

import re
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class DirectorySpool:
    """Writes each spooled output to ``<folder>/<name>.txt``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def write_spool(self, name: str, text: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = (self.folder / f"{_UNSAFE.sub('_', name) or 'output'}.txt").resolve()
        path.write_text(text, encoding="utf-8")
        return path
