"""Standard-library modules a model used without importing them.

qwen2.5-coder-1.5b's simple-cipher solution called ``random.choice`` with no ``import random``;
told so, it sent the same file three times over, and the request ended failed on a right
solution. A name used only as ``name.attribute`` that is a top-level module of Python's standard
library (``sys.stdlib_module_names``) and that nothing in the file defines can only mean that
module, so ``with_stdlib_imports`` adds its ``import`` line: after the module's docstring,
``from __future__`` imports and the imports the file starts with, where a person would add it.
A name used any other way (called, assigned, passed along) is left to the undefined-name check.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Collection
from dataclasses import dataclass

from aerix.domain.python_syntax import parsed_module


@dataclass(frozen=True)
class AddedImports:
    """The text with the imports added, the modules imported and the line the first one is on."""

    text: str
    modules: tuple[str, ...]
    line: int


def with_stdlib_imports(text: str, undefined: Collection[str]) -> AddedImports | None:
    """``text`` with ``import name`` added for each of ``undefined`` (names the text uses and
    never defines) that is a standard-library module used only as ``name.attribute``; None when
    there is none, or the text does not parse."""
    tree = parsed_module(text)
    if tree is None:
        return None
    candidates = {name for name in undefined if _is_stdlib_module(name)}
    if not candidates:
        return None
    bases = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    ]
    base_ids = {id(name) for name in bases}
    used_otherwise = {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and id(node) not in base_ids
    }
    as_attribute_base = {name.id for name in bases}
    modules = tuple(sorted(name for name in candidates & as_attribute_base if name not in used_otherwise))
    if not modules:
        return None
    at = after_leading_imports(tree)
    lines = text.split("\n")
    added = [f"import {module}" for module in modules]
    return AddedImports("\n".join([*lines[:at], *added, *lines[at:]]), modules, at + 1)


def _is_stdlib_module(name: str) -> bool:
    return not name.startswith("_") and name in sys.stdlib_module_names


def after_leading_imports(tree: ast.Module) -> int:
    """The 0-based line the imports go before: after the leading docstring and imports."""
    after = 0
    for index, statement in enumerate(tree.body):
        docstring = (
            index == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        )
        if not docstring and not isinstance(statement, ast.Import | ast.ImportFrom):
            break
        after = statement.end_lineno or statement.lineno
    return after
