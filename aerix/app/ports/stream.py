"""``--input-format stream-json``'s seam: what a stdin line asks for (read by
``aerix.adapters.claude.stream_input``) and the output the stream's use case prints through
(``aerix.adapters.claude.output.HeadlessOutput``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aerix.app.ports.request import RequestObserver, RequestResult


@dataclass(frozen=True)
class UserPrompt:
    """A ``user`` line's text (its text blocks joined) and what of it aerix left out."""

    text: str
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class ControlRequest:
    request_id: str
    subtype: str
    body: dict[str, Any]


@dataclass(frozen=True)
class BadLine:
    """A line that could not be used, and why (for the stderr note)."""

    number: int
    problem: str


StreamItem = UserPrompt | ControlRequest | BadLine


class StreamOutput(RequestObserver):
    """Where a stream-json session prints: each request's lines as an observer, and the lines
    the stream itself adds."""

    @property
    def session(self) -> str:
        """The session the last request's events named ("" before any)."""
        raise NotImplementedError

    def json_line(self, value: dict[str, Any]) -> None:
        """One line on stdout (a control_response)."""
        raise NotImplementedError

    def finish(self, result: RequestResult) -> int:
        """Print a request's end (its result line); the exit code."""
        raise NotImplementedError

    def failed(self, line: str, exit_code: int, session_id: str | None) -> None:
        """The result line of a request that could not run (``line`` says why)."""
        raise NotImplementedError

    def interrupted(self) -> None:
        """The result line of a request an ``interrupt`` control request stopped."""
        raise NotImplementedError
