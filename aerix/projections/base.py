"""What every projection shares: a fold over the session events with a position.

A projection depends on nothing but the events it is given. It remembers the ``seq`` of the
last event it applied (its position) and ignores any event at or before it, so feeding it the
log again from an earlier point, or in pieces, gives exactly what one pass from the start gives.

Each projection names the events it folds in ``HANDLERS`` (event class → function). A rebuild
folds tens of thousands of events into five projections, so the fold looks each event's
handler up once by its class rather than walking a chain of ``isinstance`` tests; events are
always exactly the classes of ``aerix.domain.events`` (the ``type`` discriminator picks them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from aerix.domain.events import EventBase

Handler = Callable[[Any, Any], None]
"""``handler(projection, event)``: folds one event of the class it is registered for."""
Handlers = Mapping[type[EventBase], Handler]


class Projection:
    """A fold with a position. Subclasses fill ``HANDLERS``; other events only move the position."""

    HANDLERS: ClassVar[Handlers] = {}

    def __init__(self) -> None:
        self.position = 0

    def feed(self, events: Iterable[EventBase]) -> None:
        """Apply the events after the current position, in order."""
        handlers = self.HANDLERS
        position = self.position
        try:
            for event in events:
                seq = event.seq
                if seq > position:
                    handler = handlers.get(event.__class__)
                    if handler is not None:
                        handler(self, event)
                    position = seq
        finally:
            self.position = position  # up to the last event applied, even when one raised

    def take(self, event: EventBase) -> None:
        """Apply one event just recorded (a live subscriber of the session's writer)."""
        if event.seq > self.position:
            handler = self.HANDLERS.get(event.__class__)
            if handler is not None:
                handler(self, event)
            self.position = event.seq


def feed_all(projections: Iterable[Projection], events: Iterable[EventBase]) -> None:
    """Fold the same events into several projections (a rebuild), in one pass: each event is
    read while it is in the CPU's cache, rather than the whole log once per projection."""
    folds = [(projection, projection.HANDLERS) for projection in projections]
    for event in events:
        seq = event.seq
        cls = event.__class__
        for projection, handlers in folds:
            if seq > projection.position:
                handler = handlers.get(cls)
                if handler is not None:
                    handler(projection, event)
                projection.position = seq
