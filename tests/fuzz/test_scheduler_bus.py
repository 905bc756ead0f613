"""Fuzzing what a scheduler replica consumes, over a real nats-server with kubesim and a real informer
behind it: the queue's ``PopReply`` (played by a fake queue that answers pops with fuzzed bytes),
``P.scheduler.<id>.unreserve`` (request/reply), the snapshot deltas of ``P_snapshot`` and the feed
batches of ``P_feed`` that concern nominations (``P.feed.nominated``; both ordered consumers). After
each example the replica still follows the cluster (a new node reaches its snapshot) and still
schedules (a pod the queue hands it is assumed), and no task of it crashed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ksched_informer import feeds
from ksched_kubesim import KubeSim
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.server import SchedulerServer
from ksched_scheduler.service import SchedulerService
from nats.aio.msg import Msg

from ksched.bus import endpoints
from ksched.bus.codec import Message, encode
from ksched.bus.connect import Bus
from ksched.bus.messages import (
    Ack,
    DoneOutcome,
    DoneRequest,
    FeedBatch,
    LeasedPod,
    LeaseRenewReply,
    LeaseRenewRequest,
    NodeUpsert,
    ObjectUpsert,
    PendingPodAction,
    PendingPodEvent,
    PopReply,
    SnapshotDelta,
    SnapshotOp,
    UnreserveRequest,
)
from ksched.bus.subjects import SubjectKind
from ksched.config import default_config
from ksched.service.options import CommonOptions
from tests.fixtures.nats import BusFactory
from tests.fuzz.bus_checks import Counts, check_request, crashes
from tests.fuzz.cluster import Cluster
from tests.fuzz.payloads import payloads
from tests.fuzz.profiles import fuzz_settings
from tests.ha.test_services import eventually

IDENTITY = "sched-fuzz"


class FakeQueue:
    """Answers the replica's pops with queued payloads (an empty PopReply when none is queued)
    and acknowledges its done and renew requests, remembering the done ones."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.replies: asyncio.Queue[bytes] = asyncio.Queue()
        self.done: dict[str, DoneRequest] = {}

    async def start(self) -> None:
        await self.bus.nc.subscribe(self.bus.subjects.queue_pop, cb=self._pop)
        await self.bus.subscribe(endpoints.QUEUE_DONE, self._done)
        await self.bus.subscribe(endpoints.QUEUE_RENEW, self._renew)
        await self.bus.nc.flush()

    async def _pop(self, msg: Msg) -> None:
        payload = encode(PopReply())
        with contextlib.suppress(TimeoutError):
            payload = await asyncio.wait_for(self.replies.get(), 0.05)
        await self.bus.nc.publish(msg.reply, payload)

    async def _done(self, request: DoneRequest, _raw: Msg) -> Ack:
        self.done[request.lease_id] = request
        return Ack()

    async def _renew(self, request: LeaseRenewRequest, _raw: Msg) -> LeaseRenewReply:
        return LeaseRenewReply(renewed=request.lease_ids)


class Replica:
    """A scheduler replica under test, with the cluster and fake queue it works with."""

    def __init__(self, cluster: Cluster, queue: FakeQueue, service: SchedulerService) -> None:
        self.cluster = cluster
        self.queue = queue
        self.service = service
        self.leases = 0

    @property
    def bus(self) -> Bus:
        return self.cluster.bus

    async def leased(self) -> LeasedPod:
        """A lease on a fresh pending pod, as the queue would hand it out."""
        obj = await self.cluster.fresh_pod()
        pending = feeds.pending_pod(self.cluster.service.cache.pending[obj["metadata"]["uid"]])
        self.leases += 1
        now = time.time()
        return LeasedPod(
            lease_id=f"lease-{self.leases}",
            deadline=now + 30,
            lease_seconds=30,
            pod=pending,
            attempts=1,
            queued_at=now,
            initial_attempt_at=now,
            trace_id=f"trace-{self.leases}",
            epoch=self.cluster.service.epoch,
        )

    async def still_works(self) -> None:
        """The replica follows the cluster, then schedules a pod the queue hands it."""
        name = await self.cluster.fresh_node()
        replica = self.service.follower
        assert replica is not None
        await eventually(
            lambda: name in replica.replica.snapshot.node_map, what=f"node {name} in the replica"
        )
        lease = await self.leased()
        await self.queue.replies.put(encode(PopReply(pods=[lease])))
        assumed = self.cluster.service.cache.assumed  # the informer accepted its placement
        await eventually(lambda: lease.pod.uid in assumed, what=f"{lease.pod.name} assumed")
        # the queue ends the attempt on the informer's feed: the replica sends no done for it
        await eventually(lambda: lease.lease_id not in self.service.core.held, what="lease let go")
        assert lease.lease_id not in self.queue.done

    def delta(self) -> SnapshotDelta:
        """A delta of the informer's epoch with a gap before it (base past the replica's generation)."""
        service = self.cluster.service
        base = service.cache.generation + 1_000
        node = next(iter(service.cache.snapshot.node_map.values())).node
        assert node is not None
        namespace = b'{"metadata": {"name": "fuzz", "labels": {"a": "b"}}}'
        ops: list[SnapshotOp] = [
            NodeUpsert(msgspec.structs.replace(node)),
            ObjectUpsert("Namespace", "fuzz", namespace),
        ]
        return SnapshotDelta(
            epoch=service.epoch, base=base, generation=base + len(ops), ops=ops, ts=time.time()
        )

    async def nomination(self) -> FeedBatch:
        pending = (await self.leased()).pod
        pending = msgspec.structs.replace(pending, nominated_node_name="n0")
        epoch = self.cluster.service.epoch
        event = PendingPodEvent(
            action=PendingPodAction.UPDATE,
            pod=pending,
            epoch=epoch,
            generation=self.cluster.service.cache.generation,
        )
        return FeedBatch(epoch=epoch, events=[event])

    def unreserve(self) -> UnreserveRequest:
        placement_id = next(reversed(self.service.core.inflight), "uid:1:1")
        uid = placement_id.split(":")[0]
        return UnreserveRequest(
            placement_id=placement_id,
            pod_uid=uid,
            namespace="default",
            name="p",
            node_name="n0",
            scheduler_id=IDENTITY,
            reason="fuzz",
        )


@pytest.fixture
async def replica(
    cluster: Cluster, sim: tuple[KubeSim, Path], nats_url: str, bus_prefix: str, bus_factory: BusFactory
) -> AsyncIterator[Replica]:
    queue = FakeQueue(await bus_factory("queue"))
    await queue.start()
    options = SchedulerOptions(
        common=CommonOptions(
            identity=IDENTITY, nats=nats_url, kubeconfig=str(sim[1]), subject_prefix=bus_prefix
        ),
        batch=4,
    )
    server = SchedulerServer(options, default_config())
    await server.start()
    try:
        assert server.service.follower is not None
        await asyncio.wait_for(server.service.follower.synced.wait(), 15)
        made = Replica(cluster, queue, server.service)
        await made.still_works()
        yield made
    finally:
        await server.stop()


@fuzz_settings(30)
@given(data=st.data(), which=st.sampled_from(["pop", "unreserve", "delta", "nomination"]))
async def test_scheduler_inputs(
    replica: Replica, caplog: pytest.LogCaptureFixture, data: st.DataObject, which: str
) -> None:
    caplog.clear()
    caplog.set_level(logging.WARNING)
    bus = replica.bus
    before = Counts.of(SubjectKind.FEED_NOMINATED), Counts.of(SubjectKind.SNAPSHOT_DELTA)
    valid: Message
    if which == "pop":
        valid = PopReply(pods=[await replica.leased()])
        await replica.queue.replies.put(data.draw(payloads(valid), label="payload"))
    elif which == "unreserve":
        await check_request(
            bus, endpoints.UNRESERVE.to(IDENTITY), data.draw(payloads(replica.unreserve()), label="payload")
        )
    elif which == "delta":
        await bus.js.publish(
            bus.subjects.snapshot_delta, data.draw(payloads(replica.delta()), label="payload")
        )
    else:
        subject = bus.subjects.feed_nominated
        await bus.js.publish(subject, data.draw(payloads(await replica.nomination()), label="payload"))
    await replica.still_works()
    assert crashes(caplog) == []
    assert (Counts.of(SubjectKind.FEED_NOMINATED).errors, Counts.of(SubjectKind.SNAPSHOT_DELTA).errors) == (
        before[0].errors,
        before[1].errors,
    )


async def test_a_forged_delta_does_not_stop_the_replica(replica: Replica) -> None:
    """Before the fix the replica jumped to the forged generation and ignored every real delta
    after it: the new node never reached it."""
    bus, delta = replica.bus, replica.delta()
    forged = msgspec.structs.replace(delta, base=0, generation=10**12)
    await bus.js.publish(bus.subjects.snapshot_delta, encode(forged))
    await replica.still_works()


async def test_a_delta_that_does_not_apply_means_a_new_bootstrap(replica: Replica) -> None:
    """An op that fails half-way (an object's JSON that does not decode) left the replica with the
    ops before it applied and its generation behind: it now starts over from a bootstrap."""
    follower, bus = replica.service.follower, replica.bus
    assert follower is not None
    bootstraps, bad = follower.bootstraps, Counts.of(SubjectKind.SNAPSHOT_DELTA).bad
    delta = replica.delta()
    ops = [*delta.ops[:1], ObjectUpsert("Namespace", "broken", b"{not json")]
    broken = msgspec.structs.replace(
        delta, base=follower.replica.generation, generation=follower.replica.generation + 2, ops=ops
    )
    await bus.js.publish(bus.subjects.snapshot_delta, encode(broken))
    await eventually(lambda: follower.bootstraps == bootstraps + 1, what="a new bootstrap")
    assert Counts.of(SubjectKind.SNAPSHOT_DELTA).bad == bad + 1
    await replica.still_works()


async def test_a_leased_pod_the_cycle_cannot_read_is_done_with_an_error(replica: Replica) -> None:
    """Found by this fuzzer: a quantity that does not parse raised out of the cycle, and the schedule
    loop crashed (restarted after 1 s, the rest of its batch left to expire)."""
    lease = await replica.leased()
    pod = msgspec.json.decode(lease.pod.pod)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    bad = msgspec.structs.replace(lease, pod=msgspec.structs.replace(lease.pod, pod=msgspec.json.encode(pod)))
    await replica.queue.replies.put(encode(PopReply(pods=[bad])))
    await eventually(lambda: bad.lease_id in replica.queue.done, what="done")
    done = replica.queue.done[bad.lease_id]
    assert done.outcome == DoneOutcome.ERROR and "unreadable pod: invalid quantity 'lots'" in done.message
    await replica.still_works()
