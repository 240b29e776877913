"""Claude Code sessions → aerix session events (``aerix import claude``).

The mapping, record by record (Claude Code 1.0.x to 2.1.x):

- a user prompt (string or text blocks) → a ``prompt`` segment; the first one of a subagent →
  its ``brief``; a compact summary → a pinned ``summary`` segment; a meta message (hook
  context, reminders) → a ``hook`` segment;
- assistant lines sharing one ``message.id`` → one ``message`` (thinking → ``thought``, its
  text blocks joined by a blank line → ``final``, tool_use → ``calls`` keeping Claude's ids)
  plus an ``assistant`` segment. It keeps Claude's ``message.id`` and ``requestId``, and the
  response's usage once: Claude Code repeats the usage on every line of a response (the output
  count growing as it streams), so the line with the largest output count gives it, with the
  prompt tokens the sum of input, cache writes (``cache_creation_tokens``) and cache reads
  (``recomputed_from``). Lines of one response that tool results split apart become more
  ``message`` events with the same ids and no usage;
- a tool_result block → a tool ``message`` (``call`` = its tool_use_id) plus a segment;
- ``compact_boundary`` → a ``compaction`` of everything unpinned before it;
- ``stop_hook_summary`` → a ``hook`` event;
- each subagent → ``agent.spawn`` (linked to its Task call when the transcript says which),
  its events, ``agent.end``.

Records Claude Code writes for its own bookkeeping (file-history snapshots, progress, queue
operations, summaries, titles, durations…) are understood and left out. Anything else — a line
that is not JSON, an unknown record type or content block — is kept verbatim as a ``foreign``
event and reported with its file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aerix.adapters import paths
from aerix.adapters.claude.claude_read import (
    INLINE_SIDECHAIN,
    MAIN_AGENT,
    ClaudeLine,
    ClaudeSession,
    read_sessions,
    transcript_files,
)
from aerix.adapters.claude.claude_records import content_blocks, flatten_content, response_usages, to_usage
from aerix.app.ports.sessions import FoundTranscripts, ImportPlan, PlannedEvent
from aerix.domain import events as ev
from aerix.domain.segments import ROOT_AGENT
from aerix.errors import ClaudeImportError

SKIPPED_TYPES = frozenset(
    {
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "summary",
        "custom-title",
        "permission-mode",
        "attachment",
        "turn_end",
        "last-prompt",
        "agent-name",
    }
)
"""Record types Claude Code writes for its own bookkeeping: understood, not imported."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class _AgentState:
    agent: str
    segments: list[str] = field(default_factory=list)
    counter: int = 0
    turns: int = 0
    briefed: bool = False
    #: message.id -> the usage of that response (from its line with the most output tokens).
    usages: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The message ids whose usage a ``message`` already carries.
    counted: set[str] = field(default_factory=set)


class _Converter:
    def __init__(self, session: ClaudeSession) -> None:
        self.session = session
        self.out: list[PlannedEvent] = []
        self.problems: list[str] = []
        self.tool_names: dict[str, str] = {}
        self.time = _EPOCH
        self.model = ""
        self.first_prompt: str | None = None
        self.cwd = ""

    # ---- helpers -------------------------------------------------------------------------------

    def emit(self, cls: type[ev.EventBase], **fields: Any) -> None:
        self.out.append(PlannedEvent(cls, self.time, fields))

    def segment(self, state: _AgentState, role: str, kind: str, text: str, **extra: Any) -> str:
        state.counter += 1
        segment_id = f"s{state.counter}"
        state.segments.append(segment_id)
        self.emit(ev.Segment, agent=state.agent, id=segment_id, role=role, kind=kind, text=text, **extra)
        return segment_id

    def foreign(self, line: ClaudeLine, problem: str) -> None:
        self.problems.append(f"{line.source}:{line.number}: {problem}; kept as a foreign event")
        self.emit(ev.Foreign, source=str(line.source), line=line.number, problem=problem, raw=line.raw)

    def _clock(self, record: dict[str, Any]) -> None:
        stamp = record.get("timestamp")
        if isinstance(stamp, str):
            try:
                parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            except ValueError:
                return
            self.time = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        if not self.cwd and isinstance(record.get("cwd"), str):
            self.cwd = record["cwd"]

    # ---- one agent's lines ---------------------------------------------------------------------

    def convert_agent(self, state: _AgentState, lines: list[ClaudeLine]) -> None:
        state.usages = response_usages(lines)
        pending: list[dict[str, Any]] = []
        for line in lines:
            record = line.record
            if record is None:
                self.foreign(line, line.problem or "unreadable")
                continue
            self._clock(record)
            kind = record.get("type")
            if kind in SKIPPED_TYPES:
                continue  # bookkeeping between the lines of one response must not split it
            if kind == "assistant" and isinstance(record.get("message"), dict):
                if pending and pending[-1]["message"].get("id") != record["message"].get("id"):
                    self.assistant(state, pending, line)
                    pending = []
                pending.append(record)
                continue
            if pending:
                self.assistant(state, pending, line)
                pending = []
            self.other(state, line, record, kind)
        if pending:
            self.assistant(state, pending, lines[-1])

    def other(self, state: _AgentState, line: ClaudeLine, record: dict[str, Any], kind: Any) -> None:
        if kind == "user" and isinstance(record.get("message"), dict):
            self.user(state, line, record)
        elif kind == "system":
            self.system(state, record)
        elif kind not in SKIPPED_TYPES:
            self.foreign(line, f"unknown record type {kind!r}")

    def user(self, state: _AgentState, line: ClaudeLine, record: dict[str, Any]) -> None:
        content = record["message"].get("content")
        if isinstance(content, str):
            self.user_text(state, record, content)
            return
        if not isinstance(content, list):
            self.foreign(line, "user message without content")
            return
        for block in content:
            block_type = block.get("type") if isinstance(block, dict) else None
            if block_type == "tool_result":
                self.tool_result(state, block)
            elif block_type == "text":
                self.user_text(state, record, str(block.get("text", "")))
            elif block_type in ("image", "document"):
                self.segment(state, "user", "prompt", f"[{block_type}]")
            else:
                self.foreign(line, f"unknown user content block {block_type!r}")

    def user_text(self, state: _AgentState, record: dict[str, Any], text: str) -> None:
        if record.get("isCompactSummary"):
            self.segment(state, "user", "summary", text, pinned=True, label="summary")
        elif record.get("isMeta"):
            self.segment(state, "user", "hook", text, label="meta")
        elif state.agent != ROOT_AGENT and not state.briefed:
            state.briefed = True
            self.segment(state, "user", "brief", text, pinned=True, label="brief")
        else:
            if state.agent == ROOT_AGENT and self.first_prompt is None:
                self.first_prompt = text
            self.segment(state, "user", "prompt", text)

    def tool_result(self, state: _AgentState, block: dict[str, Any]) -> None:
        call = str(block.get("tool_use_id", ""))
        text = flatten_content(block.get("content"))
        tool = self.tool_names.get(call, "unknown")
        is_error = block.get("is_error") is True
        label = f"[{tool} {call}]"
        segment_id = self.segment(state, "user", "tool_result", text, call=call, tool=tool, label=label)
        self.emit(
            ev.Message,
            agent=state.agent,
            role="tool",
            turn=state.turns,
            text=text,
            segment=segment_id,
            call=call,
            tool=tool,
            is_error=is_error,
        )

    def assistant(self, state: _AgentState, records: list[dict[str, Any]], line: ClaudeLine) -> None:
        thoughts: list[str] = []
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for record in records:
            for block in content_blocks(record["message"].get("content")):
                self.assistant_block(block, thoughts, texts, calls, line)
        message = records[-1]["message"]
        model = str(message.get("model", "")) or None
        self.model = self.model or (model or "")
        state.turns += 1
        final = "\n\n".join(texts) if texts else None
        rendered = "\n".join([*(texts or []), *(f"[{call['tool']} {call['id']}]" for call in calls)])
        segment_id = self.segment(state, "assistant", "assistant", rendered or "\n".join(thoughts))
        self.emit(
            ev.Message,
            agent=state.agent,
            role="assistant",
            turn=state.turns,
            text=rendered,
            segment=segment_id,
            thought="\n\n".join(thoughts) or None,
            calls=calls,
            final=final,
            **self.response_ids(state, records, model),
        )

    def response_ids(
        self, state: _AgentState, records: list[dict[str, Any]], model: str | None
    ) -> dict[str, Any]:
        """The response's Claude ids, and its usage the first time the response is seen."""
        message_id = records[0]["message"].get("id")
        request_id = next((r["requestId"] for r in records if isinstance(r.get("requestId"), str)), None)
        fields: dict[str, Any] = {"request_id": request_id}
        if not isinstance(message_id, str):
            fields["usage"] = to_usage(records[-1]["message"].get("usage"), model)
            return fields
        fields["message_id"] = message_id
        if message_id not in state.counted:
            state.counted.add(message_id)
            fields["usage"] = to_usage(state.usages.get(message_id), model)
        return fields

    def assistant_block(
        self, block: Any, thoughts: list[str], texts: list[str], calls: list[dict[str, Any]], line: ClaudeLine
    ) -> None:
        block_type = block.get("type") if isinstance(block, dict) else None
        if block_type == "thinking":
            thoughts.append(str(block.get("thinking", "")))
        elif block_type == "redacted_thinking":
            thoughts.append("[redacted thinking]")
        elif block_type == "text":
            texts.append(str(block.get("text", "")))
        elif block_type == "tool_use":
            call_id, name = str(block.get("id", "")), str(block.get("name", ""))
            self.tool_names[call_id] = name
            tool_input = block.get("input")
            arguments = tool_input if isinstance(tool_input, dict) else {}
            calls.append({"id": call_id, "tool": name, "input": arguments})
        else:
            self.foreign(line, f"unknown assistant content block {block_type!r}")

    def system(self, state: _AgentState, record: dict[str, Any]) -> None:
        subtype = record.get("subtype")
        if subtype == "compact_boundary":
            metadata = record.get("compactMetadata") or {}
            replaced = [{"id": sid, "marker": "[compacted by Claude Code]"} for sid in state.segments]
            state.segments = []
            trigger = "manual" if metadata.get("trigger") == "manual" else "auto"
            self.emit(
                ev.Compaction,
                agent=state.agent,
                trigger=trigger,
                replaced=replaced,
                tokens_before=int(metadata.get("preTokens") or 0),
                tokens_after=0,
            )
        elif subtype == "stop_hook_summary":
            infos = record.get("hookInfos") or []
            commands = [info["command"] for info in infos if isinstance(info, dict) and "command" in info]
            prevented = record.get("preventedContinuation") is True
            self.emit(
                ev.Hook,
                agent=state.agent,
                event="Stop",
                command="; ".join(commands) or None,
                outcome="blocked" if prevented else "ok",
                reason=record.get("stopReason") or None,
            )


def convert(session: ClaudeSession, project: str, aerix_version: str) -> ImportPlan:
    """Plan the aerix events of one Claude Code session."""
    converter = _Converter(session)
    root = _AgentState(ROOT_AGENT)
    converter.convert_agent(root, session.main)
    spawned = _task_calls(session)
    for agent_key in sorted(key for key in session.agents if key != MAIN_AGENT):
        agent = f"{ROOT_AGENT}.{agent_key}" if agent_key != INLINE_SIDECHAIN else f"{ROOT_AGENT}.sidechain"
        state = _AgentState(agent)
        call = spawned.get(agent_key)
        converter.emit(ev.AgentSpawn, agent=agent, parent=ROOT_AGENT, kind="implementer", call=call)
        converter.convert_agent(state, session.agents[agent_key])
        converter.emit(ev.AgentEnd, agent=agent, outcome="done", turns=state.turns)
    first_time = next((planned.time for planned in converter.out if planned.time != _EPOCH), _EPOCH)
    start = {
        "session": session.id,
        "cwd": converter.cwd,
        "project": project,
        "model": converter.model or "unknown",
        "prompt": converter.first_prompt or "",
        "aerix_version": aerix_version,
        "tags": ["claude-code"],
        "imported_from": str(session.main_file()),
    }
    root_fields = {"agent": ROOT_AGENT, "kind": "root", "member": "claude-code"}
    root_spawn = PlannedEvent(ev.AgentSpawn, first_time, root_fields)
    events = [root_spawn, *(_fix_time(planned, first_time) for planned in converter.out)]
    return ImportPlan(start, first_time, events, converter.problems)


def first_cwd(session: ClaudeSession) -> str:
    for lines in session.agents.values():
        for line in lines:
            if line.record is not None and isinstance(line.record.get("cwd"), str):
                return str(line.record["cwd"])
    return ""


def _fix_time(planned: PlannedEvent, first: datetime) -> PlannedEvent:
    return planned if planned.time != _EPOCH else PlannedEvent(planned.cls, first, planned.fields)


def _task_calls(session: ClaudeSession) -> dict[str, str]:
    """agentId → the Task tool_use id that spawned it, from progress records and Task results."""
    links: dict[str, str] = {}
    for line in session.main:
        record = line.record or {}
        data = record.get("data")
        if isinstance(data, dict) and data.get("type") == "agent_progress":
            agent, parent = data.get("agentId"), record.get("parentToolUseID")
            if isinstance(agent, str) and isinstance(parent, str):
                links.setdefault(agent, parent)
        result = record.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            for block in content_blocks((record.get("message") or {}).get("content")):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    links.setdefault(result["agentId"], str(block.get("tool_use_id")))
    return links


class ClaudeImports:
    """Claude Code's transcripts, read and converted (``ClaudeSessionSource``); each session
    goes into the project its first ``cwd`` names (``claude-code`` when none does)."""

    def __init__(self, project_key: Callable[[Path], str], aerix_version: str) -> None:
        self._project_key = project_key
        self._version = aerix_version

    def default_sources(self) -> list[Path]:
        return [paths.claude_projects_dir()]

    def find(self, sources: Sequence[Path]) -> FoundTranscripts:
        missing = [path for path in sources if not path.exists()]
        if missing:
            raise ClaudeImportError(f"nothing at {missing[0]}; pass Claude Code transcript files or folders")
        files = transcript_files(list(sources))
        if not files:
            raise ClaudeImportError(f"no .jsonl transcripts under {', '.join(map(str, sources))}")
        not_transcripts: list[Path] = []
        sessions = read_sessions(files, not_transcripts)
        plans = tuple(
            convert(session, self._project_of(session), self._version) for session in sessions.values()
        )
        return FoundTranscripts(tuple(files), plans, tuple(not_transcripts))

    def _project_of(self, session: ClaudeSession) -> str:
        cwd = first_cwd(session)
        return self._project_key(Path(cwd)) if cwd else "claude-code"
