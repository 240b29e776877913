"""The recording ``bench_claude_front.py record`` makes and ``replay`` sends again: a real
``claude -p`` session on a scripted member, main-agent and subagent requests alternating, its
``POST /v1/messages`` bodies kept gzipped in ``benchmarks/recordings/claude_front.json.gz``."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

from tests.caldrix.front_harness import claude_binary, claude_env, logged_requests, scripted_front

ROOT = Path(__file__).resolve().parents[1]
RECORDING: Final = ROOT / "benchmarks" / "recordings" / "claude_front.json.gz"
TASK: Final = (
    "BENCH-TASK-42: read notes.txt, have a subagent find the text files here, then write result.txt."
)
NOTES: Final = "NOTE-ALPHA: the parser test fails on empty input.\n"
SUBTASK: Final = "SUBTASK-9: list the .txt files in this folder and report them."
CLAUDE_SECS: Final = 900


def call(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as the front's text section asks the model to write one."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def script(work: Path) -> list[dict[str, str]]:
    """The answers, each taken by the first request whose prompt holds its ``when`` text: main
    reads, delegates; the subagent lists files, reports; main writes, answers."""
    agent = {
        "description": "Find text files",
        "prompt": SUBTASK,
        "subagent_type": "claude",  # Claude Code's catch-all agent
        "run_in_background": False,  # the main agent waits: its requests and the subagent's alternate
    }
    return [
        {"when": "BENCH-TASK-42", "text": call("Read", {"file_path": str(work / "notes.txt")})},
        {"when": "NOTE-ALPHA", "text": call("Agent", agent)},
        {"when": "SUBTASK-9", "text": call("Bash", {"command": "ls *.txt", "description": "List files"})},
        {"when": "SUBTASK-9", "text": "SUBTASK-RESULT-9: notes.txt is the only text file."},
        {
            "when": "SUBTASK-RESULT-9",
            "text": call("Write", {"file_path": str(work / "result.txt"), "content": "checked\n"}),
        },
        {"when": "result.txt", "text": "Done: notes read, files found by a subagent, result.txt written."},
    ]


def record() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-claude-record-"))
    work = folder / "work"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES)
    log = folder / "requests"
    with scripted_front(folder, script(work), "--log-requests", str(log)) as (_, front):
        done = subprocess.run(
            [str(claude_binary()), "-p", TASK, "--output-format", "json", "--permission-mode", "acceptEdits"],
            cwd=work,
            env=claude_env(front.url, folder / "home"),
            capture_output=True,
            text=True,
            timeout=CLAUDE_SECS,
        )
    if done.returncode != 0:
        raise SystemExit(
            f"bench_claude_front: claude exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    result = json.loads(done.stdout)
    requests = [r for r in logged_requests(log) if r["method"] == "POST" and r["path"] == "/v1/messages"]
    agents = [agent_of(r) for r in requests]
    if not (work / "result.txt").exists() or len(set(agents)) < 2:
        raise SystemExit(
            f"bench_claude_front: the session did not run as scripted (agents {agents}, "
            f"result {result.get('result')!r}); {RECORDING} was left as it was"
        )
    version = subprocess.run(
        [str(claude_binary()), "--version"], capture_output=True, text=True
    ).stdout.strip()
    recording = {"claude_code": version, "task": TASK, "result": result.get("result"), "requests": requests}
    RECORDING.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(RECORDING, "wt", encoding="utf-8") as out:
        json.dump(recording, out, ensure_ascii=False)
    print(f"recorded {len(requests)} requests ({' '.join(agents)}) from Claude Code {version}: {RECORDING}")
    shutil.rmtree(folder, ignore_errors=True)


def agent_of(request: dict[str, Any]) -> str:
    """``main`` or ``subagent``: Claude Code names a subagent's requests by its agent id header."""
    return "subagent" if request["headers"].get("x-claude-code-agent-id") else "main"


def load_recording(path: Path = RECORDING) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as text:
        recording: dict[str, Any] = json.load(text)
    return recording


def replayed_bodies(recording: dict[str, Any], answer_tokens: int = 1) -> list[dict[str, Any]]:
    """Each recorded body as sent, asking for ``answer_tokens`` tokens (one: the prefill alone)."""
    return [{**r["body"], "max_tokens": answer_tokens} for r in recording["requests"]]
