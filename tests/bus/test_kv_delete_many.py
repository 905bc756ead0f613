"""TypedKV.delete_many on a real server: every key goes, with one acknowledged publish."""

from __future__ import annotations

import asyncio

import pytest

from ksched.bus.connect import Bus
from ksched.bus.jetstream import TypedKV
from ksched.bus.messages import Heartbeat
from tests.bus.samples import sample


async def test_delete_many_removes_every_key_and_keeps_the_others(bus: Bus) -> None:
    kv = await TypedKV.open(bus, "many", Heartbeat)
    beat = sample(Heartbeat)
    for i in range(5):
        await kv.put(f"key.{i}", beat)
    await kv.delete_many(bus, ["key.0", "key.2", "key.4"])
    assert sorted(await kv.keys()) == ["key.1", "key.3"]
    for i in (0, 2, 4):
        assert await kv.get(f"key.{i}") is None
    await kv.delete_many(bus, [])  # nothing to do
    with pytest.raises(ValueError, match="invalid key"):
        await kv.delete_many(bus, ["key.1", "bad key"])
    assert sorted(await kv.keys()) == ["key.1", "key.3"]  # a bad key deletes nothing


async def test_unacknowledged_deletes_go_too(bus: Bus) -> None:
    """``acked=False``: no publish waits for an ack; the deletes are stored all the same."""
    kv = await TypedKV.open(bus, "many-unacked", Heartbeat)
    beat = sample(Heartbeat)
    for i in range(4):
        await kv.put(f"key.{i}", beat)
    await kv.delete_many(bus, ["key.0", "key.3"], acked=False)
    await bus.nc.flush()
    for _ in range(100):
        if sorted(await kv.keys()) == ["key.1", "key.2"]:
            break
        await asyncio.sleep(0.02)
    assert sorted(await kv.keys()) == ["key.1", "key.2"]
