"""A member's engine thread: every call into one engine (opening it, generating, closing it)
runs on it, one at a time in the order submitted, while the event loop only waits for results.
A caller that is cancelled skips its job if it has not started, or asks a running one to stop;
work deferred by a job runs after its caller has the result, before the next job."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

logger = logging.getLogger("caldrix.pool")

T = TypeVar("T")


@dataclass(eq=False)
class _Job(Generic[T]):
    fn: Callable[[], T]
    token: anyio.lowlevel.EventLoopToken
    finished: anyio.Event
    abandoned: threading.Event = field(default_factory=threading.Event)
    result: T | None = None
    error: BaseException | None = None


class EngineThread:
    """A thread that runs one member's engine calls in submission order (FIFO)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._deferred: list[Callable[[], None]] = []
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=f"caldrix-member-{name}", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        """Jobs submitted and not finished (the one running included)."""
        return self._pending

    async def call(self, fn: Callable[[], T], *, on_cancel: Callable[[], None] | None = None) -> T:
        """Run ``fn`` on this thread after the jobs before it, and return its result. When the
        caller is cancelled, a job that has not started is skipped, and ``on_cancel`` asks a
        running one to stop (its thread finishes it before the next)."""
        job = _Job(fn=fn, token=anyio.lowlevel.current_token(), finished=anyio.Event())
        with self._pending_lock:
            self._pending += 1
        self._jobs.put(job)
        try:
            await job.finished.wait()
        except BaseException:
            job.abandoned.set()
            if on_cancel is not None:
                on_cancel()
            raise
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def defer(self, fn: Callable[[], None]) -> None:
        """From a job on this thread: run ``fn`` once the job's caller has its result, before
        the next job starts. A generation's ``done`` goes out first; the prefix store then keeps
        its rows while nothing else can touch the engine."""
        self._deferred.append(fn)

    async def stop(self) -> None:
        """Let the thread finish the jobs before, then end it and wait for it."""
        self._jobs.put(None)
        await anyio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                if not job.abandoned.is_set():
                    job.result = job.fn()
            except BaseException as exc:  # reported to the awaiting task, never lost
                job.error = exc
            finally:
                with self._pending_lock:
                    self._pending -= 1
            self._notify(job)
            self._run_deferred()

    def _run_deferred(self) -> None:
        work, self._deferred = self._deferred, []
        for fn in work:
            try:
                fn()
            except Exception:  # the caller has its result; a failure here must not stop the thread
                logger.exception("deferred engine work failed")

    @staticmethod
    def _notify(job: _Job[Any]) -> None:
        # RuntimeError: the event loop has ended, so nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(job.finished.set, token=job.token)
