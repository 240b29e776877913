"""Checking requests before they go out and reading replies as they come in, for the client.

Pure functions over the message models: a request that the pool would refuse raises the
:class:`~caldrix.errors.BadRequest` the pool would answer with (the same words, the same field),
and a reply that does not fit its model is an :class:`~caldrix.errors.InternalError` naming
what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from caldrix.errors import ERRORS_BY_CODE, CaldrixError, InternalError
from caldrix.protocol.framing import Message
from caldrix.protocol.messages import (
    AppendEdit,
    DoneFrame,
    Edit,
    ErrorReply,
    Generate,
    GenerationFrame,
    ProgressFrame,
    RemoveEdit,
    ReplaceEdit,
    Request,
    TokenFrame,
)
from caldrix.protocol.parsing import bad_request_from

Part = TypeVar("Part", bound=BaseModel)
Result = TypeVar("Result", bound=BaseModel)
Built = TypeVar("Built", bound=BaseModel)

_EDIT: Final[TypeAdapter[Edit]] = TypeAdapter(Edit)


def error_from_reply(frame: Message) -> CaldrixError:
    """The exception an ``error`` frame stands for; fields beyond code and message go to
    ``details`` (``supported``, the figures of a ``no_fit`` …)."""
    try:
        reply = ErrorReply.model_validate(frame)
    except ValidationError as exc:
        return InternalError(f"the pool sent a malformed error frame: {_first_error(exc)}")
    details = dict(reply.model_extra or {})
    cls = ERRORS_BY_CODE.get(reply.code)
    if cls is None:
        return InternalError(reply.message, code=reply.code, **details)
    return cls(reply.message, **details)


def checked(build: Callable[[], Built]) -> Built:
    """The request ``build`` makes, or the :class:`BadRequest` the pool would answer with."""
    try:
        return build()
    except ValidationError as exc:
        raise bad_request_from(exc) from None


def part(model: type[Part], value: Part | Mapping[str, Any], within: tuple[int | str, ...]) -> Part:
    """``value`` as ``model`` (a segment, a constraint …); a refusal names its field in the request."""
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise bad_request_from(exc, within) from None


def edit_op(value: Edit | Mapping[str, Any], index: int) -> Edit:
    if isinstance(value, AppendEdit | ReplaceEdit | RemoveEdit):
        return value
    try:
        return _EDIT.validate_python(value)
    except ValidationError as exc:
        raise bad_request_from(exc, ("edits", index)) from None


def wire(request: Request) -> Message:
    """The request as its frame carries it: fields left unset are left out, except ``generate``'s
    ``constraint``, which protocol.md lists as null or a map rather than as optional."""
    fields = request.model_dump(by_alias=True, exclude_none=True)
    if isinstance(request, Generate):
        fields.setdefault("constraint", None)
    return fields


def fields_of(reply: Message, rid: int) -> dict[str, Any]:
    if reply.get("op") == "error":
        raise error_from_reply(reply)
    if reply.get("op") != "ok" or reply.get("rid") != rid:
        raise InternalError(f"the pool answered rid {rid} with an unexpected frame: {str(reply)[:200]}")
    return {key: value for key, value in reply.items() if key not in ("op", "rid")}


def result_of(model: type[Result], fields: dict[str, Any], op: str) -> Result:
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        raise InternalError(f"the pool's reply to {op} is malformed: {_first_error(exc)}") from exc


def _first_error(exc: ValidationError) -> str:
    """Where the first problem of a reply is, and what it is: ``segments.0.tokens: …``."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the reply"
    return f"{where}: {first['msg']}"


GENERATION_FRAMES: Final[dict[Any, type[GenerationFrame]]] = {
    "progress": ProgressFrame,
    "token": TokenFrame,
    "done": DoneFrame,
}


def generation_frame(frame: Message, rid: int) -> GenerationFrame:
    op = frame.get("op")
    if op == "error":
        raise error_from_reply(frame)
    if frame.get("rid") != rid:
        raise InternalError(f"the pool sent a frame for rid {frame.get('rid')} during generation {rid}")
    model = GENERATION_FRAMES.get(op)
    if model is None:
        raise InternalError(f"the pool sent an unexpected '{op}' frame during a generation")
    try:
        return model.model_validate(frame)
    except ValidationError as exc:
        raise InternalError(f"the pool sent a malformed '{op}' frame: {exc.errors()[0]['msg']}") from exc
