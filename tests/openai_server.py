"""A real OpenAI-compatible server on this machine: llama-cpp-python's own
(``python -m llama_cpp.server``) on the embedded model, on a loopback port chosen at run time.

It is what a user who points Claude Code or OpenCode at a local server runs, and what the
remote-member tests and the side-by-side benchmark talk to.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from caldrix.processes import stop_process
from tests.default_model import default_model_path

#: The model id the server lists (``--model_alias``).
SERVED_MODEL = "smol"
#: How long the server may take to load the model and answer (the machine is shared and slow).
SERVER_START_SECS = 180.0


@dataclass
class OpenAIServer:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    api_key: str | None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def reference(self) -> str:
        return f"openai+{self.url}#{SERVED_MODEL}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_process(self.process)

    def kill(self) -> None:
        """End it at once, as a crash would."""
        self.process.kill()
        self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(
    folder: Path, *extra: str, api_key: str | None = None, n_ctx: int = 4096, threads: int = 1
) -> OpenAIServer:
    port = free_port()
    log_path = folder / f"openai-server-{port}.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(default_model_path()),
        "--model_alias",
        SERVED_MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        *(["--api_key", api_key] if api_key else []),
        *extra,
    ]
    with log_path.open("wb") as log:
        # Unbuffered: tests read the log while the server runs (its prints go to a file).
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    server = OpenAIServer(process, port, log_path, api_key)
    deadline = time.monotonic() + SERVER_START_SECS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{server.log()}")
        if _answers(server):
            return server
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"the server did not answer within {SERVER_START_SECS} s:\n{server.log()}")


def _answers(server: OpenAIServer) -> bool:
    request = urllib.request.Request(server.url + "/models")
    if server.api_key:
        request.add_header("Authorization", f"Bearer {server.api_key}")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return bool(json.load(reply).get("data"))
    except (OSError, urllib.error.URLError, ValueError):
        return False
