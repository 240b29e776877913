"""The memory fit in the real daemon: a member whose footprint is unknown only ever loads alone.

A legacy GGML file has no footprint that can be estimated before it is loaded (ctransformers
reports neither its KV buffer nor its scratch buffers), so the pool must refuse it beside a
resident member, and must refuse a second member beside it — both ways, with ``no_fit``. The
pool is the real ``caldrix pool`` subprocess; the legacy file is a tiny gpt2 written by the tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from caldrix.errors import NoFit
from caldrix.protocol import PoolClient, connect
from tests.caldrix.ggml_writer import write_tiny_gpt2
from tests.caldrix.pool_harness import CLIENT_BOUNDS, DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.e2e, pytest.mark.model]

LEGACY_FLAGS = {"engine": "ctransformers", "model_type": "gpt2", "threads": 1}


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp("fit")
    process = start_pool(
        folder, "--load", DEFAULT_MODEL, "--ctx", "512", "--threads", "1", "--idle-timeout", "0"
    )
    yield process
    process.stop()


def test_an_unknown_footprint_loads_only_alone_both_ways(pool: PoolProcess, tmp_path: Path) -> None:
    legacy = str(write_tiny_gpt2(tmp_path / "tiny-gpt2.bin"))

    async def scenario() -> tuple[str, str, list[str]]:
        async with await connect(pool.socket_path, bounds=CLIENT_BOUNDS) as client:
            with pytest.raises(NoFit) as beside_main:
                await client.member_load("legacy", legacy, LEGACY_FLAGS)
            await client.member_unload("main")
            alone = await client.member_load("legacy", legacy, LEGACY_FLAGS)
            assert alone.member.state == "ready"
            with pytest.raises(NoFit) as beside_legacy:
                await client.member_load("second", DEFAULT_MODEL, {"ctx": 512})
            members = (await client.member_list()).members
            return str(beside_main.value), str(beside_legacy.value), [m.name for m in members]

    refused_legacy, refused_second, names = anyio.run(scenario)
    assert "footprint is unknown, so it loads only alone" in refused_legacy
    assert "resident member's memory footprint is unknown" in refused_second
    assert names == ["legacy"]


def test_a_legacy_members_chat_template_is_chosen_by_flag(pool: PoolProcess, tmp_path: Path) -> None:
    """Legacy files carry no template: ChatML unless member.load's flags name another."""
    legacy = str(write_tiny_gpt2(tmp_path / "tiny-gpt2.bin"))
    plain = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    request = {"id": "u", "role": "user", "text": "Reply.", "pinned": False}

    async def tokens_with(client: PoolClient, flags: dict[str, object]) -> tuple[int, str]:
        for member in (await client.member_list()).members:
            await client.member_unload(member.name)  # a legacy member loads alone
        await client.member_load("legacy", legacy, flags)
        context = await client.context_create("legacy", [request])
        done = await client.generate(context.context, 4, constraint={"one_of": ["ok"]}).result()
        return int(context.tokens), done.text

    async def scenario() -> tuple[tuple[int, str], tuple[int, str]]:
        async with await connect(pool.socket_path, bounds=CLIENT_BOUNDS) as client:
            chatml = await tokens_with(client, LEGACY_FLAGS)
            custom = await tokens_with(client, {**LEGACY_FLAGS, "chat_template": plain})
            return chatml, custom

    (chatml_tokens, chatml_text), (plain_tokens, plain_text) = anyio.run(scenario)
    assert plain_tokens <= len("Reply.")  # the bare text: no role markers around it
    assert chatml_tokens > plain_tokens + len("<|im_start|>user\n")  # ChatML's markers, byte-spelled
    assert chatml_text == plain_text == "ok"
