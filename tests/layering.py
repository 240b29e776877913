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
- only the ``aerix.cli`` package (the command line: main, request, sessions, profiles) and the
  ``aerix.wiring`` package (the composition root) import ``aerix.adapters``; only ``aerix.entry``
  (the console script) imports ``aerix.cli``, and only ``aerix.cli`` imports ``aerix.wiring``;
- ``aerix.errors`` only ``aerix.domain`` (every layer above the domain raises its errors);
- ``caldrix`` never imports ``aerix``; ``aerix`` reaches caldrix only through ``caldrix.protocol``,
  and only from the app and the adapters (the domain and the projections are caldrix-free);
- inside caldrix, each folder imports only what :data:`CALDRIX_ALLOWED` lists (``generation`` and
  ``store`` reach an engine only through ``caldrix.engines.base``; ``caldrix.limits``, the bounds,
  imports nothing and the errors only it; a member's engine thread, ``caldrix.engine_thread``,
  nothing either), and only ``caldrix.cli`` (and
  ``python -m caldrix``) imports the command line.
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
#: caldrix's folders (and its leaf modules) -> the caldrix prefixes each may import. The pool's own
#: modules at the top (server, connection, pool, members, contexts) may import any of these.
CALDRIX_ALLOWED: dict[str, tuple[str, ...]] = {
    "caldrix.limits": (),
    "caldrix.errors": ("caldrix.limits",),
    "caldrix.log": (),
    "caldrix.sinks": (),
    "caldrix.protocol": ("caldrix.protocol", "caldrix.errors", "caldrix.limits", "caldrix.__version__"),
    "caldrix.models": (
        "caldrix.models",
        "caldrix.errors",
        "caldrix.limits",
        "caldrix.engines.base",
        "caldrix.__version__",
    ),
    "caldrix.generation": ("caldrix.generation", "caldrix.errors", "caldrix.engines.base"),
    "caldrix.store": ("caldrix.store", "caldrix.engines.base", "caldrix.generation.decoding"),
    "caldrix.engines.base": (),
    "caldrix.engine_thread": (),
    "caldrix.engines": (
        "caldrix.engines",
        "caldrix.errors",
        "caldrix.limits",
        "caldrix.models",
        "caldrix.generation.templates",
    ),
    "caldrix.front": (
        "caldrix.front",
        "caldrix.protocol",
        "caldrix.errors",
        "caldrix.limits",
        "caldrix.__version__",
    ),
}
#: The only modules that import caldrix's command line.
CALDRIX_CLI_USERS = ("caldrix.cli", "caldrix.__main__")
#: The only modules that import the HTTP front (a client of the pool, never part of it).
CALDRIX_FRONT_USERS = ("caldrix.cli", "caldrix.front")
#: The packages that import aerix's adapters: the command line and the composition root (each a
#: package; ``aerix.cli`` is not ``aerix.cli_x``), besides the adapters themselves.
ADAPTER_USERS = ("aerix.adapters", "aerix.cli", "aerix.wiring")
#: Who imports the command line (the console script's first module), and who the composition root.
AERIX_CLI_USERS = ("aerix.cli", "aerix.entry")
WIRING_USERS = ("aerix.cli", "aerix.wiring")
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


def _caldrix_layer(module: str) -> str | None:
    # The longest prefix wins: caldrix.engines.base has rules of its own within caldrix.engines.
    layers = [layer for layer in CALDRIX_ALLOWED if _within(module, layer)]
    return max(layers, key=len, default=None)


def violations(root: Path) -> list[str]:
    found: list[str] = []
    for module, name in imports(root, "caldrix"):
        if _within(name, "aerix"):
            found.append(f"{module} imports {name}: caldrix never imports aerix")
            continue
        if not _within(name, "caldrix"):
            continue
        if _within(name, "caldrix.cli") and not any(_within(module, user) for user in CALDRIX_CLI_USERS):
            found.append(f"{module} imports {name}: only caldrix.cli imports the command line")
            continue
        if _within(name, "caldrix.front") and not any(_within(module, user) for user in CALDRIX_FRONT_USERS):
            found.append(f"{module} imports {name}: only caldrix.cli imports the HTTP front")
            continue
        layer = _caldrix_layer(module)
        allowed = CALDRIX_ALLOWED[layer] if layer is not None else None
        if allowed is not None and not any(_within(name, prefix) for prefix in allowed):
            rule = ", ".join(allowed) if allowed else "nothing of caldrix"
            found.append(f"{module} imports {name}: {layer} may import only {rule}")
    for module, name in imports(root, "aerix"):
        if _within(name, "caldrix"):
            if not _within(name, "caldrix.protocol"):
                found.append(f"{module} imports {name}: aerix reaches caldrix only through caldrix.protocol")
            elif not any(_within(module, user) for user in CALDRIX_USERS):
                found.append(f"{module} imports {name}: the domain and projections do not use caldrix")
            continue
        if not _within(name, "aerix"):
            continue
        if _within(name, "aerix.adapters") and not any(_within(module, owner) for owner in ADAPTER_USERS):
            found.append(f"{module} imports {name}: only cli and wiring import adapters")
            continue
        layer = _layer(module)
        if layer is not None and not any(_within(name, allowed) for allowed in ALLOWED[layer]):
            found.append(f"{module} imports {name}: {layer} may import only {', '.join(ALLOWED[layer])}")
        elif _within(name, "aerix.cli") and not any(_within(module, user) for user in AERIX_CLI_USERS):
            found.append(f"{module} imports {name}: only aerix.entry imports the command line")
        elif _within(name, "aerix.wiring") and not any(_within(module, user) for user in WIRING_USERS):
            found.append(f"{module} imports {name}: only aerix.cli imports the composition root")
    return found
