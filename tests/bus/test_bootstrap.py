"""Chunked bootstrap: packing limits, and the full protocol against a real nats-server."""

from __future__ import annotations

import zlib

import msgspec
import pytest
from nats.aio.msg import Msg

from ksched.bus import endpoints
from ksched.bus.bootstrap import BootstrapError, fetch_bootstrap, pack_items, publish_chunks, unpack_items
from ksched.bus.codec import BadMessage
from ksched.bus.messages import (
    BootstrapReply,
    PendingPod,
    PendingPodsRequest,
    SnapshotBootstrapRequest,
    SnapshotOp,
)
from tests.bus.samples import OPS, PENDING
from tests.fixtures.nats import BusFactory


def pending(n: int) -> PendingPod:
    return msgspec.structs.replace(PENDING, uid=f"uid-{n}", name=f"web.{n}", pod=b"x" * 1000)


def test_pack_items_respects_the_chunk_budget_and_round_trips() -> None:
    items = [pending(n) for n in range(100)]
    payloads = pack_items(items, max_chunk_bytes=10_000)
    assert len(payloads) > 10
    assert all(len(p) < 10_000 for p in payloads)
    assert [x for p in payloads for x in unpack_items(p, PendingPod)] == items


def test_pack_items_edge_cases() -> None:
    (empty,) = pack_items([])
    assert unpack_items(empty, PendingPod) == []
    big = msgspec.structs.replace(PENDING, pod=b"y" * 5000)
    payloads = pack_items([pending(1), big, pending(2)], max_chunk_bytes=2000)
    assert [len(unpack_items(p, PendingPod)) for p in payloads] == [1, 1, 1]
    for count in (15, 16, 65_535, 65_536, 70_000):  # every msgpack array header size
        (payload,) = pack_items(list(range(count)), max_chunk_bytes=1 << 22)
        assert unpack_items(payload, int) == list(range(count))


def test_unpack_rejects_garbage() -> None:
    with pytest.raises(BadMessage, match="bad bootstrap chunk"):
        unpack_items(b"not zlib", PendingPod)
    with pytest.raises(BadMessage, match="bad bootstrap chunk"):  # invalid UTF-8 in a string
        unpack_items(zlib.compress(b"\x91\xa1\xff"), str)
    with pytest.raises(BadMessage, match="codec 'lz4'"):
        unpack_items(pack_items([PENDING])[0], PendingPod, codec="lz4")


async def test_snapshot_bootstrap_over_nats(bus_factory: BusFactory) -> None:
    cache, replica = await bus_factory(name="informer"), await bus_factory(name="scheduler")
    ops = OPS * 40

    async def serve(req: SnapshotBootstrapRequest, raw: Msg) -> BootstrapReply:
        size = req.max_chunk_bytes
        return await publish_chunks(
            cache, req.deliver, ops, epoch="e1", generation=77, stream_seq=5, max_chunk_bytes=size
        )

    await cache.subscribe(endpoints.SNAPSHOT_BOOTSTRAP, serve)
    await cache.nc.flush()
    reply, items = await fetch_bootstrap(
        replica,
        endpoints.SNAPSHOT_BOOTSTRAP,
        lambda inbox: SnapshotBootstrapRequest(replica_id="sched-1", deliver=inbox, max_chunk_bytes=4096),
        SnapshotOp,
        timeout=5,
    )
    assert (reply.epoch, reply.generation, reply.stream_seq, reply.items) == ("e1", 77, 5, len(ops))
    assert reply.chunks > 1
    assert items == ops


async def test_bootstrap_error_reply(bus_factory: BusFactory) -> None:
    cache, queue = await bus_factory(name="informer"), await bus_factory(name="queue")

    async def not_ready(req: PendingPodsRequest, raw: Msg) -> BootstrapReply:
        return BootstrapReply(error="cache not synced yet")

    await cache.subscribe(endpoints.PENDING_BOOTSTRAP, not_ready)
    await cache.nc.flush()
    with pytest.raises(BootstrapError, match="cache not synced yet"):
        await fetch_bootstrap(
            queue,
            endpoints.PENDING_BOOTSTRAP,
            lambda inbox: PendingPodsRequest(requester="queue-0", deliver=inbox),
            PendingPod,
            timeout=5,
        )


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("lost", "chunk 0 of 1 never arrived"),
        ("miscounted", r"got chunk 0/1 of e@1, expected 0/2 of e@1"),
    ],
)
async def test_missing_or_inconsistent_chunks_are_detected(
    bus_factory: BusFactory, fault: str, error: str
) -> None:
    cache, queue = await bus_factory(name="informer"), await bus_factory(name="queue")

    async def faulty(req: PendingPodsRequest, raw: Msg) -> BootstrapReply:
        deliver = req.deliver + ".elsewhere" if fault == "lost" else req.deliver
        reply = await publish_chunks(cache, deliver, [PENDING], epoch="e", generation=1)
        return msgspec.structs.replace(reply, chunks=reply.chunks + (fault == "miscounted"))

    await cache.subscribe(endpoints.PENDING_BOOTSTRAP, faulty)
    await cache.nc.flush()
    with pytest.raises(BootstrapError, match=error):
        await fetch_bootstrap(
            queue,
            endpoints.PENDING_BOOTSTRAP,
            lambda inbox: PendingPodsRequest(requester="queue-0", deliver=inbox),
            PendingPod,
            timeout=0.5,
        )
