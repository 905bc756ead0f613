"""The queue service harness fixture, shared by the modules that run the service over NATS."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fixtures.nats import BusFactory
from tests.queue.test_service import Harness


@pytest.fixture
async def harness(bus_factory: BusFactory) -> AsyncIterator[Harness]:
    h = Harness(bus_factory)
    await h.setup()
    yield h
    await h.close()
