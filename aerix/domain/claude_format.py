"""What every output in Claude Code's formats shares: the ids it writes and their shapes.

The transcript projection (``<id>.claude.jsonl``), the hook payloads and the headless
``stream-json`` lines all name the same tool call, generation and record; they take their ids
from here, so a client that reads two of them (the Agent SDK reading stream-json and then the
session's transcript) can join them.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Final

from aerix.domain.claude_tools import claude_tool_name, to_claude_input
from aerix.domain.events import Message, SessionEnd, ToolCall, Usage
from aerix.domain.usage import RequestUsage

#: How aerix -p runs, in Claude Code's terms: no permission is asked, every call runs (hooks'
#: ``permission_mode``, stream-json's ``permissionMode``, the one --permission-mode acted on).
HEADLESS_PERMISSION_MODE: Final = "bypassPermissions"

_NAMESPACE: Final = uuid.UUID("6f1c2a52-53b7-4d8e-9a55-6e1f0f3b2a11")


def claude_tool_id(agent: str, call: str) -> str:
    """The ``tool_use`` id of a call: kept when already Claude's own (imported), else derived."""
    if call.startswith("toolu_"):
        return call
    return f"toolu_{agent.replace('.', '_')}_{call}"


class SessionNamespace:
    """The namespace of a session's derived ids (``record_uuid``, ``message_id``): a uuid5
    namespace with its SHA-1 over the namespace's bytes already taken, so each id hashes only
    its own few bytes. A transcript derives several ids per turn, and ``uuid.uuid5`` (a new
    hash over the namespace each time, then a ``UUID`` object to format) was most of a rebuild's
    time; ``record_uuid`` writes the very same text."""

    __slots__ = ("_sha1", "uuid")

    def __init__(self, namespace: uuid.UUID) -> None:
        self.uuid = namespace
        self._sha1 = hashlib.sha1(namespace.bytes, usedforsecurity=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionNamespace) and other.uuid == self.uuid

    def __hash__(self) -> int:
        return hash(self.uuid)

    def __reduce__(self) -> tuple[type[SessionNamespace], tuple[uuid.UUID]]:
        # A hash object cannot be copied or pickled as it is: made again from the namespace
        # (a projection copied midway keeps its ids).
        return SessionNamespace, (self.uuid,)

    def uuid5(self, name: str) -> str:
        """``str(uuid.uuid5(self.uuid, name))``, written in one step (formatting it cost more than
        hashing it)."""
        digits = self._digest(name)
        # uuid5 keeps the hash's first 16 bytes, with the version (5) in the 13th hex digit and
        # the variant (binary 10) in the top two bits of the 17th.
        return (
            f"{digits[:8]}-{digits[8:12]}-5{digits[13:16]}-"
            f"{_VARIANT_DIGIT[digits[16]]}{digits[17:20]}-{digits[20:32]}"
        )

    def uuid5_hex(self, name: str) -> str:
        """``uuid.uuid5(self.uuid, name).hex``."""
        digits = self._digest(name)
        return f"{digits[:12]}5{digits[13:16]}{_VARIANT_DIGIT[digits[16]]}{digits[17:32]}"

    def _digest(self, name: str) -> str:
        sha1 = self._sha1.copy()
        sha1.update(name.encode())
        return sha1.hexdigest()


#: A hex digit with its top two bits set to uuid's variant, binary 10.
_VARIANT_DIGIT: Final = {f"{value:x}": f"{(value & 0x3) | 0x8:x}" for value in range(16)}


def session_namespace(session: str) -> SessionNamespace:
    """The namespace of a session's derived ids (``record_uuid``, ``message_id``)."""
    return SessionNamespace(uuid.uuid5(_NAMESPACE, session))


def record_uuid(namespace: SessionNamespace, seq: int, part: int = 0) -> str:
    """The uuid of what event ``seq`` makes (its ``part``-th record when it makes several, one
    per content block of a generation): derived, so a rebuild writes the same, and unlike its
    neighbours' from the first character."""
    return namespace.uuid5(f"{seq}.{part}")


def message_id(namespace: SessionNamespace, seq: int) -> str:
    """``message.id`` of the generation recorded as event ``seq``."""
    return f"msg_{namespace.uuid5_hex(f'{seq}.-1')[:24]}"


def request_id(namespace: SessionNamespace, seq: int) -> str:
    """``requestId`` of the generation recorded as event ``seq``."""
    return f"req_{namespace.uuid5_hex(f'{seq}.-2')[:24]}"


def claude_usage(usage: Usage | None) -> dict[str, int]:
    """A generation's usage in Claude's keys: the prefix the pool's store gave back is the cache
    read, the rows the pool computed are ``input_tokens`` (an imported turn's cache writes stay
    cache writes), so the three add up to the prompt, as Claude's API reports its prompt cache."""
    if usage is None:
        return dict.fromkeys(USAGE_KEYS, 0)
    prompt = usage.prompt_tokens
    cache_read = min(usage.recomputed_from or 0, prompt)
    cache_creation = min(usage.cache_creation_tokens or 0, prompt - cache_read)
    return {
        "input_tokens": prompt - cache_read - cache_creation,
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": cache_read,
        "output_tokens": usage.completion_tokens,
    }


def claude_usage_totals(usage: RequestUsage) -> dict[str, int]:
    """A request's summed usage in Claude's keys (a result's ``usage``): the rows the prefix store
    gave back are the cache read, the rest of the prompts ``input_tokens``."""
    return {
        "input_tokens": usage.prompt_tokens - usage.reused_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.reused_tokens,
        "output_tokens": usage.completion_tokens,
    }


#: The keys of ``claude_usage``, in Claude's order.
USAGE_KEYS: Final = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


@dataclass
class ModelTally:
    """One model's usage over a request, for the result's ``modelUsage``."""

    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    window: int | None = None

    def add(self, usage: Usage) -> None:
        for key, value in claude_usage(usage).items():
            self.usage[key] += value

    def as_json(self) -> dict[str, Any]:
        """Claude Code's ``modelUsage`` entry (a local model costs nothing)."""
        return {
            "inputTokens": self.usage["input_tokens"],
            "outputTokens": self.usage["output_tokens"],
            "cacheReadInputTokens": self.usage["cache_read_input_tokens"],
            "cacheCreationInputTokens": 0,
            "webSearchRequests": 0,
            "costUSD": 0,
            "contextWindow": self.window or 0,
        }


@dataclass(frozen=True)
class StreamSummary:
    """What a request's result line needs of its events, as the stream-json fold saw them: the
    session, the main model and each model's usage, the totals, the route, the root's turns,
    the end (None while it runs) and the calls a permission rule refused."""

    session: str
    model: str
    models: dict[str, ModelTally]
    usage: RequestUsage
    route: str | None
    root_turns: int
    end: SessionEnd | None
    denials: list[dict[str, Any]]


def tool_use_block(agent: str, call: ToolCall, cwd: str | None) -> dict[str, Any]:
    """A call as Claude's ``tool_use`` block: its id, Claude's tool name and input fields (file
    paths made absolute against ``cwd``; as given when ``cwd`` is None)."""
    return {
        "type": "tool_use",
        "id": claude_tool_id(agent, call.id),
        "name": claude_tool_name(call.tool),
        "input": to_claude_input(call.tool, call.input, cwd),
    }


def assistant_blocks(event: Message, cwd: str | None) -> list[dict[str, Any]]:
    """A generation's content blocks, as Claude Code writes an assistant message: ``thinking``
    (the thought, with an empty ``signature``), ``text`` (a final, or a verdict as JSON) and a
    ``tool_use`` per call (``tool_use_block``). A turn that did not parse, or that holds nothing
    but a thought, also gets its raw text as a ``text`` block: its tokens were spent on it."""
    blocks: list[dict[str, Any]] = []
    if event.thought:
        blocks.append({"type": "thinking", "thinking": event.thought, "signature": ""})
    if event.parse_error is None:
        if event.final is not None:
            blocks.append({"type": "text", "text": event.final})
        if event.verdict is not None:
            verdict = {"verdict": event.verdict, "reason": event.reason or ""}
            blocks.append({"type": "text", "text": json.dumps(verdict, ensure_ascii=False)})
        blocks += [tool_use_block(event.agent, call, cwd) for call in event.calls]
    if len(blocks) == (1 if event.thought else 0):
        blocks.append({"type": "text", "text": event.text})
    return blocks


def control_success(request_id: str, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """stream-json input: the ``control_response`` of a control request carried out."""
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response or {}},
    }


def control_failure(request_id: str, error: str) -> dict[str, Any]:
    """stream-json input: the ``control_response`` of a control request aerix cannot carry out."""
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }
