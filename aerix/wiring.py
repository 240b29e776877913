"""The composition root: the real adapters behind the use cases' ports.

``cli`` parses and renders; this module builds each use case on the real store, pool, git and
files, and runs it. Nothing else imports both the application layer and the adapters.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from aerix import __version__
from aerix.adapters.autostart import AutostartPool
from aerix.adapters.claude_import import ClaudeImports
from aerix.adapters.clock import utc_now
from aerix.adapters.editor import ProcessEditor
from aerix.adapters.gc_pause import gc_paused
from aerix.adapters.git_diff import GitDiffs
from aerix.adapters.hook_runner import SubprocessHooks
from aerix.adapters.instructions import project_root
from aerix.adapters.output import HeadlessOutput, OutputFormat, error_object
from aerix.adapters.paths import history_file
from aerix.adapters.profile_repo import GitProfiles
from aerix.adapters.project import ProjectFiles
from aerix.adapters.project_key import project_key
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.session_store import SessionFiles
from aerix.adapters.settings_files import SettingsOverrides, load_settings
from aerix.adapters.stream_input import (
    BadLine,
    ControlRequest,
    StreamItem,
    UserPrompt,
    failure,
    read_items,
    success,
)
from aerix.adapters.terminal.screen import TerminalScreen
from aerix.adapters.terminal.stderr_status import StderrStatus
from aerix.adapters.tools import LocalToolsFactory
from aerix.app.ports import (
    EditOutcome,
    HookRunner,
    ProfileCommit,
    ProfileObserver,
    ProfileView,
    RequestResult,
    SessionRef,
    SyncReport,
    TuneReport,
)
from aerix.app.profiles.manage import (
    EditDeps,
    EditOptions,
    edit_profile,
    profile_log,
    remove_session_branch,
    show_profile,
)
from aerix.app.profiles.runs import ProfileDeps, upstream_texts
from aerix.app.profiles.sync import SyncOptions, run_sync
from aerix.app.profiles.tune import TuneOptions, run_tune
from aerix.app.request.conversation import ConversationOptions, converse
from aerix.app.request.run import RequestDeps, RequestOptions, run_request
from aerix.app.sessions import importing, queries
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.claude_format import HEADLESS_PERMISSION_MODE
from aerix.errors import AerixError, FileUnusable
from aerix.projections.index import IndexEntry
from aerix.projections.status import StatusFigures


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


def run_interactive(options: ConversationOptions) -> int:
    """``aerix`` on a terminal: the screen, talking to the conversation."""
    sessions = SessionFiles()
    deps = request_deps(sessions)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or None
    history = history_file(project_key(options.cwd.resolve()))

    async def main() -> int:
        screen = TerminalScreen(__version__, options.cwd, history, StatusFigures, editor)
        return await screen.run(lambda: converse(options, deps, screen))

    try:
        return anyio.run(main)
    finally:
        sessions.close()


def run_headless(
    options: RequestOptions,
    fmt: OutputFormat,
    out: TextIO | None = None,
    err: TextIO | None = None,
    overrides: SettingsOverrides | None = None,
) -> int:
    """``aerix -p``: run one request, print it in ``fmt``, return the exit code. On a terminal's
    stderr the screen's status line shows meanwhile."""
    err = err or sys.stderr
    status = StderrStatus(err, StatusFigures())
    shown = status if status.enabled else None
    output = HeadlessOutput(fmt, out or sys.stdout, err, shown)
    return anyio.run(_run_one, options, output, overrides, shown)


async def _run_one(
    options: RequestOptions,
    output: HeadlessOutput,
    overrides: SettingsOverrides | None,
    status: StderrStatus | None = None,
) -> int:
    """One request printed through ``output`` (with ``status`` ticking meanwhile); an error
    before or around it is one note (and, in the JSON formats, an error result)."""
    sessions = SessionFiles()
    try:
        try:
            result = await _requested(options, output, request_deps(sessions, overrides), status)
        except BrokenPipeError:
            raise  # a closed pipe is the CLI's to end quietly, not a store that cannot be used
        except OSError as os_error:  # the session store unusable (a file, no permission, full)
            raise FileUnusable(os_error) from os_error
    except AerixError as error:
        output.note(str(error))
        if output.format != "text":
            output.json_line(error_object(str(error), error.exit_code, output.stream.session or None))
        return error.exit_code
    finally:
        for notice in sessions.notices():
            output.note(notice)
        sessions.close()
    return output.finish(result)


async def _requested(
    options: RequestOptions, output: HeadlessOutput, deps: RequestDeps, status: StderrStatus | None
) -> RequestResult:
    if status is None:
        return await run_request(options, deps, output)
    done: RequestResult | None = None
    error: Exception | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(status.tick)
        try:
            done = await run_request(options, deps, output)
        except Exception as exc:  # raised after the task group, not inside an exception group
            error = exc
        finally:
            tasks.cancel_scope.cancel()
            status.clear()
    if error is not None:
        raise error
    assert done is not None
    return done


def run_stream_input(
    options: RequestOptions,
    source: TextIO,
    out: TextIO | None = None,
    err: TextIO | None = None,
    overrides: SettingsOverrides | None = None,
) -> int:
    """``--input-format stream-json``: answer the control requests on ``source`` as they come and
    run each prompt as a request of one session, printed as stream-json; at the end of the input
    (once its prompts ran), the exit code of the last request."""
    output = HeadlessOutput("stream-json", out or sys.stdout, err or sys.stderr)
    served = _StreamSession(options, output, overrides)
    return anyio.run(served.serve, source)


@dataclass
class _StreamSession:
    options: RequestOptions
    output: HeadlessOutput
    overrides: SettingsOverrides | None
    session: str | None = None
    running: anyio.CancelScope | None = None
    exit_code: int = 0

    async def serve(self, source: TextIO) -> int:
        prompts_in, prompts = anyio.create_memory_object_stream[UserPrompt](math.inf)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read, source, prompts_in)
            async with prompts:
                async for prompt in prompts:
                    await self._request(prompt)
        return self.exit_code

    async def _read(self, source: TextIO, prompts: MemoryObjectSendStream[UserPrompt]) -> None:
        items_in, items = anyio.create_memory_object_stream[StreamItem](math.inf)
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            # A daemon thread, not a worker's: one blocked reading stdin must not keep the
            # process alive after the loop ended (Ctrl-C, an error).
            try:
                try:
                    for item in read_items(source):
                        anyio.from_thread.run(items_in.send, item, token=token)
                except (OSError, ValueError) as exc:  # not text (UnicodeDecodeError), closed…
                    unread = BadLine(0, f"stdin could not be read further ({exc})")
                    anyio.from_thread.run(items_in.send, unread, token=token)
            except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the loop, or the reader, is gone
            finally:
                with contextlib.suppress(RuntimeError):
                    anyio.from_thread.run_sync(items_in.close, token=token)

        threading.Thread(target=pump, name="stdin", daemon=True).start()
        async with items, prompts:
            async for item in items:
                if isinstance(item, ControlRequest):
                    self.output.json_line(self._answer(item))
                elif isinstance(item, UserPrompt):
                    for kind in item.left_out:
                        self.output.note(f"a {kind} block of a user message is left out (text only)")
                    await prompts.send(item)
                else:
                    where = f"stdin line {item.number}: " if item.number else ""
                    self.output.note(f"{where}{item.problem}; left out")

    async def _request(self, prompt: UserPrompt) -> None:
        first = self.session is None
        options = dataclasses.replace(
            self.options,
            prompt=prompt.text,
            resume=self.options.resume if first else self.session,
            continue_latest=self.options.continue_latest and first,
            session_id=self.options.session_id if first else None,
            append_system_prompt=self.options.append_system_prompt if first else None,
        )
        if not prompt.text.strip():
            self.output.note("a user message with no text is left out")
            self.output.json_line(error_object("the prompt is empty", EXIT_USAGE, self.session))
            self.exit_code = EXIT_USAGE
            return
        with anyio.CancelScope() as scope:
            self.running = scope
            self.exit_code = await _run_one(options, self.output, self.overrides)
        self.running = None
        if scope.cancelled_caught:
            self.output.interrupted()
            self.exit_code = EXIT_CANCELLED
        self.session = self.output.stream.session or self.session

    def _answer(self, request: ControlRequest) -> dict[str, Any]:
        """The control_response to one control request from the SDK."""
        subtype, body = request.subtype, request.body
        if subtype == "initialize":
            return success(request.request_id, self._initialized(body))
        if subtype == "interrupt":
            if self.running is not None:
                self.running.cancel()
            return success(request.request_id)
        if subtype == "set_permission_mode" and body.get("mode") == HEADLESS_PERMISSION_MODE:
            return success(request.request_id)
        if subtype == "set_permission_mode":
            return failure(
                request.request_id, f"aerix -p asks no permission: it runs as {HEADLESS_PERMISSION_MODE}"
            )
        if subtype == "set_model":
            return failure(request.request_id, "the model is the pool's main member; set pool.main")
        if subtype == "mcp_status":
            return success(request.request_id, {"mcpServers": []})
        return failure(request.request_id, f"aerix does not support the control request {subtype!r}")

    def _initialized(self, body: dict[str, Any]) -> dict[str, Any]:
        """initialize's answer: the skills as slash commands and the configured main model."""
        if body.get("hooks"):
            self.output.note("the SDK's hook callbacks are not called; aerix runs its settings' hooks")
        if body.get("agents"):
            self.output.note(
                "agents given by the SDK are not used; aerix reads .aerix/agents and .claude/agents"
            )
        try:
            project = ProjectFiles(self.overrides).load(self.options.cwd)
        except (AerixError, OSError):
            return {"commands": [], "output_style": "default", "available_output_styles": ["default"]}
        main = project.settings.pool.main
        return {
            "commands": [
                {"name": name, "description": "", "argumentHint": ""} for name in project.skills.names
            ],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [{"value": main, "displayName": main, "description": "the pool's main member"}],
            "account": {},
            "pid": os.getpid(),
        }


@dataclass
class SessionCommands:
    """``aerix sessions …`` and ``aerix import claude``: the session use cases on the real store."""

    store: SessionFiles

    def listing(self, cwd: Path | None) -> tuple[list[IndexEntry], list[str]]:
        """The sessions of ``cwd``'s project (every project's when None), newest first, and a
        line for each log that could not be read or has a gap or no events."""
        problems: list[str] = []
        project = None if cwd is None else project_key(cwd)
        return queries.list_sessions(self.store, project, problems), problems

    def show(self, session_id: str) -> tuple[SessionRef, list[ev.EventBase], list[str]]:
        return queries.show_session(self.store, session_id)

    def remove(self, session_id: str) -> tuple[SessionRef, list[Path], list[str]]:
        """Delete a session and its ``session/<id>`` branch in the profile it recorded; the
        lines say what could not be done about the branch (the session goes anyway)."""
        ref = self.store.find(session_id)
        profiles = GitProfiles()
        notes: list[str] = []

        def remove_branch(_: SessionRef, start: ev.SessionStart | None) -> None:
            note = remove_session_branch(profiles, start)
            if note is not None:
                notes.append(note)

        return ref, queries.remove_session(self.store, ref.id, also=remove_branch), notes

    def rebuild(self, session_id: str | None, cwd: Path) -> list[queries.RebuildReport]:
        """Rebuild the sessions; the transcripts are linked into Claude Code's projects folder
        when ``transcript.claude_projects`` is on for ``cwd``'s project."""
        claude_projects = load_settings(project_root(cwd)).settings.transcript.claude_projects
        with gc_paused():  # a rebuild folds every event of every log: no collector walks meanwhile
            return queries.rebuild(self.store, session_id, claude_projects)

    def import_claude(
        self, paths: Sequence[Path], on_left_out: Callable[[Path], None]
    ) -> importing.ImportReport:
        source = ClaudeImports(project_key, __version__)
        return importing.import_claude(self.store, source, paths, on_left_out)

    def notices(self) -> list[str]:
        """Crash repairs and the like the store made meanwhile, one line each."""
        return self.store.notices()


@contextlib.contextmanager
def session_commands() -> Iterator[SessionCommands]:
    """The session use cases on the real store; an OS error on the store (a file where its
    folder should be, no permission, a full disk) is ``FileUnusable``, one line naming the path."""
    store = SessionFiles()
    try:
        yield SessionCommands(store)
    except BrokenPipeError:
        raise  # a closed pipe is the CLI's to end quietly, not a store that cannot be used
    except OSError as error:
        raise FileUnusable(error) from error
    finally:
        store.close()


@dataclass
class ProfileCommands:
    """``aerix tune`` and ``aerix profile …``: the profile use cases on the real git profiles,
    session store, pool and editor."""

    store: SessionFiles

    def _deps(self) -> ProfileDeps:
        return ProfileDeps(
            projects=ProjectFiles(),
            pools=AutostartPool(),
            sessions=self.store,
            profiles=GitProfiles(),
            prompts=EmbeddedPrompts(),
            embedded=EmbeddedPrompts().all(),
            release=__version__,
            clock=utc_now,
        )

    def tune(self, options: TuneOptions, observer: ProfileObserver) -> TuneReport:
        return anyio.run(run_tune, options, self._deps(), observer)

    def sync(self, options: SyncOptions, observer: ProfileObserver) -> SyncReport:
        return anyio.run(run_sync, options, self._deps(), observer)

    def edit(self, options: EditOptions) -> EditOutcome:
        deps = EditDeps(
            ProjectFiles(), GitProfiles(), ProcessEditor(), EmbeddedPrompts().all(), __version__, utc_now
        )
        return edit_profile(options, deps)

    def show(self, cwd: Path, profile: str | None) -> ProfileView:
        project = ProjectFiles().load(cwd)
        upstream = upstream_texts(EmbeddedPrompts().all(), project)
        return show_profile(GitProfiles(), profile or project.settings.profile, upstream)

    def log(
        self, cwd: Path, profile: str | None, branch: str | None, limit: int
    ) -> list[tuple[str, list[ProfileCommit]]]:
        project = ProjectFiles().load(cwd)
        return profile_log(GitProfiles(), profile or project.settings.profile, branch, limit)

    def notices(self) -> list[str]:
        return self.store.notices()


@contextlib.contextmanager
def profile_commands() -> Iterator[ProfileCommands]:
    """The profile use cases; an OS error on the session store is ``FileUnusable``."""
    store = SessionFiles()
    try:
        yield ProfileCommands(store)
    except OSError as error:
        raise FileUnusable(error) from error
    finally:
        store.close()
