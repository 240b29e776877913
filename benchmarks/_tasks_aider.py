"""Aider for ``bench_tasks.py``: its own virtual environment (``aider-chat`` pinned, installed on
first use), and one chat per exercise run by ``_aider_driver.py`` inside that environment.

The driver is Aider's own benchmark loop (``benchmark/benchmark.py``) cut down to the chat: one
``Coder`` on the stub, each message sent with ``coder.run``. It reads the messages on stdin,
one JSON line each, and answers each on a pipe of its own (Aider prints on stdout), so both
tries are one chat, as in Aider's benchmark.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

#: The Aider release the benchmark runs: its prompts and edit formats change between releases.
AIDER_VERSION: Final = "0.86.2"
DRIVER: Final = Path(__file__).resolve().with_name("_aider_driver.py")
#: Written into the environment once ``pip install`` has finished: its absence means a broken
#: or interrupted install, which is done again.
READY_MARK: Final = ".aerix-bench-ready"
INSTALL_SECS: Final = 1800.0
#: How long the driver may take to load Aider before its first message.
START_SECS: Final = 120.0


def bench_cache() -> Path:
    """Where the benchmark keeps what outlives a run: ``$XDG_CACHE_HOME/aerix-bench``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aerix-bench"


def aider_python(say: Callable[[str], None], venv: Path | None = None) -> Path:
    """The Python of Aider's environment, made (and ``aider-chat`` installed into it) first
    when it is not there yet."""
    venv = venv or bench_cache() / "aider-venv"
    python = venv / "bin" / "python"
    mark = venv / READY_MARK
    if mark.is_file() and mark.read_text().strip() == AIDER_VERSION and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = venv.parent / "aider-install.log"
    say(f"installing aider-chat {AIDER_VERSION} into {venv} (first use: a few minutes; log {log})")
    started = time.monotonic()
    with log.open("w") as out:
        for command in (
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", f"aider-chat=={AIDER_VERSION}"],
        ):
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_SECS)
            if done.returncode != 0:
                tail = log.read_text(errors="replace").strip().splitlines()[-5:]
                raise SystemExit(
                    f"bench_tasks: installing Aider failed ({' '.join(command[:4])} …):\n" + "\n".join(tail)
                )
    mark.write_text(AIDER_VERSION + "\n")
    say(f"aider-chat {AIDER_VERSION} installed in {time.monotonic() - started:.0f} s")
    return python


@dataclass
class AiderChat:
    """One Aider chat on the stub, in its driver process; :meth:`ask` sends one message."""

    process: subprocess.Popen[bytes]
    replies: int
    """The read end of the driver's reply pipe."""
    log_path: Path
    pending: bytes = field(default=b"")

    @classmethod
    def start(
        cls, python: Path, project: Path, files: list[str], url: str, folder: Path, timeout: float
    ) -> AiderChat:
        read_end, write_end = os.pipe()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AIDER_"))},
            "OPENAI_API_BASE": url + "/v1",
            "OPENAI_API_KEY": "x",
            "HOME": str(bench_cache() / "aider-home"),  # Aider's own caches, kept between runs
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # nothing fetched from the network
            "PYTHONUNBUFFERED": "1",
        }
        (bench_cache() / "aider-home").mkdir(parents=True, exist_ok=True)
        log_path = folder / "aider.log"
        args = [str(python), str(DRIVER), "--reply-fd", str(write_end), "--timeout", str(int(timeout))]
        args += ["--history", str(folder / "aider.chat.history.md"), *files]
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                args,
                cwd=project,
                env=env,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_end,),
                start_new_session=True,
            )
        os.close(write_end)
        return cls(process, read_end, log_path)

    def ask(self, message: str, timeout: float, tick: Callable[[], None]) -> dict[str, Any] | None:
        """Send ``message`` and wait for the driver's answer (``tick`` runs every few seconds
        meanwhile): its reply, or None when it timed out or the driver ended without one."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps({"message": message}) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            return None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.replies], [], [], min(left, 5.0))
            tick()
            if ready:
                chunk = os.read(self.replies, 65536)
                if not chunk:  # the driver has gone
                    return None
                self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def ended(self) -> str:
        """How the driver process ended, when it has."""
        code = self.process.poll()
        return "still running" if code is None else f"aider exited {code}"

    def kill(self) -> None:
        """End the driver now (a try that ran out of time: the chat cannot go on)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        os.close(self.replies)
