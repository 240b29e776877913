"""Every op and error code of caldrix-protocol 2 against the real daemon, in both frame modes.

One pool process per frame mode serves the whole module: ``caldrix pool`` started as a
subprocess on a Unix socket in a temporary folder, with the tests' embedded model.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from caldrix.errors import (
    BadRequest,
    CaldrixError,
    ConstraintInvalid,
    ContextNotFound,
    ContextOverflow,
    DuplicateSegment,
    MemberExists,
    MemberNotFound,
    ModelNotFound,
    NoFit,
    PrecheckFailed,
    SegmentNotFound,
    UnknownOp,
)
from caldrix.protocol import DoneFrame, PoolClient, ProgressFrame, TokenFrame, connect
from caldrix.protocol.messages import ContextResult
from tests.caldrix.pool_harness import CLIENT_BOUNDS, DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.model]

WINDOW = 2048
SYSTEM = {"id": "sys", "role": "system", "text": "You are a terse assistant.", "pinned": True}
USER = {"id": "u1", "role": "user", "text": "Name one colour.", "pinned": False}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=["cbor", "json"])
def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    # Room for two small members but not three: 'main' at the window below plus one more at 512.
    folder = tmp_path_factory.mktemp(f"pool-{request.param}")
    process = start_pool(
        folder,
        "--load",
        DEFAULT_MODEL,
        "--ctx",
        str(WINDOW),
        "--memory-limit",
        "560000000",
        "--context-budget",
        "33554432",
        "--idle-timeout",
        "0",
        frames=request.param,
    )
    yield process
    process.stop()


@pytest.fixture
async def client(pool: PoolProcess) -> AsyncIterator[PoolClient]:
    connection = await connect(
        pool.socket_path, frames=pool.frames, client_name="pool-tests", bounds=CLIENT_BOUNDS
    )
    yield connection
    await connection.aclose()


async def _create(client: PoolClient, *segments: dict[str, Any]) -> ContextResult:
    return await client.context_create("main", list(segments or (SYSTEM, USER)))


async def test_hello_names_the_server_and_the_frame_mode(pool: PoolProcess, client: PoolClient) -> None:
    assert client.hello.protocol == 2
    assert client.hello.server.startswith("caldrix ")
    assert client.hello.pid == pool.process.pid
    assert client.hello.frames == pool.frames


async def test_auto_mode_finds_the_pools_frames(pool: PoolProcess) -> None:
    connection = await connect(pool.socket_path, bounds=CLIENT_BOUNDS)
    try:
        assert connection.mode == pool.frames
        assert (await connection.pool_status()).pid == pool.process.pid
    finally:
        await connection.aclose()


def test_folder_is_0700_and_socket_0600(pool: PoolProcess) -> None:
    assert stat.S_IMODE(os.stat(pool.socket_path.parent).st_mode) == 0o700
    info = os.lstat(pool.socket_path)
    assert stat.S_ISSOCK(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o600


async def test_member_list_describes_main(client: PoolClient) -> None:
    reply = await client.member_list()
    (main,) = [m for m in reply.members if m.name == "main"]
    assert main.model == DEFAULT_MODEL
    assert main.path.endswith(".gguf")
    assert main.state == "ready"
    assert main.n_ctx == WINDOW
    assert main.lane == "cpu"
    assert isinstance(main.footprint_bytes, int) and main.footprint_bytes > 0
    assert main.constraints == ["json", "one_of", "regex", "lark"]
    assert main.queue == 0
    assert reply.memory.limit == 560000000
    assert reply.memory.used >= main.footprint_bytes


async def test_pool_status_reports_counters(pool: PoolProcess, client: PoolClient) -> None:
    status = await client.pool_status()
    assert status.pid == pool.process.pid
    assert status.version
    assert status.uptime_s >= 0
    assert status.connections >= 1
    assert isinstance(status.contexts, int)
    assert status.members[0].name == "main"
    store = status.prefix_store["main"]
    assert set(store.model_dump()) == {"entries", "bytes", "budget", "hits", "misses"}
    assert store.budget == 33554432


async def test_context_create_counts_every_segment(client: PoolClient) -> None:
    reply = await _create(client)
    assert reply.context.startswith("c")
    assert [s.id for s in reply.segments] == ["sys", "u1"]
    assert all(s.tokens > 0 for s in reply.segments)
    # The generation prompt ('<|im_start|>assistant\n') comes after the segments.
    assert reply.tokens > sum(s.tokens for s in reply.segments)
    got = await client.context_get(reply.context)
    assert got.member == "main"
    assert got.tokens == reply.tokens
    assert got.segments[0].model_dump() == {**SYSTEM, "tokens": reply.segments[0].tokens}


async def test_context_edit_applies_in_order(client: PoolClient) -> None:
    created = await _create(client)
    reply = await client.context_edit(created.context, [
        {"op": "append", "segment": {"id": "a1", "role": "assistant", "text": "Blue.", "pinned": False}},
        {"op": "append", "segment": {"id": "u2", "role": "user", "text": "Another.", "pinned": False}},
        {"op": "replace", "id": "u1", "text": "Name one colour, please.", "pinned": True},
        {"op": "remove", "id": "a1"},
    ])  # fmt: skip
    assert [s.id for s in reply.segments] == ["sys", "u1", "u2"]
    assert reply.segments[0] == created.segments[0]
    assert reply.segments[1].tokens > created.segments[1].tokens
    got = await client.context_get(created.context)
    assert got.segments[1].text == "Name one colour, please."
    assert got.segments[1].pinned is True
    assert got.segments[1].role == "user"


async def test_context_edit_is_all_or_nothing(client: PoolClient) -> None:
    created = await _create(client)
    with pytest.raises(SegmentNotFound, match="nope") as caught:
        await client.context_edit(created.context, [
            {"op": "append", "segment": {"id": "u2", "role": "user", "text": "x", "pinned": False}},
            {"op": "remove", "id": "nope"},
        ])  # fmt: skip
    assert caught.value.details["segment"] == "nope"
    got = await client.context_get(created.context)
    assert [s.id for s in got.segments] == ["sys", "u1"]
    assert got.tokens == created.tokens


async def test_duplicate_segments_are_refused(client: PoolClient) -> None:
    with pytest.raises(DuplicateSegment):
        await _create(client, SYSTEM, SYSTEM)
    created = await _create(client)
    with pytest.raises(DuplicateSegment, match="u1"):
        await client.context_edit(created.context, [{"op": "append", "segment": USER}])
    with pytest.raises(DuplicateSegment):
        await client.generate(context=created.context, max_new_tokens=2, append={"id": "sys"}).result()


async def test_fork_keeps_leading_segments_and_is_independent(client: PoolClient) -> None:
    created = await _create(client)
    fork = await client.context_fork(created.context, 1)
    assert fork.context != created.context
    assert fork.segments == created.segments[:1]
    await client.context_drop(created.context)
    got = await client.context_get(fork.context)
    assert [s.id for s in got.segments] == ["sys"]
    with pytest.raises(BadRequest, match="keep"):
        await client.context_fork(fork.context, 5)


async def test_drop_ends_a_context(client: PoolClient) -> None:
    created = await _create(client)
    await client.context_drop(created.context)
    with pytest.raises(ContextNotFound):
        await client.context_get(created.context)
    with pytest.raises(ContextNotFound):
        await client.context_drop(created.context)
    with pytest.raises(ContextNotFound):
        await client.context_edit(created.context, [])


async def test_contexts_are_shared_across_connections(pool: PoolProcess, client: PoolClient) -> None:
    created = await _create(client)
    other = await connect(pool.socket_path, frames=pool.frames, bounds=CLIENT_BOUNDS)
    try:
        await other.context_edit(
            created.context,
            [{"op": "replace", "id": "u1", "text": "Name two colours."}],
        )
        done = await other.generate(context=created.context, max_new_tokens=4).result()
        assert done.prompt_tokens > 0
    finally:
        await other.aclose()
    got = await client.context_get(created.context)
    assert got.segments[1].text == "Name two colours."


async def test_generate_streams_tokens_then_done(client: PoolClient) -> None:
    created = await _create(client)
    frames = [frame async for frame in client.generate(context=created.context, max_new_tokens=12)]
    done = frames[-1]
    assert isinstance(done, DoneFrame)
    tokens = [f.text for f in frames if isinstance(f, TokenFrame)]
    assert "".join(tokens) == done.text
    assert done.prompt_tokens == created.tokens
    assert done.completion_tokens <= 12
    assert done.finish in ("stop", "length")
    assert 0 <= done.recomputed_from < done.prompt_tokens
    assert done.timings.queue_ms >= 0 and done.timings.prefill_ms > 0 and done.timings.decode_ms >= 0
    assert done.logprobs is None and done.segment is None
    assert all(f.rid == done.rid for f in frames)
    # A probe leaves the context as it was.
    got = await client.context_get(created.context)
    assert [s.id for s in got.segments] == ["sys", "u1"]


async def test_generate_with_append_stores_the_output(client: PoolClient) -> None:
    created = await _create(client)
    done = await client.generate(
        context=created.context, max_new_tokens=8, append={"id": "a1.m1", "pinned": True}
    ).result()
    assert done.segment is not None and done.segment.id == "a1.m1" and done.segment.tokens > 0
    got = await client.context_get(created.context)
    appended = got.segments[-1]
    assert appended.model_dump() == {
        "id": "a1.m1",
        "role": "assistant",
        "text": done.text,
        "pinned": True,
        "tokens": done.segment.tokens,
    }
    assert got.tokens == sum(s.tokens for s in got.segments) + (
        created.tokens - sum(s.tokens for s in created.segments)
    )


async def test_one_of_with_logprobs(client: PoolClient) -> None:
    created = await _create(client, SYSTEM, {"id": "u", "role": "user", "text": "Pick one.", "pinned": False})
    done = await client.generate(
        context=created.context,
        max_new_tokens=8,
        logprobs=3,
        constraint={"one_of": ["answer", "edit", "investigate", "plan"]},
    ).result()
    assert done.text in ("answer", "edit", "investigate", "plan")
    assert done.finish == "stop"
    assert done.logprobs is not None and len(done.logprobs) == done.completion_tokens
    assert all(len(entry.top) >= 1 for entry in done.logprobs)


async def test_json_constraint_yields_schema_valid_json(client: PoolClient) -> None:
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "maxLength": 12}},
        "required": ["colour"],
        "additionalProperties": False,
    }
    created = await _create(client)
    done = await client.generate(
        context=created.context, max_new_tokens=40, constraint={"json": schema}, temperature=0.7, seed=3
    ).result()
    assert done.finish == "stop", done
    jsonschema.validate(json.loads(done.text), schema)
    assert done.text == done.text.strip()


async def test_regex_and_lark_constraints_over_the_socket(client: PoolClient) -> None:
    created = await _create(
        client, SYSTEM, {"id": "u", "role": "user", "text": "How old is your cat?", "pinned": False}
    )
    pattern = r"[A-Z][a-z]+ is [0-9]{1,2} years old\."
    done = await client.generate(
        context=created.context, max_new_tokens=30, constraint={"regex": pattern}
    ).result()
    assert done.finish == "stop" and re.fullmatch(pattern, done.text), done
    grammar = 'start: "Colours: " colour (", " colour)? "."\ncolour: "red" | "green" | "blue"'
    done = await client.generate(
        context=created.context, max_new_tokens=30, constraint={"lark": grammar}
    ).result()
    assert done.finish == "stop", done
    colours = done.text.removeprefix("Colours: ").removesuffix(".").split(", ")
    assert done.text.startswith("Colours: ") and set(colours) <= {"red", "green", "blue"}, done.text


async def test_stop_strings_end_the_text(client: PoolClient) -> None:
    created = await _create(
        client, SYSTEM, {"id": "u", "role": "user", "text": "Count: 1, 2, 3, 4, 5, 6", "pinned": False}
    )
    done = await client.generate(context=created.context, max_new_tokens=30, stop=[","]).result()
    assert "," not in done.text


async def test_context_overflow_names_the_figures(client: PoolClient) -> None:
    created = await _create(client)
    with pytest.raises(ContextOverflow) as caught:
        await client.generate(context=created.context, max_new_tokens=WINDOW).result()
    assert caught.value.details == {"tokens": created.tokens, "max_new_tokens": WINDOW, "n_ctx": WINDOW}
    # An error reply ends the request, not the connection.
    assert (await client.member_list()).members


@pytest.mark.parametrize(
    ("constraint", "reason"),
    [
        ({"regex": "(unclosed"}, "unclosed group"),
        ({"lark": "start: undefined_rule"}, "undefined_rule"),
        ({"json": {"type": "nonsense"}}, "nonsense"),
    ],
)
async def test_constraint_invalid_carries_llguidances_reason(
    client: PoolClient, constraint: dict[str, Any], reason: str
) -> None:
    created = await _create(client)
    with pytest.raises(ConstraintInvalid, match=reason):
        await client.generate(context=created.context, max_new_tokens=4, constraint=constraint).result()
    assert (await client.pool_status()).members  # the pool still answers


async def test_not_found_errors(client: PoolClient) -> None:
    with pytest.raises(ContextNotFound):
        await client.generate(context="c999999", max_new_tokens=2).result()
    with pytest.raises(MemberNotFound, match="nobody"):
        await client.context_create("nobody", [SYSTEM])
    with pytest.raises(MemberNotFound):
        await client.member_unload("nobody")


async def test_unknown_op_and_bad_request_keep_the_connection(client: PoolClient) -> None:
    with pytest.raises(UnknownOp, match=r"pool\.explode"):
        await client.raw_request("pool.explode")
    with pytest.raises(BadRequest) as caught:
        await client.raw_request(
            "context.create", member="main", segments=[{"id": "x", "role": "bot", "text": "t"}]
        )
    assert caught.value.details["field"] == "segments.0.role"
    with pytest.raises(BadRequest, match="max_new_tokens"):
        await client.raw_request("generate", context="c1", max_new_tokens="lots")
    with pytest.raises(BadRequest, match=r"flags\.window"):
        await client.member_load("x", DEFAULT_MODEL, {"window": 5})
    with pytest.raises(BadRequest, match=r"flags\.ctx"):
        await client.member_load("x", DEFAULT_MODEL, {"ctx": 0})
    with pytest.raises(BadRequest, match=r"flags\.max_batch': only 1"):
        await client.member_load("x", DEFAULT_MODEL, {"max_batch": 2})
    assert (await client.pool_status()).connections >= 1


async def test_the_client_refuses_a_bad_request_as_the_pool_does(client: PoolClient) -> None:
    """The typed methods check a request before sending it, and refuse in the pool's words."""
    bad_segment = [{"id": "x", "role": "bot", "text": "t"}]
    bad_edit = [{"op": "append", "segment": {"id": "a", "role": "user"}}]
    cases = [
        (lambda: client.raw_request("context.create", member="main", segments=bad_segment),
         lambda: client.context_create("main", bad_segment)),
        (lambda: client.raw_request("context.edit", context="c0", edits=bad_edit),
         lambda: client.context_edit("c0", bad_edit)),
        (lambda: client.raw_request("context.fork", context="c0", keep=-1),
         lambda: client.context_fork("c0", -1)),
    ]  # fmt: skip
    for by_pool, by_client in cases:
        with pytest.raises(BadRequest) as pool_refusal:
            await by_pool()
        with pytest.raises(BadRequest) as client_refusal:
            await by_client()
        assert client_refusal.value.message == pool_refusal.value.message
        assert client_refusal.value.details == pool_refusal.value.details
    with pytest.raises(BadRequest, match="max_new_tokens"):
        client.generate("c0", 0)
    assert not client.closed


async def test_member_load_errors(client: PoolClient, tmp_path: Path) -> None:
    with pytest.raises(MemberExists):
        await client.member_load("main", DEFAULT_MODEL)
    with pytest.raises(ModelNotFound):
        await client.member_load("ghost", str(tmp_path / "missing.gguf"))
    not_a_model = tmp_path / "notes.gguf"
    not_a_model.write_bytes(b"these are notes, not weights\n" * 64)
    with pytest.raises(PrecheckFailed):
        await client.member_load("ghost", str(not_a_model))
    names = [m.name for m in (await client.member_list()).members]
    assert "ghost" not in names


async def test_member_load_fit_and_unload(client: PoolClient) -> None:
    loaded = await client.member_load("second", DEFAULT_MODEL, {"ctx": 512})
    assert loaded.member.name == "second" and loaded.member.state == "ready"
    assert loaded.member.n_ctx == 512
    context = await client.context_create("second", [SYSTEM, USER])
    done = await client.generate(context=context.context, max_new_tokens=3).result()
    assert done.prompt_tokens == context.tokens
    with pytest.raises(NoFit) as caught:
        await client.member_load("third", DEFAULT_MODEL, {"ctx": 512})
    assert caught.value.details["needed_bytes"] > caught.value.details["limit_bytes"] == 560000000
    await client.member_unload("second")
    with pytest.raises(ContextNotFound):
        await client.context_get(context.context)
    names = [m.name for m in (await client.member_list()).members]
    assert names == ["main"]


async def test_unloading_a_member_ends_its_running_generation(pool: PoolProcess, client: PoolClient) -> None:
    await client.member_load("brief", DEFAULT_MODEL, {"ctx": 512})
    generating = await connect(pool.socket_path, frames=pool.frames, bounds=CLIENT_BOUNDS)
    try:
        context = await generating.context_create("brief", [USER])
        run = generating.generate(
            context=context.context, max_new_tokens=400, constraint={"regex": "[a-z]{1200}"}
        )
        async for frame in run:
            if isinstance(frame, TokenFrame):
                break
        await client.member_unload("brief")
        with pytest.raises(MemberNotFound, match="unloaded during this generation"):
            async for _ in run:
                pass
        assert not generating.closed
        with pytest.raises(ContextNotFound):
            await generating.context_get(context.context)
    finally:
        await generating.aclose()


async def test_progress_frames_come_before_the_first_token(client: PoolClient) -> None:
    long_text = " ".join(f"Fact {i}: the number {i} follows {i - 1}." for i in range(1, 30))
    created = await _create(client, SYSTEM, {"id": "long", "role": "user", "text": long_text})
    assert created.tokens > 256
    frames = [f async for f in client.generate(context=created.context, max_new_tokens=2)]
    first_token = next((i for i, f in enumerate(frames) if isinstance(f, TokenFrame)), len(frames) - 1)
    progress = [f for f in frames[:first_token] if isinstance(f, ProgressFrame)]
    assert len(progress) >= 2
    assert all(p.total == created.tokens for p in progress)
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    assert progress[-1].done == progress[-1].total
    assert not any(isinstance(f, ProgressFrame) for f in frames[first_token:])


async def test_closing_mid_generate_cancels_it_and_the_queue_goes_on(pool: PoolProcess) -> None:
    first = await connect(pool.socket_path, frames=pool.frames, bounds=CLIENT_BOUNDS)
    second = await connect(pool.socket_path, frames=pool.frames, bounds=CLIENT_BOUNDS)
    try:
        created = await _create(first)
        queued = await _create(second)
        generation = first.generate(context=created.context, max_new_tokens=1500, temperature=1.0, seed=7)
        async for frame in generation:
            if isinstance(frame, TokenFrame):
                break
        # The second generation is sent while the first still runs, then the first client leaves.
        follower = second.generate(context=queued.context, max_new_tokens=3)
        await generation.aclose()
        assert first.closed
        done = await follower.result()
        assert done.completion_tokens <= 3
    finally:
        await first.aclose()
        await second.aclose()
    assert "generation cancelled after" in pool.log()


async def test_a_failed_request_does_not_break_the_client(client: PoolClient) -> None:
    with pytest.raises(CaldrixError):
        await client.context_get("c0")
    assert not client.closed
    assert (await client.pool_status()).members


async def test_a_member_serves_generations_in_queue_order(pool: PoolProcess, client: PoolClient) -> None:
    """Single stream: a short generation queued behind a longer one finishes after it."""
    first, second, third = [
        await connect(pool.socket_path, frames=pool.frames, bounds=CLIENT_BOUNDS) for _ in range(3)
    ]
    finished: list[str] = []
    try:
        contexts = [(await _create(c)).context for c in (first, second, third)]
        running = first.generate(context=contexts[0], max_new_tokens=40, constraint={"regex": "[a-z]{120}"})
        async for frame in running:
            if isinstance(frame, TokenFrame):
                break

        async def finish(name: str, generation: Any) -> None:
            await generation.result()
            finished.append(name)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(
                finish,
                "long",
                second.generate(context=contexts[1], max_new_tokens=20, constraint={"regex": "[a-z]{60}"}),
            )
            with anyio.fail_after(60):  # a bound on the wait, not a timing check
                while await _main_queue(client) < 2:
                    await anyio.sleep(0.05)
            tasks.start_soon(finish, "short", third.generate(context=contexts[2], max_new_tokens=2))
            async for _ in running:
                pass
    finally:
        for connection in (first, second, third):
            await connection.aclose()
    assert finished == ["long", "short"]


async def _main_queue(client: PoolClient) -> int:
    members = (await client.member_list()).members
    return int(next(m.queue for m in members if m.name == "main"))
