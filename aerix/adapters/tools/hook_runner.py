"""Hook handlers as real processes: the hook runner port over ``sh -c``.

Each handler runs as ``sh -c <command>`` (or, in Claude Code's exec form, ``command`` with its
``args`` and no shell) in the project directory, in its own process group, with the event's
JSON object on stdin and stdout and stderr captured. The handlers of one event run in
parallel. A handler still running at its timeout gets TERM on its process group, then KILL
``HOOK_KILL_GRACE_SECS`` later; so does one whose request is cancelled while it runs.

Its environment is aerix's own plus ``CLAUDE_PROJECT_DIR`` and ``AERIX_PROJECT_DIR`` (the
project root, which stays put whatever ``cwd`` the agent works in) and, for a plugin's handler,
``CLAUDE_PLUGIN_ROOT`` (the plugin's folder, so ``${CLAUDE_PLUGIN_ROOT}/hooks/x.sh`` works).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from aerix.domain import bounds
from aerix.domain.hook_answers import HandlerRun
from aerix.domain.hook_contract import SelectedHandler


class SubprocessHooks:
    """Runs hook handlers as processes (the application's ``HookRunner`` port)."""

    def __init__(self, project_dir: Path, environ: Mapping[str, str] | None = None) -> None:
        self.project_dir = project_dir
        self._environ = dict(os.environ if environ is None else environ)

    async def run(self, handlers: Sequence[SelectedHandler], payload: Mapping[str, Any]) -> list[HandlerRun]:
        """Run every handler on ``payload`` at once; their runs in the handlers' order."""
        stdin = (json.dumps(payload, ensure_ascii=False) + "\n").encode("utf-8")
        runs: list[HandlerRun | None] = [None] * len(handlers)

        async def one(index: int, handler: SelectedHandler) -> None:
            runs[index] = await self._run_one(handler, stdin)

        async with anyio.create_task_group() as group:
            for index, handler in enumerate(handlers):
                group.start_soon(one, index, handler)
        return [run if run is not None else HandlerRun(None, start_error="did not run") for run in runs]

    def environment(self, handler: SelectedHandler) -> dict[str, str]:
        env = dict(self._environ)
        env["CLAUDE_PROJECT_DIR"] = env["AERIX_PROJECT_DIR"] = str(self.project_dir)
        if handler.plugin_root is not None:
            env["CLAUDE_PLUGIN_ROOT"] = handler.plugin_root
        else:
            env.pop("CLAUDE_PLUGIN_ROOT", None)
        return env

    async def _run_one(self, handler: SelectedHandler, stdin: bytes) -> HandlerRun:
        argv = [handler.command, *handler.args] if handler.args is not None else ["sh", "-c", handler.command]
        began = time.monotonic()
        try:
            process = await anyio.open_process(
                argv,
                cwd=self.project_dir,
                env=self.environment(handler),
                start_new_session=True,
            )
        except OSError as exc:
            return HandlerRun(None, start_error=exc.strerror or str(exc))
        finished = False
        try:
            run = await self._supervise(process, handler.timeout_secs, stdin, began)
            finished = not run.timed_out
            return run
        finally:
            with anyio.CancelScope(shield=True):
                if not finished:  # timed out or cancelled: stop all it started
                    await _stop_group(process)
                await process.aclose()

    async def _supervise(
        self, process: Process, timeout_secs: float, stdin: bytes, began: float
    ) -> HandlerRun:
        stdout, stderr = _Capture(), _Capture()
        timed_out = True
        with anyio.move_on_after(timeout_secs):
            async with anyio.create_task_group() as group:
                group.start_soon(_feed, process, stdin)
                group.start_soon(stdout.read, process.stdout)
                group.start_soon(stderr.read, process.stderr)
                await process.wait()
            timed_out = False
        exit_code = None if timed_out else process.returncode
        return HandlerRun(
            exit_code=exit_code,
            stdout=stdout.text("stdout"),
            stderr=stderr.text("stderr"),
            timed_out=timed_out,
            duration_ms=round((time.monotonic() - began) * 1000, 1),
        )


class _Capture:
    """One pipe's bytes, at most HOOK_CAPTURE_MAX_BYTES of them."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    async def read(self, stream: ByteReceiveStream | None) -> None:
        if stream is None:
            return
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            while True:
                chunk = await stream.receive()
                room = bounds.HOOK_CAPTURE_MAX_BYTES - len(self.kept)
                self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - room)

    def text(self, name: str) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[{self.dropped} more bytes of {name} were not kept]"
        return text


async def _feed(process: Process, stdin: bytes) -> None:
    """Write the input and close stdin; a handler that never reads it is not an error."""
    if process.stdin is None:
        return
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await process.stdin.send(stdin)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await process.stdin.aclose()


async def _stop_group(process: Process) -> None:
    """TERM the handler's process group, then KILL what is left of it once the handler has
    exited or the grace period is over: whatever the handler started goes with it."""
    if not _signal_group(process.pid, signal.SIGTERM):
        return
    with anyio.move_on_after(bounds.HOOK_KILL_GRACE_SECS):
        await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the group; False when it is gone already."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
