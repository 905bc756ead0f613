"""The binder service: parallel workers take accepted placements from the durable JetStream work
queue and run WaitOnPermit, PreBind, Bind and PostBind; a placement is acknowledged only when it
is finished, its Scheduled event included, so a crashed binder loses nothing: neither a binding nor
its event. A failure forgets the assumption, asks the deciding replica to Unreserve, and requeues
the pod with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from typing import Any

import msgspec
from nats.aio.msg import Msg

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import Pod
from ksched.api.kinds import POD
from ksched.api.scheduling import REASON_SCHEDULER_ERROR
from ksched.bus import endpoints
from ksched.bus.connect import Bus, connect
from ksched.bus.jetstream import Delivery, PullConsumer, TypedKV, ensure_streams
from ksched.bus.messages import (
    EndedPlacement,
    ForgetRequest,
    PermitDecision,
    Placement,
    PlacementBatch,
    RequeueRequest,
    UnreserveRequest,
)
from ksched.bus.streams import ENDED_PLACEMENTS, ENDED_PLACEMENTS_TTL, placement_consumer
from ksched.bus.subjects import Subjects
from ksched.bus.tokens import encode_token
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.config.profile import build_frameworks
from ksched.config.types import KubeSchedulerConfiguration
from ksched.extenders import HTTPExtenders
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.record import CycleRecord
from ksched.framework.results import chosen_node_failure
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.logcontext import pod_logging
from ksched.metrics.plugin_metrics import CycleSampler, observe_plugin, sample_percent
from ksched.reporting.reporter import PodRef, Reporter
from ksched.reporting.result_writer import ResultWriter
from ksched.reporting.simulator_results import with_binding
from ksched.service import gc_pacing
from ksched.service.faults import fault_point
from ksched.service.http import service_health_server
from ksched.service.options import CommonOptions
from ksched.service.shutdown import stop_replica
from ksched.service.tasks import TaskGroup
from ksched.tracing import Phase
from ksched.tracing.context import TRACEPARENT
from ksched.tracing.export import service_tracer
from ksched_binder import metrics
from ksched_binder.options import BinderOptions

log = logging.getLogger(__name__)

API_CONNECTIONS = 16
"""Keep-alive connections to the API server for the bindings and events of a binder with the default
32 workers (the workers and the events reporter share them); one per two workers with more. Each
costs a TLS handshake on both sides; with 64 a binder opened all 64 at the first burst and bound
10 % fewer pods per second in ``bench e2e`` than with 16 (docs/benchmarks-history.md). client-go
multiplexes kube-scheduler's requests on one HTTP/2 connection."""
EVENT_WRITE_TIMEOUT = 20.0
"""Seconds an acknowledgement waits for the Scheduled events of its placements; past it (or when a
write failed) the placement is nak'ed and comes again, and the redelivery writes the event."""
EVENT_DELIVERIES = 5
"""Deliveries of a bound placement after which a Scheduled event that still cannot be written is
given up (the placement acknowledged, the event logged as lost)."""
FORGET_RETRY_SECONDS = 120.0
"""How long a forget no leading informer answered is sent again (0.5 s apart, doubling up to 5 s)."""
ENDED_PUTS = 5
"""Tries to store a failed placement's record (0.1 s apart, doubling) before its placement is kept
and tried again instead of forgotten."""
REFUSED_BACKOFF_MAX = 60.0
"""The longest delay (seconds) before a placement comes again whose pod read the API server refuses
for good (403: the binder may not ``get`` pods; another 4xx): 1 s, doubling per delivery up to it."""
REFUSED_LOG_EVERY = 60.0
"""Seconds at least between two error logs of a pod read refused for good (per HTTP code)."""
ENDED_KEPT = 100_000
"""Placement ids of failed bindings a binder remembers (a redelivery of their message comes within
seconds: its nak's delay, or the ack wait)."""
MID_BATCH = "binder-mid-batch"
"""Fault point (:mod:`ksched.service.faults`): once a pod of a batch is bound, the batch
not yet acknowledged."""
BEFORE_PREBIND = "before-prebind"
"""Fault point (:mod:`ksched.service.faults`) per pod: a binder about to run PreBind for the pod
(``stop``: a test kills it between Reserve and PreBind)."""


def api_connections(workers: int) -> int:
    """The most connections a binder with ``workers`` workers keeps to the API server."""
    return max(API_CONNECTIONS, workers // 2)


async def binder_api(common: CommonOptions, workers: int) -> Client:
    """The binder's API client, with at most :func:`api_connections` connections."""
    return await api_client(
        common.kubeconfig,
        qps_connections=api_connections(workers),
        component="ksched-binder",
        master=common.master,
    )


def already_bound_to(status: Status, node: str) -> bool:
    """A 409 "already assigned to node X" for our own node: a redelivered placement, i.e. success."""
    text = status.message
    return "is already assigned to node" in text and f'node "{node}"' in text


def _event_ns(p: Placement) -> int | None:
    """The time that names a placement's Scheduled event: when the informer accepted it, the same
    in every delivery of it (None for a placement without one)."""
    return int(p.assumed_at * 1e9) if p.assumed_at else None


class NotEnded(Exception):
    """A failed placement's record could not be stored, or a redelivered placement's pod could not be
    read: its assumption is not forgotten (the placement is tried again; ``refused``: the API server
    refused the read for good, so with a growing delay, see :func:`refused_backoff`)."""

    def __init__(self, placement_id: str, refused: bool = False) -> None:
        super().__init__(placement_id)
        self.refused = refused


class BoundBefore(Exception):
    """A redelivered placement whose binding cycle failed finds its pod bound to its node: an earlier
    delivery bound it, and this one owes only its Scheduled event."""


def refused_for_good(code: int) -> bool:
    """An answer to a GET that the same request will get again (403 without the permission, 401 with
    credentials the server refuses, another 4xx), not a transient one (404 is an answer; 408, 429)."""
    return 400 <= code < 500 and code not in (404, 408, 429)


def refused_backoff(num_delivered: int) -> float:
    """The delay before a placement whose pod read was refused for good comes again: 1 s on its first
    delivery, doubling per delivery, at most :data:`REFUSED_BACKOFF_MAX`."""
    return float(min(REFUSED_BACKOFF_MAX, 2.0 ** min(max(num_delivered - 1, 0), 16)))


def _status_message(body: bytes) -> str:
    """The ``message`` of an API error's Status body (the body itself if it is none)."""
    try:
        message = msgspec.json.decode(body).get("message")
    except (msgspec.DecodeError, AttributeError):
        message = None
    text = message if isinstance(message, str) else body.decode(errors="replace")
    return text[:300]


def pod_gone(status: Status) -> bool:
    err = status.error
    cause = getattr(err, "__cause__", None)  # a Bind plugin's error, wrapped as upstream's
    return 404 in (getattr(err, "code", 0), getattr(cause, "code", 0)) or "not found" in status.message


class BinderService:
    def __init__(self, options: BinderOptions, config: KubeSchedulerConfiguration) -> None:
        self.options = options
        self.config = config
        common = options.common
        self.subjects = Subjects(common.subject_prefix)
        self.tasks = TaskGroup()
        self.tracer = service_tracer("binder", common)
        self.health = service_health_server(common, "ksched-binder", config, self.debug_state)
        self.bus: Bus | None = None
        self.api: Client | None = None
        self.reporter: Reporter | None = None
        self.results: ResultWriter | None = None
        self.frameworks: dict[str, Framework] = {}
        #: an extender with a bindVerb binds the pods it is interested in instead of the bind plugins
        self.extenders = HTTPExtenders(config.extenders)
        #: whether a binding cycle records plugin durations (sampled here, as the scheduler samples its
        #: cycles: the placement does not carry the scheduling cycle's draw)
        self.sample_plugin_metrics = CycleSampler(sample_percent())
        self.consumer: PullConsumer[Placement | PlacementBatch] | None = None
        self._permits: dict[str, asyncio.Queue[PermitDecision]] = {}
        #: placement id -> the ``traceparent`` its message carried (the informer's span)
        self._parents: dict[str, str] = {}
        #: placement id -> its Scheduled event being written (handed from bind() to handle())
        self._events: dict[str, asyncio.Future[bool]] = {}
        #: placement id -> 'failed' or 'gone': placements whose binding this binder ended without
        #: binding (their assumption forgotten), so a redelivery of their message (a batch nak'ed
        #: for another placement's unwritten event) does not bind them after all (the oldest go
        #: first past ENDED_KEPT)
        self._ended: OrderedDict[str, str] = OrderedDict()
        #: the binders' shared records of failed placements (bucket ``P_ended``): written before an
        #: assumption is forgotten, read when a message comes again (to any binder)
        self.ended_kv: TypedKV[EndedPlacement] | None = None
        #: placement ids of a message delivered again whose record could not be read
        self._unknown: set[str] = set()
        #: placement ids of messages delivered before (redelivered, or published again), being bound
        self._redelivered: set[str] = set()
        #: HTTP code -> when a pod read refused with it was last logged as an error
        self._refusal_logged: dict[int, float] = {}
        self._draining = False
        self.busy = 0
        metrics.BUSY_WORKERS.set_function(lambda: self.busy)  # the last binder of a process wins

    async def start(self) -> None:
        common = self.options.common
        port = await self.health.start()
        log.info("binder %s: health and metrics on http://%s:%d", common.identity, common.http_host, port)
        self.health.live_checks["tasks"] = lambda: (not self.tasks.failed.is_set(), str(self.tasks.failure))
        self.health.ready_checks["nats"] = lambda: (self.bus is not None and self.bus.ready, "not connected")
        self.bus = await connect(
            common.nats,
            name=f"binder:{common.identity}",
            subjects=self.subjects,
            jetstream_replicas=common.jetstream_replicas,
            **common.nats_credentials.connect_kwargs(),
        )
        await ensure_streams(self.bus)
        self.ended_kv = await TypedKV.open(
            self.bus, ENDED_PLACEMENTS, EndedPlacement, ttl=ENDED_PLACEMENTS_TTL
        )
        self.tracer.start(self.bus)
        self.use_api(await binder_api(common, self.options.workers))
        self.consumer = await PullConsumer.create(
            self.bus,
            endpoints.PLACEMENTS,
            stream=self.subjects.placement_stream,
            config=placement_consumer(self.subjects, ack_wait=self.options.ack_wait),
        )
        await self.bus.subscribe(endpoints.PERMIT.any, self.on_permit)
        self._work: asyncio.Queue[Delivery[Placement | PlacementBatch]] = asyncio.Queue(
            maxsize=self.options.workers
        )
        self.tasks.spawn("fetch", self._fetch_loop, restart=True)
        for i in range(self.options.workers):
            self.tasks.spawn(f"worker-{i}", self._worker, restart=True)
        self.tasks.spawn("depth", self._depth_loop, restart=True)
        if every := gc_pacing.interval():
            self.tasks.spawn("gc", lambda: gc_pacing.full_collections(every), restart=True)

    def use_api(self, api: Client) -> None:
        """Bind through ``api``: the profiles' frameworks (their PreBind and Bind plugins write with
        it), with the extenders, and the events reporter (also what the in-process harness runs)."""
        self.api = api
        self.reporter = Reporter(api, self.tasks)
        self.results = ResultWriter(api)
        self.frameworks = build_frameworks(
            self.config, Snapshot(), client=api, gates=self.options.common.feature_gates
        )
        for fw in self.frameworks.values():
            fw.extenders = self.extenders.extenders
            fw.observe_plugin = observe_plugin

    async def stop(self) -> None:
        """Graceful: stop taking placements, finish those in hand, then disconnect."""
        self._draining = True
        for _ in range(100):
            if self.busy == 0:
                break
            await asyncio.sleep(0.05)
        await stop_replica("binder", self)

    async def _depth_loop(self) -> None:
        while True:
            await asyncio.sleep(2)
            if self.consumer is not None:
                with contextlib.suppress(Exception):
                    metrics.QUEUE_DEPTH.set(await self.consumer.pending())

    async def _fetch_loop(self) -> None:
        """The only caller of fetch (a pull subscription is not safe for concurrent fetches)."""
        assert self.consumer is not None
        while not self._draining:
            free = self._work.maxsize - self._work.qsize()
            if free <= 0:
                await asyncio.sleep(0.005)
                continue
            for delivery in await self.consumer.fetch(batch=free, timeout=1.0):
                await self._work.put(delivery)

    async def _worker(self) -> None:
        while True:
            if self.reporter is not None:  # the events of earlier bindings first, within a bound
                await self.reporter.room()
            delivery = await self._work.get()
            if self._draining:
                await delivery.nak()
                continue
            self.busy += 1
            try:
                await self.handle(delivery)
            finally:
                self.busy -= 1

    async def handle(self, delivery: Delivery[Placement | PlacementBatch]) -> None:
        """Bind the placements of one work-queue message (a ``Placement``, or a ``PlacementBatch``
        whose placements are bound in parallel), then acknowledge it once; nak it (all of it comes
        again: binding is idempotent) if one asks for a retry."""
        message = delivery.message
        placements = message.placements if isinstance(message, PlacementBatch) else [message]
        keepalive = asyncio.create_task(self._keep_alive(delivery))
        parent = (delivery.raw.headers or {}).get(TRACEPARENT, "") if self.tracer.spans is not None else ""
        if parent:  # the informer's assume_check span of each placement (a batch's header: the first's)
            for p in placements:
                self._parents[p.placement_id] = (
                    parent
                    if len(placements) == 1
                    else self.tracer.traceparent(p.trace_id, Phase.ASSUME_CHECK)
                )
        events: list[asyncio.Future[bool]] = []
        try:
            if self.ended_kv is not None and delivery.seen_before:
                self._redelivered.update(p.placement_id for p in placements)
                await self._ended_elsewhere(self.ended_kv, placements)
            if len(placements) == 1:
                results = [await self._handle_one(placements[0])]
            else:
                results = await asyncio.gather(*(self._handle_one(p, in_batch=True) for p in placements))
        except BaseException:
            keepalive.cancel()
            raise
        finally:
            for p in placements:
                self._redelivered.discard(p.placement_id)
                self._parents.pop(p.placement_id, None)
                if (written := self._events.pop(p.placement_id, None)) is not None:
                    events.append(written)
        if "retry" in results or "refused" in results:
            keepalive.cancel()
            await delivery.nak(delay=refused_backoff(delivery.num_delivered) if "refused" in results else 1.0)
            return
        if not events or all(e.done() and e.result() for e in events):
            keepalive.cancel()
            await delivery.ack()
            return
        # The acknowledgement waits for the Scheduled events (a binder killed meanwhile leaves the
        # placement unacknowledged: whoever takes it over finds the pod bound and writes the event);
        # the worker goes on, its next placement waiting for room in the reporter's backlog.
        self.tasks.job("ack-after-events", self._ack_after_events(delivery, events, keepalive))

    async def _ended_elsewhere(self, kv: TypedKV[EndedPlacement], placements: list[Placement]) -> None:
        """A message delivered again, or published again by an informer leader (the copy of a
        restored placement is a new message past the stream's duplicate window, its first delivery
        possibly after the binding failed): note the placements whose binding failed at any binder (their
        records in ``P_ended``), so that none of them is bound now. A record that cannot be read
        leaves its placement unknown: it is tried again later ("retry"), not bound."""
        unknown = [p for p in placements if p.placement_id not in self._ended]

        async def read(p: Placement) -> None:
            try:
                record = await kv.get(encode_token(p.placement_id))
            except Exception as exc:
                log.warning("record of placement %s not read (%r): not bound now", p.placement_id, exc)
                self._unknown.add(p.placement_id)
                return
            if record is not None:
                self._remember_ended(p.placement_id, "failed")

        await asyncio.gather(*(read(p) for p in unknown))

    def _remember_ended(self, placement_id: str, result: str) -> None:
        self._ended[placement_id] = result
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)

    async def _bound_before(self, p: Placement, binding: bool = False) -> None:
        """A redelivered placement's binding cycle failed (Permit, PreBind, or a Binding the API
        server refused while restarting): if its pod is bound to its node already, an earlier
        delivery bound it and died before acknowledging, so it is no failure (:class:`BoundBefore`:
        nothing undone, its Scheduled event written); a pod that cannot be read raises
        :class:`NotEnded`. Nothing for a first delivery. The pod is read by a GET (deploy/base/rbac.yaml
        grants the binder ``get`` on pods, not ``list``, as kube-scheduler's role grants ``get``)."""
        if (p.placement_id not in self._redelivered and not binding) or self.api is None:
            return
        try:
            code, body = await self.api.request("GET", POD.object_path(p.namespace, p.name))
        except Exception as exc:
            metrics.POD_READS_FAILED.labels("error").inc()
            raise NotEnded(p.placement_id) from exc
        if code == 404:
            return  # gone: not bound by an earlier delivery, the failure stands
        if code != 200:
            metrics.POD_READS_FAILED.labels(str(code)).inc()
            if refused_for_good(code):
                self._log_refused_read(p, code, body)
                raise NotEnded(p.placement_id, refused=True)
            raise NotEnded(p.placement_id)
        try:
            pod = msgspec.json.decode(body, type=Pod)
        except DECODE_ERRORS as exc:
            raise NotEnded(p.placement_id) from exc
        if pod.metadata.uid == p.pod_uid and pod.spec.node_name == p.node_name:
            raise BoundBefore(p.placement_id)

    def _log_refused_read(self, p: Placement, code: int, body: bytes) -> None:
        """An error log (at most once per :data:`REFUSED_LOG_EVERY` s and code) naming what the API
        server refused: the pod, the verb, and the permission the binder's identity needs."""
        now = time.monotonic()
        if now - self._refusal_logged.get(code, float("-inf")) < REFUSED_LOG_EVERY:
            log.debug(
                "pod %s/%s not read (HTTP %d): placement %s kept", p.namespace, p.name, code, p.placement_id
            )
            return
        self._refusal_logged[code] = now
        if code == 403:
            need = (
                f'permission to "get" "pods" (API group "") in namespace "{p.namespace}" '
                "(deploy/base/rbac.yaml grants it to ServiceAccount ksched-binder)"
            )
        else:
            need = "credentials the API server accepts" if code == 401 else "a read the API server answers"
        log.error(
            "binder cannot read pod %s/%s: GET pods/%s answered HTTP %d (%s). Its placement %s may have "
            "been bound by an earlier delivery, so it is neither bound again nor forgotten: it is kept "
            "and tried again, %.0f s apart at most, until the read succeeds. The binder needs %s. "
            "(Logged at most every %.0f s; ksched_binder_pod_reads_failed_total counts every failure.)",
            p.namespace,
            p.name,
            p.name,
            code,
            _status_message(body),
            p.placement_id,
            REFUSED_BACKOFF_MAX,
            need,
            REFUSED_LOG_EVERY,
        )

    def _report_scheduled(self, p: Placement) -> None:
        """Write ``p``'s Scheduled event (named by the placement) and hold its acknowledgement for it."""
        if self.reporter is not None:
            ref = PodRef(p.namespace, p.name, p.pod_uid)
            written = self.reporter.scheduled(ref, p.node_name, _event_ns(p), controller=p.profile)
            self._event_written(p, written)

    async def _record_ended(self, p: Placement, reason: str) -> None:
        """Store that ``p``'s binding failed before its assumption is forgotten (the informer may then
        place the pod, or others on that node, anew), so that no binder binds it when its message
        comes again (a batch nak'ed for another placement's event, a binder killed before its ack).
        A put whose acknowledgement does not come may be stored: it is sent again; raises
        :class:`NotEnded` if it cannot be stored within a few tries."""
        if self.ended_kv is None:  # no bus (the in-process harness): this binder's memory only
            return
        record = EndedPlacement(
            placement_id=p.placement_id,
            pod_uid=p.pod_uid,
            node_name=p.node_name,
            reason=reason,
            binder=self.options.common.identity,
        )
        delay = 0.1
        for attempt in range(ENDED_PUTS):
            try:
                await self.ended_kv.put(encode_token(p.placement_id), record)
                return
            except Exception as exc:
                log.warning("record of failed placement %s not stored (%r)", p.placement_id, exc)
                if attempt + 1 < ENDED_PUTS:
                    await asyncio.sleep(delay)
                    delay *= 2
        raise NotEnded(p.placement_id)

    async def _ack_after_events(
        self,
        delivery: Delivery[Placement | PlacementBatch],
        events: list[asyncio.Future[bool]],
        keepalive: asyncio.Task[None],
    ) -> None:
        try:
            done, _ = await asyncio.wait(events, timeout=EVENT_WRITE_TIMEOUT)
            written = len(done) == len(events) and all(e.result() for e in events)
        finally:
            keepalive.cancel()
        with contextlib.suppress(Exception):  # NATS gone: the placement comes again after ack_wait
            if written:
                await delivery.ack()
            elif delivery.num_delivered >= EVENT_DELIVERIES:
                log.warning(
                    "giving up the Scheduled event of a placement after %d deliveries", delivery.num_delivered
                )
                metrics.EVENTS_GIVEN_UP.inc()
                await delivery.ack()
            else:
                await delivery.nak(delay=1.0)

    async def _handle_one(self, p: Placement, in_batch: bool = False) -> str:
        started = time.perf_counter()
        with pod_logging(f"{p.namespace}/{p.name}", p.node_name, p.profile, p.trace_id):
            if p.placement_id in self._unknown:
                self._unknown.discard(p.placement_id)
                return "retry"
            ended = self._ended.get(p.placement_id)
            if ended is not None:
                # Its binding failed on an earlier delivery and the informer forgot it: the pod may
                # be placed elsewhere by now, and whatever this node took meanwhile did not count it.
                log.info("placement %s delivered again, already ended (%s): not bound", p.placement_id, ended)
                if ended == "failed":
                    # Its forget may never have reached a leading informer (a new leader restored
                    # the assumption from the ledger and published it again): forget it again (the
                    # informer forgets only this placement's assumption).
                    await self._forget(p, "its binding failed on an earlier delivery")
                return ended
            try:
                result = await self.bind(p)
            except NotEnded as exc:
                if exc.refused:  # logged as an error by _log_refused_read
                    result = "refused"
                else:
                    log.warning("placement %s failed, its outcome unknown: kept, tried again", p.placement_id)
                    result = "retry"
            except BoundBefore:
                log.info("placement %s delivered again, its pod bound there before: a repeat", p.placement_id)
                if _event_ns(p) is not None:
                    self._report_scheduled(p)
                result = "bound"
            except Exception as exc:
                log.exception(
                    "placement %s of %s/%s failed unexpectedly", p.placement_id, p.namespace, p.name
                )
                result = f"error: {exc}"
        if result in ("failed", "gone"):
            self._remember_ended(p.placement_id, result)
        if in_batch and result == "bound":
            fault_point(MID_BATCH)
        metrics.BIND_DURATION.observe(time.perf_counter() - started)
        if result not in ("retry", "refused"):
            metrics.BINDINGS_OF(result if result in ("bound", "gone") else "failed").inc()
        return result

    async def _keep_alive(self, delivery: Delivery[Placement | PlacementBatch]) -> None:
        while True:
            await asyncio.sleep(self.options.ack_wait / 3)
            with contextlib.suppress(Exception):
                await delivery.in_progress()

    async def bind(self, p: Placement) -> str:
        """Run the binding cycle for one placement; returns 'bound', 'gone', 'failed' or 'retry'."""
        fw = self.frameworks.get(p.profile)
        if fw is None:
            await self._fail(p, f"no profile for schedulerName {p.profile!r}")
            return "failed"
        try:
            pod = msgspec.json.decode(p.pod, type=Pod)
        except DECODE_ERRORS as exc:
            await self._fail(p, f"the placement's pod does not decode: {exc}")
            return "failed"
        pi = PodInfo(pod)
        state = CycleState()
        state.record_plugin_metrics = self.sample_plugin_metrics()
        if p.results:  # the scheduler records results (--record-results): the binding cycle's too
            state.record = CycleRecord()
        for name, data in p.plugin_state.items():
            pl = fw.plugin(name)
            importer = getattr(pl, "import_state", None)
            if importer is None:
                continue
            try:
                importer(state, data)
            except ValueError as exc:  # bytes that are not this plugin's state
                await self._fail(p, f"the placement's state of plugin {name!r} does not import: {exc}")
                return "failed"
        if p.permit_waits:
            since = _clock()
            st = await self.wait_on_permit(p)
            result = "allowed" if st is None else "rejected"
            self._trace(p, Phase.PERMIT_WAIT, since, result=result, plugins=sorted(p.permit_waits))
            if st is not None:
                await self._bound_before(p)
                self._write_results(p, state)
                message = chosen_node_failure(p.node_name, st)
                plugins = [st.plugin] if st.plugin else []
                await self._fail(p, message, plugins=plugins, rejected=st.is_rejected())
                return "failed"
        fault_point(BEFORE_PREBIND, f"{p.namespace}/{p.name}")
        since = _clock()
        st = await fw.run_pre_bind_plugins(state, pi, p.node_name)
        self._trace(p, Phase.PREBIND, since, node=p.node_name, ok=st is None)
        if st is not None:
            await self._bound_before(p)
            await self._unreserve_api(fw, state, pi, p.node_name)
            self._write_results(p, state)
            await self._fail(p, st.message, plugins=[st.plugin], rejected=st.is_rejected())
            return "failed"
        since = _clock()
        st = await fw.run_binding(state, pi, p.node_name)
        redelivered = st is not None and already_bound_to(st, p.node_name)
        if st is not None and not redelivered:
            if not pod_gone(st):
                # on any delivery: a Binding sent again after its connection failed may meet a
                # refusal (403 while a restarted API server loads its RBAC) though the first applied
                await self._bound_before(p, binding=True)
            await self._unreserve_api(fw, state, pi, p.node_name)
            if pod_gone(st):
                self._trace(
                    p, Phase.BIND_FAILED, since, node=p.node_name, reason="pod deleted before binding"
                )
                await self._forget(p, "pod deleted before binding")
                return "gone"
            self._write_results(p, state)
            await self._fail(p, st.message, rejected=st.is_rejected())
            return "failed"
        if redelivered:
            # An earlier delivery of this placement bound the pod (its binder died or lost the ack
            # before acknowledging): that binder reported the binding; upstream reports one binding
            # once, so no second PostBind or attempts/SLI sample here. The Scheduled event is sent
            # again, in case that binder died before sending it (with a batch half bound, the pods
            # it bound last): both are named by the placement, so the API refuses the second (409).
            # No read of the events first: kube-scheduler's role may create events, not list them.
            # A placement without the time that names its event (an older scheduler's) sends none.
            self._trace(p, Phase.BOUND, since, node=p.node_name, attempt=p.attempt, redelivered=True)
            if _event_ns(p) is not None:
                self._report_scheduled(p)
            return "bound"
        self._trace(p, Phase.BOUND, since, node=p.node_name, attempt=p.attempt)
        log.debug("Successfully bound pod to node (attempt %d)", p.attempt)
        self._write_results(p, state)
        self._report_scheduled(p)
        await fw.run_post_bind_plugins(state, pi, p.node_name)
        metrics.POD_SCHEDULING_ATTEMPTS.observe(max(p.attempt, 1))
        since_queued = p.initial_attempt_at or p.assumed_at  # assumed_at: placements of older schedulers
        if since_queued:
            waited = max(0.0, time.time() - since_queued)
            metrics.SLI_DURATION.labels(metrics.attempts_label(p.attempt)).observe(waited)
        if p.flushed_from_unschedulable:
            metrics.POD_SCHEDULED_AFTER_FLUSH.inc()
        return "bound"

    def _event_written(self, p: Placement, written: asyncio.Future[bool] | None) -> None:
        """Hold ``p``'s acknowledgement until its Scheduled event is written (a future of the reporter)."""
        if written is not None:
            self._events[p.placement_id] = written

    @staticmethod
    async def _unreserve_api(fw: Framework, state: CycleState, pi: PodInfo, node_name: str) -> None:
        """A failed binding cycle: the Reserve plugins undo what PreBind wrote to the API (plugins
        with an ``unreserve_api``, e.g. DynamicResources' ``reservedFor`` entries), in reverse order
        as Unreserve runs; the deciding replica then runs Unreserve itself."""
        for pl in reversed(fw.plugins.reserve):
            undo = getattr(pl, "unreserve_api", None)
            if undo is None:
                continue
            try:
                await undo(state, pi, node_name)
            except Exception:
                log.exception("Unreserve of plugin %s failed", pl.name)

    async def wait_on_permit(self, p: Placement) -> Status | None:
        """Wait until every waiting Permit plugin allows the pod, one rejects it, or time runs out."""
        timeout = max(p.permit_waits.values())
        waiting = set(p.permit_waits)
        inbox: asyncio.Queue[PermitDecision] = asyncio.Queue()
        self._permits[p.pod_uid] = inbox
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                while waiting:
                    decision = await inbox.get()
                    if not decision.allow:
                        metrics.PERMIT_WAIT.labels("rejected").observe(time.perf_counter() - started)
                        return Status.unschedulable(decision.message or "rejected").with_plugin(
                            decision.plugin
                        )
                    waiting.discard(decision.plugin)
                    waiting.discard("*")
        except TimeoutError:
            metrics.PERMIT_WAIT.labels("timeout").observe(time.perf_counter() - started)
            return Status.unschedulable(f"rejected due to timeout after waiting {timeout:.0f}s at permit")
        finally:
            self._permits.pop(p.pod_uid, None)
        metrics.PERMIT_WAIT.labels("allowed").observe(time.perf_counter() - started)
        return None

    async def on_permit(self, decision: PermitDecision, _msg: Msg) -> None:
        inbox = self._permits.get(decision.pod_uid)
        if inbox is not None:
            inbox.put_nowait(decision)

    async def _forget(self, p: Placement, reason: str) -> None:
        """Ask the informer to forget ``p``'s assumption; unanswered by a leading, synced informer
        (leaders changing), it is asked again in the background for FORGET_RETRY_SECONDS: the next
        leader restores the assumption from the ledger, and its publish of the placement again may
        be dropped as a duplicate, so nothing else would forget it before it expires."""
        request = ForgetRequest.of(p, reason)
        if not await self._forget_once(request, p.trace_id):
            self.tasks.job("forget-again", self._forget_again(request, p.trace_id))

    async def _forget_once(self, request: ForgetRequest, trace_id: str) -> bool:
        """Whether a leading informer done restoring answered ``request`` (forgotten, or no such
        assumption)."""
        assert self.bus is not None
        try:
            reply = await self.bus.request(endpoints.FORGET, request, timeout=5, trace_id=trace_id)
        except Exception:
            return False
        return reply.ok or reply.code not in ("NotLeader", "NotReady")

    async def _forget_again(self, request: ForgetRequest, trace_id: str) -> None:
        deadline, pause = time.monotonic() + FORGET_RETRY_SECONDS, 0.5
        while time.monotonic() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)
            if await self._forget_once(request, trace_id):
                return
        log.warning(
            "forget of placement %s answered by no leading informer in %.0f s",
            request.placement_id,
            FORGET_RETRY_SECONDS,
        )

    async def _fail(
        self, p: Placement, reason: str, plugins: list[str] | None = None, *, rejected: bool = False
    ) -> None:
        """Binding failed: forget the assumption, Unreserve on the deciding replica, requeue with
        backoff, and say so as upstream's failure handler does: the FailedScheduling event and
        PodScheduled=False with ``reason`` as its message (``Unschedulable`` when a plugin
        ``rejected`` the pod, else ``SchedulerError``), the nomination cleared."""
        assert self.bus is not None
        log.info("binding %s/%s to %s failed: %s", p.namespace, p.name, p.node_name, reason)
        await self._record_ended(p, reason)  # raises NotEnded: nothing forgotten, tried again
        self._trace(p, Phase.BIND_FAILED, None, node=p.node_name, reason=reason, plugins=plugins or [])
        await self._forget(p, reason)
        unreserve = UnreserveRequest(
            placement_id=p.placement_id,
            pod_uid=p.pod_uid,
            namespace=p.namespace,
            name=p.name,
            node_name=p.node_name,
            scheduler_id=p.scheduler_id,
            reason=reason,
            plugin_state=p.plugin_state,
        )
        with contextlib.suppress(Exception):
            await self.bus.request(
                endpoints.UNRESERVE.to(p.scheduler_id), unreserve, timeout=2, trace_id=p.trace_id
            )
        requeue = RequeueRequest(
            pod_uid=p.pod_uid,
            namespace=p.namespace,
            name=p.name,
            reason=reason,
            backoff=True,
            unschedulable_plugins=plugins or [],
            sender=self.options.common.identity,
            trace_id=p.trace_id,
        )
        with contextlib.suppress(Exception):
            headers = self.tracer.headers(p.trace_id, Phase.BIND_FAILED)  # parent of the queue's requeued
            await self.bus.request(
                endpoints.QUEUE_REQUEUE, requeue, timeout=5, trace_id=p.trace_id, headers=headers
            )
        if self.reporter is not None:
            condition = "Unschedulable" if rejected else REASON_SCHEDULER_ERROR
            ref = PodRef(p.namespace, p.name, p.pod_uid)
            self.reporter.unschedulable(ref, reason, "", controller=p.profile, reason=condition)

    def _write_results(self, p: Placement, state: CycleState) -> None:
        """The attempt's kube-scheduler-simulator results on the pod, once its binding cycle is over
        (only for placements that carry the scheduling cycle's, i.e. the scheduler records them)."""
        if self.results is not None and state.record is not None:
            self.results.write(p.namespace, p.name, p.pod_uid, with_binding(p.results, state.record))

    def _trace(self, p: Placement, phase: str, since: tuple[float, float] | None, **details: Any) -> None:
        """A trace event of ``p``'s attempt; ``since`` (from :func:`_clock`) makes it a measured span."""
        ts, duration = (since[0], time.perf_counter() - since[1]) if since is not None else (None, None)
        self.tracer.emit(
            phase,
            p.trace_id,
            p.pod_uid,
            p.namespace,
            p.name,
            ts=ts,
            duration=duration,
            details=details,
            parent=self._parents.get(p.placement_id, ""),
        )

    def debug_state(self) -> dict[str, Any]:
        return {
            "identity": self.options.common.identity,
            "busy_workers": self.busy,
            "waiting_on_permit": len(self._permits),
            "tasks": self.tasks.names(),
            "background_jobs": self.tasks.jobs,
            "pending_api_writes": self.reporter.pending if self.reporter is not None else 0,
        }


def _clock() -> tuple[float, float]:
    """Wall time (the event's ts) and a monotonic reading (its duration)."""
    return time.time(), time.perf_counter()
