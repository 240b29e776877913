"""Top-level definitions a whole-file write left out, kept as they were.

Asked to fix add() in calc.py, qwen2.5-coder-1.5b's retry rewrote the file whole with add()
fixed and mul() gone; on dot-dsl its write left out the stub's ``NODE, EDGE, ATTR = range(3)``,
which the tests import. Refused, it sent the same write three times. A function, class or
assigned name that the file defines at its top level, and that the project's file defined too
(what the work added itself it may reshape), is put back as it was: assignments after the new
text's leading docstring and imports (code below may use them), functions and classes at its
end. Removing one on purpose is an ``edit``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from aerix.domain.missing_imports import after_leading_imports
from aerix.domain.python_syntax import parsed_module


@dataclass(frozen=True)
class KeptDefinitions:
    """The text with the left-out definitions put back, and their names (``mul()``, ``NODE``)."""

    text: str
    names: tuple[str, ...]


def top_level_names(text: str) -> list[str]:
    """The functions and classes ``text`` defines at its top level, as ``name()``, and the names
    it assigns there (``NODE, EDGE = range(2)``, ``LIMIT: int = 3``), in order; empty when it
    does not parse."""
    tree = parsed_module(text)
    if tree is None:
        return []
    return [name for statement in tree.body for name in _defined_names(statement)]


def with_kept_definitions(before: str, baseline: str, text: str) -> KeptDefinitions | None:
    """``text`` with each top-level statement of ``before`` put back that defines a name
    ``baseline`` defines too and ``text`` does not; None when nothing is left out, or a text
    does not parse."""
    old, new = parsed_module(before), parsed_module(text)
    if old is None or new is None:
        return None
    kept = {_bare(name) for statement in new.body for name in _defined_names(statement)}
    projects = {_bare(name) for name in top_level_names(baseline)}
    lines = before.split("\n")
    assignments: list[str] = []
    definitions: list[str] = []
    names: list[str] = []
    for statement in old.body:
        dropped = [n for n in _defined_names(statement) if _bare(n) in projects and _bare(n) not in kept]
        if not dropped:
            continue
        names.extend(dropped)
        source = "\n".join(lines[_first_line(statement) - 1 : statement.end_lineno])
        (assignments if isinstance(statement, ast.Assign | ast.AnnAssign) else definitions).append(source)
    if not names:
        return None
    body = text.split("\n")
    at = after_leading_imports(new)
    if assignments:
        body[at:at] = [*assignments, ""] if at < len(body) and body[at].strip() else assignments
    merged = "\n".join(body).rstrip("\n")
    for source in definitions:
        merged += "\n\n\n" + source
    return KeptDefinitions(merged + "\n", tuple(dict.fromkeys(names)))


def _defined_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [f"{statement.name}()"]
    if isinstance(statement, ast.Assign):
        return [name for target in statement.targets for name in _assigned_names(target)]
    if isinstance(statement, ast.AnnAssign):
        return _assigned_names(statement.target)
    return []


def _assigned_names(target: ast.expr) -> list[str]:
    """The names an assignment's target binds: ``A`` and ``A, (B, *C)``, not ``a.b`` or ``a[0]``."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _assigned_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _assigned_names(element)]
    return []


def _first_line(statement: ast.stmt) -> int:
    """Where the statement starts, its decorators included."""
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])


def _bare(name: str) -> str:
    # By name: a constant that became a function (or back) is kept.
    return name.removesuffix("()")
