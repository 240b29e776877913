"""Session events as the lines of Claude Code's ``stream-json``, which the Claude Agent SDK parses,
and what a request's result needs of them (each model's usage, the denied calls).

- ``system``/``init`` when a request's session starts: Claude's keys (``session_id``, ``cwd``,
  ``tools`` in Claude's names, ``model``, ``permissionMode``, ``slash_commands``,
  ``claude_code_version``…) and then aerix's own (``aerix_version``, ``request``, ``resumed``,
  ``members`` and what startup found).
- ``assistant`` for each generation: ``message`` is an Anthropic API message (``model`` the
  member's model, ``id``, ``content`` with thinking, text and ``tool_use`` blocks, ``stop_reason``,
  ``usage`` in Claude's keys); ``parent_tool_use_id`` names the agent call a subagent runs for.
- ``user`` for each tool result (a ``tool_result`` block with the call's ``tool_use_id``).
- ``system`` with the event's own type as ``subtype`` for every other session event.

Every line carries ``session_id`` and a ``uuid`` (the transcript record's, for an event that
makes one), and ``agent``, aerix's id of the agent it belongs to. Tool ids, names and inputs are
the transcript's and the hooks' (``aerix.domain.claude_format``).

``ClaudeStream`` is a projection the session's writer feeds (its ``claude stream`` view):
the fold remembers what later lines need, and ``lines`` renders an event just folded. The output
adapter only writes those lines and reads ``summary`` for the result; it reaches the fold through
``aerix.app.ports.request.StreamView``.
Each request's ``session.start`` begins a new fold (each request of a stream-json input has its
own tallies), so fed a whole log it holds the last request's.
"""

from __future__ import annotations

from typing import Any, ClassVar

from aerix.domain import events as ev
from aerix.domain.claude_format import (
    HEADLESS_PERMISSION_MODE,
    ModelTally,
    StreamSummary,
    assistant_blocks,
    claude_tool_id,
    claude_usage,
    message_id,
    record_uuid,
    session_namespace,
)
from aerix.domain.claude_tools import CLAUDE_CODE_VERSION, claude_tool_name, to_claude_input
from aerix.domain.segments import ROOT_AGENT
from aerix.domain.usage import RequestUsage
from aerix.projections.base import Handlers, Projection


class ClaudeStream(Projection):
    """Folds a request's session events for its stream-json lines and its result, remembering
    what later lines need: the session, each agent's model and the call it runs for, each
    model's usage."""

    def __init__(self) -> None:
        super().__init__()
        self._begin()

    def _begin(self) -> None:
        self.session = ""
        self._ids = session_namespace("")
        self.cwd = ""
        self.model = ""
        self.window: int | None = None
        self._models: dict[str, str] = {}
        self._parents: dict[str, str] = {}
        self.models: dict[str, ModelTally] = {}
        #: What a result made without the request's own (an interrupted request's) reports.
        self.usage = RequestUsage()
        self.route: str | None = None
        self.root_turns = 0
        self.end: ev.SessionEnd | None = None
        #: The calls seen (Claude's tool_use_id -> name and input) and the denied ones, for the
        #: result's ``permission_denials``.
        self._calls: dict[str, dict[str, Any]] = {}
        self.denials: list[dict[str, Any]] = []

    def summary(self) -> StreamSummary:
        """What the request's result line needs, as folded so far."""
        return StreamSummary(
            self.session,
            self.model,
            self.models,
            self.usage,
            self.route,
            self.root_turns,
            self.end,
            self.denials,
        )

    def _start(self, record: ev.SessionStart) -> None:
        self._begin()
        self.session, self.cwd, self.model, self.window = (
            record.session,
            record.cwd,
            record.model,
            record.window,
        )
        self._ids = session_namespace(record.session)

    def _route(self, record: ev.RouteDecision) -> None:
        self.route = record.choice

    def _end(self, record: ev.SessionEnd) -> None:
        self.end = record

    def _message(self, record: ev.Message) -> None:
        if record.role == "assistant":
            if record.agent == ROOT_AGENT and record.parse_error is None:
                self.root_turns += 1
            if record.usage is not None:
                self._tally(self._models.get(record.agent, self.model), record.usage)
            for call in record.calls:
                tool_use_id = claude_tool_id(record.agent, call.id)
                self._calls[tool_use_id] = {
                    "tool_name": claude_tool_name(call.tool),
                    "tool_use_id": tool_use_id,
                    "tool_input": to_claude_input(call.tool, call.input, self.cwd or None),
                }
        elif record.denied_rule is not None and record.call:
            denied = self._calls.get(claude_tool_id(record.agent, record.call))
            if denied is not None:
                self.denials.append(denied)

    def _spawned(self, spawn: ev.AgentSpawn) -> None:
        if spawn.model:
            self._models[spawn.agent] = spawn.model
        if spawn.parent is not None and spawn.call is not None:
            self._parents[spawn.agent] = claude_tool_id(spawn.parent, spawn.call)

    HANDLERS: ClassVar[Handlers] = {
        ev.SessionStart: _start,
        ev.AgentSpawn: _spawned,
        ev.RouteDecision: _route,
        ev.SessionEnd: _end,
        ev.Message: _message,
    }

    def lines(self, record: ev.EventBase, listing: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The lines of ``record``, once folded; ``listing`` (what startup found) joins ``init``."""
        if isinstance(record, ev.SessionStart):
            return [self._init(record, listing or {})]
        if isinstance(record, ev.Message):
            return [self._assistant(record) if record.role == "assistant" else self._tool_result(record)]
        fields = record.model_dump(mode="json", exclude_none=True)
        kind = fields.pop("type")
        return [{"type": "system", "subtype": kind, **self._envelope(record), **fields}]

    def _envelope(self, record: ev.EventBase) -> dict[str, Any]:
        return {"uuid": record_uuid(self._ids, record.seq), "session_id": self.session}

    def _init(self, start: ev.SessionStart, listing: dict[str, Any]) -> dict[str, Any]:
        skills = list(listing.get("skills", []))
        own = {key: value for key, value in listing.items() if key not in ("tools", "skills", "agents")}
        return {
            "type": "system",
            "subtype": "init",
            **self._envelope(start),
            "cwd": start.cwd,
            "tools": [claude_tool_name(tool) for tool in listing.get("tools", [])],
            "mcp_servers": [],
            "model": start.model,
            "permissionMode": HEADLESS_PERMISSION_MODE,
            "slash_commands": skills,
            "apiKeySource": "none",
            "claude_code_version": CLAUDE_CODE_VERSION,
            "output_style": "default",
            "agents": list(listing.get("agents", [])),
            "skills": skills,
            "aerix_version": start.aerix_version,
            "request": start.request,
            "resumed": start.resumed,
            **own,
        }

    def _parent(self, agent: str) -> str | None:
        """The tool_use id of the agent call ``agent`` runs for (None for the root): its spawn's,
        else (a line whose spawn this stream did not see) its nearest ancestor's."""
        while agent != ROOT_AGENT and "." in agent:
            found = self._parents.get(agent)
            if found is not None:
                return found
            agent = agent.rpartition(".")[0]
        return None

    def _assistant(self, record: ev.Message) -> dict[str, Any]:
        model = self._models.get(record.agent, self.model)
        content = assistant_blocks(record, self.cwd)
        line: dict[str, Any] = {
            "type": "assistant",
            "message": {
                "model": model,
                "id": record.message_id or message_id(self._ids, record.seq),
                "type": "message",
                "role": "assistant",
                "content": content,
                "stop_reason": "tool_use" if record.calls and not record.parse_error else "end_turn",
                "stop_sequence": None,
                "usage": claude_usage(record.usage),
            },
            "parent_tool_use_id": self._parent(record.agent),
            **self._envelope(record),
            "agent": record.agent,
        }
        if record.parse_error:
            line["parse_error"] = record.parse_error
        return line

    def _tally(self, model: str, usage: ev.Usage) -> None:
        tally = self.models.setdefault(model, ModelTally())
        tally.add(usage)
        if model == self.model:
            tally.window = self.window
        self.usage = self.usage.plus(usage)

    def _tool_result(self, record: ev.Message) -> dict[str, Any]:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": claude_tool_id(record.agent, record.call or f"seq{record.seq}"),
            "content": record.text,
        }
        if record.is_error:
            block["is_error"] = True
        return {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": self._parent(record.agent),
            **self._envelope(record),
            "tool_use_result": record.text,
            "agent": record.agent,
        }
