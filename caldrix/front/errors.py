"""The front's errors: an HTTP status and the error type Anthropic's API names for it.

Every refusal is a :class:`FrontError`; each dialect writes it in its own shape (Anthropic's
``{"type": "error", "error": {"type", "message"}}``, OpenAI's ``{"error": {"message", "type",
…}}``). A pool error (:class:`caldrix.errors.CaldrixError`) becomes one here, by its code.
"""

from __future__ import annotations

from typing import Final

from caldrix.errors import (
    BadRequest,
    CaldrixError,
    ConstraintInvalid,
    ContextOverflow,
    MemberNotFound,
    PoolUnavailable,
    one_line,
)

#: Anthropic's error type for each status the front answers with.
ERROR_TYPES: Final[dict[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class FrontError(Exception):
    """A refusal: ``status`` and the one line a person reads; ``param`` names the field of a
    body that is wrong, where there is one."""

    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)
        self.param = param

    @property
    def error_type(self) -> str:
        return ERROR_TYPES.get(self.status, "api_error")


def bad_field(param: str, problem: str) -> FrontError:
    """A body whose field ``param`` is wrong: 400, naming the field."""
    return FrontError(400, f"{param}: {problem}", param=param)


def prompt_too_long(tokens: int, maximum: int, *, more_than: bool = False) -> FrontError:
    """Anthropic's own words for a prompt over the window: Claude Code reads them and compacts.
    ``more_than``: the pool refused to count a prompt this far past its window, so ``tokens``
    is the bound it stopped at."""
    over = "more than " if more_than else ""
    return FrontError(400, f"prompt is too long: {over}{tokens} tokens > {maximum} maximum")


def from_pool(exc: CaldrixError) -> FrontError:
    """A pool error as the front answers it."""
    if isinstance(exc, PoolUnavailable):
        return FrontError(503, f"the caldrix pool is not available: {exc.message}")
    if isinstance(exc, MemberNotFound):
        return FrontError(404, exc.message)
    if isinstance(exc, ContextOverflow | ConstraintInvalid | BadRequest):
        return FrontError(400, exc.message)
    return FrontError(500, exc.message)
