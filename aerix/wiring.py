"""The composition root of ``aerix -p``: the real adapters behind the request's ports.

``cli`` parses, this module wires, ``aerix.app.request`` runs. Nothing else imports both the
application layer and the adapters.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import anyio

from aerix.adapters.autostart import AutostartPool
from aerix.adapters.git_diff import GitDiffs
from aerix.adapters.project import ProjectFiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.session_store import SessionFiles
from aerix.adapters.spool import write_spool
from aerix.app.output import HeadlessOutput, OutputFormat, error_object
from aerix.app.request import RequestDeps, RequestOptions, run_request
from aerix.app.sessions import SessionWriter
from aerix.errors import AerixError, FileUnusable


class SessionSpool:
    """:class:`aerix.app.ports.SpoolWriter` into one session's ``<id>.spool/`` folder."""

    def __init__(self, writer: SessionWriter) -> None:
        self._log = writer.log_path

    def write_spool(self, name: str, text: str) -> Path:
        return write_spool(self._log, name, text)


def request_deps(sessions: SessionFiles) -> RequestDeps:
    return RequestDeps(
        projects=ProjectFiles(),
        pools=AutostartPool(),
        sessions=sessions,
        diffs=GitDiffs(),
        prompts=EmbeddedPrompts(),
        spool_for=SessionSpool,
    )


def run_headless(
    options: RequestOptions, fmt: OutputFormat, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """``aerix -p``: run one request, print it in ``fmt``, return the exit code."""
    output = HeadlessOutput(fmt, out or sys.stdout, err or sys.stderr)
    sessions = SessionFiles()
    try:
        try:
            result = anyio.run(run_request, options, request_deps(sessions), output)
        except OSError as os_error:  # the session store unusable (a file, no permission, full)
            raise FileUnusable(os_error) from os_error
    except AerixError as error:
        output.note(str(error))
        if fmt != "text":
            output.json_line(error_object(str(error), error.exit_code))
        return error.exit_code
    finally:
        for notice in sessions.notices():
            output.note(notice)
        sessions.close()
    return output.finish(result)
