"""``--input-format stream-json`` on the real adapters: stdin's items read by
``aerix.adapters.claude.stream_input``, the session held and each prompt run by
``aerix.app.request.stream``, printed as stream-json."""

from __future__ import annotations

import sys
from typing import TextIO

import anyio

from aerix.adapters.claude.output import HeadlessOutput
from aerix.adapters.claude.stream_input import read_items
from aerix.adapters.project.settings_files import SettingsOverrides
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.request.options import RequestFlags, SessionOptions
from aerix.app.request.stream import serve_stream
from aerix.projections.claude_stream import ClaudeStream
from aerix.wiring.requests import request_deps


def run_stream_input(
    opening: SessionOptions,
    each: RequestFlags,
    source: TextIO,
    out: TextIO | None = None,
    err: TextIO | None = None,
    overrides: SettingsOverrides | None = None,
) -> int:
    """``--input-format stream-json``: answer the control requests on ``source`` as they come and
    run each prompt (asking what ``each`` asks) as a request of the session ``opening`` names,
    printed as stream-json; at the end of the input (once its prompts ran), the exit code of the
    last request."""
    output = HeadlessOutput("stream-json", out or sys.stdout, err or sys.stderr, ClaudeStream())
    sessions = SessionFiles()
    try:
        return anyio.run(
            serve_stream, opening, each, request_deps(sessions, overrides), output, lambda: read_items(source)
        )
    finally:
        sessions.log.close()
