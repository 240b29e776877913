"""Functions whose body is still a stub after a change that left the code as it was.

Asked to implement camicia's ``simulate_game`` (a stub whose body is ``pass``), the 1.5B wrote
the file with ``# Your implementation here`` above the same ``pass``, was told "replaced
camicia.py", and answered that the function was now implemented: ``done`` for work not done.
A change whose code (its syntax tree: comments and layout aside) is what the file held before,
in a file that still has such stubs, implemented nothing.
"""

from __future__ import annotations

import ast

from aerix.domain.python_syntax import parsed_module


def unchanged_stubs(before: str, after: str) -> tuple[str, ...]:
    """The functions of ``after`` whose body is only a stub (``pass``, ``...``, ``raise
    NotImplementedError``, after an optional docstring), as ``name()`` or ``Class.name()`` in
    order, when ``after``'s code is the same as ``before``'s; empty otherwise (the code changed,
    or a text does not parse)."""
    old, new = parsed_module(before), parsed_module(after)
    if old is None or new is None or ast.dump(old) != ast.dump(new):
        return ()
    return tuple(_stubs(new.body, prefix=""))


def _stubs(statements: list[ast.stmt], prefix: str) -> list[str]:
    found: list[str] = []
    for statement in statements:
        if isinstance(statement, ast.ClassDef):
            found.extend(_stubs(statement.body, prefix=f"{prefix}{statement.name}."))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and _is_stub(statement):
            found.append(f"{prefix}{statement.name}()")
    return found


def _is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = function.body[1:] if ast.get_docstring(function, clean=False) is not None else function.body
    return bool(body) and all(_is_placeholder(statement) for statement in body)


def _is_placeholder(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value is Ellipsis
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False
