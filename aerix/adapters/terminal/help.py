"""The ``?`` help: every key and command of the screen (docs/screen.md lists the same)."""

from __future__ import annotations

from typing import Final

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from aerix.adapters.terminal.theme import DIM

KEYS: Final = (
    ("enter", "send the prompt (queued while a request runs)"),
    ("ctrl-j, \\ enter", "a new line in the prompt"),
    ("↑ ↓", "move in the prompt; past its first or last line, the project's history"),
    ("tab", "complete a /command or /skill name"),
    ("esc", "cancel the running request"),
    ("ctrl-c", "clear the prompt; on an empty prompt twice, exit"),
    ("ctrl-d", "exit (on an empty prompt)"),
    ("?", "this help (on an empty prompt)"),
)
PLAN_KEYS: Final = (
    ("enter", "accept the plan"),
    ("e", "edit it ($EDITOR, else in the prompt: enter keeps the edit, esc goes back)"),
    ("esc", "abort the request"),
)
COMMANDS: Final = (
    ("/help", "this help"),
    ("/clear", "start a new session"),
    ("/resume [ID]", "continue another session of this project (a list to pick from without ID)"),
    ("/exit", "leave (a running request is cancelled first)"),
    ("/<skill> args", "run the prompt with that skill's text"),
)


def help_block() -> RenderableType:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for title, rows in (("keys", KEYS), ("at a plan", PLAN_KEYS), ("commands", COMMANDS)):
        table.add_row(Text(title, style=DIM), Text())
        for key, what in rows:
            table.add_row(Text(f"  {key}"), Text(what))
    return table
