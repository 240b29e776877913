"""The Claude Code transcript of a session (``<id>.claude.jsonl``), for hooks that read
``transcript_path`` and for the tools that read Claude Code's projects (ccusage, transcript
viewers, the Claude Agent SDK's session reader).

Records follow Claude Code 2.1's shape (``CLAUDE_CODE_VERSION``, compared with the real
transcripts in tests/fixtures/claude-code):

- ``user`` and ``assistant`` records chained by ``uuid``/``parentUuid``, each record's parent the
  record before it in its file, so a reader walking back from the last record sees everything;
- one assistant record per content block (thinking with its ``signature``, text, tool_use), all
  of one generation sharing ``message.id`` and ``requestId``; the generation's usage and its
  ``stop_reason`` on the last of them only, so a reader that sums usage counts it once. Usage is
  Claude's: the prefix the pool reused (``recomputed_from``) as ``cache_read_input_tokens``,
  ``input_tokens`` the prompt rows it computed. A turn that failed to parse is recorded too (its
  raw text), since its tokens were spent;
- each tool_result in a user record with ``sourceToolAssistantUUID`` (the record holding its
  tool_use) and a ``toolUseResult`` of the tool's shape (``claude_results``); inputs in Claude's
  vocabulary with absolute file paths;
- the runtime's notes (re-asks, the note after a compaction, a Stop hook's reason) and hook
  context as ``isMeta`` user records; ``compact_boundary`` system records where the runtime
  compacted; summary segments as ``isCompactSummary`` user records;
- ``model`` the agent's model id, ``gitBranch`` the branch its request started on.

UUIDs, message and request ids are derived from the session id and the event's seq, so a
rebuild writes the same bytes. An imported session keeps Claude Code's own ``message.id``,
``requestId`` and cache figures.

Subagents are written the way Claude Code 2.1 writes them: each agent other than the root has
records of its own (``subagents[agent id]``, the file ``<session>/subagents/agent-<id>.jsonl``),
``isSidechain: true`` with its ``agentId`` (``claude_agent``), rooted at
``parentUuid: null``. The parent's ``agent`` call is Claude's ``Agent`` tool_use
(``description``, ``prompt``, ``subagent_type``), and its result carries Claude's
``toolUseResult`` for it: ``status``, ``prompt``, ``agentId`` and the result as ``content``.

The rest of the log (hooks, jobs, plans, context ops) has no place in Claude Code's format and
is left out.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, ClassVar

from aerix.domain import events as ev
from aerix.domain.claude_format import (
    assistant_blocks,
    claude_tool_id,
    claude_usage,
    message_id,
    record_uuid,
    request_id,
    session_namespace,
)
from aerix.domain.claude_tools import CLAUDE_CODE_VERSION
from aerix.domain.plain_json import plain_json
from aerix.domain.segments import ROOT_AGENT, is_note_segment
from aerix.projections.base import Handlers, Projection
from aerix.projections.claude_results import AgentTally, task_result, tool_use_result

_UTC = timedelta(0)
_DIGITS_2 = tuple(f"{number:02d}" for number in range(100))
_DIGITS_3 = tuple(f"{number:03d}" for number in range(1000))


class ClaudeTranscript(Projection):
    """The records of the transcript, in log order."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []
        self._session = ""
        self._cwd = ""
        self._model = ""
        self._branch = ""
        self._imported = False
        self._ids = session_namespace("")
        #: Every agent but the root, by its Claude agent id: its records, in the order the
        #: agents first wrote.
        self.subagents: dict[str, list[dict[str, Any]]] = {}
        self._models: dict[str, str] = {}
        self._last: dict[str, str | None] = {}
        #: A tool_use id -> the uuid of the record holding it, its tool and its Claude input.
        self._calls: dict[str, tuple[str, str, dict[str, Any]]] = {}
        #: An agent call's tool_use id -> its brief; (parent, call id) -> the agent it spawned.
        self._briefs: dict[str, str] = {}
        self._spawned: dict[tuple[str, str], str] = {}
        self._tallies: dict[str, AgentTally] = {}
        #: Each agent's ``_envelope`` without its parent, made once per request.
        self._envelopes: dict[str, dict[str, Any]] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClaudeTranscript) and (self.position, self.records, self.subagents) == (
            other.position,
            other.records,
            other.subagents,
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def cwd(self) -> str:
        """The session's working directory (its latest ``session.start``'s)."""
        return self._cwd

    def claude_agent(self, agent: str) -> str:
        """The id ``agent`` goes by in Claude Code's files (``agentId``, ``agent-<id>.jsonl``):
        aerix's own (``a1.c3``), the id hooks are given as ``agent_id``, so a hook finds the
        file of the agent it was told about; an imported subagent keeps Claude Code's."""
        if self._imported and agent.startswith(f"{ROOT_AGENT}."):
            return agent.removeprefix(f"{ROOT_AGENT}.")
        return agent

    def _records_of(self, agent: str) -> list[dict[str, Any]]:
        """The list ``agent``'s records go to: the main chain's, or its subagent file's (made when
        it first writes)."""
        if agent == ROOT_AGENT:
            return self.records
        records = self.subagents.get(agent_id := self.claude_agent(agent))
        if records is None:
            records = self.subagents[agent_id] = []
        return records

    def _add(self, agent: str, record: dict[str, Any]) -> None:
        self._records_of(agent).append(record)
        self._last[agent] = record["uuid"]

    def _start(self, event: ev.SessionStart) -> None:
        self._session, self._cwd, self._model = event.session, event.cwd, event.model
        self._branch = event.git_branch or ""
        self._imported = event.imported_from is not None
        self._ids = session_namespace(event.session)
        self._envelopes.clear()

    def _spawn(self, event: ev.AgentSpawn) -> None:
        self._tallies[event.agent] = AgentTally(event.time)
        if event.model:
            self._models[event.agent] = event.model
        if event.parent is not None and event.call is not None:
            self._spawned.setdefault((event.parent, event.call), event.agent)

    def _message(self, event: ev.Message) -> None:
        if event.role == "assistant":
            self._assistant(event)
        else:
            self._tool_result(event)

    # ---- records ------------------------------------------------------------------------------

    def _envelope(self, agent: str, parent: str | None) -> dict[str, Any]:
        """The keys every record starts with, in Claude Code's order; the caller adds its own,
        then ``_stamp`` adds ``uuid`` and ``timestamp`` where Claude Code puts them."""
        record = self._envelope_of(agent).copy()  # a copy keeps the keys' order, cheaper than a new dict
        record["parentUuid"] = parent
        return record

    def _envelope_of(self, agent: str) -> dict[str, Any]:
        """``agent``'s envelope without its parent, made once per request."""
        envelope = self._envelopes.get(agent)
        if envelope is None:
            envelope = self._envelopes[agent] = {
                "parentUuid": None,
                "isSidechain": agent != ROOT_AGENT,
                "userType": "external",
                "cwd": self._cwd,
                "sessionId": self._session,
                "version": CLAUDE_CODE_VERSION,  # the release whose format this is
                "gitBranch": self._branch,
            }
            if agent != ROOT_AGENT:
                envelope["agentId"] = self.claude_agent(agent)
        return envelope

    def _stamp(self, record: dict[str, Any], event: ev.EventBase) -> None:
        """Add ``uuid`` and ``timestamp``."""
        # Each record is one event's (an assistant event makes one per block): uuid5 of the
        # seq and block under the session's namespace, so uuids differ from the first character.
        record["uuid"] = record_uuid(self._ids, event.seq)
        record["timestamp"] = stamp(event.time)

    def _segment(self, event: ev.Segment) -> None:
        kind = event.kind
        meta = kind == "hook" or (kind == "prompt" and is_note_segment(event.id))
        if kind == "brief":
            meta = event.id.endswith(".retry")  # a retry's note from its verifier
        elif kind != "prompt" and kind != "summary" and kind != "hook":
            return
        agent = event.agent
        record = self._envelope(agent, self._last.get(agent))
        record["type"] = "user"
        record["message"] = {"role": "user", "content": event.text}
        if meta:
            record["isMeta"] = True
        if kind == "summary":
            record["isVisibleInTranscriptOnly"] = True
            record["isCompactSummary"] = True
        self._stamp(record, event)
        self._add(agent, record)

    def _assistant(self, event: ev.Message) -> None:
        agent = event.agent
        seq = event.seq
        blocks = assistant_blocks(event, self._cwd or None)
        tools: dict[str, str] = {}  # tool_use id -> aerix tool
        for call in event.calls if event.parse_error is None else ():
            tool_id = claude_tool_id(agent, call.id)
            tools[tool_id] = call.tool
            if call.tool == "agent":
                self._briefs[tool_id] = str(call.input.get("brief", ""))
        usage = event.usage
        claude = claude_usage(usage) if usage is not None else None
        tally = self._tallies.get(agent)
        if tally is not None:
            tally.tool_uses += len(tools)
            if claude is not None:
                tally.last_usage = claude.copy()
        imported_model = usage.member if self._imported and usage is not None else None
        model = self._models.get(agent) or imported_model or self._model
        ids = self._ids
        generation = event.message_id or message_id(ids, seq)
        request = event.request_id or request_id(ids, seq)
        at = stamp(event.time)  # one timestamp for all the generation's records
        # The records of one generation go to one file, each the parent of the next: the
        # envelope, the file and the chain's end are looked up once, not once per block.
        envelope = self._envelope_of(agent)
        records = self._records_of(agent)
        parent = self._last.get(agent)
        last = len(blocks) - 1
        for part, block in enumerate(blocks):
            message: dict[str, Any] = {
                "model": model,
                "id": generation,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
            }
            if part == last:
                message["stop_reason"] = "tool_use" if tools else "end_turn"
                if claude is not None:
                    message["usage"] = claude
            record = envelope.copy()  # a copy keeps the keys' order, and is cheaper than a new dict
            record["parentUuid"] = parent
            record["message"] = message
            record["requestId"] = request
            record["type"] = "assistant"
            record["uuid"] = parent = record_uuid(ids, seq, part)
            record["timestamp"] = at
            records.append(record)
            if block["type"] == "tool_use":
                self._calls[block["id"]] = (parent, tools[block["id"]], block["input"])
        self._last[agent] = parent

    def _tool_result(self, event: ev.Message) -> None:
        agent = event.agent
        tool_id = claude_tool_id(agent, event.call or f"seq{event.seq}")
        called = self._calls.get(tool_id)
        owner, tool, claude_input = called if called is not None else (None, event.tool or "", {})
        text = _without_header(event)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
        if event.is_error:
            block["is_error"] = True
        record = self._envelope(agent, self._last.get(agent))
        record["type"] = "user"
        record["message"] = {"role": "user", "content": [block]}
        self._stamp(record, event)
        if event.tool == "agent" and event.call is not None:
            spawned = self._spawned.get((agent, event.call))
            agent_id = self.claude_agent(spawned) if spawned is not None else None
            tally = self._tallies.get(spawned) if spawned is not None else None
            prompt = self._briefs.get(tool_id, "")
            record["toolUseResult"] = task_result(text, event.is_error, prompt, agent_id, tally, event.time)
        else:
            tool_name = tool or event.tool or ""
            record["toolUseResult"] = tool_use_result(tool_name, claude_input, text, event.is_error)
        if owner is not None:
            record["sourceToolAssistantUUID"] = owner
        self._add(agent, record)

    def _compaction(self, event: ev.Compaction) -> None:
        """A ``compact_boundary``: a new root pointing back at the record before it."""
        agent = event.agent
        envelope = self._envelope(agent, None)
        record: dict[str, Any] = {"parentUuid": None, "logicalParentUuid": self._last.get(agent)}
        record.update(envelope)
        record.update(
            type="system", subtype="compact_boundary", content="Conversation compacted", isMeta=False
        )
        record["timestamp"] = stamp(event.time)
        record["uuid"] = record_uuid(self._ids, event.seq)
        record["level"] = "info"
        trigger = "manual" if event.trigger == "manual" else "auto"
        record["compactMetadata"] = {"trigger": trigger, "preTokens": event.tokens_before}
        self._add(agent, record)

    HANDLERS: ClassVar[Handlers] = {
        ev.SessionStart: _start,
        ev.Segment: _segment,
        ev.Message: _message,
        ev.Compaction: _compaction,
        ev.AgentSpawn: _spawn,
    }


def _without_header(event: ev.Message) -> str:
    """A tool result's text without the ``[tool call]`` line the runtime heads it with in the
    context (Claude Code's results are the output alone; the tool_use_id says which call)."""
    header = f"[{event.tool} {event.call}]\n"
    if event.call is not None and event.text.startswith(header):
        return event.text[len(header) :]
    return event.text


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
    return plain_json(record)


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
