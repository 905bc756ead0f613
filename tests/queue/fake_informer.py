"""The informer's side of the queue's contract, played over a real NATS: it answers the pending-pod
bootstrap and publishes each event to the ``P_feed`` stream in order, as a FeedBatch of one (or, with
``single_events``, as a bare PendingPodEvent / ClusterEventMsg, as informers of earlier releases did)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
from ksched_informer.feeds import NominationFeed
from nats.aio.msg import Msg

from ksched.api.core import Pod
from ksched.bus import endpoints, jetstream, streams
from ksched.bus.bootstrap import publish_chunks
from ksched.bus.codec import Message
from ksched.bus.connect import Bus
from ksched.bus.endpoints import PublishEndpoint
from ksched.bus.messages import (
    BootstrapReply,
    ClusterEventMsg,
    FeedBatch,
    PendingPod,
    PendingPodAction,
    PendingPodEvent,
    PendingPodsRequest,
)
from tests.queue.testing import pending_of

M = TypeVar("M", bound=Message)


class FakeInformer:
    def __init__(self, bus: Bus, epoch: str = "epoch-1", *, single_events: bool = False) -> None:
        self.bus = bus
        self.epoch = epoch
        self.single_events = single_events
        self.pending: dict[str, PendingPod] = {}
        self.generation = 0
        self.stream_seq = 0
        self.bootstraps = 0
        self.ready = True
        self.device_classes: list[bytes] = []
        """The DeviceClasses (API JSON) a bootstrap that asks for them gets."""
        self.nominations = NominationFeed()
        self.stale_answer: tuple[list[PendingPod], int, int] | None = None
        """(pods, generation, stream_seq) to answer the next bootstrap with, instead of the truth."""

    async def start(self) -> None:
        await jetstream.ensure_stream(self.bus, streams.feed_stream(self.bus.subjects))
        await self.bus.subscribe(endpoints.PENDING_BOOTSTRAP, self._on_bootstrap)
        await self.bus.nc.flush()

    async def _on_bootstrap(self, request: PendingPodsRequest, raw: Msg) -> BootstrapReply:
        if not self.ready:
            return BootstrapReply(error="cache is not synced yet")
        self.bootstraps += 1
        names = set(request.scheduler_names)
        items = [p for p in self.pending.values() if not names or p.scheduler_name in names]
        generation, stream_seq = self.generation, self.stream_seq
        if self.stale_answer is not None:
            (items, generation, stream_seq), self.stale_answer = self.stale_answer, None
        reply = await publish_chunks(
            self.bus,
            request.deliver,
            items,
            epoch=self.epoch,
            generation=generation,
            stream_seq=stream_seq,
            max_chunk_bytes=request.max_chunk_bytes,
        )
        if request.device_classes:
            reply.device_classes = list(self.device_classes)
        return reply

    async def _publish(self, endpoint: PublishEndpoint[M], message: M) -> None:
        ack = await jetstream.publish(self.bus, endpoint, message)
        self.stream_seq = ack.seq

    async def pod(self, action: PendingPodAction, pod: Pod, reason: str = "") -> PendingPod:
        pending = pending_of(pod)
        if action == PendingPodAction.DELETE:
            self.pending.pop(pending.uid, None)
        else:
            self.pending[pending.uid] = pending
        # as the real informer: a pending pod's change is no snapshot change (its generation stays)
        message = PendingPodEvent(
            action=action, pod=pending, reason=reason, epoch=self.epoch, generation=self.generation
        )
        if self.single_events:
            await self._publish(endpoints.PENDING_PODS.to(pending.scheduler_name), message)
        else:
            await self.batch([message])
        return pending

    async def event(self, resource: str, action: int, old: Any = None, new: Any = None) -> None:
        self.generation += 1
        obj = new if new is not None else old
        message = ClusterEventMsg(
            resource=resource,
            action=int(action),
            key=obj.metadata.name if obj is not None else "",
            old=msgspec.json.encode(old) if old is not None else None,
            new=msgspec.json.encode(new) if new is not None else None,
            epoch=self.epoch,
            generation=self.generation,
        )
        if self.single_events:
            await self._publish(endpoints.CLUSTER_EVENTS.to(resource), message)
        else:
            await self.batch([message])

    async def batch(self, events: Sequence[PendingPodEvent | ClusterEventMsg]) -> None:
        """Publish ``events`` as one FeedBatch (what the informer does at each flush), on
        ``P.feed.nominated`` when one concerns nominations, as the informer does."""
        concern = [self.nominations.concerns(e) for e in events if isinstance(e, PendingPodEvent)]
        endpoint = endpoints.FEED_NOMINATED if any(concern) else endpoints.FEED_BATCH
        await self._publish(endpoint, FeedBatch(epoch=self.epoch, events=list(events)))

    def list_pending(self, *pods: Pod) -> None:
        """Set the pending list (what a bootstrap returns) without publishing anything (the informer
        has seen these pods: its events of them went before)."""
        self.pending = {p.metadata.uid: pending_of(p) for p in pods}
        for pending in self.pending.values():
            seen = PendingPodEvent(action=PendingPodAction.ADD, pod=pending, epoch=self.epoch, generation=0)
            self.nominations.concerns(seen)
