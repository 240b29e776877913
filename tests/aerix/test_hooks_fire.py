"""Firing hook events with real handler processes on a real session store: Claude Code hook
scripts written with ``cchooks`` run unchanged, each run is a ``hook`` event, long answers are
cut to a preview, and ``transcript_path`` is up to date (appended to, not rewritten) when a
handler reads it."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.clock import utc_now
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.adapters.tools.hook_runner import SubprocessHooks
from aerix.app.hooks.fire import Hooks, HookSession
from aerix.app.ports.sessions import E
from aerix.app.sessions.transcript import TranscriptFollower
from aerix.app.sessions.writer import SessionWriter, start_session
from aerix.domain import bounds
from aerix.domain import events as ev
from aerix.domain.hook_contract import HookSource
from aerix.domain.hook_payloads import tool_fields
from aerix.domain.settings import Settings
from aerix.projections.transcript import ClaudeTranscript, transcript_lines

pytestmark = pytest.mark.anyio

PY = sys.executable

GUARD = """\
# A Claude Code PreToolUse guard, as its users write it with cchooks.
from cchooks import PreToolUseContext, create_context

context = create_context()
assert isinstance(context, PreToolUseContext)
command = context.tool_input.get("command", "")
if context.tool_name == "Bash" and "rm -rf" in command:
    context.output.deny("rm -rf is not allowed here", system_message="guard: refused rm -rf")
elif context.tool_name == "Bash" and command.startswith("ls"):
    context.output.allow(updated_input={**context.tool_input, "command": "ls -la"})
else:
    context.output.allow()
"""

EXIT_GUARD = """\
from cchooks import create_context

context = create_context()
if "secret" in context.tool_input.get("file_path", ""):
    context.output.exit_block(f"{context.tool_input['file_path']} holds secrets")
context.output.exit_success()
"""

LAST_ASSISTANT = """\
# As anthropics' ralph-wiggum Stop hook reads it: the last assistant line of the transcript.
import json, sys
payload = json.load(sys.stdin)
last = [line for line in open(payload["transcript_path"]) if '"role":"assistant"' in line][-1]
texts = [b["text"] for b in json.loads(last)["message"]["content"] if b["type"] == "text"]
print(json.dumps({"decision": "block", "reason": "you said: " + texts[-1]}))
"""


class Recorder:
    """The session writer with the transcript follower attached, as a session wires them."""

    def __init__(self, writer: SessionWriter, follower: TranscriptFollower) -> None:
        self.writer, self.follower = writer, follower
        writer.attach("claude transcript", follower)

    def record(self, event_cls: type[E], **fields: Any) -> E:
        return self.writer.record(event_cls, **fields)

    def sync(self) -> None:
        self.writer.sync()


@pytest.fixture
def session(tmp_path: Path) -> Iterator[tuple[SessionFiles, SessionWriter]]:
    files = SessionFiles(tmp_path / "sessions")
    start = {"session": "s1", "project": "p", "cwd": str(tmp_path), "model": "m", "prompt": "hi"}
    writer = start_session(files, utc_now, aerix_version="0", **start)
    yield files, writer
    writer.close()
    files.log.close()


def scripts(folder: Path, **sources: str) -> dict[str, str]:
    commands = {}
    for name, text in sources.items():
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        commands[name] = f"{PY} {path}"
    return commands


def make_hooks(
    tmp_path: Path, config: dict[str, Any], writer: SessionWriter, files: SessionFiles
) -> tuple[Hooks, Recorder]:
    follower = TranscriptFollower(files, writer.ref)
    recorder = Recorder(writer, follower)
    source = HookSource(Settings.model_validate({"hooks": config}).hooks)
    notes: list[str] = []
    hooks = Hooks(
        [source],
        SubprocessHooks(tmp_path),
        recorder,
        HookSession("s1", str(tmp_path)),
        transcript=follower,
        spool=writer,
        notify=notes.append,
    )
    hooks.notes = notes  # type: ignore[attr-defined]
    return hooks, recorder


def hook_events(files: SessionFiles, writer: SessionWriter) -> list[ev.Hook]:
    return [record for record in files.log.read(writer.ref) if isinstance(record, ev.Hook)]


async def test_a_cchooks_guard_denies_rewrites_and_allows(
    tmp_path: Path, session: tuple[SessionFiles, SessionWriter]
) -> None:
    files, writer = session
    commands = scripts(tmp_path, guard=GUARD, exit_guard=EXIT_GUARD)
    config = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": commands["guard"]}]},
            {"matcher": "Read|Write", "hooks": [{"type": "command", "command": commands["exit_guard"]}]},
        ]
    }
    hooks, _ = make_hooks(tmp_path, config, writer, files)

    async def pre(tool: str, tool_input: dict[str, Any], call: str) -> Any:
        fields = tool_fields(tool, tool_input, str(tmp_path), f"toolu_a1_{call}")
        return await hooks.fire(
            "PreToolUse", fields, match=(tool, fields["tool_name"]), agent="a1", call=call
        )

    denied = await pre("bash", {"command": "rm -rf /"}, "c1")
    assert (denied.decision, denied.reason) == ("deny", "rm -rf is not allowed here")
    assert hooks.notes == ["hook PreToolUse: guard: refused rm -rf"]  # type: ignore[attr-defined]
    rewritten = await pre("bash", {"command": "ls"}, "c2")
    assert rewritten.decision == "allow" and rewritten.updated_input is not None
    assert rewritten.updated_input["command"] == "ls -la"
    blocked = await pre("read", {"path": "secret.env"}, "c3")
    assert (blocked.decision, blocked.reason) == ("deny", f"{tmp_path}/secret.env holds secrets")
    assert (await pre("read", {"path": "a.txt"}, "c4")).decision is None
    assert (await pre("grep", {"pattern": "x"}, "c5")).decision is None  # no handler matches grep

    runs = hook_events(files, writer)
    assert [(r.call, r.outcome, r.decision, r.exit) for r in runs] == [
        ("c1", "blocked", "deny", 0),
        ("c2", "ok", "allow", 0),
        ("c3", "blocked", "deny", 2),
        ("c4", "ok", None, 0),
    ]
    assert (
        runs[0].event == "PreToolUse" and runs[0].matcher == "Bash" and runs[0].command == commands["guard"]
    )
    assert runs[0].agent == "a1" and runs[0].duration_ms is not None and runs[0].duration_ms > 0
    assert runs[2].reason == f"{tmp_path}/secret.env holds secrets" and runs[2].output is not None


async def test_a_stop_hook_reads_the_last_assistant_line_of_an_up_to_date_transcript(
    tmp_path: Path, session: tuple[SessionFiles, SessionWriter]
) -> None:
    files, writer = session
    commands = scripts(tmp_path, last=LAST_ASSISTANT)
    hooks, recorder = make_hooks(
        tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": commands["last"]}]}]}, writer, files
    )
    recorder.record(ev.Segment, agent="a1", id="a1.p1", role="user", kind="prompt", text="hi")
    recorder.record(ev.Message, agent="a1", role="assistant", turn=1, text="{}", final="first answer")
    verdict = await hooks.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "first answer"})
    assert (verdict.decision, verdict.reason) == ("block", "you said: first answer")
    transcript = writer.ref.transcript
    inode = transcript.stat().st_ino
    recorder.record(ev.Message, agent="a1", role="assistant", turn=2, text="{}", final="second answer")
    verdict = await hooks.fire("Stop", {"stop_hook_active": True, "last_assistant_message": "second answer"})
    assert verdict.reason == "you said: second answer"
    assert transcript.stat().st_ino == inode  # appended to, not written anew
    rebuilt = ClaudeTranscript()
    rebuilt.feed(files.log.read(writer.ref))
    assert transcript.read_text().splitlines() == transcript_lines(rebuilt)


async def test_a_later_request_appends_to_the_transcript_an_earlier_one_wrote(
    tmp_path: Path, session: tuple[SessionFiles, SessionWriter]
) -> None:
    files, writer = session
    config = {"Stop": [{"hooks": [{"type": "command", "command": "cat > /dev/null"}]}]}
    hooks, recorder = make_hooks(tmp_path, config, writer, files)
    recorder.record(ev.Message, agent="a1", role="assistant", turn=1, text="{}", final="one")
    await hooks.fire("Stop", {})
    inode = writer.ref.transcript.stat().st_ino
    writer.detach("claude transcript")  # a new process's follower, of the same log, takes over
    later, later_recorder = make_hooks(tmp_path, config, writer, files)
    later_recorder.record(ev.Message, agent="a1", role="assistant", turn=2, text="{}", final="two")
    await later.fire("Stop", {})
    assert writer.ref.transcript.stat().st_ino == inode
    rebuilt = ClaudeTranscript()
    rebuilt.feed(files.log.read(writer.ref))
    assert writer.ref.transcript.read_text().splitlines() == transcript_lines(rebuilt)
    # A transcript that does not match the log (another version wrote it) is written anew.
    writer.ref.transcript.write_text('{"stale": true}\n')
    writer.detach("claude transcript")
    fresh, _ = make_hooks(tmp_path, config, writer, files)
    await fresh.fire("Stop", {})
    assert writer.ref.transcript.read_text().splitlines() == transcript_lines(rebuilt)


async def test_long_context_is_cut_to_a_preview_and_garbage_is_an_error(
    tmp_path: Path, session: tuple[SessionFiles, SessionWriter]
) -> None:
    files, writer = session
    size = bounds.HOOK_OUTPUT_MAX_CHARS + 100
    config = {
        "SessionStart": [{"hooks": [{"type": "command", "command": f"{PY} -c \"print('y' * {size})\""}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "echo '{oops'"}]}],
    }
    hooks, _ = make_hooks(tmp_path, config, writer, files)
    verdict = await hooks.fire("SessionStart", {"source": "startup"}, match=("startup",))
    assert verdict.context.startswith("y" * bounds.HOOK_OUTPUT_MAX_CHARS + "\n[hook output cut: 100 more")
    spilled = Path(verdict.context.rsplit("the whole output is in ", 1)[1].rstrip("]"))
    assert spilled.read_text() == "y" * size
    [start_run] = hook_events(files, writer)
    assert start_run.output is not None and len(start_run.output) < 2 * bounds.HOOK_LOG_OUTPUT_CHARS
    garbage = await hooks.fire("PostToolUse", {"tool_name": "Bash"}, match=("bash", "Bash"))
    assert not garbage.blocked and garbage.errors and "not valid JSON" in garbage.errors[0]
    assert hook_events(files, writer)[-1].outcome == "error"
    assert writer.ref.transcript.exists()  # written before the handlers ran, empty so far


async def test_a_transcript_that_cannot_be_written_is_a_note_and_the_hook_still_runs(
    tmp_path: Path, session: tuple[SessionFiles, SessionWriter]
) -> None:
    files, writer = session
    writer.ref.transcript.mkdir()  # a folder where the transcript belongs
    config = {
        "Stop": [{"hooks": [{"type": "command", "command": 'echo \'{"decision": "block", "reason": "r"}\''}]}]
    }
    hooks, _ = make_hooks(tmp_path, config, writer, files)
    verdict = await hooks.fire("Stop", {"stop_hook_active": False})
    assert verdict.reason == "r"
    [note] = hooks.notes  # type: ignore[attr-defined]
    assert note.startswith("hooks: the transcript could not be brought up to date (")


async def test_the_log_and_the_transcript_are_on_disk_before_a_handler_runs(
    tmp_path: Path, session: tuple[SessionFiles, SessionWriter], monkeypatch: pytest.MonkeyPatch
) -> None:
    files, writer = session
    ran = tmp_path / "ran"  # the handler leaves it: a sync before it ran sees none
    hooks, recorder = make_hooks(
        tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": f"touch {ran}"}]}]}, writer, files
    )
    syncs: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def noting_fsync(fd: int) -> None:
        syncs.append((Path(os.readlink(f"/proc/self/fd/{fd}")).name, ran.exists()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", noting_fsync)
    # Segments are no commit point: recording one does not sync the log, the hook does.
    recorder.record(ev.Segment, agent="a1", id="a1.p1", role="user", kind="prompt", text="one")
    assert syncs == []
    await hooks.fire("Stop", {})
    assert ran.exists() and (writer.ref.log.name, False) in syncs
    ran.unlink()
    syncs.clear()
    recorder.record(ev.Segment, agent="a1", id="a1.p2", role="user", kind="prompt", text="two")
    await hooks.fire("Stop", {})
    assert ran.exists()
    assert (writer.ref.log.name, False) in syncs and (writer.ref.transcript.name, False) in syncs
