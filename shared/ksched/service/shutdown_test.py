"""A stop's steps run in order, each bounded; a stuck or failing one does not stop the others."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest

from ksched.service.shutdown import stop_replica, stop_steps


async def test_steps_run_in_order_and_none_is_skipped() -> None:
    ran: list[str] = []

    async def step(name: str) -> None:
        ran.append(name)

    late = await stop_steps("svc", [("a", lambda: step("a")), ("skipped", None), ("b", lambda: step("b"))])
    assert ran == ["a", "b"] and late == []


async def test_a_stuck_step_is_left_behind_and_the_next_runs(caplog: pytest.LogCaptureFixture) -> None:
    """Even one that swallows its cancellation (as a library's wait can on Python 3.11)."""
    ran: list[str] = []

    async def stuck() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)
        await asyncio.sleep(3600)  # the first cancellation swallowed; a second one ends it

    async def last() -> None:
        ran.append("last")

    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        late = await stop_steps("svc", [("bus", stuck), ("health", last)], timeout=0.2)
    assert late == ["bus"] and ran == ["last"]
    assert time.monotonic() - started < 2.0
    assert "svc: stopping: bus did not end within" in caplog.text
    for task in asyncio.all_tasks():
        if task.get_coro().__qualname__.endswith("stuck"):  # type: ignore[union-attr]
            task.cancel()  # the abandoned step, so that the test leaves no task behind


async def test_a_failing_step_is_logged_and_the_next_runs(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    async def fails() -> None:
        raise RuntimeError("boom")

    async def last() -> None:
        ran.append("last")

    with caplog.at_level(logging.WARNING):
        late = await stop_steps("svc", [("api", fails), ("health", last)])
    assert late == [] and ran == ["last"]
    assert "svc: stopping: api failed: RuntimeError('boom')" in caplog.text


class _Part:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def close(self) -> None:
        self.log.append(self.name)

    async def drain(self) -> None:
        self.log.append(self.name)

    async def stop(self) -> None:
        self.log.append(self.name)

    async def cancel_all(self, *, drain: float = 0.0) -> None:
        self.log.append(f"{self.name}(drain={drain})")


class _Replica:
    def __init__(self, log: list[str], connected: bool) -> None:
        self.tasks = _Part("tasks", log)
        self.results = _Part("results", log) if connected else None
        self.tracer = _Part("tracer", log)
        self.bus = _Part("bus", log) if connected else None
        self.api = _Part("api", log) if connected else None
        self.extenders = _Part("extenders", log)
        self.health = _Part("health", log)


async def test_a_replica_stops_its_parts_in_order_and_skips_those_it_never_started() -> None:
    log: list[str] = []
    assert await stop_replica("scheduler", _Replica(log, connected=True)) == []
    assert log == ["tasks(drain=5.0)", "results", "tracer", "bus", "api", "extenders", "health"]
    log.clear()
    await stop_replica("binder", _Replica(log, connected=False))
    assert log == ["tasks(drain=5.0)", "tracer", "extenders", "health"]
