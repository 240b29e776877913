"""The pool's defaults as protocol.md and the issue name them: the socket path, the idle
timeout, the frame mode, and serving flags passed on the command line reaching the members.

The end-to-end test starts the real ``caldrix pool`` with no ``--socket``, so it listens where
a client looks by default, and drives it with ``caldrix pool status`` and ``caldrix pool stop``,
also without ``--socket``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from caldrix.cli.main import DEFAULT_IDLE_TIMEOUT_SECS, build_parser, serving_flags_from
from caldrix.cli.pool import server_settings
from caldrix.protocol.transport import default_socket_path
from tests.caldrix.pool_harness import DEFAULT_MODEL, EXIT_TIMEOUT_SECS, START_TIMEOUT_SECS, pool_command


def test_the_socket_is_under_xdg_runtime_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert default_socket_path() == tmp_path / "caldrix" / "pool.sock"


def test_without_xdg_runtime_dir_the_socket_is_in_tmp_per_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_socket_path() == Path(f"/tmp/caldrix-{os.getuid()}") / "pool.sock"
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")  # set but empty counts as unset
    assert default_socket_path() == Path(f"/tmp/caldrix-{os.getuid()}") / "pool.sock"


def test_flag_defaults_of_caldrix_pool() -> None:
    args = build_parser().parse_args(["pool"])
    flags = serving_flags_from(args)
    settings = server_settings(args, flags, default_socket_path())
    assert DEFAULT_IDLE_TIMEOUT_SECS == 1800
    assert settings.idle_timeout == 1800.0
    assert settings.frames == "cbor"
    assert flags.max_batch == 1
    assert flags.flash_attention is False
    assert settings.loads == []


def test_load_and_decision_get_their_member_names_and_the_serving_flags() -> None:
    args = build_parser().parse_args(
        [
            "pool",
            "--load",
            "a.gguf",
            "--load",
            "b.gguf",
            "--decision",
            "c.gguf",
            "--ctx",
            "512",
            "--threads",
            "1",
            "--idle-timeout",
            "0",
            "--frames",
            "json",
            "--memory-limit",
            "123456789",
            "--context-budget",
            "1000",
            "--flash-attention",
        ]
    )
    flags = serving_flags_from(args)
    settings = server_settings(args, flags, default_socket_path())
    assert settings.loads == [("main", "a.gguf"), ("member2", "b.gguf"), ("decision", "c.gguf")]
    assert (flags.ctx, flags.threads, flags.flash_attention) == (512, 1, True)
    assert settings.idle_timeout == 0.0 and settings.frames == "json"
    assert (settings.plan.limit, settings.plan.context_budget) == (123456789, 1000)


def _caldrix_pool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        pool_command(*args),
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_SECS,
        stdin=subprocess.DEVNULL,
    )


def _wait_for_socket(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while not path.exists():
        assert process.poll() is None, f"the pool exited with {process.returncode}"
        assert time.monotonic() < deadline, f"no socket at {path} after {START_TIMEOUT_SECS} s"
        time.sleep(0.2)


@pytest.mark.e2e
@pytest.mark.model
def test_a_pool_without_socket_flag_serves_the_default_path(tmp_path: Path) -> None:
    expected = Path(os.environ["XDG_RUNTIME_DIR"]) / "caldrix" / "pool.sock"
    log = (tmp_path / "pool.log").open("wb")
    process = subprocess.Popen(
        pool_command("--load", DEFAULT_MODEL, "--ctx", "256", "--threads", "1", "--idle-timeout", "0"),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        _wait_for_socket(expected, process)
        assert stat.S_IMODE(os.stat(expected.parent).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(expected).st_mode) == 0o600

        status = _caldrix_pool("status")
        assert status.returncode == 0, status.stderr
        assert f"on {expected}" in status.stdout
        members = json.loads(_caldrix_pool("status", "--json").stdout)["members"]
        assert [(m["name"], m["n_ctx"], m["threads"]) for m in members] == [("main", 256, 1)]

        stopped = _caldrix_pool("stop")
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the pool on {expected} (pid {process.pid})" in stopped.stdout
        assert process.wait(timeout=EXIT_TIMEOUT_SECS) == 0
        assert not expected.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
