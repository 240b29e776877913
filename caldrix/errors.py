"""Every error caldrix reports, each with the protocol code it travels under.

The tree is shallow. :class:`CaldrixError` is the root; each subclass carries the one line a
person reads (``str(exc)``) and names the protocol error code it is sent as (``code``). Extra
fields that the protocol sends beside ``code`` and ``message`` (for example ``supported`` or the
figures of a ``no_fit``) live in ``details``::

    CaldrixError                  (code)
    ├── InternalError             internal
    ├── BadRequest                bad_request
    │   ├── ScriptError           bad_request   the scripted engine's --script file
    │   └── UsageError            bad_request   a command-line value that cannot be used (exit 64)
    ├── UnknownOp                 unknown_op
    ├── BadFrame                  bad_frame
    ├── ProtocolMismatch          protocol_mismatch
    ├── HandshakeRequired         handshake_required
    ├── MemberNotFound            member_not_found
    ├── MemberExists              member_exists
    ├── ModelNotFound             model_not_found
    ├── PrecheckFailed            precheck_failed
    ├── NoFit                     no_fit
    ├── ContextNotFound           context_not_found
    ├── SegmentNotFound           segment_not_found
    ├── DuplicateSegment          duplicate_segment
    ├── ContextOverflow           context_overflow
    ├── ConstraintInvalid         constraint_invalid
    ├── DownloadFailed            model_not_found   (on the wire; a client reads ModelNotFound)
    ├── SocketRefused             internal          the pool will not use its socket path
    └── PoolUnavailable           internal          a client cannot reach or keep the pool

A client turns an ``error`` frame back into its class with :data:`ERRORS_BY_CODE`; a code it
does not know becomes :class:`InternalError` with that code. Exceptions that never reach a
person (a generation cancelled because its client left, the private signals inside one
module) live beside the code that raises and catches them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from caldrix.limits import ECHO_CHARS, MESSAGE_CHARS


def quoted(value: object, limit: int = ECHO_CHARS) -> str:
    """A client's value as an error message may show it: quoted, with newlines, control
    characters and lone surrogates escaped, and cut to ``limit`` characters ("…" and the full
    length after a cut). Whatever the client sent, the result is one printable line."""
    if not isinstance(value, str):  # a number, a list…: as Python writes it, cut, never quoted
        shown = repr(value)
        return shown if len(shown) <= limit else shown[:limit] + "…"
    shown = repr(value[:limit])
    return shown if len(value) <= limit else f"{shown}… ({len(value)} characters)"


def one_line(message: str, limit: int = MESSAGE_CHARS) -> str:
    """``message`` as one line that encodes as UTF-8: the last guard before it is sent."""
    if message.isprintable() and len(message) <= limit:
        return message
    # isprintable() is False for line breaks, control characters and surrogates alike.
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class CaldrixError(Exception):
    """Base of every error the pool reports; ``code`` is its protocol error code."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InternalError(CaldrixError):
    """Something went wrong inside the pool that no other code describes."""

    code = "internal"


class BadRequest(CaldrixError):
    """A request is missing a field or has one of the wrong type."""

    code = "bad_request"


class UsageError(BadRequest):
    """A command-line flag's value cannot be used as written; the CLI exits 64 for it."""


class UnknownOp(CaldrixError):
    """A request names an op the pool does not know."""

    code = "unknown_op"


class BadFrame(CaldrixError):
    """A frame is too long, empty, or its payload cannot be decoded."""

    code = "bad_frame"


class ProtocolMismatch(CaldrixError):
    """The client speaks a protocol version the pool does not."""

    code = "protocol_mismatch"


class HandshakeRequired(CaldrixError):
    """The first frame of a connection was not ``hello``."""

    code = "handshake_required"


class MemberNotFound(CaldrixError):
    """No member of that name is loaded."""

    code = "member_not_found"


class MemberExists(CaldrixError):
    """A member of that name is already loaded."""

    code = "member_exists"


class ModelNotFound(CaldrixError):
    """A model reference names no file, cache entry or download that exists."""

    code = "model_not_found"


class PrecheckFailed(CaldrixError):
    """A model file failed the checks made before loading it (magic, version, architecture, size)."""

    code = "precheck_failed"


class NoFit(CaldrixError):
    """A member's footprint does not fit the pool's memory limit."""

    code = "no_fit"


class ContextNotFound(CaldrixError):
    """No context has that id."""

    code = "context_not_found"


class SegmentNotFound(CaldrixError):
    """An edit names a segment id the context does not hold."""

    code = "segment_not_found"


class DuplicateSegment(CaldrixError):
    """A segment id would appear twice in one context."""

    code = "duplicate_segment"


class ContextOverflow(CaldrixError):
    """The prompt plus ``max_new_tokens`` is longer than the member's window, or a context
    would grow past its size bound (:data:`caldrix.limits.CONTEXT_WINDOWS` windows)."""

    code = "context_overflow"


class ConstraintInvalid(CaldrixError):
    """A constraint (schema, grammar, regex, strings) could not be compiled."""

    code = "constraint_invalid"


class DownloadFailed(CaldrixError):
    """A model download could not be completed (offline, refused, checksum mismatch)."""

    code = "model_not_found"


class ScriptError(BadRequest):
    """The scripted engine's script file is missing or is not a list of completions."""


class SocketRefused(CaldrixError):
    """The socket path cannot be used: its folder is unsafe, or another pool answers on it."""

    code = "internal"


class PoolUnavailable(CaldrixError):
    """No pool answers on the socket, or the connection to it broke or went silent."""

    code = "internal"


#: The class each protocol error code stands for, as a client raises it.
ERRORS_BY_CODE: Final[dict[str, type[CaldrixError]]] = {
    cls.code: cls
    for cls in (
        InternalError,
        BadRequest,
        UnknownOp,
        BadFrame,
        ProtocolMismatch,
        HandshakeRequired,
        MemberNotFound,
        MemberExists,
        ModelNotFound,
        PrecheckFailed,
        NoFit,
        ContextNotFound,
        SegmentNotFound,
        DuplicateSegment,
        ContextOverflow,
        ConstraintInvalid,
    )
}
