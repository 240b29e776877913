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
        """Apply one event just recorded (a view the session's writer feeds)."""
        if event.seq > self.position:
            handler = self.HANDLERS.get(event.__class__)
            if handler is not None:
                handler(self, event)
            self.position = event.seq


def feed_all(projections: Iterable[Projection], events: Iterable[EventBase]) -> None:
    """Fold the same events into several projections (a rebuild), in one pass: each event is
    read while it is in the CPU's cache, rather than the whole log once per projection.

    Projections at one position (a rebuild's, all at 0) share it: each event goes straight to
    the handlers its class has, found once per class, rather than through every projection's
    check and lookup. When a handler raises, the projections before it (in the order given)
    count the event and the rest do not, as if each had taken it in turn."""
    folding = list(projections)
    if len({projection.position for projection in folding}) > 1:
        _feed_each(folding, events)
        return
    position = folding[0].position if folding else 0
    by_class: dict[type[EventBase], list[tuple[Handler, Projection]]] = {}
    failed: tuple[int, int] | None = None  # (the projection whose handler raised, the event's seq)
    try:
        for event in events:
            seq = event.seq
            if seq > position:
                folds = by_class.get(event.__class__)
                if folds is None:
                    folds = by_class[event.__class__] = _handlers_of(event.__class__, folding)
                try:
                    for handler, projection in folds:
                        handler(projection, event)
                except BaseException:
                    failed = (next(i for i, p in enumerate(folding) if p is projection), seq)
                    raise
                position = seq
    finally:
        for index, projection in enumerate(folding):
            projection.position = failed[1] if failed is not None and index < failed[0] else position


def _handlers_of(cls: type[EventBase], projections: list[Projection]) -> list[tuple[Handler, Projection]]:
    return [(p.HANDLERS[cls], p) for p in projections if cls in p.HANDLERS]


def _feed_each(projections: list[Projection], events: Iterable[EventBase]) -> None:
    """``feed_all`` for projections at different positions: each checks its own."""
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
