"""A binder worker takes its next placement only once the events of its earlier bindings fit in the
reporter's backlog (``Reporter.room``): the events trail the bindings by a bounded amount instead of
piling up (docs/architecture.md, "Binders")."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, cast

import pytest
from nats.aio.msg import Msg

from ksched.aio import cancel_and_wait
from ksched.bus.jetstream import Delivery
from ksched.bus.messages import Placement, PlacementBatch
from ksched.reporting.reporter import Reporter
from tests.binder.test_metrics import binder, placement
from tests.service.test_reporter_backlog import held_writes


class Raw:
    """The NATS message under a delivery: its acknowledgements, recorded."""

    headers = None

    def __init__(self, name: str) -> None:
        self.name = name
        self.acked = asyncio.Event()

    async def ack(self) -> None:
        self.acked.set()

    async def nak(self, delay: float | None = None) -> None:
        raise AssertionError(f"{self.name} was nak'ed")

    async def in_progress(self) -> None:
        return None


def delivery(name: str) -> tuple[Delivery[Placement | PlacementBatch], Raw]:
    raw = Raw(name)
    return Delivery(placement(name, flushed=False), cast(Msg, raw)), raw


async def test_a_worker_waits_for_room_in_the_event_backlog(monkeypatch: pytest.MonkeyPatch) -> None:
    service = binder()
    reporter = Reporter(api=Any, tasks=service.tasks, max_backlog=1)  # type: ignore[arg-type]
    api_answers, events = held_writes(reporter, monkeypatch)
    service.reporter = reporter
    service._work = asyncio.Queue()
    (first_delivery, first), (second_delivery, second) = delivery("first"), delivery("second")
    await service._work.put(first_delivery)
    await service._work.put(second_delivery)
    worker = asyncio.create_task(service._worker())
    try:
        await asyncio.wait_for(first.acked.wait(), 5.0)  # bound; its Scheduled event is being written
        await asyncio.sleep(0.2)
        assert reporter.pending == 1
        assert not second.acked.is_set() and service._work.qsize() == 1, (
            "the worker took a placement while the event backlog was full"
        )
        api_answers.set()
        await asyncio.wait_for(second.acked.wait(), 5.0)
        await reporter.drain(5.0)
        assert events == ["first", "second"] and reporter.pending == 0
    finally:
        with contextlib.suppress(Exception):
            await cancel_and_wait(worker)
        await service.tasks.cancel_all(drain=1.0)
