"""Printing above the live region: what the scrollback keeps.

Everything printed (the launch frame, the startup block, the transcript) is kept as rich
renderables, so when the terminal's width changes the whole of it is drawn again at the new
width (the screen and its scrollback are cleared first, as terminals cannot reflow what was
drawn for another width). While the prompt_toolkit application runs, the live region is erased,
the text written where it was, and the region drawn again under it, all in one step of the event
loop; unlike prompt_toolkit's ``in_terminal``, the terminal stays in raw mode, so keys typed
meanwhile reach the editor whole (in cooked mode the tty would hold a line for itself).
Pieces printed in quick succession are written together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from prompt_toolkit.application import Application
from prompt_toolkit.application.current import get_app_or_none
from rich.console import RenderableType

from aerix.adapters.terminal.ansi import render_ansi

#: How many printed pieces are kept for a redraw after a resize (older ones stay in the
#: terminal's scrollback as they were drawn).
KEPT_BLOCKS: Final = 2000
#: Clear the screen and the terminal's scrollback, cursor home: before a full redraw.
CLEAR_ALL: Final = "\x1b[2J\x1b[3J\x1b[H"


class RawOutput(Protocol):
    """Where the bytes go: prompt_toolkit's terminal output (``write_raw`` keeps escapes as they are)."""

    def write_raw(self, data: str) -> None: ...

    def flush(self) -> None: ...


class Scrollback:
    """The printed part of the screen."""

    def __init__(self, out: RawOutput, width: Callable[[], int]) -> None:
        self.out = out
        self.width = width
        self.blocks: list[RenderableType] = []
        self._pending: list[RenderableType] = []
        self._flushing = False
        self._drawn_width: int | None = None

    def print(self, renderable: RenderableType) -> None:
        self.blocks.append(renderable)
        del self.blocks[:-KEPT_BLOCKS]
        app = get_app_or_none()
        if app is None or not app.is_running:
            self._write([renderable])
            return
        self._pending.append(renderable)
        if not self._flushing:
            self._flushing = True
            app.create_background_task(self._flush())

    async def _flush(self) -> None:
        try:
            app = get_app_or_none()
            if app is not None:
                await _above(app, lambda: self._write_pending())
        finally:
            self._flushing = False
            if self._pending:
                self._flushing = True
                app = get_app_or_none()
                if app is not None:
                    app.create_background_task(self._flush())

    def _write_pending(self) -> None:
        pending, self._pending = self._pending, []
        self._write(pending)

    def _write(self, pieces: list[RenderableType]) -> None:
        width = self.width()
        if self._drawn_width is None:
            self._drawn_width = width
        self.out.write_raw("".join(render_ansi(piece, width) for piece in pieces))
        self.out.flush()

    def width_changed(self) -> bool:
        return self._drawn_width is not None and self.width() != self._drawn_width

    async def redraw(self) -> None:
        """Clear the terminal and draw everything kept again at the current width."""
        app = get_app_or_none()
        if app is None:
            return
        await _above(app, self._redraw_all)

    def _redraw_all(self) -> None:
        self._drawn_width = self.width()
        self.out.write_raw(CLEAR_ALL)
        self._pending = []
        self._write(list(self.blocks))


async def _above(app: Application[object], write: Callable[[], None]) -> None:
    """Erase the application's region, ``write`` there, and draw the region again below."""
    if app.output.responds_to_cpr:
        await app.renderer.wait_for_cpr_responses()
    app.renderer.erase(leave_alternate_screen=False)
    try:
        write()
    finally:
        app.renderer.reset(leave_alternate_screen=False)
        app.renderer.request_absolute_cursor_position()
        app.invalidate()
