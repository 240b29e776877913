"""Reading Claude Code transcripts: files → lines grouped by session and agent.

Claude Code keeps ``~/.claude/projects/<project>/<session>.jsonl`` with subagents either in
``<session>/subagents/agent-<id>.jsonl`` (2.1.x), beside the session as ``agent-<id>.jsonl``
(2.0.x), or inline as ``isSidechain`` records (older). All three are read the same way: every
record names its ``sessionId``; ``isSidechain`` records belong to the subagent in ``agentId``.
Records repeated across files (same ``uuid``) are read once.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aerix.errors import ClaudeImportError

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_ID_NAMESPACE = uuid.UUID("0f6b6d7e-3c1a-4f8e-9a61-2b7d1c9e5a40")

MAIN_AGENT = ""
INLINE_SIDECHAIN = "sidechain"
"""Agent key of sidechain records that name no agentId (transcripts before 2.1)."""


@dataclass(frozen=True)
class ClaudeLine:
    source: Path
    number: int
    raw: str
    record: dict[str, Any] | None
    problem: str | None = None


@dataclass
class ClaudeSession:
    id: str
    agents: dict[str, list[ClaudeLine]] = field(default_factory=dict)
    files: set[Path] = field(default_factory=set)

    @property
    def main(self) -> list[ClaudeLine]:
        return self.agents.get(MAIN_AGENT, [])

    def main_file(self) -> Path:
        counts: dict[Path, int] = {}
        for line in self.main or [line for lines in self.agents.values() for line in lines]:
            counts[line.source] = counts.get(line.source, 0) + 1
        return max(sorted(counts), key=lambda path: counts[path])


def transcript_files(paths: list[Path]) -> list[Path]:
    """The ``.jsonl`` files under each path (a file is taken as it is), sorted, without aerix's
    own ``.claude.jsonl`` projections."""
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(p for p in path.rglob("*.jsonl") if p.is_file())
        elif path.is_file():
            found.add(path)
    return sorted(p for p in found if not p.name.endswith(".claude.jsonl"))


def read_sessions(files: list[Path], not_transcripts: list[Path] | None = None) -> dict[str, ClaudeSession]:
    """Every line of every file, grouped by session and agent, in file order. A file in which no
    record names a ``sessionId`` is not a Claude Code transcript (a stray .jsonl in a folder, a
    binary): it is left out, added to ``not_transcripts``, rather than made a session of its own."""
    sessions: dict[str, ClaudeSession] = {}
    # (session, uuid) → where that record went; a record repeated in another file (a sample
    # copied from a full transcript, say) is read once, keeping its longest copy.
    placed: dict[tuple[str, str], tuple[list[ClaudeLine], int]] = {}
    for path in files:
        current = _first_session_id(path)
        if current is None:
            if not_transcripts is not None:
                not_transcripts.append(path)
            continue
        for line in _lines(path):
            record = line.record
            if record is not None and isinstance(record.get("sessionId"), str):
                current = safe_session_id(record["sessionId"])
            session = sessions.setdefault(current, ClaudeSession(current))
            session.files.add(path)
            uid = record.get("uuid") if record is not None else None
            if isinstance(uid, str) and (current, uid) in placed:
                bucket, index = placed[(current, uid)]
                if len(line.raw) > len(bucket[index].raw):
                    bucket[index] = line
                continue
            bucket = session.agents.setdefault(_agent_key(record), [])
            bucket.append(line)
            if isinstance(uid, str):
                placed[(current, uid)] = (bucket, len(bucket) - 1)
    return sessions


def _agent_key(record: dict[str, Any] | None) -> str:
    if record is None or record.get("isSidechain") is not True:
        return MAIN_AGENT
    agent = record.get("agentId")
    return agent if isinstance(agent, str) and agent else INLINE_SIDECHAIN


def _first_session_id(path: Path) -> str | None:
    for line in _lines(path):
        if line.record is not None and isinstance(line.record.get("sessionId"), str):
            return safe_session_id(line.record["sessionId"])
    return None


def safe_session_id(value: str) -> str:
    """The id as it is when it can name a file (Claude Code's are UUIDs), else a UUID made from it,
    so a transcript can never make aerix write outside the store."""
    if _SAFE_ID.match(value) and not value.endswith((".jsonl", ".claude")):
        return value
    return str(uuid.uuid5(_ID_NAMESPACE, value))


def _lines(path: Path) -> list[ClaudeLine]:
    """The file's non-blank lines, decoded. A file that cannot be read stops the import before
    anything is stored (``ClaudeImportError``, one line): better than importing without it."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return _decoded(path, list(handle))
    except OSError as exc:
        raise ClaudeImportError(
            f"cannot read {path} ({exc.strerror or exc}); fix its permissions or leave it out"
        ) from exc


def _decoded(path: Path, raw_lines: list[str]) -> list[ClaudeLine]:
    lines = []
    for number, raw in enumerate(raw_lines, 1):
        text = raw.rstrip("\n")
        if not text.strip():
            continue
        try:
            decoded = json.loads(text)
        except ValueError as exc:
            lines.append(ClaudeLine(path, number, text, None, f"not JSON ({exc.args[0]})"))
            continue
        if not isinstance(decoded, dict):
            lines.append(ClaudeLine(path, number, text, None, "not a JSON object"))
            continue
        lines.append(ClaudeLine(path, number, text, decoded))
    return lines
