"""Open a model file with the engine that serves it.

``flags.engine`` decides when it names an engine; with ``auto`` the file's first four bytes
do: GGUF files go to llama.cpp, legacy GGML files (``ggml``, ``ggmf``, ``ggjt``) to
ctransformers. Engines are imported only when chosen, so a pool serving GGUF files never
loads ctransformers.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Literal

from caldrix.engine_seam import Engine, ServingFlags
from caldrix.errors import PrecheckFailed
from caldrix.models.files import open_model_file

EngineName = Literal["llamacpp", "ctransformers", "scripted"]

GGUF_MAGIC = b"GGUF"
#: The legacy GGML magics, as written by little-endian writers (the u32 read back as text)
#: and, for robustness, as plain text.
LEGACY_GGML_MAGICS = frozenset({b"lmgg", b"fmgg", b"tjgg", b"ccgg", b"ggml", b"ggmf", b"ggjt", b"ggcc"})


def engine_for_file(path: Path) -> EngineName:
    """The engine that serves ``path``, by its magic; a clear error for anything else."""
    with open_model_file(path) as handle:
        magic = handle.read(4)
    if magic == GGUF_MAGIC:
        return "llamacpp"
    if magic in LEGACY_GGML_MAGICS:
        return "ctransformers"
    raise PrecheckFailed(
        f"{path.name} is not a GGUF or GGML model file (it starts with {magic!r}); "
        "point at a .gguf file or a legacy GGML .bin"
    )


def open_engine(path: Path, flags: ServingFlags) -> Engine:
    """Load ``path`` with the engine ``flags.engine`` names, or the one its magic calls for."""
    name: EngineName = engine_for_file(path) if flags.engine == "auto" else flags.engine
    # Imported when chosen: llama.cpp takes half a second to load, and a pool needs only its own.
    if name == "llamacpp":
        from caldrix.engines.llamacpp import open_llamacpp

        return open_llamacpp(path, flags)
    if name == "scripted":
        from caldrix.engines.scripted import open_scripted

        return open_scripted(path, flags)
    # Imported by name: the legacy engine is optional at run time and written separately.
    legacy = importlib.import_module("caldrix.engines.ctransformers")
    engine: Engine = legacy.open_ctransformers(path, flags)
    return engine
