"""How many CPU threads a local engine computes on when its flags do not say.

llama-cpp-python, left to itself, decodes on half the machine's cores (and prefills on all of
them): on a 2-core machine a member would decode on one thread while the other core idles. So
caldrix chooses instead: every CPU this process may run on, for decode and prefill alike. That
is the CPUs of its affinity mask (``taskset``, a container's cpuset), not every CPU the machine
has, so a pool pinned to one core runs one thread rather than several fighting over it.

On a machine with hyper-threads (SMT) this counts each hardware thread as a CPU. Decoding is
bound by memory bandwidth more than arithmetic, and llama.cpp's own advice is that the physical
cores are usually the best figure there; such a user may do better with ``--threads`` set to
the physical core count (docs/engine.md, Threads).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Set
from typing import Final

#: The fewest threads an engine is given: a platform that can count no CPU still has one.
MIN_THREADS: Final = 1

Affinity = Callable[[int], Set[int]]
#: The platform's affinity call: Linux and the BSDs have one, macOS and Windows do not.
SCHED_GETAFFINITY: Final[Affinity | None] = getattr(os, "sched_getaffinity", None)


def usable_cpus(
    affinity: Affinity | None = SCHED_GETAFFINITY,
    cpu_count: Callable[[], int | None] = os.cpu_count,
) -> int:
    """The CPUs this process may run on: its affinity mask where the platform has one
    (``os.sched_getaffinity``; not on macOS or Windows), else every CPU the machine counts,
    and never fewer than :data:`MIN_THREADS`."""
    count = len(affinity(0)) if affinity is not None else cpu_count()
    return max(MIN_THREADS, count or 0)


def engine_threads(requested: int | None, usable: int) -> int:
    """The threads an engine computes on: ``requested`` (``--threads``, a member's ``threads``
    flag) when given, else every one of the ``usable`` CPUs (:func:`usable_cpus`)."""
    if requested is not None:
        return requested
    return max(MIN_THREADS, usable)
