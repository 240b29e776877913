"""A real terminal for the screen's end-to-end tests: tmux on its own server socket.

The tests read the screen back with ``capture-pane`` and wait for text to appear (polling, with
a generous deadline), never for a time to pass.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: How long a step may take to show on the screen (the machine is shared and slow).
SHOW_DEADLINE_SECS = 120.0
POLL_SECS = 0.2


class ScreenTimeout(AssertionError):
    """What the test waited for never appeared; the message holds the last screen."""


@dataclass
class Tmux:
    server: str  # the -L socket name: a server of our own, apart from any the user runs
    stderr: Path  # the program's stderr goes here, and into a timeout's message
    session: str = "aerix"

    @staticmethod
    def available() -> str | None:
        return shutil.which("tmux")

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.server, *args], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def start(
        self,
        command: list[str],
        cwd: Path,
        env: Mapping[str, str],
        width: int,
        height: int,
        *,
        stderr_to_terminal: bool = False,
    ) -> None:
        """Run ``command`` in a fresh window; the shell that wraps it prints its exit status."""
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
        redirect = "" if stderr_to_terminal else f" 2>>{shlex.quote(str(self.stderr))}"
        run = f"env {exports} {shlex.join(command)}{redirect}"
        line = f"cd {shlex.quote(str(cwd))} && {run}; echo SCREEN-EXITED $?; sleep 600"
        self.run(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            self.session,
            "-x",
            str(width),
            "-y",
            str(height),
            "sh",
            "-c",
            line,
        )
        self.run("set-option", "-t", self.session, "window-size", "manual")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", self.session, "-l", text)

    def paste(self, text: str) -> None:
        """Paste ``text`` as a terminal does (bracketed, when the program asked for it)."""
        self.run("set-buffer", "-b", "aerix-paste", text)
        self.run("paste-buffer", "-p", "-d", "-b", "aerix-paste", "-t", self.session)

    def screen(self, history: bool = True) -> str:
        args = ["capture-pane", "-p", "-t", self.session, "-J"]
        if history:
            args += ["-S", "-"]
        return "\n".join(line.rstrip() for line in self.run(*args).splitlines()) + "\n"

    def mark(self) -> str:
        """The screen now, to wait for what shows after it (``wait_for(text, since=mark)``)."""
        return self.screen()

    def wait_for(self, text: str, *, since: str | None = None) -> str:
        """The screen (history included) once ``text`` shows, or with ``since``: once it shows
        more often than it did then; the part of the screen new since then is ``new_part``."""
        before = since.count(text) if since is not None else 0
        return self.wait_until(lambda shown: shown.count(text) > before, repr(text))

    def wait_until(self, ready: Callable[[str], bool], what: str) -> str:
        """The screen (history included) once ``ready`` holds for it: for a redraw, whose
        first lines show before the rest, so one string showing is not the whole of it."""
        deadline = time.monotonic() + SHOW_DEADLINE_SECS
        while True:
            shown = self.screen()
            if ready(shown):
                return shown
            if time.monotonic() > deadline:
                errors = self.stderr.read_text(errors="replace") if self.stderr.exists() else ""
                raise ScreenTimeout(f"{what} never showed; the screen:\n{shown}\nstderr:\n{errors}")
            time.sleep(POLL_SECS)

    @staticmethod
    def new_part(shown: str, since: str) -> str:
        """What ``shown`` holds past what ``since`` held: the lines after those the two share
        from the top (the scrollback stays; the live region at the bottom is replaced)."""
        old, new = since.splitlines(), shown.splitlines()
        common = 0
        while common < min(len(old), len(new)) and old[common] == new[common]:
            common += 1
        return "\n".join(new[common:])

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", self.session, "-x", str(width), "-y", str(height))

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.server, "kill-server"], capture_output=True, check=False)
