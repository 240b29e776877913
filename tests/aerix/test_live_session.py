"""A session held across requests (``LiveSession``), through the stream-json input's use case
with the real adapters, the real pool daemon and a scripted main member: the second prompt
continues the first's session on the pool bound once, without reading the log back, and its
root starts from the context the writer kept."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aerix.adapters.claude.output import HeadlessOutput
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.ports.stream import UserPrompt
from aerix.app.request.options import RequestFlags, SessionOptions
from aerix.app.request.stream import serve_stream
from aerix.app.sessions.queries import load_for_resume, rebuild
from aerix.projections.claude_stream import ClaudeStream
from aerix.wiring.requests import request_deps
from tests.aerix.request_world import make_project, make_world, pinned_main, start_scripted_pool

pytestmark = [pytest.mark.e2e]

FINAL = json.dumps({"thought": "Ok.", "final": "Done."})


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    socket = tmp_path / "run" / "pool.sock"
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "aerix" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(pinned_main({"pool": {"socket": str(socket)}})))
    world = make_world(tmp_path / "world", {})
    pool = start_scripted_pool(world, socket, ["answer", FINAL, "answer", FINAL])
    yield make_project(tmp_path / "proj", {"README.md": "# Demo\n"})
    pool.terminate()
    pool.wait(timeout=60)


def test_two_prompts_run_on_one_held_session_without_reading_its_log_back(project: Path) -> None:
    sessions = SessionFiles()
    deps = request_deps(sessions)
    reads: list[str] = []
    opens: list[Any] = []
    read, open_pool = sessions.log.read, deps.pools.open

    def counted_read(ref: Any) -> Any:
        reads.append(ref.id)
        return read(ref)

    async def counted_open(settings: Any) -> Any:
        opens.append(settings)
        return await open_pool(settings)

    sessions.log.read = counted_read  # type: ignore[method-assign]
    deps.pools.open = counted_open  # type: ignore[method-assign]
    out, err = io.StringIO(), io.StringIO()
    output = HeadlessOutput("stream-json", out, err, ClaudeStream())
    prompts = [UserPrompt("first question"), UserPrompt("second question")]
    try:
        code = anyio.run(
            serve_stream, SessionOptions(project), RequestFlags(), deps, output, lambda: iter(prompts)
        )
    finally:
        sessions.log.close()
    assert code == 0, err.getvalue()
    results = [line for line in map(json.loads, out.getvalue().splitlines()) if line["type"] == "result"]
    assert [(r["outcome"], r["request"], r["resumed"]) for r in results] == [
        ("done", 1, False),
        ("done", 2, True),
    ]
    assert results[0]["session_id"] == results[1]["session_id"]
    # The log is never read back: the first request started the session, so its transcript
    # follows it from the session.start on; the second request neither resumes nor reopens it
    # from the file. The pool is opened and its members bound once.
    assert reads == [] and len(opens) == 1
    # What the transcript followed as it went is what a rebuild from the log writes.
    ref = sessions.catalog.find(results[0]["session_id"])
    followed = ref.transcript.read_bytes()
    (rebuilt,) = rebuild(sessions, ref.id)
    assert b"second question" in followed and rebuilt.transcript is not None
    assert rebuilt.transcript.read_bytes() == followed
    # The second request's root started from the first's context, as a resume from the log would.
    state = load_for_resume(sessions, results[0]["session_id"])
    prompts_seen = [seg.text for seg in state.root.ordered() if seg.kind == "prompt"]
    assert (
        len(prompts_seen) == 2
        and "first question" in prompts_seen[0]
        and "second question" in prompts_seen[1]
    )


def test_a_pool_gone_between_prompts_is_found_again_and_the_session_goes_on(tmp_path: Path) -> None:
    """The pool stopped (or crashed) after the first prompt and another answers on its socket:
    the second prompt opens the same session again on it, rather than failing on the old
    connection for every prompt until the screen or the stream is restarted."""
    socket = tmp_path / "run" / "pool.sock"
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "aerix" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(pinned_main({"pool": {"socket": str(socket)}})))
    world = make_world(tmp_path / "world", {})
    pools = [start_scripted_pool(world, socket, ["answer", FINAL])]
    project = make_project(tmp_path / "proj", {"README.md": "# Demo\n"})
    sessions = SessionFiles()
    out, err = io.StringIO(), io.StringIO()
    output = HeadlessOutput("stream-json", out, err, ClaudeStream())

    def results() -> list[dict[str, Any]]:
        return [line for line in map(json.loads, out.getvalue().splitlines()) if line["type"] == "result"]

    def prompts() -> Iterator[UserPrompt]:
        yield UserPrompt("first question")
        deadline = time.monotonic() + 120
        while not results():
            assert time.monotonic() < deadline, "the first prompt never ended"
            time.sleep(0.05)
        pools[0].terminate()
        pools[0].wait(timeout=60)
        pools.append(start_scripted_pool(world, socket, ["answer", FINAL]))
        yield UserPrompt("second question")

    try:
        code = anyio.run(
            serve_stream, SessionOptions(project), RequestFlags(), request_deps(sessions), output, prompts
        )
    finally:
        sessions.log.close()
        for pool in pools:
            pool.terminate()
            pool.wait(timeout=60)
    assert code == 0, err.getvalue()
    ended = results()
    assert [(r["outcome"], r["request"]) for r in ended] == [("done", 1), ("done", 2)]
    assert ended[0]["session_id"] == ended[1]["session_id"]
    state = load_for_resume(sessions, ended[0]["session_id"])
    assert [seg.text for seg in state.root.ordered() if seg.kind == "prompt"][-1].endswith("second question")
