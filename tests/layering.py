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
- inside caldrix, every module is in one of :data:`CALDRIX_LAYERS`, a strict order (lowest
  first), and imports only its own layer and the layers below it that its row lists: no back
  edge (the table itself may list only lower layers, :func:`order_errors`), so ``generation``
  and ``store`` reach an engine only through ``caldrix.engine_seam``, and only ``caldrix.cli``
  (and ``python -m caldrix``) imports the command line;
- inside ``aerix.app``, the packages keep a strict order, :data:`APP_LAYERS` (lowest first): a
  module of one imports only its own package and those below it, no back edge;
- no two modules of caldrix import each other, directly or round a longer circle
  (:func:`circles`, for any package), even inside one folder or only for their types.
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
#: The rule of a layer that may import every layer below it (the pool's own modules, the command line).
EVERY_LAYER_BELOW = None
#: caldrix's layers, lowest first: a folder (a package) or a module, and the layers below it that
#: it may import besides itself. Each layer names only layers listed before it (checked by
#: :func:`order_errors`), so the table is a strict order and no back edge can be allowed;
#: ``"caldrix"`` is the package root (its version). Every module of caldrix is in one layer.
CALDRIX_LAYERS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("caldrix", ()),
    ("caldrix.limits", ()),
    ("caldrix.errors", ("caldrix.limits",)),
    ("caldrix.log", ()),
    ("caldrix.processes", ()),
    ("caldrix.engine_thread", ()),
    ("caldrix.engine_seam", ("caldrix.limits",)),
    ("caldrix.protocol", ("caldrix", "caldrix.limits", "caldrix.errors")),
    ("caldrix.models", ("caldrix", "caldrix.limits", "caldrix.errors")),
    ("caldrix.generation", ("caldrix.errors", "caldrix.engine_seam")),
    ("caldrix.store", ("caldrix.engine_seam", "caldrix.generation")),
    (
        "caldrix.engines",
        ("caldrix.limits", "caldrix.errors", "caldrix.engine_seam", "caldrix.models", "caldrix.generation"),
    ),
    ("caldrix.contexts", EVERY_LAYER_BELOW),
    ("caldrix.members", EVERY_LAYER_BELOW),
    ("caldrix.pool", EVERY_LAYER_BELOW),
    ("caldrix.connection", EVERY_LAYER_BELOW),
    ("caldrix.server", EVERY_LAYER_BELOW),
    # The HTTP front is a client of the pool, never part of it: only the command line imports it.
    (
        "caldrix.front",
        ("caldrix", "caldrix.limits", "caldrix.errors", "caldrix.processes", "caldrix.protocol"),
    ),
    ("caldrix.cli", EVERY_LAYER_BELOW),
    ("caldrix.__main__", ("caldrix.cli",)),
)
#: aerix.app's packages, lowest first: each imports only itself and the packages before it.
APP_LAYERS: tuple[str, ...] = (
    "aerix.app.ports",
    "aerix.app.hooks",
    "aerix.app.sessions",
    "aerix.app.pool",
    "aerix.app.agent",
    "aerix.app.delegation",
    "aerix.app.profiles",
    "aerix.app.request",
)
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


def modules(root: Path, package: str) -> set[str]:
    """Every module of ``root/package``, packages (their ``__init__``) included."""
    return {module_name(root, path) for path in (root / package).rglob("*.py")}


def _module_of(name: str, known: set[str]) -> str:
    """The module an imported name is: the name itself (``import caldrix.protocol``), or the
    module it was taken from (``caldrix.errors.BadRequest`` is ``caldrix.errors``). A name of no
    module in the tree (a synthetic tree's) stands for itself."""
    parent = name.rpartition(".")[0]
    return parent if name not in known and parent in known else name


def _caldrix_rank(module: str) -> int | None:
    """The index of ``module``'s layer in :data:`CALDRIX_LAYERS`; the root layer holds only the
    package's ``__init__``, every other layer its module or package and what is inside it."""
    return next(
        (
            rank
            for rank, (layer, _) in enumerate(CALDRIX_LAYERS)
            if module == layer or (layer != "caldrix" and _within(module, layer))
        ),
        None,
    )


def order_errors(layers: tuple[tuple[str, tuple[str, ...] | None], ...]) -> list[str]:
    """A line for each layer that names one not listed before it: the table's own back edges."""
    found: list[str] = []
    for rank, (layer, allowed) in enumerate(layers):
        below = {name for name, _ in layers[:rank]}
        found.extend(
            f"{layer} may import {name}, which is not below it in the order"
            for name in allowed or ()
            if name not in below
        )
    return found


def circles(root: Path, package: str) -> list[str]:
    """A line for each circle of imports between modules of ``package`` (a strongly connected
    set of two or more modules), drawn as one path round it: ``a -> b -> a``."""
    known = modules(root, package)
    edges: dict[str, set[str]] = {module: set() for module in known}
    for module, name in imports(root, package):
        target = _module_of(name, known)
        if target in known and target != module:
            edges[module].add(target)
    return [" -> ".join(_round(component, edges)) for component in _components(edges) if len(component) > 1]


def _components(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of the graph (Tarjan's algorithm), each sorted, in order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def _round(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest path from the component's first module back to it, through the component."""
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(edges[node] & set(component)):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"{component} is not a circle")


def caldrix_violations(root: Path) -> list[str]:
    """caldrix's rules: never aerix, each module in a layer, each import to its own layer or one
    its layer lists below it, and no circle."""
    found = order_errors(CALDRIX_LAYERS)
    known = modules(root, "caldrix")
    found.extend(
        f"{module} is in no layer of caldrix: give it one (docs/layout.md, tests/layering.py)"
        for module in sorted(known)
        if _caldrix_rank(module) is None
    )
    for module, name in imports(root, "caldrix"):
        if _within(name, "aerix"):
            found.append(f"{module} imports {name}: caldrix never imports aerix")
            continue
        if not _within(name, "caldrix"):
            continue
        rank, target = _caldrix_rank(module), _caldrix_rank(_module_of(name, known))
        if rank is None or target is None or target == rank:
            continue
        layer, allowed = CALDRIX_LAYERS[rank]
        below = target < rank
        if (allowed is None and below) or (allowed is not None and CALDRIX_LAYERS[target][0] in allowed):
            continue
        rule = "the layers below it" if allowed is None else ", ".join(allowed) or "nothing of caldrix"
        above = "" if below else f" ({CALDRIX_LAYERS[target][0]} is above it)"
        found.append(f"{module} imports {name}: {layer} may import only {rule}{above}")
    found.extend(f"a circle of imports: {circle}" for circle in circles(root, "caldrix"))
    return found


def _app_rank(module: str) -> int | None:
    return next((rank for rank, layer in enumerate(APP_LAYERS) if _within(module, layer)), None)


def app_violations(root: Path) -> list[str]:
    """aerix.app's rule: a module of one of its packages imports from the app only its own
    package and those below it in :data:`APP_LAYERS`."""
    found = []
    for module, name in imports(root, "aerix/app"):
        rank, target = _app_rank(module), _app_rank(name)
        if rank is not None and target is not None and target > rank:
            found.append(
                f"{module} imports {name}: {APP_LAYERS[target]} is above {APP_LAYERS[rank]} in aerix.app"
            )
    return found


def violations(root: Path) -> list[str]:
    found = caldrix_violations(root) + app_violations(root)
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
