"""The Claude Code transcript of a session (``<id>.claude.jsonl``), for hooks that read
``transcript_path`` and for tools that read Claude Code transcripts.

Records follow Claude Code's shape: ``user`` and ``assistant`` records chained by
``uuid``/``parentUuid`` per agent, ``tool_use`` blocks in assistant records and their
``tool_result`` blocks in the next user records (linked by ``tool_use_id``), subagents as
``isSidechain`` records carrying ``agentId``, ``compact_boundary`` system records where the
runtime compacted, usage on each assistant record. UUIDs are derived from the session id and
the event's seq, so a rebuild writes the same bytes.

Which events become records: prompt and brief segments (user), summary segments (user,
``isCompactSummary``), parsed assistant turns, tool results, compactions. The rest of the log
(hooks, jobs, plans, context ops) has no place in Claude Code's format and is left out.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from aerix.domain import events as ev
from aerix.projections.base import Projection

_NAMESPACE = uuid.UUID("6f1c2a52-53b7-4d8e-9a55-6e1f0f3b2a11")

CLAUDE_TOOL_NAMES = {
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "bash": "Bash",
    "glob": "Glob",
    "grep": "Grep",
    "agent": "Task",
    "web_fetch": "WebFetch",
    "web_search": "WebSearch",
}
"""Aerix tool names as Claude Code names them, so hook scripts written for it match."""

_CLAUDE_INPUT_KEYS = {"path": "file_path", "old": "old_string", "new": "new_string"}
TRANSCRIPT_VERSION = "aerix"
"""The ``version`` field of every record (Claude Code writes its own semver there)."""


def claude_tool_id(agent: str, call: str) -> str:
    """The ``tool_use`` id of a call: kept when already Claude's own (imported), else derived."""
    if call.startswith("toolu_"):
        return call
    return f"toolu_{agent.replace('.', '_')}_{call}"


def claude_tool_input(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    if tool not in ("read", "write", "edit"):
        return dict(tool_input)
    return {_CLAUDE_INPUT_KEYS.get(key, key): value for key, value in tool_input.items()}


class ClaudeTranscript(Projection):
    """The records of the transcript, in log order."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []
        self._session = ""
        self._cwd = ""
        self._model = ""
        self._uuid_prefix = ""
        self._last: dict[str, str | None] = {}
        self._call_owner: dict[str, str] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClaudeTranscript) and (self.position, self.records) == (
            other.position,
            other.records,
        )

    __hash__ = None  # type: ignore[assignment]

    def apply(self, event: ev.EventBase) -> None:
        if isinstance(event, ev.SessionStart):
            self._session, self._cwd, self._model = event.session, event.cwd, event.model
            self._uuid_prefix = str(uuid.uuid5(_NAMESPACE, event.session))[:24]
        elif isinstance(event, ev.Segment):
            self._segment(event)
        elif isinstance(event, ev.Message):
            if event.role == "assistant":
                if event.parse_error is None:
                    self._assistant(event)
            else:
                self._tool_result(event)
        elif isinstance(event, ev.Compaction):
            self._compaction(event)

    # ---- records ------------------------------------------------------------------------------

    def _envelope(self, event: ev.EventBase, agent: str, kind: str, parent: str | None) -> dict[str, Any]:
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": agent != "a1",
            "userType": "external",
            "cwd": self._cwd,
            "sessionId": self._session,
            "version": TRANSCRIPT_VERSION,
            "gitBranch": "",
        }
        if agent != "a1":
            record["agentId"] = agent
        record.update(type=kind, uuid=self._uuid(event), timestamp=_stamp(event))
        return record

    def _uuid(self, event: ev.EventBase) -> str:
        # Each event makes at most one record: the session's own UUID with the seq as its node.
        return f"{self._uuid_prefix}{event.seq:012x}"

    def _emit(self, record: dict[str, Any], agent: str) -> None:
        self.records.append(record)
        self._last[agent] = record["uuid"]

    def _segment(self, event: ev.Segment) -> None:
        if event.kind not in ("prompt", "brief", "summary"):
            return
        parent = self._last.get(event.agent)
        record = self._envelope(event, event.agent, "user", parent)
        record["message"] = {"role": "user", "content": event.text}
        if event.kind == "summary":
            record["isCompactSummary"] = True
        self._emit(record, event.agent)

    def _assistant(self, event: ev.Message) -> None:
        content: list[dict[str, Any]] = []
        if event.thought:
            content.append({"type": "thinking", "thinking": event.thought, "signature": ""})
        if event.final is not None:
            content.append({"type": "text", "text": event.final})
        if event.verdict is not None:
            verdict = {"verdict": event.verdict, "reason": event.reason or ""}
            content.append({"type": "text", "text": _json(verdict)})
        for call in event.calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": claude_tool_id(event.agent, call.id),
                    "name": CLAUDE_TOOL_NAMES.get(call.tool, call.tool),
                    "input": claude_tool_input(call.tool, call.input),
                }
            )
        if not content:
            content.append({"type": "text", "text": event.text})
        record = self._envelope(event, event.agent, "assistant", self._last.get(event.agent))
        usage = event.usage or ev.Usage()
        record["message"] = {
            "model": usage.member or self._model,
            "id": f"msg_aerix_{self._session[:8]}_{event.seq}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if event.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens},
        }
        self._emit(record, event.agent)
        for call in event.calls:
            self._call_owner[claude_tool_id(event.agent, call.id)] = record["uuid"]

    def _tool_result(self, event: ev.Message) -> None:
        tool_id = claude_tool_id(event.agent, event.call or f"seq{event.seq}")
        owner = self._call_owner.get(tool_id)
        record = self._envelope(event, event.agent, "user", owner or self._last.get(event.agent))
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": event.text}
        if event.is_error:
            block["is_error"] = True
        record["message"] = {"role": "user", "content": [block]}
        record["toolUseResult"] = event.text
        if owner is not None:
            record["sourceToolAssistantUUID"] = owner
        self._emit(record, event.agent)

    def _compaction(self, event: ev.Compaction) -> None:
        record = self._envelope(event, event.agent, "system", None)
        record.update(
            logicalParentUuid=self._last.get(event.agent),
            subtype="compact_boundary",
            content="Conversation compacted",
            level="info",
            compactMetadata={
                "trigger": "manual" if event.trigger == "manual" else "auto",
                "preTokens": event.tokens_before,
            },
        )
        self._emit(record, event.agent)


def _stamp(event: ev.EventBase) -> str:
    return event.time.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def transcript_lines(transcript: ClaudeTranscript) -> list[str]:
    """The JSONL text of the transcript, one record a line."""
    return [json.dumps(record, ensure_ascii=False, separators=(",", ":")) for record in transcript.records]
