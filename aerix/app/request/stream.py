"""``--input-format stream-json``: the Claude Agent SDK's control protocol carrying one session
over several prompts. stdin is read on a thread of its own (the ``items`` the caller gives, read
by ``aerix.adapters.claude.stream_input``); control requests are answered as they come
(initialize, interrupt, permission mode…), and each prompt runs as a request on one held
``LiveSession``, printed as stream-json through the ``StreamOutput`` port.

The session is opened by the first prompt (``--resume``, ``--continue``, ``--session-id`` and
``--fork-session`` are its flags) and held to the end of the input; a prompt whose session could
not be opened prints its error result, and the next prompt tries again.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from aerix.app.ports.request import RequestResult
from aerix.app.ports.stream import BadLine, ControlRequest, StreamItem, StreamOutput, UserPrompt
from aerix.app.request.options import RequestDeps, RequestFlags, RequestOptions, SessionOptions
from aerix.app.request.reported import reported
from aerix.app.request.session import LiveSession, live_session, with_a_pool_that_answers
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.claude_format import HEADLESS_PERMISSION_MODE, control_failure, control_success
from aerix.errors import AerixError

#: Reads stdin's items until its end (blocking: it runs on a thread of its own).
ItemReader = Callable[[], Iterator[StreamItem]]


async def serve_stream(
    opening: SessionOptions, each: RequestFlags, deps: RequestDeps, output: StreamOutput, items: ItemReader
) -> int:
    """Answer the control requests ``items`` carries as they come and run each prompt as a
    request of the session ``opening`` names; ``each``: what every prompt asks besides its text
    (``append_system_prompt`` the first's only). At the end of the input (once its prompts ran),
    the exit code of the last request."""
    async with AsyncExitStack() as stack:
        return await _StreamSession(opening, each, deps, output, stack).serve(items)


@dataclass
class _StreamSession:
    opening: SessionOptions
    each: RequestFlags
    deps: RequestDeps
    output: StreamOutput
    stack: AsyncExitStack  # holds the session (its pool, its log) to the end of the input
    live: LiveSession | None = None
    session: str | None = None
    running: anyio.CancelScope | None = None
    exit_code: int = 0

    async def serve(self, items: ItemReader) -> int:
        prompts_in, prompts = anyio.create_memory_object_stream[UserPrompt](math.inf)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read, items, prompts_in)
            async with prompts:
                async for prompt in prompts:
                    await self._request(prompt)
        return self.exit_code

    async def _read(self, items: ItemReader, prompts: MemoryObjectSendStream[UserPrompt]) -> None:
        items_in, received = anyio.create_memory_object_stream[StreamItem](math.inf)
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            # A daemon thread, not a worker's: one blocked reading stdin must not keep the
            # process alive after the loop ended (Ctrl-C, an error).
            try:
                try:
                    for item in items():
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
        async with received, prompts:
            async for item in received:
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
        options = self.each.request(prompt.text, first=self.session is None)
        if not prompt.text.strip():
            self.output.note("a user message with no text is left out")
            self.output.failed("the prompt is empty", EXIT_USAGE, self.session)
            self.exit_code = EXIT_USAGE
            return
        with anyio.CancelScope() as scope:
            self.running = scope
            self.exit_code = await self._run(options)
        self.running = None
        if scope.cancelled_caught:
            self.output.interrupted()
            self.exit_code = EXIT_CANCELLED
        self.session = self.output.session or self.session

    async def _run(self, options: RequestOptions) -> int:
        """One request on the held session (opened by the first that can)."""
        return await reported(lambda: self._on_session(options), self.output, self.deps.sessions.log.notices)

    async def _on_session(self, options: RequestOptions) -> RequestResult:
        if self.live is None:
            self.live = await self.stack.enter_async_context(live_session(self.opening, self.deps))
        else:
            self.live = await with_a_pool_that_answers(self.live, self.stack, self.deps)
        return await self.live.run(options, self.output)

    def _answer(self, request: ControlRequest) -> dict[str, Any]:
        """The control_response to one control request from the SDK."""
        subtype, body = request.subtype, request.body
        if subtype == "initialize":
            return control_success(request.request_id, self._initialized(body))
        if subtype == "interrupt":
            if self.running is not None:
                self.running.cancel()
            return control_success(request.request_id)
        if subtype == "set_permission_mode" and body.get("mode") == HEADLESS_PERMISSION_MODE:
            return control_success(request.request_id)
        if subtype == "set_permission_mode":
            return control_failure(
                request.request_id, f"aerix -p asks no permission: it runs as {HEADLESS_PERMISSION_MODE}"
            )
        if subtype == "set_model":
            return control_failure(request.request_id, "the model is the pool's main member; set pool.main")
        if subtype == "mcp_status":
            return control_success(request.request_id, {"mcpServers": []})
        return control_failure(request.request_id, f"aerix does not support the control request {subtype!r}")

    def _initialized(self, body: dict[str, Any]) -> dict[str, Any]:
        """initialize's answer: the skills as slash commands and the configured main model."""
        if body.get("hooks"):
            self.output.note("the SDK's hook callbacks are not called; aerix runs its settings' hooks")
        if body.get("agents"):
            self.output.note(
                "agents given by the SDK are not used; aerix reads .aerix/agents and .claude/agents"
            )
        try:
            project = self.deps.projects.load(self.opening.cwd)
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
