"""The hook runner on real processes: ``sh -c`` in the project, stdin one JSON object, the
environment, handlers of one event in parallel, the timeout then TERM/KILL of the whole group."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from aerix.adapters.tools.hook_runner import SubprocessHooks
from aerix.domain.hook_contract import SelectedHandler
from tests.aerix.test_tools_bash import pid_alive

pytestmark = pytest.mark.anyio


def handler(
    command: str, timeout: float = 60, root: str | None = None, args: tuple[str, ...] | None = None
) -> SelectedHandler:
    return SelectedHandler("PreToolUse", "", command, args, timeout, "kit" if root else None, root)


async def test_stdin_environment_and_cwd(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    script = (
        f'cat > {out}/stdin.json; pwd > {out}/cwd; printf "%s|%s|%s" "$CLAUDE_PROJECT_DIR" '
        f'"$AERIX_PROJECT_DIR" "${{CLAUDE_PLUGIN_ROOT:-none}}" > {out}/env; '
        "echo to-stdout; echo to-stderr >&2; exit 3"
    )
    runner = SubprocessHooks(project, {**os.environ, "CLAUDE_PLUGIN_ROOT": "/leaked"})
    payload = {"hook_event_name": "PreToolUse", "tool_input": {"command": "ls é"}}
    [run] = await runner.run([handler(script)], payload)
    assert (run.exit_code, run.stdout, run.stderr, run.timed_out) == (3, "to-stdout\n", "to-stderr\n", False)
    assert json.loads((out / "stdin.json").read_text()) == payload
    assert (out / "cwd").read_text().strip() == str(project)
    # The project dir under both names; a plugin root only for a plugin's handler.
    assert (out / "env").read_text() == f"{project}|{project}|none"
    [plugin_run] = await runner.run(
        [handler('printf %s "$CLAUDE_PLUGIN_ROOT"', root="/plugins/kit")], payload
    )
    assert plugin_run.stdout == "/plugins/kit"


async def test_handlers_of_one_event_run_in_parallel(tmp_path: Path) -> None:
    """Each handler waits for the other's mark: run one after the other, the first would wait
    until its timeout."""

    def meet(mine: str, theirs: str) -> str:
        return (
            f"touch {tmp_path}/{mine}; i=0; while [ ! -e {tmp_path}/{theirs} ] && [ $i -lt 300 ]; "
            f"do sleep 0.1; i=$((i+1)); done; [ -e {tmp_path}/{theirs} ] && echo met-{theirs}"
        )

    runner = SubprocessHooks(tmp_path)
    runs = await runner.run([handler(meet("a", "b"), timeout=60), handler(meet("b", "a"), timeout=60)], {})
    assert [(run.exit_code, run.stdout.strip()) for run in runs] == [(0, "met-b"), (0, "met-a")]


async def test_a_handler_past_its_timeout_is_stopped_with_all_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {pid_file}; echo started; wait"
    runner = SubprocessHooks(tmp_path)
    [run] = await runner.run([handler(script, timeout=1)], {})
    assert run.timed_out and run.exit_code is None and run.stdout == "started\n"
    child = int(pid_file.read_text())
    assert not _alive(child), "the handler's background child outlived its timeout"


async def test_a_handler_that_ignores_term_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"trap '' TERM; sleep 300 & echo $! > {pid_file}; wait; wait"
    [run] = await SubprocessHooks(tmp_path).run([handler(script, timeout=1)], {})
    assert run.timed_out
    assert not _alive(int(pid_file.read_text()))


async def test_exec_form_and_a_command_that_cannot_start(tmp_path: Path) -> None:
    runner = SubprocessHooks(tmp_path)
    ok, missing = await runner.run(
        [handler("printf", args=("%s-%s", "a b", "$HOME")), handler(str(tmp_path / "nope"), args=())], {}
    )
    assert (ok.exit_code, ok.stdout) == (0, "a b-$HOME")  # no shell: nothing is expanded
    assert missing.exit_code is None and missing.start_error


async def test_a_handler_that_ignores_stdin_is_fine(tmp_path: Path) -> None:
    runner = SubprocessHooks(tmp_path)
    big = {"text": "x" * 1_000_000}  # more than a pipe holds: the write must not hang
    [run] = await runner.run([handler("echo done")], big)
    assert (run.exit_code, run.stdout) == (0, "done\n")


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs, a few seconds after it was signalled (a signal is delivered
    after ``kill`` returns, so this waits for it, up to a bound)."""
    deadline = time.monotonic() + 10
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid_alive(pid)
