"""The Claude Code transcript of a session (``<id>.claude.jsonl``), for hooks that read
``transcript_path`` and for tools that read Claude Code transcripts.

Records follow Claude Code's shape: ``user`` and ``assistant`` records chained by
``uuid``/``parentUuid`` per agent, ``tool_use`` blocks in assistant records and their
``tool_result`` blocks in the next user records (linked by ``tool_use_id``),
``compact_boundary`` system records where the runtime compacted, usage on each assistant
record. UUIDs are derived from the session id and the event's seq, so a rebuild writes the same
bytes.

Subagents are written the way Claude Code 2.1 writes them: each agent other than the root has
records of its own (``subagents[agent]``, the file ``<session>/subagents/agent-<id>.jsonl``),
``isSidechain: true`` with its ``agentId``, rooted at ``parentUuid: null``. The parent's
``agent`` call is Claude's ``Agent`` (formerly ``Task``) tool_use (``description``, ``prompt``,
``subagent_type``), and its result carries Claude's ``toolUseResult`` for it: ``status``,
``prompt``, ``agentId`` and the result as ``content``.

Which events become records: prompt and brief segments (user), summary segments (user,
``isCompactSummary``), parsed assistant turns, tool results, compactions. The rest of the log
(hooks, jobs, plans, context ops) has no place in Claude Code's format and is left out.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any, ClassVar

from aerix.domain import events as ev
from aerix.domain.claude_tools import claude_tool_name, to_claude_input
from aerix.domain.segments import ROOT_AGENT
from aerix.projections.base import Handlers, Projection

_NAMESPACE = uuid.UUID("6f1c2a52-53b7-4d8e-9a55-6e1f0f3b2a11")
_NO_USAGE = ev.Usage()
_UTC = timedelta(0)
_DIGITS_2 = tuple(f"{number:02d}" for number in range(100))
_DIGITS_3 = tuple(f"{number:03d}" for number in range(1000))

TRANSCRIPT_VERSION = "aerix"
"""The ``version`` field of every record (Claude Code writes its own semver there)."""


def claude_tool_id(agent: str, call: str) -> str:
    """The ``tool_use`` id of a call: kept when already Claude's own (imported), else derived."""
    if call.startswith("toolu_"):
        return call
    return f"toolu_{agent.replace('.', '_')}_{call}"


class ClaudeTranscript(Projection):
    """The records of the transcript, in log order."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []
        self._session = ""
        self._cwd = ""
        self._model = ""
        self._uuid_prefix = ""
        #: Every agent but the root: its own records, in the order the agents first wrote.
        self.subagents: dict[str, list[dict[str, Any]]] = {}
        self._last: dict[str, str | None] = {}
        self._call_owner: dict[str, str] = {}
        #: An agent call's tool_use id -> its brief; (parent, call id) -> the agent it spawned.
        self._briefs: dict[str, str] = {}
        self._spawned: dict[tuple[str, str], str] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClaudeTranscript) and (self.position, self.records, self.subagents) == (
            other.position,
            other.records,
            other.subagents,
        )

    def _add(self, agent: str, record: dict[str, Any]) -> None:
        if agent == ROOT_AGENT:
            self.records.append(record)
        else:
            records = self.subagents.get(agent)
            if records is None:
                records = self.subagents[agent] = []
            records.append(record)

    __hash__ = None  # type: ignore[assignment]

    def _start(self, event: ev.SessionStart) -> None:
        self._session, self._cwd, self._model = event.session, event.cwd, event.model
        self._uuid_prefix = str(uuid.uuid5(_NAMESPACE, event.session))[:24]

    def _message(self, event: ev.Message) -> None:
        if event.role != "assistant":
            self._tool_result(event)
        elif event.parse_error is None:
            self._assistant(event)

    # ---- records ------------------------------------------------------------------------------

    def _envelope(self, event: ev.EventBase, agent: str, kind: str, parent: str | None) -> dict[str, Any]:
        # Each event makes at most one record, so its uuid is the session's own with the seq as
        # its node. The key order is Claude Code's.
        if agent == ROOT_AGENT:
            return {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": self._cwd,
                "sessionId": self._session,
                "version": TRANSCRIPT_VERSION,
                "gitBranch": "",
                "type": kind,
                "uuid": f"{self._uuid_prefix}{event.seq:012x}",
                "timestamp": stamp(event.time),
            }
        return {
            "parentUuid": parent,
            "isSidechain": True,
            "userType": "external",
            "cwd": self._cwd,
            "sessionId": self._session,
            "version": TRANSCRIPT_VERSION,
            "gitBranch": "",
            "agentId": agent,
            "type": kind,
            "uuid": f"{self._uuid_prefix}{event.seq:012x}",
            "timestamp": stamp(event.time),
        }

    def _segment(self, event: ev.Segment) -> None:
        kind = event.kind
        if kind != "prompt" and kind != "brief" and kind != "summary":
            return
        agent = event.agent
        record = self._envelope(event, agent, "user", self._last.get(agent))
        record["message"] = {"role": "user", "content": event.text}
        if kind == "summary":
            record["isCompactSummary"] = True
        self._add(agent, record)
        self._last[agent] = record["uuid"]

    def _assistant(self, event: ev.Message) -> None:
        agent = event.agent
        content: list[dict[str, Any]] = []
        if event.thought:
            content.append({"type": "thinking", "thinking": event.thought, "signature": ""})
        if event.final is not None:
            content.append({"type": "text", "text": event.final})
        if event.verdict is not None:
            verdict = {"verdict": event.verdict, "reason": event.reason or ""}
            content.append({"type": "text", "text": _json(verdict)})
        tool_ids = [claude_tool_id(agent, call.id) for call in event.calls]
        for call, tool_id in zip(event.calls, tool_ids, strict=True):
            if call.tool == "agent":
                self._briefs[tool_id] = str(call.input.get("brief", ""))
            content.append(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": claude_tool_name(call.tool),
                    "input": to_claude_input(call.tool, call.input, None),
                }
            )
        if not content:
            content.append({"type": "text", "text": event.text})
        record = self._envelope(event, agent, "assistant", self._last.get(agent))
        usage = event.usage or _NO_USAGE
        record["message"] = {
            "model": usage.member or self._model,
            "id": f"msg_aerix_{self._session[:8]}_{event.seq}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if tool_ids else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens},
        }
        self._add(agent, record)
        self._last[agent] = owner = record["uuid"]
        for tool_id in tool_ids:
            self._call_owner[tool_id] = owner

    def _tool_result(self, event: ev.Message) -> None:
        agent = event.agent
        tool_id = claude_tool_id(agent, event.call or f"seq{event.seq}")
        owner = self._call_owner.get(tool_id)
        record = self._envelope(event, agent, "user", owner or self._last.get(agent))
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": event.text}
        if event.is_error:
            block["is_error"] = True
        record["message"] = {"role": "user", "content": [block]}
        record["toolUseResult"] = event.text
        if event.tool == "agent" and event.call is not None:
            record["toolUseResult"] = self._task_result(event, agent, event.call, tool_id)
        if owner is not None:
            record["sourceToolAssistantUUID"] = owner
        self._add(agent, record)
        self._last[agent] = record["uuid"]

    def _task_result(self, event: ev.Message, agent: str, call: str, tool_id: str) -> dict[str, Any]:
        """Claude Code's ``toolUseResult`` of a Task: what ran it and how it ended."""
        body = event.text.partition("\n")[2] if event.text.startswith("[agent ") else event.text
        status = "completed"
        try:
            outcome = json.loads(body).get("outcome")
        except (ValueError, AttributeError):
            outcome = None
        if event.is_error or (outcome is not None and outcome != "done"):
            status = "failed"
        result: dict[str, Any] = {"status": status, "prompt": self._briefs.get(tool_id, "")}
        spawned = self._spawned.get((agent, call))
        if spawned is not None:
            result["agentId"] = spawned
        result["content"] = [{"type": "text", "text": body}]
        return result

    def _spawn(self, event: ev.AgentSpawn) -> None:
        if event.parent is not None and event.call is not None:
            self._spawned.setdefault((event.parent, event.call), event.agent)

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
        self._add(event.agent, record)
        self._last[event.agent] = record["uuid"]

    HANDLERS: ClassVar[Handlers] = {
        ev.SessionStart: _start,
        ev.Segment: _segment,
        ev.Message: _message,
        ev.Compaction: _compaction,
        ev.AgentSpawn: _spawn,
    }


def stamp(at: datetime) -> str:
    """``at`` to the millisecond, UTC written ``Z``, as Claude Code writes its timestamps:
    ``at.isoformat(timespec="milliseconds").replace("+00:00", "Z")``. Every record needs one,
    and isoformat (slow with pydantic's tzinfo) or %-formatting took a quarter of the
    transcript's time; a UTC time is put together from ready-made digit strings instead."""
    if at.year >= 1000 and at.utcoffset() == _UTC:
        return (
            f"{at.year}-{_DIGITS_2[at.month]}-{_DIGITS_2[at.day]}T{_DIGITS_2[at.hour]}:"
            f"{_DIGITS_2[at.minute]}:{_DIGITS_2[at.second]}.{_DIGITS_3[at.microsecond // 1000]}Z"
        )
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def transcript_lines(transcript: ClaudeTranscript) -> list[str]:
    """The JSONL text of the transcript's main chain, one record a line."""
    return [record_line(record) for record in transcript.records]


def subagent_lines(transcript: ClaudeTranscript) -> dict[str, list[str]]:
    """Each subagent's JSONL lines (``<session>/subagents/agent-<id>.jsonl``), by agent id."""
    return {
        agent: [record_line(record) for record in records] for agent, records in transcript.subagents.items()
    }


def record_line(record: dict[str, Any]) -> str:
    """One record as ``json.dumps(record, ensure_ascii=False, separators=(",", ":"))`` writes it.

    ``plain_json`` writes it about three times as fast, but only for data without floats; the
    one place a record can hold a float is a tool call's input, so such a record goes through
    ``json.dumps``.
    """
    if record["type"] == "assistant" and _floats_in_tool_input(record["message"]["content"]):
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return ev.plain_json(record)


def _floats_in_tool_input(content: list[dict[str, Any]]) -> bool:
    return any(block["type"] == "tool_use" and _holds_float(block["input"]) for block in content)


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_float(item) for item in value)
    return False
