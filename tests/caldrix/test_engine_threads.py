"""How many threads a member computes on: every CPU the pool may run on unless ``--threads``
(or a member's ``threads`` flag) says otherwise, and the same figure wherever it is shown.

The pure choice (:mod:`caldrix.engines.cpu_threads`) is checked with made-up CPU sets; the rest
runs the real pool on the embedded model, once as it starts and once pinned to one CPU with
``taskset``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caldrix.engines.cpu_threads import MIN_THREADS, engine_threads, usable_cpus
from tests.caldrix.pool_harness import (
    DEFAULT_MODEL,
    EXIT_TIMEOUT_SECS,
    PoolProcess,
    pool_command,
    raw_connection,
    start_pool,
)

SMALL = ("--ctx", "256", "--idle-timeout", "0")
#: The CPUs this test process may run on; a pool it starts inherits them.
HERE = len(os.sched_getaffinity(0))


# --- the choice -------------------------------------------------------------------------------


def test_usable_cpus_counts_the_affinity_mask_not_the_machine() -> None:
    assert usable_cpus(lambda pid: {0, 5, 7}, lambda: 64) == 3


def test_usable_cpus_falls_back_to_the_cpu_count_without_an_affinity_call() -> None:
    assert usable_cpus(None, lambda: 6) == 6


def test_usable_cpus_is_at_least_one_when_nothing_can_be_counted() -> None:
    assert usable_cpus(None, lambda: None) == MIN_THREADS == 1


def test_usable_cpus_by_default_is_this_process_affinity() -> None:
    assert usable_cpus() == HERE


def test_engine_threads_is_every_usable_cpu_unless_asked() -> None:
    assert engine_threads(None, 8) == 8
    assert engine_threads(None, 0) == MIN_THREADS
    assert engine_threads(3, 8) == 3
    assert engine_threads(12, 2) == 12  # asked for is kept, even past the CPUs


# --- the pool ---------------------------------------------------------------------------------


def _members(pool: PoolProcess) -> dict[str, dict[str, Any]]:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        connection.send({"op": "member.list", "rid": 1})
        reply = connection.receive()
    assert reply["op"] == "ok", reply
    return {member["name"]: member for member in reply["members"]}


def _status(pool: PoolProcess) -> str:
    shown = subprocess.run(
        pool_command("status", "--socket", str(pool.socket_path)),
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_SECS,
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def _threads_words(n: int) -> str:
    return f", cpu, {n} thread{'' if n == 1 else 's'}, queue 0"


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    process = start_pool(tmp_path_factory.mktemp("threads"), "--load", DEFAULT_MODEL, *SMALL)
    yield process
    process.stop()


@pytest.mark.e2e
@pytest.mark.model
def test_a_member_without_threads_computes_on_every_cpu_the_pool_may_use(pool: PoolProcess) -> None:
    assert _members(pool)["main"]["threads"] == HERE
    assert f"main: ready, {DEFAULT_MODEL}, n_ctx 256" in (status := _status(pool))
    assert _threads_words(HERE) in status


@pytest.mark.e2e
@pytest.mark.model
def test_a_member_loaded_with_threads_keeps_them(pool: PoolProcess) -> None:
    asked = HERE + 1  # not the default, whatever the machine
    with raw_connection(pool.socket_path, pool.frames) as connection:
        connection.send(
            {
                "op": "member.load",
                "rid": 1,
                "name": "asked",
                "model": DEFAULT_MODEL,
                "flags": {"ctx": 256, "threads": asked},
            }
        )
        loaded = connection.receive()
        assert loaded["op"] == "ok" and loaded["member"]["threads"] == asked, loaded
        try:
            assert _members(pool)["asked"]["threads"] == asked
            assert _threads_words(asked) in _status(pool)
        finally:
            connection.send({"op": "member.unload", "rid": 2, "name": "asked"})
            assert connection.receive()["op"] == "ok"


@pytest.mark.e2e
@pytest.mark.model
@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is not installed")
def test_a_pool_pinned_to_one_cpu_runs_one_thread(tmp_path: Path) -> None:
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, prefix=("taskset", "-c", "0"))
    try:
        allowed = Path(f"/proc/{pool.process.pid}/status").read_text()
        assert "Cpus_allowed_list:\t0\n" in allowed  # taskset ran the pool itself, pinned
        assert _members(pool)["main"]["threads"] == 1
        assert _threads_words(1) in _status(pool)
    finally:
        pool.stop()


@pytest.mark.e2e
@pytest.mark.model
def test_threads_on_the_command_line_are_kept(tmp_path: Path) -> None:
    asked = HERE + 1
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, "--threads", str(asked))
    try:
        assert _members(pool)["main"]["threads"] == asked
    finally:
        pool.stop()
