"""The screen's keys (the ``?`` help and docs/screen.md list them).

Bindings are checked in a mode: ``prompt`` (typing), ``gate`` (a plan waits: enter accepts,
``e`` edits, esc aborts), ``gate-edit`` (the plan is in the prompt: enter keeps the edit, esc
goes back to the gate) and ``pick`` (``/resume``'s list: ↑ ↓, enter, esc). In the gate and the
picker every other key is swallowed, so stray typing changes nothing.
"""

from __future__ import annotations

from typing import Literal, Protocol

from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyBindingsBase, KeyPressEvent, merge_key_bindings
from prompt_toolkit.key_binding.defaults import load_key_bindings
from prompt_toolkit.keys import Keys

Mode = Literal["prompt", "gate", "gate-edit", "pick"]


class KeyTarget(Protocol):
    """What the keys act on (``aerix.adapters.terminal.screen.TerminalScreen``)."""

    mode: Mode

    def enter(self, event: KeyPressEvent) -> None: ...

    def escape(self) -> None: ...

    def interrupt(self, event: KeyPressEvent) -> None: ...

    def end_of_input(self, event: KeyPressEvent) -> None: ...

    def show_help(self) -> None: ...

    def gate_edit(self) -> None: ...

    def pick_move(self, step: int) -> None: ...


def key_bindings(target: KeyTarget) -> KeyBindingsBase:
    """prompt_toolkit's own editing keys, then the screen's (later bindings win)."""
    keys = KeyBindings()
    typing = Condition(lambda: target.mode in ("prompt", "gate-edit"))
    gate = Condition(lambda: target.mode == "gate")
    pick = Condition(lambda: target.mode == "pick")
    empty = Condition(lambda: not _buffer_text(target))

    # First, so that every binding below wins over it (the last match is the one called).
    @keys.add(Keys.Any, filter=gate | pick)
    def _swallow(event: KeyPressEvent) -> None:
        pass

    @keys.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        target.enter(event)

    @keys.add("c-j", filter=typing)
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.newline(copy_margin=False)

    @keys.add("escape", eager=True)
    def _escape(event: KeyPressEvent) -> None:
        target.escape()

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        target.interrupt(event)

    @keys.add("c-d", filter=typing & empty)
    def _end(event: KeyPressEvent) -> None:
        target.end_of_input(event)

    @keys.add("?", filter=typing & empty & Condition(lambda: target.mode == "prompt"))
    def _help(event: KeyPressEvent) -> None:
        target.show_help()

    @keys.add("e", filter=gate)
    def _edit(event: KeyPressEvent) -> None:
        target.gate_edit()

    @keys.add("up", filter=pick)
    def _up(event: KeyPressEvent) -> None:
        target.pick_move(-1)

    @keys.add("down", filter=pick)
    def _down(event: KeyPressEvent) -> None:
        target.pick_move(1)

    return merge_key_bindings([load_key_bindings(), keys])


def _buffer_text(target: KeyTarget) -> str:
    from prompt_toolkit.application.current import get_app

    return get_app().current_buffer.text
