"""JetStream helpers on a real server: streams, dedup, the placement work queue, ordered replay, KV CAS."""

from __future__ import annotations

import asyncio
import json
import time

import msgspec
import pytest
from nats.aio.msg import Msg
from prometheus_client import REGISTRY

from ksched.bus import endpoints
from ksched.bus.connect import Bus
from ksched.bus.jetstream import (
    CasConflict,
    PullConsumer,
    TypedKV,
    ensure_stream,
    ensure_streams,
    is_duplicate,
    publish,
    publish_started,
    subscribe_ordered,
)
from ksched.bus.messages import Heartbeat, Placement, PlacementBatch, SnapshotDelta
from ksched.bus.streams import placement_consumer, placement_stream, snapshot_stream
from ksched.bus.subjects import SubjectKind
from tests.bus.samples import sample
from tests.fixtures.nats import BusFactory

EARLIER_PREFIXES: list[str] = []
"""Prefixes of tests in this module that created streams or KV buckets."""


@pytest.fixture(autouse=True)
def remember_prefix(bus_prefix: str) -> None:
    EARLIER_PREFIXES.append(bus_prefix)


def placement(n: int) -> Placement:
    return msgspec.structs.replace(sample(Placement), placement_id=f"uid-{n}:1", name=f"web.{n}")


async def test_ensure_stream_is_idempotent_and_applies_changes(bus: Bus) -> None:
    config = snapshot_stream(bus.subjects, max_age=60)
    first = await ensure_stream(bus, config)
    again = await ensure_stream(bus, config)
    assert first.config.name == again.config.name == bus.subjects.snapshot_stream
    changed = await ensure_stream(bus, snapshot_stream(bus.subjects, max_age=120))
    assert changed.config.max_age == 120
    infos = await ensure_streams(bus)
    assert sorted(i.config.name or "" for i in infos) == sorted(bus.subjects.stream_names)


async def test_publish_with_msg_id_is_deduplicated(bus: Bus) -> None:
    await ensure_stream(bus, placement_stream(bus.subjects))
    first = await publish(bus, endpoints.PLACEMENTS, placement(1), msg_id="uid-1:1")
    repeat = await publish(bus, endpoints.PLACEMENTS, placement(1), msg_id="uid-1:1")
    other = await publish(bus, endpoints.PLACEMENTS, placement(2), msg_id="uid-2:1")
    assert (is_duplicate(first), is_duplicate(repeat), is_duplicate(other)) == (False, True, False)
    info = await bus.js.stream_info(bus.subjects.placement_stream)
    assert info.state.messages == 2


async def test_a_started_publish_is_acked_or_times_out_and_leaves_nothing_pending(bus: Bus) -> None:
    """:func:`publish_started` returns once the message is sent; what it returns gives the stream's
    ack, or ``TimeoutError`` when no ack comes within its timeout (here: no stream stores the subject,
    only a plain subscriber gets it, so nobody answers)."""
    await ensure_stream(bus, placement_stream(bus.subjects))
    acked = await publish_started(bus, endpoints.PLACEMENTS, placement(1), timeout=5)
    assert (await acked).seq == 1
    await bus.js.delete_stream(bus.subjects.placement_stream)
    heard = await bus.nc.subscribe(endpoints.PLACEMENTS.subject(bus.subjects))
    started = time.monotonic()
    unanswered = await publish_started(bus, endpoints.PLACEMENTS, placement(2), timeout=0.2)
    with pytest.raises(TimeoutError):
        await unanswered
    assert 0.15 < time.monotonic() - started < 5
    assert (await heard.next_msg(timeout=1)).data  # it was sent
    assert bus.js.publish_async_pending() == 0  # its reply token is dropped, its slot released
    nobody = await publish_started(bus, endpoints.PLACEMENTS, placement(3), timeout=0.05)
    await asyncio.sleep(0.2)  # failed, never awaited: retrieved, so asyncio logs nothing
    assert isinstance(nobody, asyncio.Future) and nobody.done()
    assert isinstance(nobody.exception(), TimeoutError)


async def test_work_queue_ack_nak_and_redelivery_after_ack_wait(bus: Bus) -> None:
    await ensure_stream(bus, placement_stream(bus.subjects))
    for n in range(3):
        await publish(bus, endpoints.PLACEMENTS, placement(n), msg_id=f"uid-{n}:1")
    consumer = await PullConsumer.create(
        bus,
        endpoints.PLACEMENTS,
        stream=bus.subjects.placement_stream,
        config=placement_consumer(bus.subjects, ack_wait=0.5),
    )
    batch = await consumer.fetch(batch=10, timeout=2)
    assert [d.message for d in batch] == [placement(0), placement(1), placement(2)]
    assert [d.num_delivered for d in batch] == [1, 1, 1]
    await batch[0].ack()
    await batch[1].nak()
    # batch[2] is neither acked nor nak'ed: redelivered once ack_wait passes
    late: list[tuple[str, int]] = []
    deadline = time.monotonic() + 5
    while len(late) < 2 and time.monotonic() < deadline:
        for d in await consumer.fetch(batch=10, timeout=1):
            late.append((_lone(d.message).name, d.num_delivered))
            await d.ack()
    assert sorted(late) == [("web.1", 2), ("web.2", 2)]
    await asyncio.sleep(0.05)
    info = await bus.js.stream_info(bus.subjects.placement_stream)
    assert info.state.messages == 0, "acked work-queue messages are removed"
    assert await consumer.fetch(batch=1, timeout=0.2) == []


async def test_a_crashed_worker_loses_nothing(bus_factory: BusFactory) -> None:
    crashing, survivor = await bus_factory(name="binder-a"), await bus_factory(name="binder-b")
    await ensure_stream(crashing, placement_stream(crashing.subjects))
    config = placement_consumer(crashing.subjects, ack_wait=0.5)
    await publish(crashing, endpoints.PLACEMENTS, placement(7), msg_id="uid-7:1")
    a = await PullConsumer.create(
        crashing, endpoints.PLACEMENTS, stream=crashing.subjects.placement_stream, config=config
    )
    taken = await a.fetch(batch=1, timeout=2)
    assert [_lone(d.message).name for d in taken] == ["web.7"]
    await crashing.close(drain=False)  # dies without acking
    b = await PullConsumer.create(
        survivor, endpoints.PLACEMENTS, stream=survivor.subjects.placement_stream, config=config
    )
    redelivered = await b.fetch(batch=1, timeout=3)
    assert [(_lone(d.message).name, d.num_delivered) for d in redelivered] == [("web.7", 2)]
    await redelivered[0].ack()


async def test_a_poison_message_is_reported_and_terminated(bus: Bus) -> None:
    await ensure_stream(bus, placement_stream(bus.subjects))
    await bus.js.publish(bus.subjects.placements, b"\x01 not a placement")
    await publish(bus, endpoints.PLACEMENTS, placement(1))
    consumer = await PullConsumer.create(
        bus,
        endpoints.PLACEMENTS,
        stream=bus.subjects.placement_stream,
        config=placement_consumer(bus.subjects, ack_wait=0.3),
    )
    label = {"subject_kind": str(SubjectKind.PLACEMENT)}
    before = REGISTRY.get_sample_value("ksched_bus_bad_messages_total", label) or 0.0
    got = await consumer.fetch(batch=5, timeout=2)
    assert [d.message for d in got] == [placement(1)]
    await got[0].ack()
    assert REGISTRY.get_sample_value("ksched_bus_bad_messages_total", label) == before + 1
    await asyncio.sleep(0.4)
    assert await consumer.fetch(batch=5, timeout=0.3) == [], "the poison message is not redelivered"


async def placements_consumer(bus: Bus) -> PullConsumer[Placement | PlacementBatch]:
    """The binders' durable pull consumer on a new placement stream."""
    await ensure_stream(bus, placement_stream(bus.subjects))
    return await PullConsumer.create(
        bus,
        endpoints.PLACEMENTS,
        stream=bus.subjects.placement_stream,
        config=placement_consumer(bus.subjects),
    )


async def fetched_while_published(
    bus: Bus, consumer: PullConsumer[Placement | PlacementBatch], n: int
) -> None:
    """A fetch started on an empty queue returns placement ``n``, published while it waits; acked."""
    waiting = asyncio.create_task(consumer.fetch(batch=64, timeout=60))
    await asyncio.sleep(0.05)
    await publish(bus, endpoints.PLACEMENTS, placement(n), msg_id=f"uid-{n}:1")
    got = await asyncio.wait_for(waiting, 10)
    assert [d.message for d in got] == [placement(n)]
    await got[0].ack()


async def test_close_after_an_empty_fetch_does_not_hang(bus_factory: BusFactory) -> None:
    """``../shared/libraries.md``: a timed-out pull fetch made drain() wait its whole timeout."""
    bus = await bus_factory(name="binder")
    consumer = await placements_consumer(bus)
    for _ in range(2):  # two empty fetches and a pause reproduce the hang with plain nats-py
        assert await consumer.fetch(batch=4, timeout=0.2) == []
    await asyncio.sleep(0.2)
    started = time.monotonic()
    await bus.close()
    assert time.monotonic() - started < 1.5
    assert bus.nc.is_closed


async def test_a_fetch_returns_the_first_message_without_waiting_for_more(bus: Bus) -> None:
    """A fetch that finds nothing returns the first message published while it waits, even when a
    lingering pull request for a batch is still open on the server and gets it: nats-py's fetch left
    such a request behind after a status message raced it (an expired request's 408), and its next
    fetch then waited for more messages (a lone pod bound ~0.1 s late at 10 pods/s, the next pod's
    placement ending the wait; issue 39). The fetch's own timeout (60 s) is far beyond the test's."""
    consumer = await placements_consumer(bus)
    # the leftover: a pull for 64 on the consumer's own inbox
    leftover = json.dumps({"batch": 64, "expires": 60 * 10**9}).encode()
    await bus.nc.publish(consumer.next_subject, leftover, reply=consumer.inbox)
    for n in range(3):  # each time: the queue empty when the fetch starts, one placement meanwhile
        await fetched_while_published(bus, consumer, n)


async def test_a_fetch_that_waits_for_a_lone_message_sends_one_pull_request(bus: Bus) -> None:
    """A fetch that finds the stream empty and gets the next message to arrive costs one pull request
    and its end (a no-wait request that expires: held until a message comes, ended by a 404 once the
    stream is drained), not a no-wait probe, its 404 and a lingering request (issue 39); and it
    leaves no request behind: a placement published after it waits for the next fetch."""
    consumer = await placements_consumer(bus)
    requests: list[bytes] = []

    async def count(msg: Msg) -> None:
        requests.append(msg.data)

    spy = await bus.nc.subscribe(consumer.next_subject, cb=count)
    await bus.nc.flush()
    try:
        for n in range(3):
            await fetched_while_published(bus, consumer, n)
            await bus.nc.flush()
            assert len(requests) == n + 1, requests
        await publish(bus, endpoints.PLACEMENTS, placement(3), msg_id="uid-3:1")
        await asyncio.sleep(0.1)
        assert consumer._inbox.pending_msgs == 0, "no request was left to deliver it"
        got = await asyncio.wait_for(consumer.fetch(batch=64, timeout=60), 10)
        assert [d.message for d in got] == [placement(3)]
    finally:
        await spy.unsubscribe()


async def test_ordered_replay_from_a_stream_sequence(bus: Bus) -> None:
    await ensure_stream(bus, snapshot_stream(bus.subjects))
    delta = sample(SnapshotDelta)
    for gen in range(1, 6):
        ack = await publish(bus, endpoints.SNAPSHOT_DELTA, msgspec.structs.replace(delta, generation=gen))
        assert ack.seq == gen
    seen: list[tuple[int, int]] = []
    done = asyncio.Event()

    async def apply(msg: SnapshotDelta, raw: Msg) -> None:
        seen.append((raw.metadata.sequence.stream, msg.generation))
        if len(seen) == 3:
            done.set()

    await subscribe_ordered(
        bus,
        endpoints.SNAPSHOT_DELTA,
        apply,
        stream=bus.subjects.snapshot_stream,
        start_seq=3,
    )
    await asyncio.wait_for(done.wait(), 5)
    assert seen == [(3, 3), (4, 4), (5, 5)]


async def test_kv_compare_and_set(bus: Bus) -> None:
    kv = await TypedKV.open(bus, "health", Heartbeat)
    beat = sample(Heartbeat)
    assert await kv.get("queue.queue-0") is None
    rev1 = await kv.create("queue.queue-0", beat)
    with pytest.raises(CasConflict, match="already exists"):
        await kv.create("queue.queue-0", beat)
    entry = await kv.get("queue.queue-0")
    assert entry is not None and (entry.value, entry.revision) == (beat, rev1)
    newer = msgspec.structs.replace(beat, ready=False)
    rev2 = await kv.update("queue.queue-0", newer, revision=rev1)
    with pytest.raises(CasConflict, match=f"not at revision {rev1}"):
        await kv.update("queue.queue-0", beat, revision=rev1)  # a writer that read rev1 loses
    current = await kv.get("queue.queue-0")
    assert current is not None and (current.value.ready, current.revision) == (False, rev2)
    assert await kv.keys() == ["queue.queue-0"]
    await kv.delete("queue.queue-0")
    assert await kv.get("queue.queue-0") is None
    with pytest.raises(ValueError, match="invalid key"):
        await kv.put("web.1/with space", beat)
    again = await TypedKV.open(bus, "health", Heartbeat)  # opening an existing bucket is fine
    assert again.bucket == kv.bucket


async def test_fixture_deletes_the_streams_of_earlier_tests(bus: Bus) -> None:
    """Runs after the tests above in this module; their prefixes' streams and buckets are gone."""
    if not EARLIER_PREFIXES:
        pytest.skip("run together with the earlier tests of this module")
    names = [info.config.name or "" for info in await bus.js.streams_info()]
    leaked = [n for n in names for p in EARLIER_PREFIXES if n.startswith((p + "_", "KV_" + p + "_"))]
    assert leaked == []


def _lone(message: Placement | PlacementBatch) -> Placement:
    """A work-queue message this test published as a lone ``Placement``."""
    assert isinstance(message, Placement)
    return message
