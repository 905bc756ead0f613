"""TaskGroup: named tasks are restarted or stop the service when they crash, and cancel_all ends
them even when a cancellation gets swallowed (the Python 3.11 ``wait_for`` race)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from ksched.service.tasks import TaskGroup


async def test_a_crashing_fatal_task_sets_failed() -> None:
    group = TaskGroup()

    async def boom() -> None:
        raise RuntimeError("boom")

    group.spawn("fatal", boom)
    await asyncio.wait_for(group.failed.wait(), 2)
    assert isinstance(group.failure, RuntimeError)
    await group.cancel_all()


async def test_a_restartable_task_runs_again_after_a_crash() -> None:
    group = TaskGroup()
    runs = 0

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs < 3:
            raise RuntimeError("again")
        await asyncio.Event().wait()

    group.spawn("flaky", flaky, restart=True, pause=0.01)
    for _ in range(200):
        if runs >= 3:
            break
        await asyncio.sleep(0.01)
    assert runs == 3 and not group.failed.is_set()
    await group.cancel_all()
    assert group.names() == []


async def test_cancel_all_ends_a_task_that_swallowed_its_cancellation() -> None:
    group = TaskGroup()
    swallowed = 0
    ended = asyncio.Event()

    async def stubborn() -> None:
        nonlocal swallowed
        try:
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    if swallowed:
                        raise
                    swallowed += 1  # as a racing wait_for does: the cancellation is lost
        finally:
            ended.set()

    group.spawn("stubborn", stubborn)
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await group.cancel_all(timeout=5, recancel_every=0.05)
    assert ended.is_set() and swallowed == 1
    assert loop.time() - started < 1


async def test_cancel_all_gives_up_after_its_timeout_and_names_the_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    group = TaskGroup()
    release = asyncio.Event()

    async def immortal() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue

    group.spawn("immortal", immortal)
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="ksched.service.tasks"):
        await group.cancel_all(timeout=0.2, recancel_every=0.05)
    assert "immortal" in caplog.text
    release.set()
    (task,) = [t for t in asyncio.all_tasks() if t.get_name() == "immortal"]
    task.cancel()
    await asyncio.wait([task], timeout=1)
    assert task.done()


async def test_a_crashing_job_sets_failed_and_is_logged_with_its_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    group = TaskGroup()

    async def write() -> None:
        raise TypeError("a bug in a background write")

    with caplog.at_level(logging.ERROR, logger="ksched.service.tasks"):
        group.job("event-write", write())
        await asyncio.wait_for(group.failed.wait(), 2)
    assert isinstance(group.failure, TypeError)
    assert "task event-write failed; stopping the service" in caplog.text
    assert group.jobs == 0


async def test_cancel_all_lets_jobs_finish_within_drain_and_cancels_the_rest() -> None:
    group = TaskGroup()
    finished: list[str] = []
    loop_ended = asyncio.Event()

    async def loop() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            loop_ended.set()

    async def job(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        finished.append(name)

    group.spawn("loop", loop)
    group.job("quick", job("quick", 0.05))
    slow = group.job("slow", job("slow", 30))
    await asyncio.sleep(0)  # all three started
    await group.cancel_all(drain=0.5)
    assert loop_ended.is_set() and finished == ["quick"] and slow.cancelled()
    assert not group.failed.is_set()  # a cancelled job is no failure
