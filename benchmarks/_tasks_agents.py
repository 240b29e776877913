"""The three agents of ``bench_tasks.py``, each asked the same prompts in one session of its own.

- **aerix**: ``aerix -p PROMPT --output-format json`` in the project, the second try
  ``--resume`` the first's session; its settings (an isolated ``XDG_CONFIG_HOME``) point
  ``pool.socket`` at the run's pool and ``pool.main`` at its model.
- **aider**: Aider's ``Coder`` on the stub, in its own environment, through ``caldrix serve``'s
  OpenAI endpoint on the run's pool; both tries are messages of one chat (``_tasks_aider.py``).
- **claude**: ``caldrix launch claude -- -p PROMPT --dangerously-skip-permissions``, found the
  run's pool on its socket; the second try ``--resume`` the first's session.

Each ``ask`` is one try: it returns how long it took and one line saying how it ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from _tasks_aider import AiderChat, aider_python

from tests.caldrix.front_harness import claude_binary, launch_front

BIN: Final = Path(sys.executable).parent
AGENTS: Final = ("aerix", "aider", "claude")
#: After SIGTERM, how long a timed-out agent's process group has before SIGKILL.
KILL_GRACE_SECS: Final = 10.0
#: How often a waiting try calls its ``tick`` (the progress line's clock).
TICK_SECS: Final = 5.0


@dataclass(frozen=True)
class AgentRun:
    """Where one agent runs one exercise: its scratch folder, the project holding the stub, the
    pool's socket (the meter's) and the model the pool serves."""

    folder: Path
    project: Path
    socket: Path
    model: str
    files: tuple[str, ...]
    timeout: float
    """Seconds one try may take."""
    aerix_settings: Mapping[str, Any] = field(default_factory=dict)
    """More of aerix's settings, over the run's own (pool.socket and pool.main)."""


@dataclass(frozen=True)
class Turn:
    seconds: float
    end: str
    """One line: how the agent's try ended (its own outcome, exit status, or the timeout)."""
    timed_out: bool = False
    session: str | None = None
    """The agent's own session id, when it has one (aerix's, Claude Code's)."""


class Agent(Protocol):
    def ask(self, prompt: str, timeout: float, tick: Callable[[], None]) -> Turn: ...


@contextlib.contextmanager
def open_agent(name: str, run: AgentRun, say: Callable[[str], None]) -> Iterator[Agent]:
    if name == "aerix":
        yield AerixAgent(run)
    elif name == "claude":
        yield ClaudeAgent(run)
    else:
        python = aider_python(say)
        front = launch_front(run.folder, run.socket)
        try:
            agent = AiderAgent(python, run, front.url)
            try:
                yield agent
            except BaseException:
                agent.chat.kill()  # interrupted: its answer is not wanted, so close() need not wait for it
                raise
            finally:
                agent.chat.close()
        finally:
            front.stop()


def run_command(
    args: list[str], run: AgentRun, env: dict[str, str], timeout: float, tick: Callable[[], None], label: str
) -> tuple[int | None, float, str, str]:
    """``args`` in the project, in a process group of its own, for at most ``timeout`` seconds:
    its exit status (None when it was stopped at the timeout), seconds, stdout and stderr."""
    out, err = run.folder / f"{label}.out", run.folder / f"{label}.err"
    started = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            args,
            cwd=run.project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        code: int | None = None
        try:
            while code is None and time.monotonic() - started < timeout:
                try:
                    left = max(0.0, timeout - (time.monotonic() - started))
                    code = process.wait(timeout=min(TICK_SECS, left))
                except subprocess.TimeoutExpired:
                    tick()
        finally:
            seconds = time.monotonic() - started
            # Out of time, or interrupted: Ctrl-C reaches the benchmark only, and the agent, in a
            # session of its own, would go on using the pool after the benchmark has left.
            if code is None:
                _stop_group(process)
    return code, seconds, out.read_text(errors="replace"), err.read_text(errors="replace")


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_SECS), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _json_result(stdout: str) -> dict[str, Any] | None:
    """The last line of ``stdout`` that is a JSON object (the ``json`` output's result)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _isolated_env(folder: Path) -> dict[str, str]:
    """This environment with every XDG folder (and Claude Code's) under ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME"):
        if var == "XDG_CACHE_HOME":  # the model cache is shared: smollm2-135m is found there
            continue
        (folder / var.lower()).mkdir(parents=True, exist_ok=True)
        env[var] = str(folder / var.lower())
    env["HOME"] = str(folder / "home")
    env["CLAUDE_CONFIG_DIR"] = str(folder / "home" / ".claude")
    (folder / "home").mkdir(exist_ok=True)
    return env


class AerixAgent:
    def __init__(self, run: AgentRun) -> None:
        self.run = run
        self.env = _isolated_env(run.folder / "aerix")
        settings = {"pool": {"socket": str(run.socket), "main": run.model}, **run.aerix_settings}
        config = Path(self.env["XDG_CONFIG_HOME"]) / "aerix"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps(settings))
        self.session: str | None = None
        self.tries = 0

    def ask(self, prompt: str, timeout: float, tick: Callable[[], None]) -> Turn:
        self.tries += 1
        args = [str(BIN / "aerix"), "-p", prompt, "--output-format", "json"]
        if self.session:
            args += ["--resume", self.session]
        code, seconds, out, err = run_command(args, self.run, self.env, timeout, tick, f"aerix-{self.tries}")
        result = _json_result(out)
        if result is not None and result.get("session_id"):
            self.session = str(result["session_id"])
        if code is None:
            return Turn(seconds, f"timed out after {timeout:.0f} s", True, self.session)
        if result is None:
            return Turn(seconds, f"aerix exited {code}: {_last_line(err)}", session=self.session)
        outcome, reason = result.get("outcome"), result.get("reason")
        end = str(outcome) if not reason else f"{outcome}: {reason}"
        return Turn(seconds, end if code == 0 else f"{end} (exit {code})", session=self.session)


class ClaudeAgent:
    def __init__(self, run: AgentRun) -> None:
        self.run = run
        self.env = _isolated_env(run.folder / "claude")
        if os.geteuid() == 0:  # Claude Code refuses to skip permissions as root outside a sandbox
            self.env["IS_SANDBOX"] = "1"
        self.session: str | None = None
        self.tries = 0

    def ask(self, prompt: str, timeout: float, tick: Callable[[], None]) -> Turn:
        self.tries += 1
        args = [str(BIN / "caldrix"), "launch", "claude", "--socket", str(self.run.socket)]
        args += ["--claude", str(claude_binary()), "--", "-p", prompt, "--dangerously-skip-permissions"]
        args += ["--output-format", "json"]
        if self.session:
            args += ["--resume", self.session]
        code, seconds, out, err = run_command(args, self.run, self.env, timeout, tick, f"claude-{self.tries}")
        result = _json_result(out)
        if result is not None and result.get("session_id"):
            self.session = str(result["session_id"])
        if code is None:
            return Turn(seconds, f"timed out after {timeout:.0f} s", True, self.session)
        if result is None:
            end = f"claude exited {code}: {_last_line(err) or _last_line(out)}"
            return Turn(seconds, end, session=self.session)
        end = f"{result.get('subtype')}, {result.get('num_turns')} turns"
        if result.get("is_error"):
            end += f": {str(result.get('result') or result.get('errors') or '')[:200]}"
        return Turn(seconds, end if code == 0 else f"{end} (exit {code})", session=self.session)


class AiderAgent:
    def __init__(self, python: Path, run: AgentRun, url: str) -> None:
        self.chat = AiderChat.start(python, run.project, list(run.files), url, run.folder, run.timeout)

    def ask(self, prompt: str, timeout: float, tick: Callable[[], None]) -> Turn:
        started = time.monotonic()
        reply = self.chat.ask(prompt, timeout, tick)
        seconds = time.monotonic() - started
        if reply is None:
            if self.chat.process.poll() is None:
                self.chat.kill()
                return Turn(seconds, f"timed out after {timeout:.0f} s", timed_out=True)
            return Turn(
                seconds, f"{self.chat.ended()}: {_last_line(self.chat.log_path.read_text(errors='replace'))}"
            )
        if reply.get("error"):
            return Turn(seconds, f"aider failed: {reply['error']}")
        counts = [
            f"{reply[key]} {key}" for key in ("malformed", "exhausted", "lint_errors") if reply.get(key)
        ]
        return Turn(seconds, "answered" + (f" ({', '.join(counts)})" if counts else ""))
