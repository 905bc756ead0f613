"""Listing a KV bucket's keys on a real server (``ksched.bus.kv_keys``): only live keys, every one
of a bucket larger than a fetch, none for an empty bucket, and no consumer left behind. nats-py's
``KeyValue.keys()`` fails the last test in most runs: now and then it reports no keys while other
keys are written, and it leaves its consumers behind."""

from __future__ import annotations

import asyncio

import msgspec

from ksched.bus.connect import Bus
from ksched.bus.jetstream import TypedKV
from ksched.bus.kv_keys import FETCH_BATCH, live_keys
from ksched.bus.messages import Heartbeat
from tests.bus.samples import sample


async def open_kv(bus: Bus) -> TypedKV[Heartbeat]:
    return await TypedKV.open(bus, "keys", Heartbeat)


async def consumers(bus: Bus, kv: TypedKV[Heartbeat]) -> int:
    info = await bus.js.stream_info(f"KV_{kv.bucket}")
    return info.state.consumer_count


async def test_an_empty_bucket_has_no_keys(bus: Bus) -> None:
    kv = await open_kv(bus)
    assert await kv.keys() == []
    assert await consumers(bus, kv) == 0


async def test_deleted_and_purged_keys_are_left_out(bus: Bus) -> None:
    kv = await open_kv(bus)
    beat = sample(Heartbeat)
    for key in ("a", "b.1", "c", "d"):
        await kv.put(key, beat)
    await kv.delete("b.1")
    await kv._kv.purge("c")
    await kv.put("a", msgspec.structs.replace(beat, ready=False))  # rewritten: now after "d"
    assert await kv.keys() == ["d", "a"]
    assert await consumers(bus, kv) == 0


async def test_a_bucket_larger_than_one_fetch(bus: Bus) -> None:
    kv = await open_kv(bus)
    beat = sample(Heartbeat)
    count = FETCH_BATCH * 2 + 7
    await asyncio.gather(*(kv.put(f"k{i}", beat) for i in range(count)))
    await kv.delete("k3")
    keys = await kv.keys()
    assert sorted(keys) == sorted(f"k{i}" for i in range(count) if i != 3)
    assert len(keys) == len(set(keys))


async def test_every_listing_sees_the_keys_written_before_it(bus: Bus) -> None:
    """What the informer's restore relies on: a key written (acknowledged) before the listing is in
    it, listing after listing, while another writer keeps rewriting and deleting other keys."""
    kv = await open_kv(bus)
    beat = sample(Heartbeat)
    await kv.put("ledger.entry", beat)
    stop = asyncio.Event()

    async def writer() -> None:
        n = 0
        while not stop.is_set():
            key = f"other.{n % 20}"
            await (kv.delete(key) if n % 7 == 0 else kv.put(key, beat))
            n += 1

    task = asyncio.create_task(writer())
    try:
        for _ in range(300):
            assert "ledger.entry" in await live_keys(bus.js, kv.bucket)
    finally:
        stop.set()
        await task
    assert await consumers(bus, kv) == 0
