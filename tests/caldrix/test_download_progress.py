"""The download progress bar, seen the way a person sees it: ``caldrix models pull`` and
``caldrix pool --load`` run on a pseudo-terminal and fetch the real test model (smollm2-135m) over HTTP
from a server on 127.0.0.1. Without a terminal there is no bar (logs stay clean).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.caldrix.pool_harness import EXIT_TIMEOUT_SECS, START_TIMEOUT_SECS
from tests.default_model import default_model_path

pytestmark = pytest.mark.model

MODEL = default_model_path()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def model_url(tmp_path: Path) -> Iterator[str]:
    """The test model's file served over HTTP (a symlink into the served folder)."""
    served = tmp_path / "served"
    served.mkdir()
    (served / MODEL.name).symlink_to(MODEL)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(served)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/{MODEL.name}"
    httpd.shutdown()
    httpd.server_close()


def _caldrix(*args: str) -> list[str]:
    return [sys.executable, "-m", "caldrix", *args]


class TerminalRun:
    """A ``caldrix`` command whose stdout and stderr are a pseudo-terminal, read as it runs."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        main, secondary = pty.openpty()
        self.process = subprocess.Popen(
            _caldrix(*args), stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env
        )
        os.close(secondary)
        self._main = main
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._main, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not data:
                return
            self._chunks.append(data)

    def output(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    def finish(self) -> int:
        status = self.process.wait(timeout=EXIT_TIMEOUT_SECS)
        self._reader.join(timeout=EXIT_TIMEOUT_SECS)
        os.close(self._main)
        return status


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "120", "TERM": "xterm"}


def test_models_pull_shows_a_progress_bar_on_a_terminal(model_url: str, tmp_path: Path) -> None:
    run = TerminalRun(["models", "pull", model_url], _env(tmp_path))
    assert run.finish() == 0, run.output()
    shown = run.output()
    assert f"downloading {MODEL.name}" in shown
    assert "98.4/98.4 MB" in shown  # rich's byte counts, complete
    assert "pulled " in shown


def test_models_pull_without_a_terminal_prints_no_bar(model_url: str, tmp_path: Path) -> None:
    done = subprocess.run(
        _caldrix("models", "pull", model_url),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_SECS,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "downloading" not in done.stderr
    assert "pulled " in done.stdout


@pytest.mark.e2e
def test_pool_load_of_a_url_shows_the_bar_then_serves_it(model_url: str, tmp_path: Path) -> None:
    socket_path = tmp_path / "run" / "pool.sock"
    run = TerminalRun(
        ["pool", "--socket", str(socket_path), "--load", model_url, "--ctx", "256", "--idle-timeout", "0"],
        _env(tmp_path),
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECS
        while not socket_path.exists():
            assert run.process.poll() is None, run.output()
            assert time.monotonic() < deadline, run.output()
            time.sleep(0.2)
        status = subprocess.run(
            _caldrix("pool", "status", "--socket", str(socket_path)),
            capture_output=True,
            text=True,
            timeout=EXIT_TIMEOUT_SECS,
        )
        assert f"main: ready, {model_url}, n_ctx 256" in status.stdout, status
        cached = tmp_path / "cache" / "caldrix" / "models" / "url" / "http"
        assert [p.name for p in cached.rglob("*.gguf")] == [MODEL.name]
    finally:
        run.process.terminate()
    assert run.finish() == 0
    assert f"downloading {MODEL.name}" in run.output()
