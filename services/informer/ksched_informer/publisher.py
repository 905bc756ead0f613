"""The informer's publisher: the cache's ops as ordered snapshot deltas and the queue's feed
events as feed batches, published together at each flush (one buffered write and one acknowledged
publish per stream). :func:`deltas` and :func:`feed_batches` are the pure part."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ksched.api.core import Pod
from ksched.bus.connect import Bus
from ksched.bus.endpoints import FEED_BATCH, FEED_NOMINATED, SNAPSHOT_DELTA, Envelope, PublishEndpoint
from ksched.bus.jetstream import publish, publish_started
from ksched.bus.messages import (
    ClusterEventMsg,
    FeedBatch,
    Message,
    PendingPodAction,
    PendingPodEvent,
    PendingPodGroup,
    SnapshotDelta,
)
from ksched.bus.subjects import Subjects
from ksched.cache.delta import DeltaOp
from ksched.cache.ledger import ClusterCache
from ksched.framework.events import ClusterEvent
from ksched_informer import feeds, metrics

M = TypeVar("M", bound=Message)

log = logging.getLogger(__name__)

MAX_OPS_PER_DELTA = 100
"""Ops per published delta: nodes and pods are at most a few KiB each once trimmed."""


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _failed(exc: Exception) -> None:
    raise exc


def deltas(epoch: str, base: int, ops: Sequence[DeltaOp]) -> list[Envelope]:
    """Consecutive deltas of bounded size (a NATS message is limited, 1 MiB by default); each op
    advances the generation by one, so each part has its own base..generation."""
    out: list[Envelope] = []
    now = time.time()
    for start in range(0, len(ops), MAX_OPS_PER_DELTA):
        part = list(ops[start : start + MAX_OPS_PER_DELTA])
        delta = SnapshotDelta(
            epoch=epoch, base=base + start, generation=base + start + len(part), ops=part, ts=now
        )
        out.append(SNAPSHOT_DELTA.envelope(delta))
    return out


HOLD_FOR_BINDING = 0.02
"""How long a flush holding a pod's assumption waits at most for the watch to show that pod bound
(:meth:`Publisher.hold`): on kubesim and the real API server a lone pod is bound 2-6 ms after the
informer accepted it, so its assumption and its binding go out as one flush."""

MAX_EVENTS_PER_BATCH = 500
MAX_BATCH_BYTES = 512 * 1024
"""Bounds of one feed batch (by estimated size): below NATS's 1 MiB message limit, whatever the pods."""


def _size(event: PendingPodEvent | ClusterEventMsg) -> int:
    """An upper estimate of an event's encoded size: its JSON bytes plus its other fields."""
    if isinstance(event, PendingPodEvent):
        pod = event.pod
        return len(pod.pod) + len(pod.name) + len(pod.namespace) + 512
    return len(event.old or b"") + len(event.new or b"") + len(event.key) + 256


def feed_batches(
    epoch: str, events: Sequence[PendingPodEvent | ClusterEventMsg], *, nominated: bool = False
) -> list[Envelope]:
    """``events`` in order, as few batches as the bounds allow (an event too large for a batch of
    its own still travels alone); on ``P.feed.nominated`` when ``nominated`` (one of them concerns
    the replicas' nominations: :class:`~ksched_informer.feeds.NominationFeed`)."""
    endpoint = FEED_NOMINATED if nominated else FEED_BATCH
    out: list[Envelope] = []
    part: list[PendingPodEvent | ClusterEventMsg] = []
    size = 0
    for event in events:
        grows = _size(event)
        if part and (len(part) == MAX_EVENTS_PER_BATCH or size + grows > MAX_BATCH_BYTES):
            out.append(endpoint.envelope(FeedBatch(epoch=epoch, events=part)))
            part, size = [], 0
        part.append(event)
        size += grows
    if part:
        out.append(endpoint.envelope(FeedBatch(epoch=epoch, events=part)))
    return out


class Publisher:
    """Collects feed events between flushes and publishes them after the snapshot deltas of the
    same changes. ``bus`` is set once connected; ``acting`` says whether this instance may publish."""

    def __init__(
        self, cache: ClusterCache, subjects: Subjects, epoch: str, acting: Callable[[], bool]
    ) -> None:
        self.cache = cache
        self.subjects = subjects
        self.epoch = epoch
        self.acting = acting
        self.bus: Bus | None = None
        self.dirty = asyncio.Event()
        self.urgent = False
        """Set with ``dirty`` when a pod became pending or changed while pending: a scheduler waits."""
        self._lingering: asyncio.Future[None] | None = None
        """What the flush loop awaits while it gathers changes nobody waits for (an urgent one ends it)."""
        self._held: set[str] = set()
        """Pods assumed since the last flush whose binding the watch has not shown yet."""
        self.lock = asyncio.Lock()
        """Held by a flush, and by a bootstrap around its flush and stream position."""
        self.after_flush: Callable[[], Awaitable[None]] | None = None
        """Run at the end of each flush (the ledger's deletes)."""
        self.group_view: Callable[[Pod], PendingPodGroup | None] = lambda _pod: None
        """A pending pod's pod group as the cache sees it (gang scheduling), sent with its events."""
        self._feed: list[PendingPodEvent | ClusterEventMsg] = []
        self.nominations = feeds.NominationFeed()
        self._nominating = False
        """Whether the feed gathered since the last flush concerns nominations."""
        self.last_flush = float("-inf")
        """When the last flush ended (the event loop's clock)."""
        #: ops taken from the cache by a flush and not yet acknowledged by JetStream
        self._publishing = 0
        metrics.PUBLISH_LAG.set_function(lambda: len(self.cache.ops) + self._publishing)

    # --- feed events ---------------------------------------------------------------------------
    def emit_pending(self, action: PendingPodAction, pod: Pod, reason: str = "") -> None:
        """Feed events carry the cache generation that includes their change (monotonic), so the
        queue can tell a scheduler which snapshot generation a pod's newest event is in."""
        event = feeds.pending_event(
            action, pod, self.epoch, self.cache.generation, reason, self.group_view(pod)
        )
        self._feed.append(event)
        if self.nominations.concerns(event):
            self._nominating = True
        if action != PendingPodAction.DELETE:
            self.urgent = True
            if self._lingering is not None:
                _resolve(self._lingering)
        self.dirty.set()

    def emit_events(self, events: Sequence[ClusterEvent], key: str, old: Any, new: Any) -> None:
        if not events:
            return
        generation = self.cache.generation
        self._feed.extend(feeds.cluster_events(events, key, old, new, self.epoch, generation))
        self.dirty.set()

    def hold(self, uid: str) -> None:
        """``uid`` was just assumed: a flush that only has changes nobody waits for (its assumption
        among them) waits until the watch shows it bound (:meth:`release`), a pod becomes pending,
        or the flush loop's ``hold`` has passed (``HOLD_FOR_BINDING`` s by default). So a lone pod
        costs one flush (one delta and one feed batch, their acknowledgements and deliveries) for
        its assumption and its binding, not two.
        Nothing waits for the assumption's publication: the replica that decided has it assumed
        locally, the informer checks other replicas' assumes against it, and the queue's attempt
        ends with it (its lease is not on any pod's path)."""
        self._held.add(uid)

    def release(self, uid: str) -> None:
        """``uid`` is bound, deleted or no longer assumed: once no held pod is left, the flush goes."""
        if uid in self._held:
            self._held.discard(uid)
            if not self._held and self._lingering is not None:
                _resolve(self._lingering)

    # --- flushing --------------------------------------------------------------------------------
    async def flush_loop(self, interval: float, hold: float = HOLD_FOR_BINDING) -> None:
        """Flush whenever something changed. A pod that became pending (or changed while pending) is
        waited for by a scheduler: it goes at once when the last flush ended ``interval`` s ago or
        more, else when that much time has passed since it ended. Other changes (a pod placed or
        gone, a node, an object) wait ``interval`` s for what follows them (the watch's next events
        of the same change: one flush instead of several), or until a pending pod comes; an assumption
        waits longer for its pod's binding, ``hold`` s at most (:meth:`hold`). Under load
        a flush starts at most ``interval`` s after the one before ended, and takes everything that
        arrived meanwhile (its acknowledgements awaited included)."""
        loop = asyncio.get_running_loop()
        while True:
            await self.dirty.wait()  # both flags are cleared by the flush that takes the changes
            if not self.urgent:
                await self._linger(interval)
                if self._held and not self.urgent:
                    await self._linger(max(0.0, hold - interval))
            # one turn of the loop at least: the other events of the watch chunk being read join
            await asyncio.sleep(max(0.0, self.last_flush + interval - loop.time()))
            await self.flush()
            if self.bus is None or not self.acting():
                self.dirty.clear()  # nothing is published: wait for the next change

    async def _linger(self, seconds: float) -> None:
        """Wait ``seconds``, or until an urgent change (a timer and a future: a cancellation always
        gets through, which ``asyncio.timeout`` around an event's wait does not guarantee on 3.11)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(seconds, _resolve, waiter)
        self._lingering = waiter
        try:
            await waiter
        finally:
            timer.cancel()
            self._lingering = None

    async def flush(self) -> None:
        """Publish the cache's pending ops as deltas, then the feed events as batches, in order."""
        if self.bus is None or not self.acting():
            return
        async with self.lock:
            await self.flush_locked()

    async def flush_locked(self) -> None:
        """:meth:`flush` under ``lock``. It takes the ops and feed events before its first await:
        state a caller read just before calling it is exactly what it publishes."""
        assert self.bus is not None
        self.dirty.clear()
        self.urgent = False
        self._held.clear()
        base, generation, ops = self.cache.take_ops()
        self._publishing = len(ops)
        feed, self._feed = self._feed, []
        nominating, self._nominating = self._nominating, False
        metrics.GENERATION.set(generation)
        # both streams' messages are sent, then both acknowledgements awaited: one round trip (and
        # one wake-up for the acks) per flush, not one per stream
        sent = [
            await self.send_in_order(deltas(self.epoch, base, ops)),
            await self.send_in_order(feed_batches(self.epoch, feed, nominated=nominating)),
        ]
        for pending in sent:
            if pending is not None:
                await self.acked_or_again(*pending)
        self._publishing = 0
        if self.after_flush is not None:
            await self.after_flush()
        self.last_flush = asyncio.get_running_loop().time()
        self._update_sizes()

    async def send_in_order(self, messages: list[Envelope]) -> tuple[Envelope, Awaitable[Any]] | None:
        """Send to a stream in order, cheaply: all but the last as core messages in one buffered
        write, the last through JetStream; returns the last and its ack to await (see
        :meth:`acked_or_again`; None when there is nothing to send). The server stores one
        connection's messages in the order sent, so the last ack confirms them all."""
        assert self.bus is not None
        if not messages:
            return None
        for envelope in messages[:-1]:
            await self.bus.publish(envelope.endpoint, envelope.message)
        last = messages[-1]
        try:
            return last, await publish_started(self.bus, last.endpoint, last.message, timeout=5)
        except Exception as exc:
            return last, _failed(exc)

    async def acked_or_again(self, last: Envelope, acked: Awaitable[Any]) -> None:
        """Wait for ``acked``, the ack of ``last``; publish ``last`` again until acknowledged if it
        failed."""
        try:
            await acked
        except Exception as exc:
            log.warning("publishing to %s failed (%s); retrying", last.endpoint.subject(self.subjects), exc)
            await asyncio.sleep(0.05)
            await self.publish_retrying(last.endpoint, last.message)

    async def publish_retrying(
        self,
        endpoint: PublishEndpoint[M],
        message: M,
        msg_id: str = "",
        headers: dict[str, str] | None = None,
    ) -> Any:
        assert self.bus is not None
        delay = 0.05
        while True:
            try:
                return await publish(self.bus, endpoint, message, msg_id=msg_id, headers=headers, timeout=5)
            except Exception as exc:
                log.warning("publishing to %s failed (%s); retrying", endpoint.subject(self.subjects), exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _update_sizes(self) -> None:
        snap = self.cache.snapshot
        metrics.CACHE_SIZE.labels("nodes").set(len(snap.nodes))
        metrics.CACHE_SIZE.labels("pods").set(len(snap.pod_locations))
        metrics.CACHE_SIZE.labels("assumed_pods").set(len(self.cache.assumed))
