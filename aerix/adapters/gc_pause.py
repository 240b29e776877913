"""Holding off Python's cycle collector while a bulk load or fold runs.

A process-wide switch, so it lives here, at the edge, and is used only by the adapters and the
composition root around work that makes tens of thousands of objects at once (reading a long
log, rebuilding every projection); the projections themselves stay pure folds.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cycle collector during a bulk load or fold, then file what it made as old.

    Events and views hold no cycles, yet with tens of thousands of them alive every collection
    walks them all: a young one right after the load, a middle one ten young ones later, then a
    full one — together about a fifth of a rebuild. What a bulk load makes lives as long as its
    caller keeps it, so it goes straight to the oldest generation: ``freeze`` then ``unfreeze``
    moves every tracked object there at no cost per object. Nothing is leaked: refcounting still
    frees the objects, and a full collection still finds any cycle among them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # a caller that froze objects itself keeps them frozen
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()
