"""Helpers for the end-to-end request tests: a temporary world (XDG folders, a git project,
settings), the real ``aerix`` console script as a subprocess, and reading its session log."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
AERIX = str(BIN / "aerix")
CALDRIX = str(BIN / "caldrix")
#: The model every world's ``pool.main`` names unless its settings name another: the tests' small
#: model, never the default (qwen2.5-coder-1.5b), which no test loads.
MODEL = "smollm2-135m"
RUN_TIMEOUT_SECS = 480


@dataclass
class World:
    root: Path
    env: dict[str, str]

    @property
    def socket(self) -> Path:
        return self.root / "run" / "pool.sock"

    @property
    def sessions(self) -> Path:
        return self.root / "data" / "aerix" / "sessions"

    @property
    def pool_start_log(self) -> Path:
        return self.root / "state" / "aerix" / "pool-start.log"


def make_world(root: Path, settings: dict[str, Any]) -> World:
    """A world whose user settings are ``settings`` with ``pool.main`` pinned to :data:`MODEL`
    unless they name one: a pool it starts loads the tests' model, and one a test starts (on
    that model) is the configured one."""
    env = dict(os.environ)
    for var, name in (
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_RUNTIME_DIR", "run"),
    ):
        (root / name).mkdir(parents=True, exist_ok=True)
        env[var] = str(root / name)
    env["CLAUDE_CONFIG_DIR"] = str(root / "claude")
    (root / "config" / "aerix").mkdir(parents=True)
    (root / "config" / "aerix" / "settings.json").write_text(json.dumps(pinned_main(settings)))
    return World(root, env)


def pinned_main(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with ``pool.main`` set to the tests' model, :data:`MODEL`, unless they set it
    (nested or dotted)."""
    pool = settings.get("pool", {})
    if "pool.main" in settings or "main" in pool:
        return settings
    return {**settings, "pool": {**pool, "main": MODEL}}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_project(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.org")
    git(path, "config", "user.name", "t")
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-qm", "start")
    return path


def scripted_project(folder: Path) -> tuple[Path, Path]:
    """A git project in ``folder/proj`` whose settings point at a pool socket of its own (each
    test starts its scripted pool there): the project and the socket."""
    socket = folder / "scripted" / "pool.sock"
    proj = make_project(folder / "proj", {"a.txt": "one\n"})
    (proj / ".aerix").mkdir()
    (proj / ".aerix" / "settings.json").write_text(json.dumps({"pool": {"socket": str(socket)}}))
    (proj / ".git" / "info" / "exclude").write_text(".aerix/\n")
    return proj, socket


def aerix(world: World, cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AERIX, *args],
        cwd=cwd,
        env=world.env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECS,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def on_a_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``command`` with its stdout on a pseudo-terminal (stderr discarded); its exit code
    and what the terminal received, with the terminal's CRLF line ends made plain again."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=terminal, stderr=subprocess.DEVNULL
    )
    os.close(terminal)
    received = bytearray()
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # EIO: the child closed the terminal's last end
            break
        if not chunk:
            break
        received += chunk
    os.close(controller)
    return process.wait(timeout=RUN_TIMEOUT_SECS), received.decode().replace("\r\n", "\n")


def session_events(world: World, session_id: str) -> list[dict[str, Any]]:
    [log] = list(world.sessions.glob(f"*/{session_id}.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def reported_turns(events: list[dict[str, Any]], agent: str | None = None) -> list[dict[str, Any]]:
    """The assistant messages (of ``agent``, or every agent), in order; each carries the pool's
    usage, whether its turn parsed, was cut, or was stopped by the pool's guard."""
    turns = [e for e in events if e["type"] == "message" and e["role"] == "assistant"]
    turns = [e for e in turns if agent is None or e["agent"] == agent]
    for message in turns:
        assert "usage" in message, message
    return turns


def start_scripted_pool(
    world: World, socket: Path, completions: list[str], constraints: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """A pool whose main member plays back ``completions`` through the real tokenizer and
    constraints (caldrix's scripted engine); returns once it answers. ``constraints``: the
    constraint kinds the member claims (all by default)."""
    socket.parent.mkdir(parents=True, exist_ok=True)
    script = socket.with_suffix(".script.json")
    content: Any = (
        completions if constraints is None else {"completions": completions, "constraints": constraints}
    )
    script.write_text(json.dumps(content))
    process = subprocess.Popen(
        [
            CALDRIX,
            "pool",
            "--socket",
            str(socket),
            "--load",
            MODEL,
            "--engine",
            "scripted",
            "--script",
            str(script),
            "--ctx",
            "4096",
        ],
        env=world.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not socket.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the scripted pool did not start (status {process.poll()})")
        time.sleep(0.2)
    return process


def stop_pool(world: World, socket: Path) -> None:
    if socket.exists():
        subprocess.run(
            [CALDRIX, "pool", "stop", "--socket", str(socket)], env=world.env, capture_output=True, timeout=60
        )
