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
import signal
import time
from collections.abc import Callable
from typing import cast

import nats.errors
from kubernetes_asyncio.client import ApiClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from ksched.bus import jetstream, streams
from ksched.bus.bootstrap import BootstrapError, fetch_bootstrap
from ksched.bus.codec import Message, encode
from ksched.bus.connect import Bus, connect
from ksched.bus.feed import FeedVerdict
from ksched.bus.messages import (
    Ack,
    BootstrapReply,
    ClusterEventMsg,
    DoneBatchRequest,
    DoneRequest,
    LeaseRenewReply,
    LeaseRenewRequest,
    PendingPod,
    PendingPodEvent,
    PendingPodsRequest,
    PopReply,
    PopRequest,
    RequeueRequest,
)
from ksched.bus.rpc import RequestError
from ksched.bus.subjects import Subjects
from ksched.logcontext import bind, pod_logging, unbind
from ksched.service import gc_pacing
from ksched.service.http import HealthServer
from ksched.service.kube import api_client
from ksched.service.leader import LeaseElector, exit_on_lost_leadership
from ksched.service.tasks import TaskGroup
from ksched.tracing import Tracer

from .clock import Clock, SystemClock
from .core import QueueCore
from .metrics import FEED_RESYNCS, LEASES_EXPIRED, REPAIRED_PODS, bind_gauges, bind_queue_metrics
from .settings import QueueSettings, build_core
from .tracing import QueueTracing

log = logging.getLogger(__name__)

FEED_TYPES = PendingPodEvent | ClusterEventMsg
_BOOTSTRAP_FAILURES = (BootstrapError, RequestError, nats.errors.Error, TimeoutError)


class QueueService:
    """Serves one :class:`QueueCore` on ``bus``. ``start()`` subscribes and starts the tasks."""

    def __init__(
        self, settings: QueueSettings, core: QueueCore, bus: Bus, *, clock: Clock | None = None
    ) -> None:
        self.settings = settings
        self.core = core
        self.bus = bus
        self.clock = clock or SystemClock()
        self.tasks = TaskGroup()
        self._waiters: list[asyncio.Future[None]] = []
        self._polls: set[asyncio.Task[None]] = set()
        self._resync = asyncio.Event()
        self._feed_sub: JetStreamContext.PushSubscription | None = None
        self._following = False
        self.resyncs = 0
        self.acting: Callable[[], bool] = lambda: True
        """Whether this instance may hand out pods (False once its leadership has run out)."""

    # --- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        subjects = self.bus.subjects
        await self.bus.subscribe(subjects.queue_pop, PopRequest, self._on_pop)
        await self.bus.subscribe(subjects.queue_done, DoneRequest, self._on_done)
        await self.bus.subscribe(subjects.queue_done_batch, DoneBatchRequest, self._on_done_batch)
        await self.bus.subscribe(subjects.queue_renew, LeaseRenewRequest, self._on_renew)
        await self.bus.subscribe(subjects.queue_requeue, RequeueRequest, self._on_requeue)
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
            await self.bus.nc.publish(reply_to, encode(PopReply(pods=pods)))
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
        with pod_logging(pod, request.node_name, trace_id=request.trace_id):
            ack = self.core.done(request)
        self._wake()
        return ack

    async def _on_done_batch(self, request: DoneBatchRequest, raw: Msg) -> Ack:
        """Apply each ``DoneRequest`` in order; one Ack: the first failure's, else ok."""
        first_failure: Ack | None = None
        for item in request.items:
            with pod_logging(f"{item.namespace}/{item.name}", item.node_name, trace_id=item.trace_id):
                ack = self.core.done(item)
            if not ack.ok and first_failure is None:
                first_failure = ack
        self._wake()
        return first_failure or Ack()

    async def _on_renew(self, request: LeaseRenewRequest, raw: Msg) -> LeaseRenewReply:
        return self.core.renew(request)

    async def _on_requeue(self, request: RequeueRequest, raw: Msg) -> Ack:
        with pod_logging(f"{request.namespace}/{request.name}", trace_id=request.trace_id):
            ack = self.core.requeue(request)
        self._wake()
        return ack

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
            self.bus.subjects.pending_bootstrap,
            lambda inbox: PendingPodsRequest(
                requester=self.settings.identity, deliver=inbox, scheduler_names=self.settings.profile_names
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
        report = self.core.rebuild(reply.epoch, reply.generation, reply.stream_seq, items)
        self.resyncs += 1
        FEED_RESYNCS.inc()
        self._wake()
        await self._ensure_feed_stream()
        self._following = True
        self._feed_sub = await jetstream.subscribe_ordered(
            bus,
            bus.subjects.feed_all,
            cast("type[Message]", FEED_TYPES),
            self._on_feed,
            stream=bus.subjects.feed_stream,
            start_seq=reply.stream_seq + 1,
            kind="feed",
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

    async def _on_feed(self, message: Message, raw: Msg) -> None:
        if not self._following:
            return
        meta = raw.metadata
        assert isinstance(message, PendingPodEvent | ClusterEventMsg)
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
        if isinstance(message, PendingPodEvent):
            pod = message.pod
            token = bind(f"{pod.namespace}/{pod.name}", "", pod.scheduler_name)
            try:
                self.core.apply_pending(message)
            finally:
                unbind(token)
        else:
            self.core.apply_cluster_event(message)
        self._wake()

    # --- periodic work -------------------------------------------------------------------------------
    async def _backoff_flush_loop(self) -> None:
        interval = self.settings.backoff_flush_interval
        now = self.clock.now()
        await asyncio.sleep(interval - (now % interval))  # align with the backoff windows, as upstream
        while True:
            if self.core.queue.flush_backoff_completed():
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


async def run(
    settings: QueueSettings,
    *,
    stop: asyncio.Event | None = None,
    clock: Clock | None = None,
    started: asyncio.Future[int] | None = None,
    on_lost_leadership: Callable[[], None] | None = None,
) -> int:
    """Run the queue service until ``stop`` is set (or SIGINT/SIGTERM); 1 if a task failed fatally.
    ``started`` receives the HTTP port once the service is subscribed, or waits as a standby (useful
    with port 0). With ``settings.election`` the service serves only while it holds the Lease; losing
    it calls ``on_lost_leadership`` (default: exit the process at once, see docs/ha.md)."""
    clock = clock or SystemClock()
    core = build_core(settings, clock)
    tracer = Tracer("queue", settings.identity)
    QueueTracing(tracer, core.queue).install(core)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    bus = await connect(
        settings.nats,
        name=settings.identity,
        subjects=Subjects(settings.subject_prefix),
        initial_timeout=settings.nats_initial_timeout,
        jetstream_replicas=settings.jetstream_replicas,
        **settings.nats_credentials.connect_kwargs(),
    )
    tracer.start(bus)
    service = QueueService(settings, core, bus, clock=clock)
    health = HealthServer(
        settings.http_host, settings.http_port, debug=core.debug_state, token=settings.http_token
    )
    health.ready_checks["nats+bootstrap"] = lambda: service.ready
    bind_gauges(core.queue.counts, lambda: len(core.leases))
    bind_queue_metrics(core)
    election = _Election(settings, service, health, on_lost_leadership)
    port = await health.start()
    try:
        if not await election.lead_or_stop(stop, started, port):
            return 0
        await service.start()
        log.info(
            "queue %s serving profiles %s on %s (prefix %s), metrics on %s:%d",
            settings.identity,
            ", ".join(settings.profile_names),
            settings.nats,
            settings.subject_prefix,
            settings.http_host,
            port,
        )
        if started is not None and not started.done():
            started.set_result(port)
        stopped = asyncio.create_task(stop.wait())
        failed = asyncio.create_task(service.tasks.failed.wait())
        await asyncio.wait({stopped, failed}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stopped, failed):
            task.cancel()
        return 1 if service.tasks.failed.is_set() else 0
    finally:
        election.stopping = True
        await service.stop()
        await election.close()  # stopped serving: now step down and release the Lease
        await tracer.close()
        await bus.close()
        await health.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


class _Election:
    """The queue's leader election: a standby is ready when connected, and serves once it leads."""

    def __init__(
        self,
        settings: QueueSettings,
        service: QueueService,
        health: HealthServer,
        on_lost_leadership: Callable[[], None] | None,
    ) -> None:
        self.settings = settings
        self.service = service
        self.health = health
        self.on_lost_leadership = on_lost_leadership
        self.elector: LeaseElector | None = None
        self.api: ApiClient | None = None
        self.stopping = False
        self._lost = False

    async def lead_or_stop(self, stop: asyncio.Event, started: asyncio.Future[int] | None, port: int) -> bool:
        """Without an election: True at once. Otherwise wait as a standby; False if stopped first."""
        config = self.settings.election
        if config is None:
            return True
        self.api = await api_client(self.settings.kubeconfig, component="ksched-queue")
        elector = LeaseElector(self.api, config, on_stopped_leading=self._stopped_leading)
        self.elector = elector
        service = self.service
        service.acting = lambda: elector.is_leader
        self.health.ready_checks["nats+bootstrap"] = lambda: (
            service.ready if elector.is_leader else (service.bus.ready, "not connected to NATS")
        )
        self.health.ready_checks["leader-election"] = elector.status
        elector.start().add_done_callback(self._election_ended)
        log.info("queue %s: standby, waiting for lease %s", self.settings.identity, elector.lease_ref)
        if started is not None and not started.done():
            started.set_result(port)
        leading = asyncio.create_task(elector.wait_leader())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({leading, stopped}, return_when=asyncio.FIRST_COMPLETED)
        leading.cancel()
        stopped.cancel()
        return elector.is_leader and not stop.is_set()

    def _stopped_leading(self) -> None:
        if self.stopping or self.elector is None or self._lost:
            return
        self._lost = True
        if self.on_lost_leadership is not None:
            self.on_lost_leadership()
        else:
            exit_on_lost_leadership("queue", self.elector)

    def _election_ended(self, task: asyncio.Task[None]) -> None:
        """After losing, the callback already ran; an exception (a bug) counts as losing too."""
        if not self.stopping and not task.cancelled() and task.exception() is not None:
            log.error("queue: leader election failed: %r", task.exception())
            self._stopped_leading()

    async def close(self) -> None:
        if self.elector is not None:
            await self.elector.stop()
        if self.api is not None:
            await self.api.close()
