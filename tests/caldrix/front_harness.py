"""The real pool and the real ``caldrix serve`` in front of it, as subprocesses, for the front's tests.

A test starts a pool (usually the scripted engine on the embedded model's vocabulary, answering
what the test scripts), then ``python -m caldrix serve`` on a free port of 127.0.0.1, and talks
HTTP to it with real clients: httpx, Anthropic's and OpenAI's SDKs, Claude Code itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx

from caldrix.processes import stop_process
from tests.caldrix.pool_harness import DEFAULT_MODEL, PoolProcess, start_pool
from tests.openai_server import free_port

#: How long a front may take to answer after it starts.
FRONT_START_SECS = 60.0
#: How long a test's HTTP client waits for an answer (the machine is shared and slow).
HTTP_TIMEOUT_SECS = 300.0


@dataclass
class FrontProcess:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_SECS, headers=headers)

    def stop(self) -> None:
        stop_process(self.process)


def launch_front(
    folder: Path, socket_path: Path, *args: str, env: dict[str, str] | None = None
) -> FrontProcess:
    """Start ``caldrix serve`` on a free port and wait until it answers ``HEAD /``."""
    port = free_port()
    log_path = folder / f"front-{time.monotonic_ns()}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "caldrix",
                "serve",
                "--socket",
                str(socket_path),
                "--port",
                str(port),
                *args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
    front = FrontProcess(process, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + FRONT_START_SECS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"caldrix serve exited with {process.returncode}:\n{front.log()}")
        try:
            httpx.head(front.url + "/", timeout=5)
            return front
        except httpx.TransportError:
            time.sleep(0.2)
    front.stop()
    raise RuntimeError(f"caldrix serve did not answer within {FRONT_START_SECS} s:\n{front.log()}")


def write_script(
    folder: Path, completions: Sequence[str | dict[str, str]], constraints: Sequence[str] | None = None
) -> Path:
    script = folder / "script.json"
    data: dict[str, Any] = {"completions": list(completions)}
    if constraints is not None:
        data["constraints"] = list(constraints)
    script.write_text(json.dumps(data))
    return script


def start_scripted(
    folder: Path, completions: Sequence[str | dict[str, str]], *, ctx: int = 32768, extra: Sequence[str] = ()
) -> PoolProcess:
    """A pool whose ``main`` is the scripted engine on the embedded model's vocabulary (a large
    window is cheap: it loads no weights), answering ``completions`` in turn."""
    script = write_script(folder, completions)
    args = ["--load", DEFAULT_MODEL, "--engine", "scripted", "--script", str(script), "--ctx", str(ctx)]
    return start_pool(folder, *args, "--idle-timeout", "0", *extra)


@contextmanager
def scripted_front(
    folder: Path,
    completions: Sequence[str | dict[str, str]],
    *front_args: str,
    ctx: int = 32768,
    pool_args: Sequence[str] = (),
) -> Iterator[tuple[PoolProcess, FrontProcess]]:
    pool = start_scripted(folder, completions, ctx=ctx, extra=pool_args)
    try:
        front = launch_front(folder, pool.socket_path, *front_args)
        try:
            yield pool, front
        finally:
            front.stop()
    finally:
        pool.stop()


def claude_binary() -> Path:
    """Claude Code as the Claude Agent SDK (a dev dependency) bundles it."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    assert spec is not None and spec.origin is not None, "claude-agent-sdk is a dev dependency"
    return Path(spec.origin).parent / "_bundled" / "claude"


def claude_env(url: str, home: Path, model: str = "main") -> dict[str, str]:
    """Claude Code offline against the server at ``url``: the environment the issue gives, HOME
    in tmp."""
    return {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_AUTH_TOKEN": "x",
        "ANTHROPIC_API_KEY": "",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_MODEL": model,
    }


def logged_requests(folder: Path) -> list[dict[str, Any]]:
    """The requests ``--log-requests`` wrote into ``folder``, in order."""
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
