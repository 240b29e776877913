"""A rich renderable as the terminal's bytes: what the screen's scrollback prints and what -p's
status line on stderr draws. Apart from the scrollback, so that the status line loads none of
the screen's toolkit (prompt_toolkit)."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType


def render_ansi(renderable: RenderableType, width: int, color_system: str | None = "auto") -> str:
    """``renderable`` as the terminal's bytes at ``width`` columns."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=True,
        color_system=color_system,  # type: ignore[arg-type]
        highlight=False,
        soft_wrap=False,
    )
    console.print(renderable)
    return buffer.getvalue()
