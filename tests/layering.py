"""The dependency rules of docs/layout.md, as a checker over a source tree.

``violations(root)`` reads every module under ``root/aerix`` and ``root/caldrix`` (imports at any
depth, inside functions too; ``from x import y`` read as ``x.y`` so ``from aerix import errors``
counts as ``aerix.errors``; a relative import read as the absolute one it stands for) and
returns one line per import that breaks a rule:

- ``aerix.domain`` imports only ``aerix.domain``;
- ``aerix.projections`` only ``aerix.domain`` and ``aerix.projections``;
- ``aerix.app`` only ``aerix.domain``, ``aerix.projections``, ``aerix.app``, ``aerix.errors``;
- ``aerix.adapters`` only ``aerix.domain``, the ports (``aerix.app.ports``), ``aerix.errors``,
  ``aerix.adapters`` and the package root (its version) — never a use-case module;
- only ``aerix.cli`` and ``aerix.wiring`` import ``aerix.adapters``;
- ``aerix.errors`` only ``aerix.domain`` (every layer above the domain raises its errors);
- ``caldrix`` never imports ``aerix``; ``aerix`` reaches caldrix only through ``caldrix.protocol``,
  and only from the app and the adapters (the domain and the projections are caldrix-free).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

#: Layer (a module prefix) -> the aerix prefixes it may import.
ALLOWED: dict[str, tuple[str, ...]] = {
    "aerix.domain": ("aerix.domain",),
    "aerix.projections": ("aerix.domain", "aerix.projections"),
    "aerix.app": ("aerix.domain", "aerix.projections", "aerix.app", "aerix.errors"),
    "aerix.adapters": (
        "aerix.domain",
        "aerix.app.ports",
        "aerix.errors",
        "aerix.adapters",
        "aerix.__version__",
    ),
    "aerix.errors": ("aerix.domain",),
}
#: Modules of aerix that may use caldrix (through caldrix.protocol only).
CALDRIX_USERS = ("aerix.app", "aerix.adapters", "aerix.cli", "aerix.wiring")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names: ``from ..adapters import x`` in
    ``aerix.app.agent.loop`` is ``aerix.app.adapters``, and ``from . import x`` in a package's
    ``__init__`` is that package."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(root: Path, package: str) -> Iterator[tuple[str, str]]:
    """(importing module, imported name) for every import in ``root/package``."""
    for path in sorted((root / package).rglob("*.py")):
        module = module_name(root, path)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                yield from ((module, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = _source(module, path.name == "__init__.py", node)
                yield from ((module, f"{source}.{alias.name}") for alias in node.names)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _layer(module: str) -> str | None:
    return next((layer for layer in ALLOWED if _within(module, layer)), None)


def violations(root: Path) -> list[str]:
    found: list[str] = []
    for module, name in imports(root, "caldrix"):
        if _within(name, "aerix"):
            found.append(f"{module} imports {name}: caldrix never imports aerix")
    for module, name in imports(root, "aerix"):
        if _within(name, "caldrix"):
            if not _within(name, "caldrix.protocol"):
                found.append(f"{module} imports {name}: aerix reaches caldrix only through caldrix.protocol")
            elif not any(_within(module, user) for user in CALDRIX_USERS):
                found.append(f"{module} imports {name}: the domain and projections do not use caldrix")
            continue
        if not _within(name, "aerix"):
            continue
        if _within(name, "aerix.adapters") and not any(
            _within(module, owner) for owner in ("aerix.adapters", "aerix.cli", "aerix.wiring")
        ):
            found.append(f"{module} imports {name}: only cli and wiring import adapters")
            continue
        layer = _layer(module)
        if layer is not None and not any(_within(name, allowed) for allowed in ALLOWED[layer]):
            found.append(f"{module} imports {name}: {layer} may import only {', '.join(ALLOWED[layer])}")
    return found
