"""The dependency rules of design.md, checked on the source: caldrix never imports aerix, and
aerix reaches caldrix only through ``caldrix.protocol`` (the one package a client may use)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

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
