"""Typed models of every caldrix-protocol 2 message.

Requests are validated strictly (an integer is an integer, text is text, never bytes) and name
the offending field when they fail: :func:`parse_request` raises :class:`UnknownOp` for an op
it does not know and :class:`BadRequest` with the dotted field path for anything missing or
ill-typed. Unknown extra fields are ignored, so a newer client stays compatible. Replies are
read with ``extra="allow"`` for the same reason in the other direction.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from caldrix.errors import BadRequest, UnknownOp
from caldrix.protocol.framing import PROTOCOL_VERSION, FrameMode

Role = Literal["system", "user", "assistant"]
Finish = Literal["stop", "length", "constraint"]
MemberState = Literal["loading", "ready", "failed"]

#: The most alternatives a ``generate`` may ask for with ``logprobs``.
MAX_TOP_LOGPROBS: Final = 20


class _Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow")


# --- objects -------------------------------------------------------------------------------


class Segment(_Request):
    """One piece of a context: text with an id, a role and a pinned flag."""

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


class MemberInfo(_Reply):
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
    model: Annotated[str, Field(min_length=1)]
    flags: dict[str, Any] = Field(default_factory=dict)


class MemberUnload(_Request):
    op: Literal["member.unload"]
    rid: int
    name: str


class ContextCreate(_Request):
    op: Literal["context.create"]
    rid: int
    member: str
    segments: list[Segment]


class AppendEdit(_Request):
    op: Literal["append"]
    segment: Segment


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


class Generate(_Request):
    op: Literal["generate"]
    rid: int
    context: str
    max_new_tokens: Annotated[int, Field(ge=1)]
    constraint: Constraint | None = None
    logprobs: Annotated[int, Field(ge=0, le=MAX_TOP_LOGPROBS)] = 0
    temperature: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] = 0.0
    seed: int | None = None
    stop: list[str] = Field(default_factory=list)
    append: AppendOutput | None = None


class PoolStatus(_Request):
    op: Literal["pool.status"]
    rid: int


class PoolStop(_Request):
    op: Literal["pool.stop"]
    rid: int


Request = (
    MemberList
    | MemberLoad
    | MemberUnload
    | ContextCreate
    | ContextEdit
    | ContextFork
    | ContextGet
    | ContextDrop
    | Generate
    | PoolStatus
    | PoolStop
)
_REQUEST_MODELS: Final[dict[str, type[_Request]]] = {
    "member.list": MemberList, "member.load": MemberLoad, "member.unload": MemberUnload,
    "context.create": ContextCreate, "context.edit": ContextEdit, "context.fork": ContextFork,
    "context.get": ContextGet, "context.drop": ContextDrop, "generate": Generate,
    "pool.status": PoolStatus, "pool.stop": PoolStop,
}  # fmt: skip
#: Every op a client may send after the handshake.
REQUEST_OPS: Final = tuple(_REQUEST_MODELS)

_EDIT_TAGS: Final = ("append", "replace", "remove")


def request_rid(frame: dict[str, Any]) -> int | None:
    """The frame's ``rid`` when it is an integer, for error replies to bad requests."""
    rid = frame.get("rid")
    return rid if isinstance(rid, int) and not isinstance(rid, bool) else None


def parse_request(frame: dict[str, Any]) -> Request:
    """Validate one request frame, or raise :class:`UnknownOp` / :class:`BadRequest`."""
    op = frame.get("op")
    if not isinstance(op, str):
        raise BadRequest("the request's 'op' field is missing or not text", field="op")
    model = _REQUEST_MODELS.get(op)
    if model is None:
        raise UnknownOp(f"unknown op '{op[:80]}'; known ops: {', '.join(REQUEST_OPS)}", op=op[:80])
    try:
        return cast(Request, model.model_validate(frame))
    except ValidationError as exc:
        raise bad_request_from(exc) from exc


def bad_request_from(exc: ValidationError) -> BadRequest:
    """The first validation error as one line naming its field (``segments.0.role``)."""
    first = exc.errors()[0]
    path = _field_path(first["loc"])
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        path.append("op")
    field = ".".join(path) or "request"
    message = first["msg"].removeprefix("Value error, ") or "invalid"
    reason = message[0].lower() + message[1:]
    if first["type"] == "missing":
        return BadRequest(f"field '{field}' is missing", field=field)
    return BadRequest(f"field '{field}': {reason}", field=field)


def _field_path(loc: tuple[int | str, ...]) -> list[str]:
    # A discriminated edit adds its tag to the path ('edits', 0, 'append', 'segment'); drop it.
    path: list[str] = []
    for index, part in enumerate(loc):
        follows_edit_index = index >= 2 and loc[index - 2] == "edits" and isinstance(loc[index - 1], int)
        if follows_edit_index and part in _EDIT_TAGS:
            continue
        path.append(str(part))
    return path


def validate_hello(frame: dict[str, Any]) -> Hello:
    """The first frame of a connection; the caller checks ``op`` and ``protocol`` first."""
    try:
        return Hello.model_validate(frame)
    except ValidationError as exc:
        raise bad_request_from(exc) from exc


# --- replies -------------------------------------------------------------------------------


class HelloReply(_Reply):
    op: Literal["hello"]
    protocol: int = PROTOCOL_VERSION
    server: str
    pid: int
    frames: FrameMode


class ErrorReply(_Reply):
    op: Literal["error"]
    rid: int | None = None
    code: str
    message: str


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


GenerationFrame = ProgressFrame | TokenFrame | DoneFrame


# --- ok results, one per op ----------------------------------------------------------------


class MemberListResult(_Reply):
    members: list[MemberInfo]
    memory: MemoryFigures


class MemberLoadResult(_Reply):
    member: MemberInfo


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


class PoolStatusResult(_Reply):
    version: str
    pid: int
    uptime_s: float
    members: list[MemberInfo]
    connections: int
    contexts: int
    prefix_store: dict[str, PrefixStoreStats]
