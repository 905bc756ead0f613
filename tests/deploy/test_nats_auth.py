"""Per-service NATS users (ksched.bus.auth) enforced by a real nats-server.

The server runs with the generated ``authorization`` block. Each service's user does what that
service does on the bus (the same library calls: ensure_streams, typed KV, ordered replay,
bootstraps, request/reply, the binder's pull consumer) without one permission violation, while a
forged placement from any user but the informer is refused by the server and never reaches the
placement stream.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.msg import Msg

from ksched.bus import endpoints, jetstream, streams
from ksched.bus.auth import OBSERVER, SERVICES, authorization_block, password_variable
from ksched.bus.bootstrap import fetch_bootstrap, publish_chunks
from ksched.bus.codec import encode
from ksched.bus.connect import Bus, connect
from ksched.bus.credentials import NatsCredentials
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.messages import (
    Ack,
    AssumeReply,
    AssumeRequest,
    BootstrapReply,
    DoneRequest,
    FeedBatch,
    ForgetRequest,
    PendingPod,
    PendingPodsRequest,
    PermitDecision,
    Placement,
    PlacementBatch,
    PopReply,
    PopRequest,
    RequeueRequest,
    SnapshotBootstrapRequest,
    SnapshotDelta,
    SnapshotOp,
    TraceEvent,
    UnreserveRequest,
)
from ksched.bus.streams import ASSUMED_LEDGER, assumed_ledger_bucket, legacy_assumed_ledger_bucket
from ksched.bus.subjects import Subjects
from tests.bus.samples import PENDING, sample

PASSWORDS = {user: f"{user}-secret" for user in (*SERVICES, OBSERVER)}
SUBJECTS = Subjects()  # the default prefix, as compose and deploy/ use


class Violations(logging.Handler):
    """Collects the permission violations nats-py reports through the bus' error callback."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage().lower()  # nats-py lower-cases the server's error
        if "permissions violation" in text:
            self.seen.append(text)


@pytest.fixture(scope="module")
async def secured_nats(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedNats]:
    """nats-server with the generated block; the binder's password comes from the server's environment."""
    literal = {u: p for u, p in PASSWORDS.items() if u != "binder"}
    conf = tmp_path_factory.mktemp("nats") / "auth.conf"
    conf.write_text(authorization_block(SUBJECTS, literal))
    variable = password_variable("binder")
    os.environ[variable] = PASSWORDS["binder"]
    try:
        async with EmbeddedNats(config_file=conf) as server:
            yield server
    finally:
        os.environ.pop(variable, None)


@pytest.fixture
def violations() -> Iterator[Violations]:
    handler = Violations()
    logger = logging.getLogger("ksched.bus")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture
async def login(secured_nats: EmbeddedNats) -> AsyncIterator[Callable[[str], Awaitable[Bus]]]:
    opened: list[Bus] = []

    async def make(user: str) -> Bus:
        creds = NatsCredentials(user=user, password=PASSWORDS[user])
        bus = await connect(
            secured_nats.url, name=user, subjects=SUBJECTS, initial_timeout=5, **creds.connect_kwargs()
        )
        opened.append(bus)
        return bus

    yield make
    for bus in reversed(opened):
        await bus.close()


async def settle(bus: Bus) -> None:
    """Round-trip to the server, so every error it sends about earlier commands has arrived."""
    await bus.nc.flush(timeout=2)
    await asyncio.sleep(0.05)


def test_generated_block_names_every_user_once() -> None:
    block = authorization_block(SUBJECTS)
    for user in (*SERVICES, OBSERVER):
        assert block.count(f'user: "{user}"') == 1
        assert f"password: ${password_variable(user)}" in block
    with pytest.raises(ValueError, match="unknown NATS user"):
        authorization_block(SUBJECTS, users=["informer", "mallory"])


async def test_no_credentials_or_wrong_password_is_refused(secured_nats: EmbeddedNats) -> None:
    with pytest.raises(nats.errors.Error):
        await nats.connect(secured_nats.url, allow_reconnect=False, connect_timeout=2)
    with pytest.raises(nats.errors.Error):
        await nats.connect(
            secured_nats.url, user="scheduler", password="guess", allow_reconnect=False, connect_timeout=2
        )


@pytest.mark.parametrize("user", ["scheduler", "binder", "queue", "ui", OBSERVER])
async def test_forged_placement_is_refused(
    user: str, login: Callable[[str], Awaitable[Bus]], violations: Violations
) -> None:
    informer = await login("informer")
    await jetstream.ensure_streams(informer)
    before = (await informer.js.stream_info(SUBJECTS.placement_stream)).state.messages
    forger = await login(user)
    placement = sample(Placement)

    await forger.publish(endpoints.PLACEMENTS, placement)  # core publish: the stream would store it
    with pytest.raises(nats.errors.TimeoutError):  # JetStream publish: refused, so never acked
        await jetstream.publish(forger, endpoints.PLACEMENTS, placement, msg_id="forged", timeout=0.5)
    await settle(forger)

    assert any(f'publish to "{SUBJECTS.placements}"' in v for v in violations.seen), violations.seen
    after = (await informer.js.stream_info(SUBJECTS.placement_stream)).state.messages
    assert after == before


async def test_scheduler_cannot_consume_placements_or_touch_streams(
    login: Callable[[str], Awaitable[Bus]], violations: Violations
) -> None:
    scheduler = await login("scheduler")
    with pytest.raises(nats.errors.TimeoutError):  # the API request is refused: no reply comes back
        await scheduler.nc.request(f"$JS.API.STREAM.DELETE.{SUBJECTS.placement_stream}", b"", timeout=0.5)
    await settle(scheduler)
    assert any("$js.api.stream.delete" in v for v in violations.seen), violations.seen


async def test_each_service_does_its_part(
    login: Callable[[str], Awaitable[Bus]], violations: Violations
) -> None:
    informer, queue, scheduler, binder, observer = [
        await login(u) for u in ("informer", "queue", "scheduler", "binder", OBSERVER)
    ]
    placement = sample(Placement)
    got: dict[str, asyncio.Future[object]] = {
        k: asyncio.get_running_loop().create_future()
        for k in ("feed", "nominations", "delta", "forget", "unreserve", "permit", "trace", "done", "requeue")
    }

    def record(key: str) -> Callable[[object, Msg], Awaitable[None]]:
        async def handler(message: object, raw: Msg) -> None:
            if not got[key].done():
                got[key].set_result(message)

        return handler

    # informer: streams, the assumed ledger (KV), its request handlers and every publish it makes
    await jetstream.ensure_streams(informer)
    ledger = await jetstream.TypedKV.open(informer, ASSUMED_LEDGER, Placement)
    assert ledger.bucket == assumed_ledger_bucket(SUBJECTS) == "ksched_assumed"
    revision = await ledger.put("uid-1", placement)
    assert (await ledger.get("uid-1")) is not None and await ledger.keys() == ["uid-1"]
    await ledger.delete("uid-1", revision)
    await ledger.purge_below(revision + 2)  # closed entries and their markers (Ledger.flush_drops)
    assert (await informer.js.stream_info(f"KV_{ledger.bucket}")).state.messages == 0

    async def on_assume(msg: AssumeRequest, raw: Msg) -> AssumeReply:
        await jetstream.publish(
            informer, endpoints.PLACEMENTS, msg.placement, msg_id=msg.placement.placement_id
        )
        return AssumeReply(accepted=True)

    async def on_snapshot(msg: SnapshotBootstrapRequest, raw: Msg) -> BootstrapReply:
        return await publish_chunks(informer, msg.deliver, [], epoch="e1", generation=1)

    async def on_pending(msg: PendingPodsRequest, raw: Msg) -> BootstrapReply:
        return await publish_chunks(informer, msg.deliver, [PENDING], epoch="e1", generation=1)

    async def on_forget(msg: ForgetRequest, raw: Msg) -> Ack:
        await record("forget")(msg, raw)
        return Ack()

    await informer.subscribe(endpoints.ASSUME, on_assume)
    await informer.subscribe(endpoints.SNAPSHOT_BOOTSTRAP, on_snapshot)
    await informer.subscribe(endpoints.PENDING_BOOTSTRAP, on_pending)
    await informer.subscribe(endpoints.FORGET, on_forget)

    # queue: its feed stream, ordered replay of the feed, the pending bootstrap, its request handlers
    await informer.js.stream_info(SUBJECTS.feed_stream)
    await jetstream.ensure_stream(queue, streams.feed_stream(SUBJECTS))
    await jetstream.subscribe_ordered(
        queue,
        endpoints.FEED,  # a union, as the queue reads it
        record("feed"),
        stream=SUBJECTS.feed_stream,
    )
    reply, items = await fetch_bootstrap(
        queue,
        endpoints.PENDING_BOOTSTRAP,
        lambda inbox: PendingPodsRequest(requester="queue", deliver=inbox),
        PendingPod,
        timeout=5,
    )
    assert reply.items == 1 and items[0].uid == PENDING.uid

    async def on_pop(msg: PopRequest, raw: Msg) -> None:  # the queue answers long polls later, by hand
        await queue.nc.publish(raw.reply, encode(PopReply()))

    async def on_done(msg: DoneRequest, raw: Msg) -> Ack:
        await record("done")(msg, raw)
        return Ack()

    async def on_requeue(msg: RequeueRequest, raw: Msg) -> Ack:
        await record("requeue")(msg, raw)
        return Ack()

    await queue.subscribe(endpoints.QUEUE_POP, on_pop)
    await queue.subscribe(endpoints.QUEUE_DONE, on_done)
    await queue.subscribe(endpoints.QUEUE_REQUEUE, on_requeue)

    # scheduler: snapshot bootstrap + ordered deltas, pop, assume, done, its unreserve handler, permit
    await fetch_bootstrap(
        scheduler,
        endpoints.SNAPSHOT_BOOTSTRAP,
        lambda inbox: SnapshotBootstrapRequest(replica_id="s1", deliver=inbox),
        SnapshotOp,
        timeout=5,
    )
    await jetstream.subscribe_ordered(
        scheduler, endpoints.SNAPSHOT_DELTA, record("delta"), stream=SUBJECTS.snapshot_stream
    )
    # ... and the nominations it follows: the pending pods, then their feed
    await fetch_bootstrap(
        scheduler,
        endpoints.PENDING_BOOTSTRAP,
        lambda inbox: PendingPodsRequest(requester="s1", deliver=inbox),
        PendingPod,
        timeout=5,
    )
    await jetstream.subscribe_ordered(
        scheduler,
        endpoints.FEED,
        record("nominations"),
        stream=SUBJECTS.feed_stream,
    )

    async def on_unreserve(msg: UnreserveRequest, raw: Msg) -> Ack:
        await record("unreserve")(msg, raw)
        return Ack()

    await scheduler.subscribe(endpoints.UNRESERVE.to("sched-1"), on_unreserve)
    assert (
        await scheduler.request(endpoints.QUEUE_POP, PopRequest(scheduler_id="s1", scheduler_names=[]))
    ).pods == []
    assume = await scheduler.request(endpoints.ASSUME, AssumeRequest(placement=placement))
    assert assume.accepted
    await scheduler.request(endpoints.QUEUE_DONE, sample(DoneRequest))

    # informer publishes what the queue and the replicas follow, and a trace event
    await jetstream.publish(informer, endpoints.FEED_BATCH, sample(FeedBatch))
    await jetstream.publish(informer, endpoints.SNAPSHOT_DELTA, sample(SnapshotDelta))

    # binder: its streams, the durable pull consumer, the requests of a failed bind, permit decisions
    await jetstream.ensure_streams(binder)
    await binder.subscribe(endpoints.PERMIT.any, record("permit"))
    consumer = await jetstream.PullConsumer.create(
        binder,
        endpoints.PLACEMENTS,
        stream=SUBJECTS.placement_stream,
        config=streams.placement_consumer(SUBJECTS),
    )
    deliveries = await consumer.fetch(batch=1, timeout=5)
    assert [_lone(d.message).placement_id for d in deliveries] == [placement.placement_id]
    await deliveries[0].in_progress()
    await deliveries[0].ack()
    await scheduler.publish(endpoints.PERMIT.to(placement.pod_uid), sample(PermitDecision))
    await binder.request(endpoints.FORGET, sample(ForgetRequest))
    await binder.request(endpoints.UNRESERVE.to("sched-1"), sample(UnreserveRequest))
    await binder.request(endpoints.QUEUE_REQUEUE, sample(RequeueRequest))

    # every service traces, creating the trace stream if it is missing; the observer replays it
    for bus in (informer, queue, scheduler, binder):
        await bus.js.stream_info(SUBJECTS.trace_stream)
        await jetstream.ensure_stream(bus, streams.trace_stream(SUBJECTS))
        await bus.publish(endpoints.TRACE.to("team.a", "web.1"), sample(TraceEvent))
    await observer.js.stream_info(SUBJECTS.trace_stream)
    await jetstream.subscribe_ordered(
        observer, endpoints.TRACE.any, record("trace"), stream=SUBJECTS.trace_stream
    )

    await asyncio.wait(got.values(), timeout=10)
    assert [k for k, f in got.items() if not f.done()] == []
    for bus in (informer, queue, scheduler, binder, observer):
        await settle(bus)
    assert violations.seen == []
    assert isinstance(got["feed"].result(), FeedBatch)
    assert isinstance(got["trace"].result(), TraceEvent)


async def test_informer_moves_an_old_ledger_on_an_upgraded_server(
    tmp_path: Path, violations: Violations
) -> None:
    """An older release left its ledger as ``ksched_ksched_assumed`` in the JetStream store; the
    informer's user may read and delete that bucket, and nothing else of it."""
    store = tmp_path / "store"
    legacy_name = legacy_assumed_ledger_bucket(SUBJECTS)
    placement = sample(Placement)
    async with EmbeddedNats(store_dir=store) as before:  # the old installation
        old = await connect(before.url, name="old-informer", subjects=SUBJECTS, initial_timeout=5)
        legacy = await old.js.create_key_value(bucket=legacy_name)
        await legacy.put("uid-1", encode(placement))
        await old.close()
    conf = tmp_path / "auth.conf"
    conf.write_text(authorization_block(SUBJECTS, PASSWORDS))
    async with EmbeddedNats(store_dir=store, config_file=conf) as after:
        creds = NatsCredentials(user="informer", password=PASSWORDS["informer"])
        informer = await connect(
            after.url, name="informer", subjects=SUBJECTS, initial_timeout=5, **creds.connect_kwargs()
        )
        try:
            ledger = await jetstream.TypedKV.open(informer, ASSUMED_LEDGER, Placement)
            assert await jetstream.migrate_kv_bucket(informer, legacy_name, ledger) == 1
            entry = await ledger.get("uid-1")
            assert entry is not None and entry.value == placement
            with pytest.raises(nats.js.errors.NotFoundError):
                await informer.js.stream_info(f"KV_{legacy_name}")
            await settle(informer)
        finally:
            await informer.close()
    assert violations.seen == []


def test_checked_in_auth_conf_is_generated() -> None:
    """compose and deploy/ share one generated file; it must match the generator."""
    path = Path(__file__).resolve().parents[2] / "deploy" / "base" / "nats" / "auth.conf"
    assert path.read_text() == authorization_block(SUBJECTS)


def _lone(message: Placement | PlacementBatch) -> Placement:
    """A work-queue message this test published as a lone ``Placement``."""
    assert isinstance(message, Placement)
    return message
