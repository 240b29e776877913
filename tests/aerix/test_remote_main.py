"""``aerix -p`` end to end on a remote main member: ``pool.main`` names a model on an
OpenAI-compatible server (llama-cpp-python's real server on the embedded model, on a loopback
port, with an API key), and autostart hands it to ``caldrix pool --load`` with its flags.

What the tiny model answers is not checked, only that the whole request ran on the server with
the pool's own counts: a route, the root's segments counted, turns with usage, a named outcome.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.aerix.request_world import (
    World,
    aerix,
    make_project,
    make_world,
    reported_turns,
    session_events,
    stop_pool,
)
from tests.openai_server import OpenAIServer, start_server

pytestmark = [pytest.mark.model, pytest.mark.e2e]

KEY_ENV = "AERIX_TEST_REMOTE_KEY"
KEY = "aerix-remote-main-key-81c2"
EXIT_OF = {"done": 0, "failed": 1, "budget": 2, "killed": 3}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAIServer]:
    served = start_server(tmp_path_factory.mktemp("remote-main-server"), api_key=KEY)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, server: OpenAIServer) -> Iterator[World]:
    root = tmp_path_factory.mktemp("remote-main")
    settings = {
        "pool": {
            "socket": str(root / "run" / "pool.sock"),
            "main": server.reference,
            "main_flags": {"ctx": 4096, "api_key_env": KEY_ENV},
        },
        "context": {"max_new_tokens": 96},
        "delegation": {"max_turns": 3},
    }
    world = make_world(root, settings)
    world.env[KEY_ENV] = KEY
    try:
        yield world
    finally:
        stop_pool(world, world.socket)


def test_a_request_runs_end_to_end_on_a_remote_main(world: World, server: OpenAIServer) -> None:
    project = make_project(world.root / "proj", {"README.md": "# Demo\nA demo project.\n"})
    done = aerix(world, project, "-p", "What is this project?", "--output-format", "json")
    assert done.stdout.strip(), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["outcome"] in EXIT_OF and done.returncode == EXIT_OF[result["outcome"]]

    log = world.pool_start_log.read_text()
    assert f"--load {shlex.quote(server.reference)} --ctx 4096 --api-key-env {KEY_ENV}" in log
    assert KEY not in log

    events = session_events(world, result["session_id"])
    types = [event["type"] for event in events]
    assert types[0] == "session.start" and types[-1] == "session.end"
    [route] = [e for e in events if e["type"] == "route"]
    assert route["choice"] in {"answer", "edit", "investigate", "plan"} and route["scores"]
    segments = [e for e in events if e["type"] == "segment" and e["agent"] == "a1"]
    assert segments[0]["kind"] == "system" and "prompt" in [s["kind"] for s in segments]
    assert all(isinstance(s["tokens"], int) and s["tokens"] > 0 for s in segments)
    turns = [e for e in events if e["type"] == "message" and e["role"] == "assistant" and e["agent"] == "a1"]
    assert turns and all(t["usage"]["prompt_tokens"] > 0 for t in reported_turns(events, "a1"))
    # The generations reached the server (a stopped one too): it logged a completion request for each.
    assert server.log().count("POST /v1/completions") >= len(turns) + 1  # and routing's
    assert KEY not in json.dumps(events)
    assert "Traceback" not in Path(world.pool_start_log).read_text()
