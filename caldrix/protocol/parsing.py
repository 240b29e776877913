"""Reading request frames into the request models, and refusing the ones that do not fit.

:func:`parse_request` raises :class:`UnknownOp` for an op it does not know and
:class:`BadRequest` with the dotted field path (``segments.0.role``) for anything missing or
ill-typed. The pool parses every request here; the client checks its own requests with
:func:`bad_request_from` before sending them, so both refuse in the same words.
"""

from __future__ import annotations

from typing import Any, Final, cast

from pydantic import BaseModel, ValidationError

from caldrix.errors import BadRequest, UnknownOp
from caldrix.protocol.messages import (
    ContextCreate,
    ContextDrop,
    ContextEdit,
    ContextFork,
    ContextGet,
    Generate,
    Hello,
    MemberList,
    MemberLoad,
    MemberUnload,
    PoolStatus,
    PoolStop,
    Request,
)

_REQUEST_MODELS: Final[dict[str, type[BaseModel]]] = {
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


def bad_request_from(exc: ValidationError, within: tuple[int | str, ...] = ()) -> BadRequest:
    """The first validation error as one line naming its field (``segments.0.role``); ``within``
    is where the validated value sits in its request, for a part validated on its own."""
    first = exc.errors()[0]
    path = _field_path((*within, *first["loc"]))
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
