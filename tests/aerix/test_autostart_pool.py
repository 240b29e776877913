"""Autostart, the pool adapter and routing against a real caldrix pool on a real socket.

One pool per module: it is started by autostart itself (from two processes at once) and
stopped with ``caldrix pool stop`` at teardown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aerix.adapters.pool.autostart import AutostartPool, find_or_start_pool, pool_start_log
from aerix.adapters.pool.client import CaldrixPool, client_bounds
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.pool.members import BoundMembers, bind_members
from aerix.app.ports.pool import SegmentAppend
from aerix.app.request.routing import ROUTES, route_request
from aerix.domain.settings import MemberFlags, PoolSettings
from aerix.errors import ContextOverflow, PoolError, PoolStartFailed, PoolUnavailable
from caldrix.protocol.messages import PoolStatusResult
from caldrix.protocol.transport import SOCKET_PATH_MAX_BYTES
from tests.aerix.request_world import MODEL, aerix, make_project, make_world

pytestmark = [pytest.mark.model, pytest.mark.e2e]

CALDRIX = str(Path(sys.executable).parent / "caldrix")
START_ONE = """
import json, sys, anyio
from aerix.adapters.pool.autostart import find_or_start_pool
from aerix.domain.settings import PoolSettings, MemberFlags
settings = PoolSettings(socket=sys.argv[1], main=sys.argv[2], main_flags=MemberFlags(ctx=1024))
found = anyio.run(find_or_start_pool, settings)
print(json.dumps({"pid": found.pid, "started": found.started}))
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two processes autostart at once on one socket; whoever wins, one pool runs."""
    root = tmp_path_factory.mktemp("autostart")
    env = {**os.environ, "XDG_STATE_HOME": str(root / "state"), "XDG_RUNTIME_DIR": str(root / "run")}
    socket = root / "run" / "pool.sock"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", START_ONE, str(socket), MODEL], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        results = [json.loads(p.communicate(timeout=300)[0]) for p in starters]
        yield {"socket": socket, "results": results, "log": root / "state" / "aerix" / "pool-start.log"}
    finally:
        stop = [CALDRIX, "pool", "stop", "--socket", str(socket)]
        subprocess.run(stop, env=env, capture_output=True, timeout=60)


def test_two_processes_starting_at_once_start_one_pool(world: dict[str, Any]) -> None:
    results = world["results"]
    assert results[0]["pid"] == results[1]["pid"]
    assert sorted(r["started"] for r in results) == [False, True]
    log = world["log"].read_text()
    assert log.count(" starts: ") == 1
    assert f"pool --socket {world['socket']} --load {MODEL} --ctx 1024" in log


def test_a_running_pool_is_found_not_started(world: dict[str, Any]) -> None:
    async def main() -> tuple[int, bool]:
        opened = await AutostartPool().open(PoolSettings(socket=str(world["socket"]), main=MODEL))
        await opened.aclose()
        return opened.pid, opened.started

    assert anyio.run(main) == (world["results"][0]["pid"], False)
    assert not pool_start_log().exists()  # this process's own state dir: nothing was started


def test_contexts_and_generation_through_the_port(world: dict[str, Any]) -> None:
    async def main() -> None:
        async with CaldrixPool(world["socket"]) as pool:
            members = await bind_members(pool, PoolSettings(socket=str(world["socket"]), main=MODEL))
            assert members.router.name == "main" and members.main.n_ctx == 1024
            created = await pool.contexts.create(
                "main",
                [
                    {"id": "s", "role": "system", "text": "You answer briefly.", "pinned": True},
                    {"id": "u", "role": "user", "text": "Say hi.", "pinned": False},
                ],
            )
            assert [c.id for c in created.segments] == ["s", "u"]
            assert created.tokens >= sum(c.tokens for c in created.segments)  # plus the generation prompt
            streamed: list[str] = []
            append = SegmentAppend("a")
            done = await pool.contexts.generate(created.context, 6, append=append, on_token=streamed.append)
            assert done.text == "".join(streamed) and done.completion_tokens <= 6
            assert done.segment is not None and done.segment.id == "a"
            after = await pool.contexts.get(created.context)
            assert [c.id for c in after.segments] == ["s", "u", "a"] and after.member == "main"
            edited = await pool.contexts.edit(created.context, [{"op": "remove", "id": "a"}])
            assert edited.tokens == created.tokens
            fork = await pool.contexts.fork(created.context, keep=1)
            assert [c.id for c in fork.segments] == ["s"]
            with pytest.raises(ContextOverflow):
                await pool.contexts.generate(created.context, 5000)
            for context in (created.context, fork.context):
                await pool.contexts.drop(context)
            with pytest.raises(PoolError) as missing:
                await pool.contexts.get(created.context)
            assert missing.value.code == "context_not_found"

    anyio.run(main)


def test_routing_records_a_route_event_with_scores(world: dict[str, Any]) -> None:
    recorded: list[tuple[type[Any], dict[str, Any]]] = []

    class Recorder:
        def record(self, event_cls: type[Any], **fields: Any) -> Any:
            recorded.append((event_cls, fields))
            return None

    async def main() -> None:
        async with CaldrixPool(world["socket"]) as pool:
            choice = await route_request(pool, "main", "What does 2 + 2 make?", EmbeddedPrompts(), Recorder())
            assert choice.choice in ROUTES
            contexts = (await pool_status(world["socket"])).contexts
            assert contexts == 0  # the throwaway context was dropped

    anyio.run(main)
    [(event_cls, fields)] = recorded
    assert event_cls.__name__ == "RouteDecision" and fields["choice"] in ROUTES
    assert fields["member"] == "main" and fields["choice"] in fields["scores"]


def test_no_pool_on_the_socket_is_one_clear_error(tmp_path: Path) -> None:
    async def main() -> None:
        async with CaldrixPool(tmp_path / "nothing.sock") as pool:
            await pool.members.loaded()

    with pytest.raises(PoolUnavailable, match="no pool answers"):
        anyio.run(main)


async def pool_status(socket: Path) -> PoolStatusResult:
    from caldrix.protocol import connect

    client = await connect(socket, bounds=client_bounds(PoolSettings()))
    try:
        return await client.pool_status()
    finally:
        await client.aclose()


def test_member_flags_become_the_autostart_command() -> None:
    from aerix.adapters.pool.autostart import start_command

    settings = PoolSettings(main="m.gguf", main_flags=MemberFlags(ctx=4096, threads=2))
    command = start_command(settings, Path("/s"))
    assert command[1:] == [
        *["pool", "--socket", "/s", "--load", "m.gguf", "--ctx", "4096", "--threads", "2"],
        *["--max-connections", "4"],
    ]
    assert start_command(PoolSettings(max_connections=2), Path("/s"))[-2:] == ["--max-connections", "2"]


@pytest.mark.parametrize("on", [True, False])
def test_a_switch_in_member_flags_is_a_flag_caldrix_pool_reads(on: bool) -> None:
    from aerix.adapters.pool.autostart import start_command
    from caldrix.cli.main import build_parser, serving_flags_from

    settings = PoolSettings(main="m.gguf", main_flags=MemberFlags(flash_attention=on))
    command = start_command(settings, Path("/s"))
    assert ("--flash-attention" in command) is on
    assert serving_flags_from(build_parser().parse_args(command[1:])).flash_attention is on
    assert MemberFlags(flash_attention=on).as_load_flags() == {"flash_attention": on}


def test_a_pool_that_cannot_start_is_one_line_with_its_reason(tmp_path: Path) -> None:
    """The pool's own last line says why; the log keeps each start's header on its own line even
    when the pool's last message had no newline."""
    socket = tmp_path / "run" / "p.sock"
    settings = PoolSettings(socket=str(socket), main=str(tmp_path / "none.gguf"))
    for _ in range(2):
        with pytest.raises(PoolStartFailed) as failed:
            anyio.run(find_or_start_pool, settings)
    message = str(failed.value)
    assert message.startswith(f"the pool exited with status 1 before answering on {socket}: caldrix: --load")
    assert "no model file at" in message and f"; see {pool_start_log()} (" in message and "\n" not in message
    headers = [line for line in pool_start_log().read_text().splitlines() if " starts: " in line]
    assert len(headers) == 2 and all(line.startswith("--- ") for line in headers)


# Last in the module: it leaves a decision member in the pool, which later binds would use.
def test_a_decision_member_is_loaded_within_the_start_timeout_and_routes(world: dict[str, Any]) -> None:
    """A configured ``pool.decision`` is loaded with ``member.load``, bounded by
    ``pool.start_timeout_secs``: with a bound no load can meet, main routes and a note says why;
    once the pool has it, it routes."""
    socket = world["socket"]

    def settings(timeout: float) -> PoolSettings:
        return PoolSettings(
            socket=str(socket),
            main=MODEL,
            decision=MODEL,
            decision_flags=MemberFlags(ctx=512),
            start_timeout_secs=timeout,
        )

    async def bind(timeout: float) -> BoundMembers:
        opened = await AutostartPool().open(settings(timeout))
        try:
            return await bind_members(opened.pool, settings(timeout))
        finally:
            await opened.aclose()

    async def wait_while_loading() -> None:
        async with CaldrixPool(socket) as pool:
            while any(m.name == "decision" and m.state == "loading" for m in await pool.members.loaded()):
                await anyio.sleep(0.2)

    async def route_on_the_decision_member() -> tuple[BoundMembers, list[dict[str, Any]]]:
        recorded: list[dict[str, Any]] = []

        class Recorder:
            def record(self, event_cls: type[Any], **fields: Any) -> Any:
                recorded.append(fields)

        members = await bind(900)
        async with CaldrixPool(socket) as pool:
            prompt = "Fix the typo in README.md."
            await route_request(pool, members.router.name, prompt, EmbeddedPrompts(), Recorder())
        return members, recorded

    hurried = anyio.run(bind, 0.001)
    assert hurried.decision is None and hurried.router.name == "main"
    [note] = hurried.notes
    assert note.startswith("decision member smollm2-135m not loaded (") and "member.load" in note
    assert note.endswith("; main routes")

    anyio.run(wait_while_loading)
    members, [route] = anyio.run(route_on_the_decision_member)
    assert members.decision is not None and members.decision.name == "decision"
    assert members.router.name == "decision" and members.decision.n_ctx == 512
    assert route["member"] == "decision" and route["choice"] in ROUTES


def test_an_unwritable_socket_folder_is_refused_as_caldrix_pool_refuses_it(tmp_path: Path) -> None:
    """aerix does not start a pool in a socket folder its mode keeps from being written, and
    says so in caldrix's own words (tests/caldrix/test_cli.py has caldrix's side); neither
    changes the folder's mode."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o500)
    world = make_world(tmp_path / "world", {"pool": {"socket": str(folder / "pool.sock")}})
    project = make_project(tmp_path / "proj", {"a.txt": "one\n"})
    refused = aerix(world, project, "-p", "hi")
    assert (refused.returncode, refused.stderr) == (
        1,
        f"aerix: the socket folder {folder} is not writable (mode 500); make it writable "
        f"(chmod u+wx {folder}) or choose another socket with the pool.socket setting\n",
    )
    assert oct(folder.stat().st_mode & 0o777) == oct(0o500)


def test_a_socket_path_too_long_for_a_unix_socket_is_refused_before_a_pool_starts(tmp_path: Path) -> None:
    """pool.socket past SOCKET_PATH_MAX_BYTES: aerix starts no pool that could not bind, and says
    so in caldrix's words (tests/caldrix/test_cli.py has caldrix's side)."""
    path = tmp_path / ("x" * SOCKET_PATH_MAX_BYTES) / "pool.sock"
    world = make_world(tmp_path / "world", {"pool": {"socket": str(path)}})
    project = make_project(tmp_path / "proj", {"a.txt": "one\n"})
    refused = aerix(world, project, "-p", "hi")
    assert (refused.returncode, refused.stderr) == (
        1,
        f"aerix: the socket path {path} is {len(os.fsencode(path))} bytes, longer than the "
        f"{SOCKET_PATH_MAX_BYTES} a Unix socket path may have; choose a shorter one with the "
        "pool.socket setting\n",
    )
    assert not path.parent.exists()
