"""``caldrix launch claude``: Claude Code, run on the pool through the front.

It finds or starts the pool, starts a front on a free port of 127.0.0.1 with a fresh API key
(so no other local program can use it), runs ``claude`` with the environment below and the
arguments given after ``--``, and stops the front when ``claude`` exits, with its exit status.
Nothing in ``~/.claude`` is touched unless ``--onboarded`` asks (docs/http-front.md, Launch).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from caldrix.errors import PoolUnavailable, UsageError
from caldrix.processes import stop_process

#: Claude Code's wait for a reply, in milliseconds: a local prefill of its 20k-token prompt
#: takes minutes on a small CPU, where its default gives up and resends.
API_TIMEOUT_MS: Final = 1_800_000
#: How long Claude Code's stream watchdog waits for model output while only pings come, in
#: milliseconds: by default it gives up on a stream after 600 s of pings (300 s of them count as
#: output, then 300 s of silence) and asks again without streaming, which a slow member answers
#: only once it is done. 30 minutes is the longest Claude Code takes (docs/http-front.md).
STREAM_IDLE_TIMEOUT_MS: Final = 1_800_000
#: "0" lifts the idle limit of Claude Code's HTTP connection, which otherwise ends a request the
#: front answers only whole (the non-streamed request Claude Code falls back to) after about
#: 300 s; ``API_TIMEOUT_MS`` still bounds it.
FORCE_IDLE_TIMEOUT: Final = "0"
#: How long ``launch`` waits for the front it started to answer.
FRONT_START_SECS: Final = 60.0
FRONT_POLL_SECS: Final = 0.2


def claude_environment(
    base: Mapping[str, str], url: str, key: str, main_model: str, small_model: str
) -> dict[str, str]:
    """``base`` with what Claude Code needs to run on the front (each line of the table in
    docs/http-front.md)."""
    env = dict(base)
    env.update(
        {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_AUTH_TOKEN": key,
            "ANTHROPIC_API_KEY": "",
            "ANTHROPIC_MODEL": main_model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": main_model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": main_model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": small_model,
            "ANTHROPIC_SMALL_FAST_MODEL": small_model,
            "CLAUDE_CODE_SUBAGENT_MODEL": main_model,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "API_TIMEOUT_MS": str(API_TIMEOUT_MS),
            "CLAUDE_STREAM_IDLE_TIMEOUT_MS": str(STREAM_IDLE_TIMEOUT_MS),
            "API_FORCE_IDLE_TIMEOUT": FORCE_IDLE_TIMEOUT,
        }
    )
    return env


def find_claude(named: str | None) -> str:
    """``--claude PATH``, else ``claude`` on PATH, else the one bundled with the Claude Agent
    SDK when it is installed beside caldrix."""
    if named:
        found = shutil.which(named) or (named if Path(named).is_file() else None)
        if found is None:
            raise UsageError(f"--claude {named}: no such program")
        return found
    on_path = shutil.which("claude")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "_bundled" / "claude"
        if bundled.is_file():
            return str(bundled)
    raise UsageError("claude is not on PATH; install Claude Code, or name it with --claude PATH")


def mark_onboarded(config_dir: Path) -> Path:
    """Set ``hasCompletedOnboarding`` in Claude Code's ``.claude.json`` (its first interactive
    run asks otherwise), keeping everything else in it."""
    path = config_dir / ".claude.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data["hasCompletedOnboarding"] = True
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_front(serve_args: Sequence[str], url: str, key: str) -> Iterator[subprocess.Popen[bytes]]:
    """``caldrix serve`` with ``serve_args`` as a child, until the block ends; waits until it
    answers on ``url``."""
    env = {**os.environ, "CALDRIX_SERVE_API_KEY": key}
    front = subprocess.Popen(
        [sys.executable, "-m", "caldrix", "serve", *serve_args], env=env, stdin=subprocess.DEVNULL
    )
    try:
        _wait_for(front, url)
        yield front
    finally:
        stop_process(front, FRONT_START_SECS)


def _wait_for(front: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + FRONT_START_SECS
    while time.monotonic() < deadline:
        if front.poll() is not None:
            raise PoolUnavailable(
                f"the front exited with status {front.returncode} before it answered on {url}"
            )
        try:
            with urllib.request.urlopen(urllib.request.Request(url + "/", method="HEAD"), timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers (a 401 without the key is an answer)
        except OSError:
            time.sleep(FRONT_POLL_SECS)
    raise PoolUnavailable(f"the front did not answer on {url} within {FRONT_START_SECS:g} s")


def new_key() -> str:
    return "caldrix-" + secrets.token_urlsafe(24)
