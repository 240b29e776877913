"""The dependency rules of docs/layout.md hold on the source, and the checker that holds them
fails when one is broken (shown on small synthetic trees). The first two tests are the original
aerix↔caldrix checks, kept as they were, beside the checker that now holds every rule."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.layering import CALDRIX_LAYERS, circles, order_errors, violations

ROOT = Path(__file__).resolve().parents[1]


def _imports(package: str) -> Iterator[tuple[Path, str]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                yield from ((path, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from caldrix import protocol`` imports caldrix.protocol, not caldrix itself.
                yield from ((path, f"{node.module}.{alias.name}") for alias in node.names)


def test_caldrix_never_imports_aerix() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, name in _imports("caldrix")
        if name == "aerix" or name.startswith("aerix.")
    ]
    assert offenders == []


@pytest.mark.parametrize("allowed", ["caldrix.protocol"])
def test_aerix_imports_only_the_protocol_package_of_caldrix(allowed: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, name in _imports("aerix")
        if (name == "caldrix" or name.startswith("caldrix.")) and not name.startswith(allowed)
    ]
    assert offenders == []


def test_the_source_keeps_every_layering_rule() -> None:
    assert violations(ROOT) == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in {"aerix/__init__.py": "", "caldrix/__init__.py": "", **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if parent != Path(".") and not init.exists():
                init.write_text("")
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        # An import inside a function counts as much as one at the top.
        (
            "aerix/app/x.py",
            "def f():\n    from aerix.adapters.project import skills\n",
            "only cli and wiring",
        ),
        # A relative import counts as the absolute one it stands for.
        ("aerix/app/agent/x.py", "from ...adapters import pool\n", "only cli and wiring import adapters"),
        ("aerix/domain/x.py", "from ..app import ports\n", "aerix.domain may import only"),
        # Inside the app, a package imports only those below it in the order (a planted back edge).
        (
            "aerix/app/profiles/x.py",
            "from aerix.app.request.startup import x\n",
            "is above aerix.app.profiles",
        ),
        ("aerix/app/delegation/x.py", "from ...app.request import root\n", "is above aerix.app.delegation"),
        ("aerix/adapters/x.py", "from ..app.sessions import writer\n", "aerix.adapters may import only"),
        # The errors module sits under every layer above the domain, so it imports only the domain.
        ("aerix/errors.py", "from aerix.app.ports import PoolPort\n", "aerix.errors may import only"),
        ("aerix/domain/x.py", "from aerix.app.ports import PoolPort\n", "aerix.domain may import only"),
        ("aerix/domain/x.py", "import aerix.adapters.paths\n", "only cli and wiring import adapters"),
        ("aerix/projections/x.py", "from aerix.app import ports\n", "aerix.projections may import only"),
        (
            "aerix/app/x.py",
            "from aerix.adapters.tools import LocalTools\n",
            "only cli and wiring import adapters",
        ),
        ("aerix/app/x.py", "from aerix import wiring\n", "aerix.app may import only"),
        # The command line and the composition root are packages: a module beside them is neither.
        (
            "aerix/cli_sessions.py",
            "from aerix.adapters import paths\n",
            "only cli and wiring import adapters",
        ),
        (
            "aerix/claude_flags.py",
            "from aerix.adapters.claude.output import OUTPUT_FORMATS\n",
            "only cli and wiring import adapters",
        ),
        (
            "aerix/claude_flags.py",
            "from aerix.cli.main import main\n",
            "only aerix.entry imports the command",
        ),
        (
            "aerix/entry.py",
            "from aerix.wiring import run_headless\n",
            "only aerix.cli imports the composition",
        ),
        ("aerix/wiring/x.py", "from aerix.cli.main import build_parser\n", "only aerix.entry imports"),
        ("aerix/adapters/x.py", "from aerix.app.request import run\n", "aerix.adapters may import only"),
        (
            "aerix/adapters/x.py",
            "from aerix.projections.index import IndexEntry\n",
            "aerix.adapters may import only",
        ),
        ("caldrix/protocol/x.py", "from aerix.domain import events\n", "caldrix never imports aerix"),
        ("aerix/adapters/x.py", "from caldrix.server import serve\n", "only through caldrix.protocol"),
        ("aerix/domain/x.py", "from caldrix.protocol import connect\n", "do not use caldrix"),
        (
            "caldrix/protocol/x.py",
            "from caldrix.pool import Pool\n",
            "caldrix.protocol may import only caldrix, caldrix.limits, caldrix.errors (caldrix.pool is above",
        ),
        (
            "caldrix/models/x.py",
            "from caldrix.generation import decoding\n",
            "caldrix.models may import only",
        ),
        # caldrix's back edges, each planted where one was once allowed: the seam, the bottom of the
        # engines, is a module of its own below models and generation, and the engines sit above both.
        (
            "caldrix/generation/x.py",
            "from caldrix.engines.llamacpp import open_llamacpp\n",
            "caldrix.engines is above it",
        ),
        ("caldrix/models/fit.py", "from caldrix.engines import scripted\n", "caldrix.engines is above it"),
        (
            "caldrix/engine_seam.py",
            "from caldrix.generation.templates import x\n",
            "caldrix.generation is above",
        ),
        ("caldrix/store/x.py", "from caldrix.members import Members\n", "caldrix.store may import only"),
        (
            "caldrix/engine_seam.py",
            "from caldrix.errors import BadRequest\n",
            "may import only caldrix.limits",
        ),
        (
            "caldrix/engines/x.py",
            "from caldrix.store import prefix_store\n",
            "caldrix.engines may import only",
        ),
        ("caldrix/errors.py", "from caldrix.protocol import framing\n", "caldrix.errors may import only"),
        ("caldrix/limits.py", "from caldrix.errors import BadRequest\n", "nothing of caldrix"),
        ("caldrix/engine_thread.py", "from caldrix.engine_seam import Engine\n", "nothing of caldrix"),
        # The pool's own modules are in a strict order too: the connection serves the pool.
        ("caldrix/pool.py", "from caldrix.connection import Connection\n", "caldrix.connection is above it"),
        ("caldrix/pool.py", "from caldrix.cli.pool import pool_command\n", "caldrix.cli is above it"),
        # A module the table does not place is refused until it is given a layer.
        ("caldrix/gateway.py", "import json\n", "caldrix.gateway is in no layer of caldrix"),
        (
            "caldrix/pool.py",
            "from caldrix.front.app import Front\n",
            "caldrix.front is above it",
        ),
        ("caldrix/front/x.py", "from caldrix.members import Members\n", "caldrix.front may import only"),
    ],
)
def test_a_broken_rule_is_named(tmp_path: Path, module: str, source: str, broken: str) -> None:
    root = _tree(tmp_path, {module: source})
    (line,) = violations(root)
    assert broken in line and line.startswith(module.removesuffix(".py").replace("/", "."))


def test_what_the_rules_allow_passes(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "aerix/projections/base.py": "from . import index\nfrom .index import IndexEntry\n",
            "aerix/app/agent/__init__.py": "from .loop import run_agent\n",
            "aerix/adapters/tools/x.py": "from ..paths import config_home\n",
            "aerix/errors.py": "from aerix.domain.bounds import EXIT_USAGE\n",
            "aerix/domain/x.py": "from aerix.domain import bounds\nimport pydantic\n",
            "aerix/projections/x.py": "from aerix.domain.events import EventBase\n",
            "aerix/app/x.py": "from aerix.projections import index\nfrom aerix.errors import AerixError\n",
            "aerix/adapters/x.py": "from aerix.app.ports import PoolPort\nimport caldrix.protocol\n",
            "aerix/cli/main.py": "from aerix.adapters import paths\nfrom aerix.app.request import run\n",
            "aerix/cli/sessions.py": "from aerix.adapters.console.session_render import render_list\n"
            "from aerix.wiring.session_commands import list_sessions\n",
            "aerix/entry.py": "from aerix.cli.main import main\n",
            "aerix/wiring/requests.py": "from aerix.adapters.pool.client import CaldrixPool\n",
            "aerix/wiring/session_commands.py": "from aerix.wiring.requests import request_deps\n",
            "caldrix/engines/x.py": "from caldrix.engine_seam import Engine\nfrom caldrix.models import fit\n"
            "from caldrix.generation.templates import render_context\n",
            "caldrix/models/fit.py": "from caldrix.limits import DEFAULT_CTX\n",
            "caldrix/models/download.py": "from caldrix import __version__\n",
            "caldrix/store/x.py": "from caldrix.generation.decoding import run_generation\n",
            "caldrix/server.py": "from caldrix.store import prefix_store\nimport caldrix.protocol\n",
            "caldrix/cli/x.py": "from caldrix.cli.main import main\nfrom caldrix.server import PoolServer\n",
            "caldrix/cli/main.py": "from caldrix.cli import run_prompt\n",
            "caldrix/__main__.py": "from caldrix.cli.x import main\n",
            "caldrix/cli/y.py": "from caldrix.front.app import Front\n",
            "caldrix/front/x.py": "from caldrix.protocol import connect\nfrom caldrix import errors\n",
        },
    )
    assert violations(root) == []


@pytest.mark.parametrize(
    ("files", "circle"),
    [
        # Two modules of one package that import each other, one of them only for its types.
        (
            {
                "caldrix/cli/main.py": "def run():\n    from caldrix.cli.run import run_command\n",
                "caldrix/cli/run.py": "from caldrix.cli.main import STDIN_PROMPT\n",
            },
            "caldrix.cli.main -> caldrix.cli.run -> caldrix.cli.main",
        ),
        (
            {
                "caldrix/engines/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from caldrix.engines.c import C\n",
                "caldrix/engines/b.py": "from . import a\n",
                "caldrix/engines/c.py": "from .b import B\n",
            },
            "caldrix.engines.a -> caldrix.engines.c -> caldrix.engines.b -> caldrix.engines.a",
        ),
        # The pool's own modules are one package's modules too.
        (
            {
                "caldrix/pool.py": "import caldrix.contexts\n",
                "caldrix/contexts.py": "from caldrix import pool\n",
            },
            "caldrix.contexts -> caldrix.pool -> caldrix.contexts",
        ),
    ],
)
def test_a_circle_is_named(tmp_path: Path, files: dict[str, str], circle: str) -> None:
    root = _tree(tmp_path, files)
    assert f"a circle of imports: {circle}" in violations(root)
    assert circles(root, "caldrix") == [circle]


def test_the_caldrix_table_allows_no_back_edge() -> None:
    assert order_errors(CALDRIX_LAYERS) == []
    swapped = (("caldrix.low", ("caldrix.high",)), ("caldrix.high", ()))
    assert order_errors(swapped) == [
        "caldrix.low may import caldrix.high, which is not below it in the order"
    ]
