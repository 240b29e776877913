"""``--input-format stream-json`` on the real adapters: stdin read on a thread of its own, its
control requests answered as they come (initialize, interrupt, permission mode…), and each
prompt run as a request of one session, printed as stream-json."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from aerix.adapters.claude.output import HeadlessOutput, error_object
from aerix.adapters.claude.stream_input import (
    BadLine,
    ControlRequest,
    StreamItem,
    UserPrompt,
    failure,
    read_items,
    success,
)
from aerix.adapters.project.project import ProjectFiles
from aerix.adapters.project.settings_files import SettingsOverrides
from aerix.app.request.options import RequestOptions
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.claude_format import HEADLESS_PERMISSION_MODE
from aerix.errors import AerixError
from aerix.projections.claude_stream import ClaudeStream
from aerix.wiring.requests import run_one


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
    output = HeadlessOutput("stream-json", out or sys.stdout, err or sys.stderr, ClaudeStream())
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
            fork_session=self.options.fork_session and first,
            append_system_prompt=self.options.append_system_prompt if first else None,
        )
        if not prompt.text.strip():
            self.output.note("a user message with no text is left out")
            self.output.json_line(error_object("the prompt is empty", EXIT_USAGE, self.session))
            self.exit_code = EXIT_USAGE
            return
        with anyio.CancelScope() as scope:
            self.running = scope
            self.exit_code = await run_one(options, self.output, self.overrides)
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
