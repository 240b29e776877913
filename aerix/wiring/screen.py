"""Bare ``aerix`` on the real adapters: the screen over the conversation. Its own module, so
that ``aerix -p`` never imports the screen's toolkit (prompt_toolkit, rich's markdown)."""

from __future__ import annotations

import os

import anyio

from aerix import __version__
from aerix.adapters.paths import history_file
from aerix.adapters.project.project_key import project_key
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.adapters.terminal.screen import TerminalScreen
from aerix.app.ports.screen import ConversationScreen
from aerix.app.request.conversation import ConversationOptions, converse
from aerix.projections.status import StatusFigures
from aerix.wiring.requests import request_deps


def run_interactive(options: ConversationOptions) -> int:
    """``aerix`` on a terminal: the screen, talking to the conversation."""
    sessions = SessionFiles()
    deps = request_deps(sessions)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or None
    history = history_file(project_key(options.cwd.resolve()))

    async def main() -> int:
        screen = TerminalScreen(__version__, options.cwd, history, StatusFigures, editor)
        jobs = ConversationScreen(input=screen, request=screen, session=screen)
        return await screen.run(lambda: converse(options, deps, jobs))

    try:
        return anyio.run(main)
    finally:
        sessions.log.close()
