"""Running requests on the real adapters: ``aerix -p`` (one request, printed in its output
format, the status line on a terminal's stderr); ``request_deps`` builds every port a request
uses (bare ``aerix``, the screen over the conversation, is ``aerix.wiring.screen``'s)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import anyio

from aerix import __version__
from aerix.adapters.claude.output import HeadlessOutput
from aerix.adapters.claude.output_formats import OutputFormat
from aerix.adapters.clock import utc_now
from aerix.adapters.git.git_diff import GitDiffs
from aerix.adapters.git.profile_repo import GitProfiles
from aerix.adapters.pool.autostart import AutostartPool
from aerix.adapters.project.project import ProjectFiles
from aerix.adapters.project.settings_files import SettingsOverrides
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.adapters.terminal.stderr_status import StderrStatus, is_terminal
from aerix.adapters.tools import LocalToolsFactory
from aerix.adapters.tools.hook_runner import SubprocessHooks
from aerix.app.ports.hooks import HookRunner
from aerix.app.ports.request import RequestResult
from aerix.app.request.options import RequestDeps, RequestOptions, SessionOptions
from aerix.app.request.reported import reported
from aerix.app.request.session import run_request
from aerix.projections.claude_stream import ClaudeStream


def subprocess_hooks(project_dir: Path) -> HookRunner:
    """The runner of a project's hook handlers: processes in ``project_dir``."""
    return SubprocessHooks(project_dir)


def request_deps(sessions: SessionFiles, overrides: SettingsOverrides | None = None) -> RequestDeps:
    return RequestDeps(
        projects=ProjectFiles(overrides),
        pools=AutostartPool(),
        sessions=sessions,
        diffs=GitDiffs(),
        prompts=EmbeddedPrompts(),
        profiles=GitProfiles(),
        embedded=EmbeddedPrompts().all(),
        # One factory per request: every agent of it gets its own tools, all sharing one repo map.
        tools=LocalToolsFactory(),
        hooks=subprocess_hooks,
        clock=utc_now,
        version=__version__,
    )


def run_headless(
    opening: SessionOptions,
    options: RequestOptions,
    fmt: OutputFormat,
    out: TextIO | None = None,
    err: TextIO | None = None,
    overrides: SettingsOverrides | None = None,
) -> int:
    """``aerix -p``: run one request, print it in ``fmt``, return the exit code. On a terminal's
    stderr the screen's status line shows meanwhile."""
    err = err or sys.stderr
    shown = None
    if is_terminal(err):
        # The line's figures (their module's dataclasses) are made only where the line shows.
        from aerix.projections.status import StatusFigures

        shown = StderrStatus(err, StatusFigures())
    output = HeadlessOutput(fmt, out or sys.stdout, err, ClaudeStream(), shown)
    return anyio.run(run_one, opening, options, output, overrides, shown)


async def run_one(
    opening: SessionOptions,
    options: RequestOptions,
    output: HeadlessOutput,
    overrides: SettingsOverrides | None,
    status: StderrStatus | None = None,
) -> int:
    """One request printed through ``output`` (with ``status`` ticking meanwhile); an error
    before or around it is one note (and, in the JSON formats, an error result)."""
    sessions = SessionFiles()
    try:
        deps = request_deps(sessions, overrides)
        return await reported(
            lambda: _requested(opening, options, output, deps, status), output, sessions.log.notices
        )
    finally:
        sessions.log.close()


async def _requested(
    opening: SessionOptions,
    options: RequestOptions,
    output: HeadlessOutput,
    deps: RequestDeps,
    status: StderrStatus | None,
) -> RequestResult:
    if status is None:
        return await run_request(opening, options, deps, output)
    done: RequestResult | None = None
    error: Exception | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(status.tick)
        try:
            done = await run_request(opening, options, deps, output)
        except Exception as exc:  # raised after the task group, not inside an exception group
            error = exc
        finally:
            tasks.cancel_scope.cancel()
            status.clear()
    if error is not None:
        raise error
    assert done is not None
    return done
