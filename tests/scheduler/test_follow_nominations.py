"""A replica learns nominations made anywhere: the informer's pending-pod bootstrap, then the feed in
order (over a real nats-server, the informer's side played by the queue tests' fake)."""

from __future__ import annotations

import asyncio

import pytest
from ksched_scheduler.nominations import NominationTracker, follow_nominations

from ksched.aio import cancel_and_wait
from ksched.api.core import Pod
from ksched.bus.feed import FeedCursor, FeedVerdict
from ksched.bus.messages import PendingPodAction
from ksched.framework.nominator import Nominator
from ksched.framework.testing import make_pod
from tests.fixtures.nats import BusFactory
from tests.polling import until
from tests.queue.fake_informer import FakeInformer


def nominated(name: str, node: str, uid: str | None = None) -> Pod:
    return make_pod(name, uid=uid, priority=10, status={"nominatedNodeName": node} if node else None)


async def test_bootstrap_then_feed(bus_factory: BusFactory) -> None:
    informer = FakeInformer(await bus_factory(name="informer"))
    await informer.start()
    a, b = nominated("a", "node-1"), nominated("b", "")
    informer.list_pending(a, b)
    nominator = Nominator()
    tracker = NominationTracker(nominator)
    bus = await bus_factory(name="scheduler")
    task = asyncio.create_task(follow_nominations(bus, tracker, ["default-scheduler"], "scheduler-test"))
    try:
        await until(lambda: nominator.node_of(a.metadata.uid) == "node-1")
        assert nominator.node_of(b.metadata.uid) is None
        await informer.pod(PendingPodAction.UPDATE, nominated("b", "node-2", b.metadata.uid))
        await until(lambda: nominator.node_of(b.metadata.uid) == "node-2")
        await informer.pod(PendingPodAction.DELETE, a, reason="bound")
        await until(lambda: nominator.node_of(a.metadata.uid) is None)
        assert informer.bootstraps == 1
    finally:
        await cancel_and_wait(task)


async def test_a_new_informer_epoch_means_a_new_bootstrap(bus_factory: BusFactory) -> None:
    """Issue 16's review of every feed consumer: after an informer failover the follower would apply
    the new leader's events on top of the old leader's state; it bootstraps again instead, so a pod
    deleted while no informer led stops being nominated."""
    informer = FakeInformer(await bus_factory(name="informer"))
    await informer.start()
    a, b = nominated("a", "node-1"), nominated("b", "node-2")
    informer.list_pending(a, b)
    nominator = Nominator()
    bus = await bus_factory(name="scheduler")
    task = asyncio.create_task(
        follow_nominations(bus, NominationTracker(nominator), ["default-scheduler"], "scheduler-test")
    )
    try:
        await until(lambda: nominator.node_of(a.metadata.uid) == "node-1")
        informer.epoch = "epoch-2"  # a new leader, whose list no longer holds a
        informer.list_pending(b)
        c = nominated("c", "node-3")
        await informer.pod(PendingPodAction.ADD, c)
        await until(lambda: nominator.node_of(a.metadata.uid) is None)
        assert informer.bootstraps == 2
        assert nominator.node_of(b.metadata.uid) == "node-2"
        await informer.pod(PendingPodAction.UPDATE, nominated("b", "node-4", b.metadata.uid))
        await until(lambda: nominator.node_of(b.metadata.uid) == "node-4")
        assert nominator.node_of(c.metadata.uid) == "node-3"  # in the new bootstrap or applied after it
    finally:
        await cancel_and_wait(task)


async def test_the_replica_follows_only_the_batches_that_concern_nominations(
    bus_factory: BusFactory,
) -> None:
    """A plain pod's feed goes on ``P.feed.batch``, which the replicas do not read; a new informer
    epoch the replica's snapshot has seen means a new bootstrap even when no nomination changed."""
    informer = FakeInformer(await bus_factory(name="informer"))
    await informer.start()
    a = nominated("a", "node-1")
    informer.list_pending(a)
    nominator = Nominator()
    bus = await bus_factory(name="scheduler")
    seen: list[str] = []
    original = FeedCursor.check

    def check(self: FeedCursor, epoch: str, stream_seq: int) -> FeedVerdict:
        seen.append(epoch)
        return original(self, epoch, stream_seq)

    replica_epoch = ["epoch-1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FeedCursor, "check", check)
        task = asyncio.create_task(
            follow_nominations(
                bus,
                NominationTracker(nominator),
                ["default-scheduler"],
                "scheduler-test",
                lambda: replica_epoch[0],
            )
        )
        try:
            await until(lambda: nominator.node_of(a.metadata.uid) == "node-1")
            plain = nominated("plain", "")
            await informer.pod(PendingPodAction.ADD, plain)
            await informer.pod(PendingPodAction.DELETE, plain, reason="bound")
            b = nominated("b", "node-2")
            await informer.pod(PendingPodAction.ADD, b)
            await until(lambda: nominator.node_of(b.metadata.uid) == "node-2")
            assert seen == ["epoch-1"]  # b's batch alone reached the replica

            informer.epoch = "epoch-2"  # a failover whose new leader lists no a (deleted meanwhile)
            informer.list_pending(b)
            replica_epoch[0] = "epoch-2"  # the snapshot replica bootstrapped from the new leader
            await until(lambda: nominator.node_of(a.metadata.uid) is None, timeout=15)
            assert informer.bootstraps == 2
        finally:
            await cancel_and_wait(task)


async def test_the_follower_tells_how_far_it_applied_the_feed(bus_factory: BusFactory) -> None:
    """A lease names the newest batch of nominations the queue applied (``nominated_seq``); the
    replica waits until its follower applied that one too (gangs-s9517-223 of ``ksched
    differential``: a deleted pod's nomination, still counted, kept the next pod from preempting)."""
    informer = FakeInformer(await bus_factory(name="informer"))
    await informer.start()
    informer.list_pending()
    nominator = Nominator()
    tracker = NominationTracker(nominator)
    assert not await tracker.reached("epoch-1", 0, timeout=0.05)  # no bootstrap yet: it waits
    bus = await bus_factory(name="scheduler")
    task = asyncio.create_task(follow_nominations(bus, tracker, ["default-scheduler"], "scheduler-test"))
    try:
        await until(lambda: tracker.position[0] == "epoch-1")
        a = nominated("a", "node-1")
        await informer.pod(PendingPodAction.ADD, a)
        await informer.pod(PendingPodAction.DELETE, a, reason="deleted")
        assert await tracker.reached("epoch-1", informer.stream_seq, timeout=5)
        assert nominator.node_of(a.metadata.uid) is None  # the deletion is applied by then
        assert not await tracker.reached("epoch-1", informer.stream_seq + 1, timeout=0.05)
        assert await tracker.reached("epoch-0", informer.stream_seq + 1, timeout=0.05)  # not comparable
    finally:
        await cancel_and_wait(task)
