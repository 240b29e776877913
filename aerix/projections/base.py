"""What every projection shares: a fold over the session events with a position.

A projection depends on nothing but the events it is given. It remembers the ``seq`` of the
last event it applied (its position) and ignores any event at or before it, so feeding it the
log again from an earlier point, or in pieces, gives exactly what one pass from the start gives.
"""

from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from aerix.domain.events import EventBase


class Projection(ABC):
    """A fold with a position. Subclasses implement ``apply``."""

    def __init__(self) -> None:
        self.position = 0

    def feed(self, events: Iterable[EventBase]) -> None:
        """Apply the events after the current position, in order."""
        for event in events:
            if event.seq > self.position:
                self.apply(event)
                self.position = event.seq

    @abstractmethod
    def apply(self, event: EventBase) -> None:
        """Fold one event (called once per event, in seq order)."""


P = TypeVar("P", bound=Projection)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cycle collector during a bulk fold or load. Events and views hold no cycles,
    yet with tens of thousands of them alive each collection walks them all: about half the
    time of a rebuild went there."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def feed_all(projections: Iterable[Projection], events: list[EventBase]) -> None:
    """Fold the same events into several projections (a rebuild)."""
    with gc_paused():
        for projection in projections:
            projection.feed(events)


def fold(projection: P, events: Iterable[EventBase], upto: int | None = None) -> P:
    """Feed ``events`` (those with ``seq <= upto`` when given) and return the projection."""
    if upto is None:
        projection.feed(events)
    else:
        projection.feed(event for event in events if event.seq <= upto)
    return projection
