"""What a dialect's writer offers the HTTP layer: SSE events for a stream, or a whole body."""

from __future__ import annotations

from typing import Any, Protocol

from caldrix.front.chat import Outcome
from caldrix.front.errors import FrontError
from caldrix.front.reply import ReplyEvent

#: One SSE event: its name (None for a data-only event, as OpenAI's streams are) and its data.
Event = tuple[str | None, dict[str, Any]]


class Writer(Protocol):
    """One reply written in one dialect."""

    def opening(self) -> list[Event]:
        """The events sent before anything is generated."""
        ...

    def events(self, event: ReplyEvent) -> list[Event]:
        """The events for one settled piece of the reply (also kept for :meth:`whole`)."""
        ...

    def closing(self, outcome: Outcome) -> list[Event]:
        """The events that end a stream."""
        ...

    def failure(self, error: FrontError) -> list[Event]:
        """An error after the stream started."""
        ...

    def whole(self, outcome: Outcome) -> dict[str, Any]:
        """The reply as one body, after every piece went through :meth:`events`."""
        ...
