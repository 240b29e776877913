"""The screen's hold on a running request, without the screen: ``RequestControls`` through the
real request (``run_request`` with the real adapters), the real pool daemon and a scripted main
member. The plan gate holds the root's first plan write of a request and only that; an abort and
a cancel end the request ``cancelled``, killing a running command's process group; ``-p`` (no
controls) never gates."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.ports.request import PlanReview, RequestControls, RequestObserver, RequestResult
from aerix.app.request.options import RequestOptions, SessionOptions
from aerix.app.request.session import run_request
from aerix.domain import events as ev
from aerix.wiring.requests import request_deps
from tests.aerix.request_world import make_project, make_world, pinned_main, start_scripted_pool

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def turn(*calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"thought": "Go.", "calls": [{"tool": tool, "input": args} for tool, args in calls]})


def plan(text: str) -> str:
    return turn(("plan", {"op": "write", "text": text}))


FINAL = json.dumps({"thought": "Ok.", "final": "Done."})


class Gate:
    """A plan gate that answers as told and remembers what it was shown."""

    def __init__(self, review: PlanReview) -> None:
        self.review_given = review
        self.shown: list[tuple[str, str]] = []

    async def review(self, agent: str, text: str) -> PlanReview:
        self.shown.append((agent, text))
        return self.review_given


class Events(RequestObserver):
    def __init__(self) -> None:
        self.records: list[ev.EventBase] = []

    def event(self, record: ev.EventBase) -> None:
        self.records.append(record)

    def of(self, kind: type[ev.EventBase]) -> list[Any]:
        return [record for record in self.records if isinstance(record, kind)]


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Any]:
    """``start(completions)``: a scripted pool for this test, and the project to run in."""
    started: list[Any] = []
    socket = tmp_path / "run" / "pool.sock"
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "aerix" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(pinned_main({"pool": {"socket": str(socket)}})))
    world = make_world(tmp_path / "world", {})

    def start(completions: list[str]) -> Path:
        started.append(start_scripted_pool(world, socket, completions))
        return make_project(tmp_path / "proj", {"README.md": "# Demo\n"})

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=60)


async def run(project: Path, controls: RequestControls | None) -> tuple[RequestResult, Events]:
    sessions = SessionFiles()
    events = Events()
    try:
        result = await run_request(
            SessionOptions(project), RequestOptions("Plan it"), request_deps(sessions), events, controls
        )
    finally:
        sessions.log.close()
    return result, events


async def test_only_the_roots_first_plan_write_waits_and_an_accept_goes_on(scripted: Any) -> None:
    project = scripted(["plan", plan("1. first"), plan("1. second"), FINAL, FINAL])
    gate = Gate(PlanReview("accept"))
    result, events = await run(project, RequestControls(plan_gate=gate))
    assert result.outcome == "done" and result.result == "Done."
    assert gate.shown == [("a1", "1. first")]
    assert [(p.text, p.gate) for p in events.of(ev.Plan)] == [("1. first", "accepted"), ("1. second", None)]


async def test_an_edit_replaces_the_plan_and_tells_the_agent(scripted: Any) -> None:
    project = scripted(["plan", plan("1. theirs"), FINAL, FINAL])
    result, events = await run(project, RequestControls(plan_gate=Gate(PlanReview("edit", "1. mine"))))
    assert result.outcome == "done"
    [written] = events.of(ev.Plan)
    assert (written.text, written.gate, written.proposed) == ("1. mine", "edited", "1. theirs")
    [plan_result] = [m for m in events.of(ev.Message) if m.tool == "plan"]
    assert "the user edited your plan; follow this version:\n1. mine" in plan_result.text


async def test_an_abort_ends_the_request_cancelled_before_another_turn(scripted: Any) -> None:
    project = scripted(["plan", plan("1. doomed"), FINAL])
    result, events = await run(project, RequestControls(plan_gate=Gate(PlanReview("abort"))))
    assert (result.outcome, result.reason, result.exit_code) == ("cancelled", "plan aborted at the gate", 130)
    assert [p.gate for p in events.of(ev.Plan)] == ["aborted"]
    turns = [m for m in events.of(ev.Message) if m.role == "assistant"]
    assert len(turns) == 1  # the final after the plan was never asked for
    [end] = events.of(ev.SessionEnd)
    assert end.outcome == "cancelled"


async def test_without_controls_nothing_waits(scripted: Any) -> None:
    project = scripted(["plan", plan("1. free"), FINAL, FINAL])
    result, events = await run(project, None)
    assert result.outcome == "done"
    assert [(p.text, p.gate) for p in events.of(ev.Plan)] == [("1. free", None)]


async def test_cancel_kills_a_running_commands_process_group_and_records_it(scripted: Any) -> None:
    project = scripted(["answer", turn(("bash", {"command": "echo $$ > sleeper.pid; sleep 300"})), FINAL])
    controls = RequestControls()
    pid_file = project / "sleeper.pid"

    async def cancel_once_it_runs() -> None:
        while not (pid_file.exists() and pid_file.read_text().strip()):
            await anyio.sleep(0.05)
        controls.cancel.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(cancel_once_it_runs)
        result, events = await run(project, controls)
    assert (result.outcome, result.reason, result.exit_code) == ("cancelled", "cancelled", 130)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    [bash_result] = [m for m in events.of(ev.Message) if m.tool == "bash"]
    assert bash_result.text.rstrip().endswith("[cancelled]")
    [root_end] = events.of(ev.AgentEnd)
    assert (root_end.outcome, root_end.reason) == ("killed", "cancelled")
    [end] = events.of(ev.SessionEnd)
    assert end.outcome == "cancelled"
