"""Python source read as a syntax tree, the one way the file checks and mends parse it."""

from __future__ import annotations

import ast


def parsed_module(text: str) -> ast.Module | None:
    """``text``'s syntax tree; None when it does not parse (or holds a NUL byte)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
