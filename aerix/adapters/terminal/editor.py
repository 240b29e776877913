"""The prompt editor and the inline application around it (prompt_toolkit).

The application is not full-screen: it draws the live region, a rule and the prompt under the
terminal's cursor, and the transcript is printed above it (:mod:`.scrollback`). The prompt is a
multi-line buffer with the project's history and ``/`` completion of commands and skill names;
a paste of many lines goes in whole (prompt_toolkit reads bracketed pastes).
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from prompt_toolkit.application import Application, in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition, FilterOrBool
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindingsBase
from prompt_toolkit.layout import ConditionalContainer, Float, FloatContainer, HSplit, Layout, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu

from aerix.adapters.terminal.theme import EMBER

#: The prompt grows with its text up to this many rows, then scrolls.
PROMPT_MAX_ROWS: Final = 12
#: Rows of the completion menu.
COMPLETION_ROWS: Final = 8
#: A lone Esc is Esc after this long, not the start of an escape sequence.
ESCAPE_WAIT_SECS: Final = 0.05


class SlashCompleter(Completer):
    """``/`` at the start of the prompt completes the commands and the skills' names."""

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self.names = names

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Any:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text or "\n" in text:
            return
        for name in self.names():
            if name.startswith(text[1:]):
                yield Completion(f"/{name}", start_position=-len(text))


def prompt_buffer(
    history: Path, names: Callable[[], Sequence[str]], read_only: FilterOrBool, on_change: Callable[[], None]
) -> Buffer:
    history.parent.mkdir(parents=True, exist_ok=True)
    return Buffer(
        multiline=True,
        history=FileHistory(str(history)),
        completer=SlashCompleter(names),
        complete_while_typing=True,
        read_only=read_only,
        on_text_changed=lambda _buffer: on_change(),
    )


async def edit_in_editor(editor: str, text: str) -> tuple[int, str]:
    """``text`` edited in ``editor`` (``$VISUAL``/``$EDITOR``, split as a shell would) on the
    terminal, the application suspended meanwhile: its exit status and the file's text after."""
    with tempfile.NamedTemporaryFile("w", suffix=".md", prefix="aerix-plan-", delete=False) as file:
        file.write(text)
        path = Path(file.name)
    try:
        async with in_terminal():
            returncode = await asyncio.to_thread(_run_editor, editor, path)
        return returncode, path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


def _run_editor(editor: str, path: Path) -> int:
    try:
        return subprocess.call([*shlex.split(editor), str(path)])
    except (OSError, ValueError):  # no such program; a quote left open in $EDITOR
        return 127


def inline_application(
    buffer: Buffer,
    live_text: Callable[[], ANSI],
    has_live: Callable[[], bool],
    keys: KeyBindingsBase,
) -> Application[int]:
    live = Window(FormattedTextControl(live_text), dont_extend_height=True, wrap_lines=False)
    prompt = VSplit(
        [
            Window(FormattedTextControl([(f"fg:{EMBER} bold", "› ")]), width=2, dont_extend_width=True),
            Window(
                BufferControl(buffer),
                wrap_lines=True,
                height=Dimension(min=1, max=PROMPT_MAX_ROWS),
                dont_extend_height=True,
            ),
        ]
    )
    body = HSplit(
        [
            ConditionalContainer(live, filter=Condition(has_live)),
            Window(height=1, char="─", style="fg:ansibrightblack"),
            prompt,
        ]
    )
    menu = Float(xcursor=True, ycursor=True, content=CompletionsMenu(max_height=COMPLETION_ROWS))
    app: Application[int] = Application(
        layout=Layout(FloatContainer(body, floats=[menu]), focused_element=buffer),
        key_bindings=keys,
        full_screen=False,
        erase_when_done=False,
        mouse_support=False,
    )
    app.ttimeoutlen = ESCAPE_WAIT_SECS
    return app
