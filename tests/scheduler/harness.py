"""An in-process harness for a scheduler replica, like the queue's :class:`QueueCore` tests: the
scheduling cycle runs on a snapshot replica built from objects, wired as the service wires it
(:meth:`SchedulerService.build_cycle`), without NATS or processes. What the replica would send
(assume requests to the informer, done reports to the queue) is recorded by :class:`Outbox`, which
answers the assumes as the test says."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import msgspec
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.service import SchedulerService

from ksched.api.core import Node, Pod
from ksched.bus.messages import (
    Ack,
    AssumeReply,
    AssumeRequest,
    LeasedPod,
    Message,
    PendingPod,
    UnreserveRequest,
)
from ksched.bus.subjects import Subjects
from ksched.cache.replica import SnapshotReplica, image_of
from ksched.config import default_config
from ksched.config.types import KubeSchedulerConfiguration
from ksched.framework.snapshot import Snapshot
from ksched.service.options import CommonOptions

EPOCH = "epoch-h"
M = TypeVar("M", bound=Message)


class Outbox:
    """Stands in for the bus: keeps every request the replica sends; answers assumes with
    ``answer`` (default: accepted) and every other request with an Ack."""

    def __init__(self) -> None:
        self.subjects = Subjects("h")
        self.sent: list[tuple[str, Message]] = []
        self.answer: Callable[[AssumeRequest], AssumeReply] = lambda _: AssumeReply(
            accepted=True, epoch=EPOCH
        )

    async def request(self, endpoint: Any, message: Message, **_: Any) -> Any:
        """``Bus.request``: an endpoint and its request (the reply type is the endpoint's)."""
        self.sent.append((endpoint.subject(self.subjects), message))
        if isinstance(message, AssumeRequest):
            return self.answer(message)
        return Ack()

    def of(self, kind: type[M]) -> list[M]:
        return [m for _, m in self.sent if isinstance(m, kind)]


class HandFollower:
    """The part of the replica follower the cycle reads: the replica (the test moves it by hand)."""

    def __init__(self, replica: Any) -> None:
        self.replica = replica
        self.resyncs = 0

    def request_resync(self) -> None:
        self.resyncs += 1

    async def reached(self, epoch: str, generation: int, timeout: float) -> bool:
        """The real follower is woken by its deltas; this test moves the replica by hand."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.replica.epoch == epoch and self.replica.generation < generation:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.001)
        return True


class SchedulerHarness:
    """A replica deciding on ``nodes`` and the placed ``pods`` (generation 1 of epoch ``EPOCH``)."""

    def __init__(
        self,
        nodes: Iterable[Node],
        pods: Iterable[Pod] = (),
        *,
        config: KubeSchedulerConfiguration | None = None,
    ) -> None:
        self.replica = SnapshotReplica()
        self.replica.load(image_of(Snapshot.build(list(nodes), list(pods)), EPOCH, 1))
        options = SchedulerOptions(common=CommonOptions(identity="replica-h", subject_prefix="h"), seed=1)
        self.service = SchedulerService(options, config or default_config())
        self.outbox = Outbox()
        self.service.bus = cast(Any, self.outbox)
        self.service.follower = cast(Any, HandFollower(self.replica))
        self.cycle = self.service.build_cycle(self.replica)
        self._leases = 0

    def leased(self, pod: Pod, attempts: int = 1) -> LeasedPod:
        """``pod`` as the queue leases it."""
        self._leases += 1
        pending = PendingPod(
            uid=pod.metadata.uid,
            namespace=pod.metadata.namespace,
            name=pod.metadata.name,
            scheduler_name=pod.spec.scheduler_name,
            pod=msgspec.json.encode(pod),
        )
        return LeasedPod(
            lease_id=f"lease-{self._leases}",
            deadline=0,
            lease_seconds=30,
            pod=pending,
            epoch=EPOCH,
            attempts=attempts,
            trace_id=f"trace-{self._leases}",
        )

    async def schedule(self, pod: Pod) -> list[Message]:
        """One scheduling cycle of ``pod`` and its assume; the messages sent meanwhile."""
        before = len(self.outbox.sent)
        await self.service._schedule_one(self.leased(pod))
        await self.service.tasks.drain(5.0)
        assert not self.service.tasks.failed.is_set(), self.service.tasks.failure
        return [m for _, m in self.outbox.sent[before:]]

    async def unreserve(self, placement_id: str, pod: Pod, node: str) -> Ack:
        """The binder failed ``placement_id``: its Unreserve request to this replica."""
        request = UnreserveRequest(
            placement_id=placement_id,
            pod_uid=pod.metadata.uid,
            namespace=pod.metadata.namespace,
            name=pod.metadata.name,
            node_name=node,
            scheduler_id="replica-h",
            reason="binding rejected",
        )
        return await self.service.on_unreserve(request, cast(Any, None))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)
