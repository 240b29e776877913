"""Reading request frames into the request models, and refusing the ones that do not fit.

:func:`parse_request` raises :class:`UnknownOp` for an op it does not know and
:class:`BadRequest` with the dotted field path (``segments.0.role``) for anything missing or
ill-typed. The pool parses every request here; the client checks its own requests with
:func:`bad_request_from` before sending them, so both refuse in the same words.
"""

from __future__ import annotations

from typing import Any, Final, cast

from pydantic import BaseModel, ValidationError

from caldrix.errors import BadRequest, UnknownOp, quoted
from caldrix.limits import ECHO_CHARS
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
    check_text(frame)
    op = frame.get("op")
    if not isinstance(op, str):
        raise BadRequest("the request's 'op' field is missing or not text", field="op")
    model = _REQUEST_MODELS.get(op)
    if model is None:
        raise UnknownOp(f"unknown op {quoted(op)}; known ops: {', '.join(REQUEST_OPS)}", op=op[:ECHO_CHARS])
    try:
        return cast(Request, model.model_validate(frame))
    except ValidationError as exc:
        raise bad_request_from(exc) from exc


def check_text(frame: dict[str, Any]) -> None:
    """Refuse a frame holding a lone surrogate (``"\\ud800"`` in JSON) anywhere, key or value:
    such text is not Unicode, cannot be encoded as UTF-8 and so could never be rendered, stored
    or sent back. :class:`BadRequest` names the field (``segments.0.text``)."""
    path = _surrogate_path(frame, ())
    if path is not None:
        field = ".".join(_shown(part) for part in path) or "request"
        raise BadRequest(
            f"field '{field}' holds a lone surrogate (a \\ud800…\\udfff escape without its pair); "
            "text must be valid Unicode",
            field=field,
        )


def _surrogate_path(frame: dict[str, Any], root: tuple[int | str, ...]) -> tuple[int | str, ...] | None:
    """The path of the first text (or key) holding a lone surrogate, depth first; walked with
    a stack, not recursion, so a deeply nested frame cannot exhaust the interpreter's stack."""
    stack: list[tuple[object, tuple[int | str, ...]]] = [(frame, root)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _has_surrogate(value):
                return path
        elif isinstance(value, dict):
            if any(isinstance(key, str) and _has_surrogate(key) for key in value):
                return path or ("request",)
            stack.extend((item, (*path, key)) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in reversed(list(enumerate(value))))
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _shown(part: int | str) -> str:
    """A part of a field path as a message shows it: a key the client chose is escaped and cut."""
    text = str(part)
    if text.isprintable() and len(text) <= ECHO_CHARS:
        return text
    return repr(text[:ECHO_CHARS])[1:-1] + ("…" if len(text) > ECHO_CHARS else "")


def bad_request_from(exc: ValidationError, within: tuple[int | str, ...] = ()) -> BadRequest:
    """The first validation error as one line naming its field (``segments.0.role``); ``within``
    is where the validated value sits in its request, for a part validated on its own."""
    first = exc.errors()[0]
    path = [_shown(part) for part in _field_path((*within, *first["loc"]))]
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


def hello_protocol(value: object) -> object:
    """The protocol a ``hello`` names, by one rule: a number equal to an integer is that
    integer (``2.0`` is 2); anything else (text such as ``"2"``, a boolean, none) is returned
    as it is, and so is not the pool's protocol: ``protocol_mismatch``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def validate_hello(frame: dict[str, Any]) -> Hello:
    """The first frame of a connection; the caller checks ``op`` and ``protocol`` first.

    The ``client`` name is only a label (the pool logs it), so text holding a lone surrogate is
    taken with the surrogate escaped (``"\\udc00"``) rather than refused (:func:`client_label`);
    anything else unusable, a lone surrogate in another field included, is :class:`BadRequest`."""
    client = frame.get("client")
    if isinstance(client, str):
        frame = {**frame, "client": client_label(client)}
    check_text(frame)
    try:
        return Hello.model_validate(frame)
    except ValidationError as exc:
        raise bad_request_from(exc) from exc


def client_label(name: str) -> str:
    """A client's name as valid text: each lone surrogate written as its escape (``\\udc00``),
    everything else as it is."""
    return name.encode("utf-8", "backslashreplace").decode("utf-8")
