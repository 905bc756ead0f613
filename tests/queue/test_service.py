"""The queue service over a real nats-server: a fake informer feeds real messages, scheduler replicas
and the binder talk to the queue by request/reply."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
from ksched_queue.clock import SystemClock
from ksched_queue.server import QueueServer
from ksched_queue.service import QueueService
from ksched_queue.settings import QueueSettings, build_core

from ksched.api.lifecycle import PodLifecycle
from ksched.bus import endpoints
from ksched.bus.connect import Bus
from ksched.bus.messages import (
    Ack,
    DoneOutcome,
    LeasedPod,
    LeaseRenewRequest,
    PendingPodAction,
    PendingPodEvent,
    PopRequest,
    QueueListRequest,
    RequeueRequest,
)
from ksched.framework.events import ActionType, EventResource
from ksched.framework.testing import make_pod
from ksched.service.lifecycle import serve
from ksched.service.options import CommonOptions
from tests.fixtures.nats import BusFactory
from tests.polling import until
from tests.queue.fake_informer import FakeInformer
from tests.queue.testing import done_request, node, pending_of, pod, settings

FIT = "NodeResourcesFit"


def queue_settings(**kw: Any) -> QueueSettings:
    base = settings()
    defaults: dict[str, Any] = {
        "bootstrap_timeout": 2.0,
        "bootstrap_retry": 0.05,
        "lease_check_interval": 0.05,
    }
    defaults.update(kw)
    return QueueSettings(scheduler_config=base.scheduler_config, **defaults)


class Harness:
    def __init__(self, bus_factory: BusFactory) -> None:
        self.bus_factory = bus_factory
        self.services: list[QueueService] = []
        self.informer: FakeInformer
        self.replica: Bus

    async def setup(self) -> None:
        self.informer = FakeInformer(await self.bus_factory(name="informer"))
        await self.informer.start()
        self.replica = await self.bus_factory(name="scheduler")

    async def start_queue(self, **kw: Any) -> QueueService:
        s = queue_settings(**kw)
        core = build_core(s, SystemClock())
        bus = await self.bus_factory(name="queue")
        service = QueueService(s, core, bus)
        await service.start()
        self.services.append(service)
        await until(lambda: core.bootstrapped)
        return service

    async def pop(self, n: int = 1, wait: float = 0.0, replica: str = "r1") -> list[LeasedPod]:
        request = PopRequest(
            scheduler_id=replica, scheduler_names=["default-scheduler"], max_pods=n, wait_seconds=wait
        )
        reply = await self.replica.request(endpoints.QUEUE_POP, request, timeout=wait + 3)
        return reply.pods

    async def done(self, lp: LeasedPod, outcome: DoneOutcome, replica: str = "r1", **kw: Any) -> Ack:
        return await self.replica.request(endpoints.QUEUE_DONE, done_request(lp, outcome, replica, **kw))

    async def close(self) -> None:
        for service in self.services:
            await service.stop()


async def test_pop_end_to_end_with_leases(harness: Harness) -> None:
    informer = harness.informer
    informer.list_pending(pod("low", priority=1), pod("high", priority=9), pod("mid", priority=5))
    service = await harness.start_queue()
    batch = await harness.pop(n=2)
    assert [lp.pod.name for lp in batch] == ["high", "mid"]
    assert all(lp.epoch == "epoch-1" and lp.attempts == 1 for lp in batch)
    assert len({lp.lease_id for lp in batch}) == 2
    # another replica never gets a leased pod
    other = await harness.pop(n=5, replica="r2")
    assert [lp.pod.name for lp in other] == ["low"]
    assert await harness.pop(n=5, replica="r3") == []

    ack = await harness.done(batch[0], DoneOutcome.SCHEDULED)
    assert ack.ok and ack.code == PodLifecycle.ASSUMED
    ack = await harness.done(batch[1], DoneOutcome.UNSCHEDULABLE, unschedulable_plugins=[FIT])
    assert ack.ok and ack.code == PodLifecycle.UNSCHEDULABLE
    renew = await harness.replica.request(
        endpoints.QUEUE_RENEW,
        LeaseRenewRequest(scheduler_id="r2", lease_ids=[other[0].lease_id, batch[0].lease_id]),
    )
    assert renew.renewed == [other[0].lease_id] and renew.expired == [batch[0].lease_id]

    # the informer reports the scheduled pod bound: nothing is left of it
    await informer.pod(PendingPodAction.DELETE, pod("high", priority=9), reason="bound")
    await until(lambda: service.core.state_of("uid-high") is None)


async def test_long_poll_returns_as_soon_as_a_pod_arrives(harness: Harness) -> None:
    await harness.start_queue()
    started = time.monotonic()
    assert await harness.pop(wait=0.2) == []
    assert 0.15 < time.monotonic() - started < 2.0
    polling = asyncio.create_task(harness.pop(wait=10))
    await asyncio.sleep(0.2)
    assert not polling.done()
    started = time.monotonic()
    await harness.informer.pod(PendingPodAction.ADD, pod("fresh"))
    pods = await asyncio.wait_for(polling, 5)
    assert [lp.pod.name for lp in pods] == ["fresh"]
    assert time.monotonic() - started < 1.0


async def test_many_long_polls_share_arriving_pods_without_double_leasing(harness: Harness) -> None:
    await harness.start_queue()
    polls = [asyncio.create_task(harness.pop(n=1, wait=1, replica=f"r{i}")) for i in range(6)]
    await asyncio.sleep(0.2)
    for i in range(4):
        await harness.informer.pod(PendingPodAction.ADD, pod(f"p{i}"))
    results = await asyncio.gather(*polls)
    names = [lp.pod.name for pods in results for lp in pods]
    assert sorted(names) == ["p0", "p1", "p2", "p3"]


async def test_expired_lease_returns_the_pod(harness: Harness) -> None:
    from ksched_queue.metrics import LEASES_EXPIRED

    before = LEASES_EXPIRED._value.get()
    harness.informer.list_pending(pod("a"))
    service = await harness.start_queue(lease_seconds=0.3)
    (lp,) = await harness.pop()
    # the replica crashed: no done, no renewal
    await until(lambda: service.core.state_of("uid-a") == PodLifecycle.ACTIVE, timeout=3)
    assert LEASES_EXPIRED._value.get() == before + 1
    (again,) = await harness.pop(replica="r2")
    assert again.pod.uid == "uid-a" and again.lease_id != lp.lease_id and again.attempts == 2
    late = await harness.done(lp, DoneOutcome.SCHEDULED)
    assert not late.ok and late.code == "LeaseUnknown"


async def test_cluster_event_requeues_only_when_a_hint_says_so(harness: Harness) -> None:
    harness.informer.list_pending(pod("big", requests={"cpu": "3"}))
    service = await harness.start_queue()
    (lp,) = await harness.pop()
    await harness.done(lp, DoneOutcome.UNSCHEDULABLE, unschedulable_plugins=[FIT])
    # a label change does not concern NodeResourcesFit: the pod stays unschedulable
    await harness.informer.event(
        EventResource.NODE,
        ActionType.UPDATE_NODE_LABEL,
        node("n1", cpu="1"),
        node("n1", cpu="1", labels={"a": "b"}),
    )
    assert await harness.pop(wait=0.3) == []
    assert service.core.state_of("uid-big") == PodLifecycle.UNSCHEDULABLE
    # a node that fits: requeued; an idle replica takes it from backoffQ at once
    await harness.informer.event(EventResource.NODE, ActionType.ADD, None, node("n2", cpu="8"))
    (again,) = await harness.pop(wait=3)
    assert again.pod.uid == "uid-big" and again.attempts == 2


async def test_a_feed_batch_is_applied_in_order(harness: Harness) -> None:
    informer = harness.informer
    await harness.start_queue()
    a, b = pending_of(pod("a")), pending_of(pod("b"))
    events = [
        PendingPodEvent(action=action, pod=p, reason=reason, epoch=informer.epoch, generation=0)
        for action, p, reason in (
            (PendingPodAction.ADD, a, ""),
            (PendingPodAction.ADD, b, ""),
            (PendingPodAction.DELETE, a, "deleted"),
        )
    ]
    await informer.batch(events)
    assert [lp.pod.name for lp in await harness.pop(n=5, wait=3)] == ["b"]


async def test_a_lease_names_the_last_batch_of_nominations_the_queue_applied(harness: Harness) -> None:
    """gangs-s9517-223 of ``ksched differential``: the replica must decide a pod with the nominations
    of every event before it, as upstream's nominator does; the lease names the newest batch on
    ``P.feed.nominated`` the queue had applied, the replica waits for that one. A rebuild forgets it
    (which batch before the bootstrap was the last is not known)."""
    informer = harness.informer
    service = await harness.start_queue()
    await informer.pod(PendingPodAction.ADD, pod("plain"))
    (first,) = await harness.pop(wait=3)
    assert first.nominated_seq == 0
    nominated = make_pod("preemptor", priority=9, status={"nominatedNodeName": "n1"})
    await informer.pod(PendingPodAction.ADD, nominated)
    batch_seq = informer.stream_seq
    await informer.pod(PendingPodAction.DELETE, nominated, reason="deleted")  # concerns them too
    deleted_seq = informer.stream_seq
    await informer.pod(PendingPodAction.ADD, pod("next"))  # P.feed.batch: no nomination in it
    assert informer.stream_seq > deleted_seq > batch_seq
    (leased,) = await harness.pop(wait=3)
    assert leased.pod.name == "next" and leased.nominated_seq == deleted_seq
    informer.epoch = "epoch-2"
    await informer.pod(PendingPodAction.ADD, pod("after"))
    await until(lambda: service.core.cursor.epoch == "epoch-2")
    assert service.core.nominated_seq == 0


async def test_single_events_of_an_earlier_informer_are_still_read(harness: Harness) -> None:
    """Informers before feed batches published each event on its own subject: a queue of this
    release follows them during a rolling upgrade."""
    harness.informer.single_events = True
    harness.informer.list_pending(pod("big", requests={"cpu": "3"}))
    await harness.start_queue()
    (lp,) = await harness.pop()
    await harness.done(lp, DoneOutcome.UNSCHEDULABLE, unschedulable_plugins=[FIT])
    await harness.informer.pod(PendingPodAction.ADD, pod("fresh"))
    assert [p.pod.name for p in await harness.pop(wait=3)] == ["fresh"]
    await harness.informer.event(EventResource.NODE, ActionType.ADD, None, node("n2", cpu="8"))
    (again,) = await harness.pop(wait=3)
    assert again.pod.uid == "uid-big" and again.attempts == 2


async def test_event_during_the_attempt_is_not_lost(harness: Harness) -> None:
    harness.informer.list_pending(pod("big", requests={"cpu": "3"}))
    service = await harness.start_queue()
    (lp,) = await harness.pop()
    await harness.informer.event(EventResource.NODE, ActionType.ADD, None, node("n2", cpu="8"))
    await until(lambda: service.core.queue.in_flight_events() == 1)
    ack = await harness.done(lp, DoneOutcome.UNSCHEDULABLE, unschedulable_plugins=[FIT])
    assert ack.code == PodLifecycle.BACKOFF


async def test_gated_pod_is_released_by_its_update(harness: Harness) -> None:
    service = await harness.start_queue()
    gated = pod("gated", gates=["wait"])
    await harness.informer.pod(PendingPodAction.ADD, gated)
    await until(lambda: service.core.state_of("uid-gated") == PodLifecycle.GATED)
    assert await harness.pop(wait=0.2) == []
    gated.spec.scheduling_gates = []
    await harness.informer.pod(PendingPodAction.UPDATE, gated)
    (lp,) = await harness.pop(wait=3)
    assert lp.pod.name == "gated"


async def test_binder_requeue_after_a_failed_bind(harness: Harness) -> None:
    harness.informer.list_pending(pod("a"))
    service = await harness.start_queue()
    (lp,) = await harness.pop()
    await harness.done(lp, DoneOutcome.SCHEDULED)
    ack = await harness.replica.request(
        endpoints.QUEUE_REQUEUE,
        RequeueRequest(
            pod_uid="uid-a", namespace="default", name="a", reason="bind failed", sender="binder-0"
        ),
    )
    assert ack.ok and ack.code == PodLifecycle.BACKOFF
    assert service.core.state_of("uid-a") == PodLifecycle.BACKOFF


async def test_restarted_queue_loses_no_pod(harness: Harness) -> None:
    informer = harness.informer
    for name in ("a", "b", "c"):
        await informer.pod(PendingPodAction.ADD, pod(name))
    first = await harness.start_queue()
    leased = await harness.pop(n=2)
    assert len(leased) == 2
    await first.stop()  # crash: the leases die with it
    harness.services.remove(first)
    await informer.pod(PendingPodAction.ADD, pod("d"))
    second = await harness.start_queue()
    assert informer.bootstraps == 2
    assert second.core.queue.uids() == {"uid-a", "uid-b", "uid-c", "uid-d"}
    names = sorted(lp.pod.name for lp in await harness.pop(n=10, replica="r2"))
    assert names == ["a", "b", "c", "d"]
    # the old replica's leases are unknown to the new queue
    assert (await harness.done(leased[0], DoneOutcome.SCHEDULED)).code == "LeaseUnknown"


async def test_new_informer_epoch_triggers_a_rebuild(harness: Harness) -> None:
    informer = harness.informer
    await informer.pod(PendingPodAction.ADD, pod("old"))
    service = await harness.start_queue()
    await until(lambda: service.core.state_of("uid-old") == PodLifecycle.ACTIVE)
    # the informer restarted: new epoch, and "old" was deleted while it was down
    informer.epoch = "epoch-2"
    informer.list_pending(pod("survivor"))
    await informer.pod(PendingPodAction.ADD, pod("newcomer"))
    await until(lambda: informer.bootstraps == 2)
    await until(lambda: service.core.queue.uids() == {"uid-survivor", "uid-newcomer"})
    assert service.core.cursor.epoch == "epoch-2"


async def test_lost_feed_message_triggers_a_rebuild(harness: Harness) -> None:
    """The queue bootstraps at stream seq 1, but seq 2 was dropped from the stream (its limits) before
    the queue read it: the jump to seq 3 makes it rebuild from a fresh list."""
    informer = harness.informer
    first = await informer.pod(PendingPodAction.ADD, pod("a"))
    await informer.pod(PendingPodAction.ADD, pod("lost"))
    await informer.pod(PendingPodAction.ADD, pod("after"))
    await informer.bus.js.delete_msg(informer.bus.subjects.feed_stream, 2)
    informer.stale_answer = ([first], 1, 1)
    service = await harness.start_queue()
    await until(lambda: informer.bootstraps == 2)
    await until(lambda: service.core.queue.uids() == {"uid-a", "uid-lost", "uid-after"})
    assert service.core.cursor.stream_seq == 3


async def test_run_serves_readiness_and_metrics(
    bus_factory: BusFactory, nats_url: str, bus_prefix: str
) -> None:
    informer = FakeInformer(await bus_factory(name="informer"))
    informer.ready = False
    await informer.start()
    informer.list_pending(pod("a"), pod("gated", gates=["g"]))
    s = queue_settings(common=CommonOptions(identity="queue-test", nats=nats_url, subject_prefix=bus_prefix))
    stop = asyncio.Event()
    server = QueueServer(s)
    runner = asyncio.create_task(serve(server, stop))
    try:
        await asyncio.wait_for(server.started.wait(), 10)
        port = server.port
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{port}"

            async def ready() -> bool:
                async with http.get(f"{url}/readyz") as r:
                    return r.status == 200

            await asyncio.sleep(0.3)
            assert not await ready()  # the informer is not answering yet
            informer.ready = True
            await until(ready)
            async with http.get(f"{url}/metrics") as r:
                text = await r.text()
            assert 'scheduler_pending_pods{queue="active"} 1.0' in text
            assert 'scheduler_pending_pods{queue="gated"} 1.0' in text
            assert 'scheduler_queue_incoming_pods_total{event="UnschedulablePodAdd",queue="active"}' in text
            assert "ksched_queue_leases 0.0" in text
            async with http.get(f"{url}/debug") as r:
                debug = await r.json()
            assert debug["counts"]["active"] == 1 and debug["feed"]["epoch"] == "epoch-1"
    finally:
        stop.set()
        assert await asyncio.wait_for(runner, 30) == 0  # stops in ~0.1 s; a loaded CI machine is slow


async def test_list_names_each_pod_its_queue_and_last_message(harness: Harness) -> None:
    harness.informer.list_pending(
        pod("web-big", requests={"cpu": "3"}, priority=5),
        pod("web-small", priority=1),
        pod("gated", gates=["example.com/wait"]),
        pod("db", priority=2),
    )
    await harness.start_queue()
    (lp,) = await harness.pop()
    assert lp.pod.name == "web-big"
    message = "0/3 nodes are available: 3 Insufficient cpu."
    await harness.done(lp, DoneOutcome.UNSCHEDULABLE, unschedulable_plugins=[FIT], message=message)
    reply = await harness.replica.request(endpoints.QUEUE_LIST, QueueListRequest(requester="t"))
    listed = {(e.name, e.queue) for e in reply.pods}
    assert listed == {
        ("db", "active"),
        ("web-small", "active"),
        ("web-big", "unschedulable"),
        ("gated", "gated"),
    }
    assert [e.queue for e in reply.pods] == ["active", "active", "unschedulable", "gated"]
    big = next(e for e in reply.pods if e.name == "web-big")
    assert big.message == message and big.plugins == [FIT] and big.attempts == 1
    gated = next(e for e in reply.pods if e.name == "gated")
    assert gated.gating_plugin == "SchedulingGates"
    assert reply.counts["active"] == 2 and reply.counts["gated"] == 1 and reply.matched == 4

    # search by name, and the limit
    reply = await harness.replica.request(
        endpoints.QUEUE_LIST, QueueListRequest(name_contains="WEB-", limit=1)
    )
    assert reply.matched == 2 and [e.name for e in reply.pods] == ["web-small"]
    assert reply.counts["unschedulable"] == 1
