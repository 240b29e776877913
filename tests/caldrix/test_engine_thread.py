"""A member's engine thread: a job's caller has its result before the job's deferred work runs
(so a ``done`` frame is not held back by the prefix store), and the next job starts only after
that work (so nothing touches the engine before the rows are kept)."""

from __future__ import annotations

import threading

import anyio

from caldrix.engine_thread import EngineThread


def test_the_caller_has_its_result_before_the_deferred_work_and_the_next_job_after_it() -> None:
    order: list[str] = []
    release = threading.Event()

    async def run() -> None:
        thread = EngineThread("test")

        def first() -> str:
            def keep_rows() -> None:
                release.wait(timeout=10)  # held until the caller has seen the result
                order.append("deferred")

            thread.defer(keep_rows)
            order.append("first")
            return "result"

        def second() -> str:
            order.append("second")
            return "next"

        assert await thread.call(first) == "result"
        order.append("caller")
        async with anyio.create_task_group() as group:
            group.start_soon(thread.call, second)
            await anyio.sleep(0.2)
            assert "second" not in order  # still behind the deferred work
            release.set()
        await thread.stop()

    anyio.run(run)
    assert order == ["first", "caller", "deferred", "second"]


def test_a_failing_deferred_task_does_not_stop_the_thread() -> None:
    async def run() -> None:
        thread = EngineThread("test")

        def fail() -> None:
            raise RuntimeError("deferred work failed")

        def job() -> int:
            thread.defer(fail)
            return 1

        assert await thread.call(job) == 1
        assert await thread.call(lambda: 2) == 2
        await thread.stop()

    anyio.run(run)
