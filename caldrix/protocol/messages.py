"""Typed models of every caldrix-protocol 2 message.

Both sides use them: the pool parses requests into the request models and builds every reply
from the reply models; the client (:mod:`caldrix.protocol.client`) builds requests from the
request models and reads replies into the reply models, so a field renamed on one side fails the
type check on the other.

Requests are validated strictly (an integer is an integer, text is text, never bytes); how a
failure becomes a one-line refusal naming its field is :mod:`caldrix.protocol.parsing`.
Unknown extra fields are ignored, so a newer client stays compatible. Replies are
read with ``extra="allow"`` for the same reason in the other direction. A reply is written with
``model_dump()``: fields in the order declared here, which is the order protocol.md lists them.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from caldrix.limits import (
    DEGENERATE_LONG_RUN_TOKENS,
    DEGENERATE_REPEATS,
    DEGENERATE_RUN_MIN_TOKENS,
    DEGENERATE_SIMILAR_LINES,
    DEGENERATE_SPAN_MAX_TOKENS,
    GUARD_SPAN_LIMIT_TOKENS,
    MAX_SEED,
    MODEL_REFERENCE_CHARS,
    OPEN_STRING_LINE_MAX_CHARS,
)
from caldrix.protocol.framing import PROTOCOL_VERSION, FrameMode

Role = Literal["system", "user", "assistant"]
Finish = Literal["stop", "length", "constraint", "degenerate"]
MemberState = Literal["loading", "ready", "failed"]

#: The most alternatives a ``generate`` may ask for with ``logprobs``.
MAX_TOP_LOGPROBS: Final = 20


class _Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, defer_build=True)


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


# --- objects -------------------------------------------------------------------------------


class SegmentSpec(_Request):
    """A segment, one piece of a context, as a request gives it: text with an id, a role and a
    pinned flag (aerix's pool port passes the same map under the same name)."""

    id: Annotated[str, Field(min_length=1)]
    role: Role
    text: str
    pinned: bool = False


class SegmentCount(_Reply):
    """Tokens one segment adds to the rendered prompt, role markers included."""

    id: str
    tokens: int


class SegmentWithCount(_Reply):
    id: str
    role: Role
    text: str
    pinned: bool
    tokens: int


class RemoteInfo(_Reply):
    """Where a remote member's model runs (the member object's added ``remote`` field)."""

    url: str
    server: str
    model: str
    reports_cached: bool


class MemberObject(_Reply):
    """The protocol's member object: a loaded model as ``member.list`` and ``member.load``
    describe it."""

    name: str
    model: str
    path: str
    state: MemberState
    footprint_bytes: int | None
    n_ctx: int
    lane: Literal["cpu", "gpu"]
    threads: int | None
    constraints: list[str]
    queue: int
    error: str | None = None
    """Why a ``failed`` member failed; sent only then (an extra field of this pool)."""
    remote: RemoteInfo | None = None
    """Where the model runs, sent only for a remote member (an added field)."""
    flash_attention: bool | None = None
    """``true`` when the member computes with flash attention, sent only then (an added field)."""

    @model_serializer(mode="wrap")
    def _optional_fields_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields: dict[str, Any] = handler(self)
        for name in ("error", "remote", "flash_attention"):
            if fields.get(name) is None:
                fields.pop(name, None)
        return fields


class MemoryFigures(_Reply):
    limit: int
    used: int


class PrefixStoreStats(_Reply):
    entries: int
    bytes: int
    budget: int
    hits: int
    misses: int


# --- requests ------------------------------------------------------------------------------


class Hello(_Request):
    op: Literal["hello"]
    protocol: int
    client: str | None = None


class MemberList(_Request):
    op: Literal["member.list"]
    rid: int


class MemberLoad(_Request):
    op: Literal["member.load"]
    rid: int
    name: Annotated[str, Field(min_length=1)]
    model: Annotated[str, Field(min_length=1, max_length=MODEL_REFERENCE_CHARS)]
    flags: dict[str, Any] = Field(default_factory=dict)


class MemberUnload(_Request):
    op: Literal["member.unload"]
    rid: int
    name: str


class ContextCreate(_Request):
    op: Literal["context.create"]
    rid: int
    member: str
    segments: list[SegmentSpec]


class AppendEdit(_Request):
    op: Literal["append"]
    segment: SegmentSpec


class ReplaceEdit(_Request):
    op: Literal["replace"]
    id: str
    text: str | None = None
    role: Role | None = None
    pinned: bool | None = None


class RemoveEdit(_Request):
    op: Literal["remove"]
    id: str


Edit = Annotated[AppendEdit | ReplaceEdit | RemoveEdit, Field(discriminator="op")]


class ContextEdit(_Request):
    op: Literal["context.edit"]
    rid: int
    context: str
    edits: list[Edit]


class ContextFork(_Request):
    op: Literal["context.fork"]
    rid: int
    context: str
    keep: Annotated[int, Field(ge=0)]


class ContextGet(_Request):
    op: Literal["context.get"]
    rid: int
    context: str


class ContextDrop(_Request):
    op: Literal["context.drop"]
    rid: int
    context: str


class Constraint(_Request):
    """Exactly one of the four constraint kinds."""

    json_schema: Annotated[dict[str, Any] | bool | None, Field(alias="json")] = None
    one_of: Annotated[list[Annotated[str, Field(min_length=1)]] | None, Field(min_length=1)] = None
    regex: str | None = None
    lark: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Constraint:
        given = [name for name, value in self.as_dict().items() if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of json, one_of, regex or lark")
        return self

    def as_dict(self) -> dict[str, object]:
        """The constraint as the protocol (and :class:`GenerationParams`) carries it."""
        values = {"json": self.json_schema, "one_of": self.one_of, "regex": self.regex, "lark": self.lark}
        return {key: value for key, value in values.items() if value is not None}


class AppendOutput(_Request):
    """Store a generation's output as an assistant segment of its context."""

    id: Annotated[str, Field(min_length=1)]
    pinned: bool = False


class Guard(_Request):
    """An addition to the contract: the degeneration guard a ``generate`` asks for; every part
    left out is caldrix's default (caldrix/limits.py)."""

    span_max_tokens: Annotated[int, Field(ge=1, le=GUARD_SPAN_LIMIT_TOKENS)] = DEGENERATE_SPAN_MAX_TOKENS
    repeats: Annotated[int, Field(ge=2)] = DEGENERATE_REPEATS
    run_min_tokens: Annotated[int, Field(ge=2)] = DEGENERATE_RUN_MIN_TOKENS
    open_string_chars: Annotated[int, Field(ge=0)] = OPEN_STRING_LINE_MAX_CHARS
    similar_lines: Annotated[int, Field(ge=0)] = DEGENERATE_SIMILAR_LINES
    long_run_tokens: Annotated[int, Field(ge=0)] = DEGENERATE_LONG_RUN_TOKENS


class Generate(_Request):
    op: Literal["generate"]
    rid: int
    context: str
    max_new_tokens: Annotated[int, Field(ge=1)]
    constraint: Constraint | None = None
    logprobs: Annotated[int, Field(ge=0, le=MAX_TOP_LOGPROBS)] = 0
    temperature: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] = 0.0
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] | None = None
    stop: list[str] = Field(default_factory=list)
    append: AppendOutput | None = None
    top_k: Annotated[int, Field(ge=0)] = 0
    """An addition to the contract: sample among the k most likely tokens only (0 = all)."""
    top_p: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 1.0
    """An addition to the contract: sample among the fewest tokens whose probabilities add up
    to p only (1 = all)."""
    guard: Guard | None = None
    """An addition to the contract: stop the generation (``finish: "degenerate"``) as soon as it
    repeats itself or a string never closes; absent, no guard."""


class PoolStatus(_Request):
    op: Literal["pool.status"]
    rid: int


class PoolStop(_Request):
    op: Literal["pool.stop"]
    rid: int


#: Every request but ``generate``: answered with one ``ok`` or ``error`` frame.
ControlRequest = (
    MemberList
    | MemberLoad
    | MemberUnload
    | ContextCreate
    | ContextEdit
    | ContextFork
    | ContextGet
    | ContextDrop
    | PoolStatus
    | PoolStop
)
Request = ControlRequest | Generate


# --- replies -------------------------------------------------------------------------------


class HelloReply(_Reply):
    op: Literal["hello"]
    protocol: int = PROTOCOL_VERSION
    server: str
    pid: int
    frames: FrameMode


class ErrorReply(_Reply):
    """An ``error`` frame. ``rid`` is left out of a frame that answers no request (a frame that
    did not decode, the handshake); the fields after ``message`` are the error's details
    (``supported``, a ``no_fit``'s figures …), kept as extra fields."""

    op: Literal["error"]
    rid: int | None = None
    code: str
    message: str

    @model_serializer(mode="wrap")
    def _rid_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields: dict[str, Any] = handler(self)
        if fields.get("rid") is None:
            fields.pop("rid", None)
        return fields


class ProgressFrame(_Reply):
    op: Literal["progress"]
    rid: int
    done: int
    total: int


class TokenFrame(_Reply):
    op: Literal["token"]
    rid: int
    text: str


class Timings(_Reply):
    queue_ms: float
    prefill_ms: float
    decode_ms: float


class TopLogprob(_Reply):
    token: str
    logprob: float


class TokenLogprob(_Reply):
    token: str
    logprob: float
    top: list[TopLogprob]


class DoneFrame(_Reply):
    op: Literal["done"]
    rid: int
    text: str
    finish: Finish
    prompt_tokens: int
    completion_tokens: int
    recomputed_from: int
    timings: Timings
    logprobs: list[TokenLogprob] | None = None
    segment: SegmentCount | None = None
    stop_string: str | None = None
    """An addition to the contract: the stop string that ended the text; sent only then."""
    reason: str | None = None
    """An addition to the contract: why the guard stopped a ``degenerate`` generation; sent
    only then."""

    @model_serializer(mode="wrap")
    def _additions_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields: dict[str, Any] = handler(self)
        for name in ("stop_string", "reason"):
            if fields.get(name) is None:
                fields.pop(name, None)
        return fields


GenerationFrame = ProgressFrame | TokenFrame | DoneFrame


# --- ok results, one per op ----------------------------------------------------------------


class MemberListResult(_Reply):
    members: list[MemberObject]
    memory: MemoryFigures


class MemberLoadResult(_Reply):
    member: MemberObject


class ContextResult(_Reply):
    """``context.create`` and ``context.fork``."""

    context: str
    segments: list[SegmentCount]
    tokens: int


class ContextEditResult(_Reply):
    segments: list[SegmentCount]
    tokens: int


class ContextGetResult(_Reply):
    member: str
    segments: list[SegmentWithCount]
    tokens: int


class GenerationCounts(_Reply):
    """Generations admitted (queued on a member or running) and waiting for admission under
    ``--max-connections``: an extra field of this pool's ``pool.status``."""

    limit: int
    admitted: int
    waiting: int


class PoolStatusResult(_Reply):
    version: str
    pid: int
    uptime_s: float
    members: list[MemberObject]
    connections: int
    contexts: int
    prefix_store: dict[str, PrefixStoreStats]
    generations: GenerationCounts | None = None


#: The ``ok`` reply of a control op (every op but ``generate``); None for the ops whose reply
#: carries no fields (``member.unload``, ``context.drop``, ``pool.stop``).
ControlResult = (
    MemberListResult
    | MemberLoadResult
    | ContextResult
    | ContextEditResult
    | ContextGetResult
    | PoolStatusResult
    | None
)
