"""``aerix -p`` with stderr on a terminal: the screen's status line on stderr, one line
rewritten in place while the request runs and cleared at the end; nothing at all when stderr is
not a terminal. Notes printed meanwhile clear the line first and it is drawn again under them."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TextIO

import anyio

from aerix.adapters.terminal.theme import THINKING_FRAME_SECS
from aerix.domain import events as ev

if TYPE_CHECKING:
    # Named in annotations only: a headless request does not load the screen's ports.
    from aerix.app.ports.screen import StatusView

#: Carriage return, then erase to the end of the line.
CLEAR_LINE: Final = "\r\x1b[K"


class StderrStatus:
    """The status line on a terminal's stderr: made only for one (:func:`is_terminal`), so a
    piped request builds neither it nor its figures."""

    def __init__(
        self, stream: TextIO, figures: StatusView, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream = stream
        self.clock = clock
        self.figures = figures
        self.began = clock()
        self.streaming = 0
        self._shown = False

    def event(self, record: ev.EventBase) -> None:
        """Draw the line again for ``record`` (the session's writer fed it to ``figures``)."""
        if isinstance(record, ev.Message) and record.agent == "a1" and record.role == "assistant":
            self.streaming = 0
        self.draw()

    def token(self, agent: str, text: str) -> None:
        if agent == "a1":
            self.streaming += 1

    def line(self) -> str:
        # Loaded at the first draw, on a terminal only: rich is a tenth of a second of a warm
        # request's start, and a piped -p never draws.
        from aerix.adapters.terminal.ansi import render_ansi
        from aerix.adapters.terminal.live_lines import Activity, context_line, status_line

        activity = Activity(self.clock() - self.began, streaming_tokens=self.streaming)
        figures = self.figures.now()
        line = status_line(figures, activity)
        context = context_line(figures.context, self.streaming)
        if context is not None:
            line.append(" · ")
            line.append_text(context)
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)  # never the last column: no wrap
        line.truncate(width, overflow="ellipsis")
        return render_ansi(line, width).rstrip("\n")

    def draw(self) -> None:
        self.stream.write(CLEAR_LINE + self.line())
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self._shown = False

    def around_note(self, write: Callable[[], None]) -> None:
        """Print a note above the line: clear it, write, draw it again."""
        shown = self._shown
        self.clear()
        write()
        if shown:
            self.draw()

    async def tick(self) -> None:
        """Redraw for the clock and the thinking icon until cancelled."""
        while True:
            await anyio.sleep(THINKING_FRAME_SECS * 5)
            self.draw()


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
