"""The queue service on NATS: request/reply handlers for scheduler replicas and the binder, the
informer's feed (bootstrap, then ordered replay), and the periodic flushes. All queue logic is in
:class:`~ksched_queue.core.QueueCore`; this module only moves messages and keeps time.

Subjects (docs/bus.md): ``P.queue.pop`` (PopRequest -> PopReply, long poll), ``P.queue.done``
(DoneRequest -> Ack), ``P.queue.renew`` (LeaseRenewRequest -> LeaseRenewReply), ``P.queue.requeue``
(RequeueRequest -> Ack); consumes ``P.feed.>`` from stream ``P_feed`` after a ``P.cache.pending``
bootstrap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import cast

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from ksched.bus import endpoints, jetstream, streams
from ksched.bus.bootstrap import BootstrapError, fetch_bootstrap
from ksched.bus.connect import Bus
from ksched.bus.feed import FeedVerdict
from ksched.bus.messages import (
    Ack,
    BootstrapReply,
    ClusterEventMsg,
    DoneBatchRequest,
    DoneRequest,
    FeedBatch,
    LeaseRenewReply,
    LeaseRenewRequest,
    PendingPod,
    PendingPodEvent,
    PendingPodsRequest,
    PopReply,
    PopRequest,
    QueueListReply,
    QueueListRequest,
    RequeueRequest,
)
from ksched.bus.rpc import RequestError
from ksched.logcontext import bind, pod_logging, unbind
from ksched.service import gc_pacing
from ksched.service.tasks import TaskGroup
from ksched.tracing.context import TRACEPARENT

from .clock import Clock, SystemClock
from .core import QueueCore
from .metrics import FEED_RESYNCS, LEASES_EXPIRED, REPAIRED_PODS
from .settings import QueueSettings
from .tracing import ENDED_BY

log = logging.getLogger(__name__)

_BOOTSTRAP_FAILURES = (BootstrapError, RequestError, nats.errors.Error, TimeoutError)


class QueueService:
    """Serves one :class:`QueueCore` on ``bus``. ``start()`` subscribes and starts the tasks (in
    ``tasks``: the process's :class:`~ksched_queue.server.QueueServer` shares its group)."""

    def __init__(
        self,
        settings: QueueSettings,
        core: QueueCore,
        bus: Bus,
        *,
        clock: Clock | None = None,
        tasks: TaskGroup | None = None,
    ) -> None:
        self.settings = settings
        self.core = core
        self.bus = bus
        self.clock = clock or SystemClock()
        self.tasks = tasks or TaskGroup()
        self._waiters: list[asyncio.Future[None]] = []
        self._polls: set[asyncio.Task[None]] = set()
        self._resync = asyncio.Event()
        self._feed_sub: JetStreamContext.PushSubscription | None = None
        self._following = False
        self.acting: Callable[[], bool] = lambda: True
        """Whether this instance may hand out pods (False once its leadership has run out)."""

    # --- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        await self.bus.subscribe(endpoints.QUEUE_POP, self._on_pop)
        await self.bus.subscribe(endpoints.QUEUE_DONE, self._on_done)
        await self.bus.subscribe(endpoints.QUEUE_DONE_BATCH, self._on_done_batch)
        await self.bus.subscribe(endpoints.QUEUE_RENEW, self._on_renew)
        await self.bus.subscribe(endpoints.QUEUE_REQUEUE, self._on_requeue)
        await self.bus.subscribe(endpoints.QUEUE_LIST, self._on_list)
        await self.bus.nc.flush()
        self.tasks.spawn("feed", self._feed_loop, restart=True)
        self.tasks.spawn("backoff-flush", self._backoff_flush_loop, restart=True)
        self.tasks.spawn("unschedulable-flush", self._unschedulable_flush_loop, restart=True)
        self.tasks.spawn("lease-reaper", self._lease_loop, restart=True)
        if every := gc_pacing.interval():
            self.tasks.spawn("gc", lambda: gc_pacing.full_collections(every), restart=True)
        self.tasks.spawn("repair", self._repair_loop, restart=True, pause=self.settings.repair_interval)

    async def stop(self) -> None:
        await self.tasks.cancel_all()
        for task in list(self._polls):
            task.cancel()
        if self._polls:
            await asyncio.wait(list(self._polls), timeout=2.0)
        await self._unfollow()
        await self.bus.unsubscribe_all()

    @property
    def ready(self) -> tuple[bool, str]:
        if not self.bus.ready:
            return False, "not connected to NATS"
        if not self.core.bootstrapped:
            return False, "waiting for the informer's pending pods (bootstrap)"
        return True, ""

    # --- scheduler replicas and the binder -------------------------------------------------------
    async def _on_pop(self, request: PopRequest, raw: Msg) -> PopReply | None:
        pods = self.core.pop(request) if self.core.bootstrapped and self.acting() else []
        if pods or request.wait_seconds <= 0 or not raw.reply:
            return PopReply(pods=pods)
        # long poll without blocking this subscription (nats-py runs its callbacks one at a time)
        task = asyncio.create_task(self._long_poll(request, raw.reply), name="pop-long-poll")
        self._polls.add(task)
        task.add_done_callback(self._polls.discard)
        return None

    async def _long_poll(self, request: PopRequest, reply_to: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(request.wait_seconds, self.settings.max_pop_wait)
        pods = []
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(remaining):
                    await asyncio.shield(waiter)
            except TimeoutError:
                pass
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            if self.core.bootstrapped and self.acting():
                pods = self.core.pop(request)
                if pods:
                    break
        try:
            await self.bus.reply(endpoints.QUEUE_POP, reply_to, PopReply(pods=pods))
        except Exception as exc:  # the leases run out and the pods come back
            log.warning(
                "pop: could not reply to %s (%d pods leased): %s", request.scheduler_id, len(pods), exc
            )

    def _wake(self) -> None:
        """Let long polls retry after pods may have become poppable."""
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _on_done(self, request: DoneRequest, raw: Msg) -> Ack:
        pod = f"{request.namespace}/{request.name}"
        token = ENDED_BY.set((raw.headers or {}).get(TRACEPARENT, ""))
        try:
            with pod_logging(pod, request.node_name, trace_id=request.trace_id):
                ack = self.core.done(request)
        finally:
            ENDED_BY.reset(token)
        self._wake()
        return ack

    async def _on_done_batch(self, request: DoneBatchRequest, raw: Msg) -> Ack:
        """Apply each ``DoneRequest`` in order; one Ack: the first failure's, else ok."""
        first_failure: Ack | None = None
        for item in request.items:
            token = ENDED_BY.set(item.traceparent)
            try:
                with pod_logging(f"{item.namespace}/{item.name}", item.node_name, trace_id=item.trace_id):
                    ack = self.core.done(item)
            finally:
                ENDED_BY.reset(token)
            if not ack.ok and first_failure is None:
                first_failure = ack
        self._wake()
        return first_failure or Ack()

    async def _on_renew(self, request: LeaseRenewRequest, raw: Msg) -> LeaseRenewReply:
        return self.core.renew(request)

    async def _on_requeue(self, request: RequeueRequest, raw: Msg) -> Ack:
        token = ENDED_BY.set((raw.headers or {}).get(TRACEPARENT, ""))
        try:
            with pod_logging(f"{request.namespace}/{request.name}", trace_id=request.trace_id):
                ack = self.core.requeue(request)
        finally:
            ENDED_BY.reset(token)
        self._wake()
        return ack

    async def _on_list(self, request: QueueListRequest, raw: Msg) -> QueueListReply:
        return self.core.listing(request)

    # --- informer feed ---------------------------------------------------------------------------
    async def _feed_loop(self) -> None:
        """Bootstrap from the informer's pending list, follow the feed; again whenever it breaks."""
        failures = 0
        while True:
            self._resync.clear()
            try:
                await self._bootstrap_and_follow()
                failures = 0
            except _BOOTSTRAP_FAILURES as exc:
                failures += 1
                if failures == 1 or failures % 30 == 0:
                    log.warning("queue: bootstrap from the informer failed (%d in a row): %s", failures, exc)
                await self._unfollow()
                await asyncio.sleep(self.settings.bootstrap_retry)
                continue
            await self._resync.wait()

    async def _fetch_pending(self) -> tuple[BootstrapReply, list[PendingPod]]:
        """The informer's pending pods of this queue's profiles, and the stream sequence they are at."""
        reply, items = await fetch_bootstrap(
            self.bus,
            endpoints.PENDING_BOOTSTRAP,
            lambda inbox: PendingPodsRequest(
                requester=self.settings.common.identity,
                deliver=inbox,
                scheduler_names=self.settings.profile_names,
                device_classes=self.core.device_classes is not None,
            ),
            PendingPod,
            timeout=self.settings.bootstrap_timeout,
        )
        return reply, cast(list[PendingPod], items)

    async def _repair_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.repair_interval)
            if self.core.bootstrapped and self._following and self.acting():
                try:
                    await self.repair()
                except _BOOTSTRAP_FAILURES as exc:  # the informer is away: the next round retries
                    log.info("queue: repair skipped, the informer's pending pods are unavailable: %s", exc)

    async def repair(self, catch_up: float = 10.0) -> int | None:
        """The safety net: compare the queue with the informer's pending pods and add back any pod
        the queue lost (logged, counted in ``ksched_queue_repaired_pods_total``). Returns how many,
        or None when the comparison could not be made this time (the feed did not catch up with
        the list within ``catch_up`` seconds, or the informer changed)."""
        self.core.begin_repair()
        reply, items = await self._fetch_pending()
        deadline = time.monotonic() + catch_up
        while self.core.cursor.stream_seq < reply.stream_seq and time.monotonic() < deadline:
            if self.core.cursor.epoch != reply.epoch:
                break
            await asyncio.sleep(0.05)
        repaired = self.core.repair(reply.epoch, reply.stream_seq, reply.generation, items)
        if repaired is None:
            return None
        for pending in repaired:
            log.warning(
                "queue: pod %s/%s (uid %s) is pending in the informer but the queue had lost it; added "
                "back (safety net, ksched_queue_repaired_pods_total)",
                pending.namespace,
                pending.name,
                pending.uid,
            )
        if repaired:
            REPAIRED_PODS.inc(len(repaired))
            self._wake()
        return len(repaired)

    async def _bootstrap_and_follow(self) -> None:
        await self._unfollow()
        bus = self.bus
        started = time.monotonic()
        reply, items = await self._fetch_pending()
        report = self.core.rebuild(
            reply.epoch, reply.generation, reply.stream_seq, items, reply.device_classes
        )
        FEED_RESYNCS.inc()
        self._wake()
        await self._ensure_feed_stream()
        self._following = True
        self._feed_sub = await jetstream.subscribe_ordered(
            bus,
            endpoints.FEED,
            self._on_feed,
            stream=bus.subjects.feed_stream,
            start_seq=reply.stream_seq + 1,
        )
        log.info(
            "queue: rebuilt from the informer's pending pods (epoch %s, generation %d, stream seq %d): "
            "%d added, %d updated, %d dropped, %d skipped in %.3f s",
            reply.epoch,
            reply.generation,
            reply.stream_seq,
            report.added,
            report.updated,
            report.dropped,
            report.skipped,
            time.monotonic() - started,
        )

    async def _ensure_feed_stream(self) -> None:
        """The informer creates ``P_feed``; create it (with the shared defaults) if it has not yet."""
        try:
            await self.bus.js.stream_info(self.bus.subjects.feed_stream)
        except NotFoundError:
            await jetstream.ensure_stream(self.bus, streams.feed_stream(self.bus.subjects))

    async def _unfollow(self) -> None:
        self._following = False
        sub, self._feed_sub = self._feed_sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _on_feed(self, message: FeedBatch | PendingPodEvent | ClusterEventMsg, raw: Msg) -> None:
        if not self._following:
            return
        meta = raw.metadata
        verdict = self.core.cursor.check(message.epoch, meta.sequence.stream)
        if verdict == FeedVerdict.SKIP:
            return
        if verdict == FeedVerdict.RESYNC:
            log.warning(
                "queue: feed broke at stream seq %d (expected %d, epoch %s -> %s); rebuilding",
                meta.sequence.stream,
                self.core.cursor.stream_seq + 1,
                self.core.cursor.epoch,
                message.epoch,
            )
            self._following = False
            self._resync.set()
            return
        for event in message.events if isinstance(message, FeedBatch) else (message,):
            if isinstance(event, PendingPodEvent):
                pod = event.pod
                token = bind(f"{pod.namespace}/{pod.name}", "", pod.scheduler_name)
                try:
                    self.core.apply_pending(event)
                finally:
                    unbind(token)
            else:
                self.core.apply_cluster_event(event)
        if raw.subject == self.bus.subjects.feed_nominated:
            self.core.nominated_seq = meta.sequence.stream
        self._wake()

    # --- periodic work -------------------------------------------------------------------------------
    async def _backoff_flush_loop(self) -> None:
        interval = self.settings.backoff_flush_interval
        now = self.clock.now()
        await asyncio.sleep(interval - (now % interval))  # align with the backoff windows, as upstream
        while True:
            moved = self.core.queue.flush_backoff_completed()
            if self.core.queue.preemptions:
                moved += self.core.queue.expire_preemptions()
            if moved:
                self._wake()
            now = self.clock.now()
            await asyncio.sleep(interval - (now % interval) or interval)

    async def _unschedulable_flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.unschedulable_flush_interval)
            if self.core.queue.flush_unschedulable_leftover():
                self._wake()

    async def _lease_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_check_interval)
            expired = self.core.expire_leases()
            if expired:
                LEASES_EXPIRED.inc(len(expired))
                self._wake()
