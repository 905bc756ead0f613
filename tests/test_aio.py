"""cancel_and_wait: a task that drops a cancellation is cancelled again; the caller's own
cancellation and the task's error reach the caller."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from ksched.aio import cancel_and_wait


async def test_a_task_that_drops_a_cancellation_is_cancelled_again() -> None:
    dropped = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:  # as nats-py's _flush_pending does, or 3.11's wait_for in a race
            dropped.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    async with asyncio.timeout(5):
        await cancel_and_wait(task, recancel_every=0.01)
    assert dropped.is_set()
    assert task.cancelled()


async def test_the_tasks_error_is_raised() -> None:
    async def failing() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            raise ValueError("cleanup failed")

    task = asyncio.create_task(failing())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="cleanup failed"):
        await cancel_and_wait(task)


async def test_the_callers_cancellation_propagates() -> None:
    release = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            while not release.is_set():  # a cleanup that outlasts every cancellation
                with contextlib.suppress(asyncio.CancelledError):
                    await release.wait()

    task = asyncio.create_task(slow_to_stop())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cancel_and_wait(task, recancel_every=0.01))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not task.done()  # still in its cleanup: the caller did not wait it out
    release.set()
    await asyncio.wait([task])
    assert task.cancelled()
