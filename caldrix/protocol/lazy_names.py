"""A package whose names load their modules on first use (PEP 562's module ``__getattr__``).

``caldrix.protocol`` keeps its names so: importing the package costs nothing of the modules
behind the names a command does not use. Imports nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``homes`` is imported from its
    home module when first asked for, then kept in the package as a plain global."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # __import__, the import statement's own hook (importlib.import_module bypasses the hook
        # that -X importtime reports through, and the start-up tests read that report).
        value = getattr(__import__(home, fromlist=[name]), name)
        setattr(sys.modules[package], name, value)  # once: the next use is a plain global
        return value

    return __getattr__
