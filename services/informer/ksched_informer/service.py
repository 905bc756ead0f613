"""The informer/cache service: list-watches the API, keeps the cache and the assume ledger,
publishes versioned snapshot deltas and the queue's feeds, and answers assume/forget and
bootstrap requests. One active instance: with leader election (``InformerOptions.election``) the
others are standbys that connect and wait, and take over with a new epoch when the Lease is theirs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
from kubernetes_asyncio.client import ApiClient
from nats.aio.msg import Msg

from ksched.api.collections import Collection
from ksched.api.core import Node, Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.bootstrap import deliver_problem, publish_chunks
from ksched.bus.connect import TRACE_ID_HEADER, Bus, connect
from ksched.bus.endpoints import (
    ASSUME,
    ASSUME_GROUP,
    CLUSTER_EVENTS,
    FORGET,
    PENDING_BOOTSTRAP,
    PENDING_PODS,
    PLACEMENTS,
    SNAPSHOT_BOOTSTRAP,
    SNAPSHOT_DELTA,
    Envelope,
    PublishEndpoint,
)
from ksched.bus.jetstream import TypedKV, ensure_streams, last_sequence, migrate_kv_bucket, publish
from ksched.bus.messages import (
    Ack,
    AssumeGroupRequest,
    AssumeRejectCode,
    AssumeReply,
    AssumeRequest,
    BootstrapReply,
    ForgetRequest,
    GangCommit,
    Message,
    PendingPodAction,
    PendingPodsRequest,
    Placement,
    SnapshotBootstrapRequest,
    SnapshotDelta,
)
from ksched.bus.streams import ASSUMED_LEDGER, GANG_COMMITS, legacy_assumed_ledger_bucket
from ksched.bus.subjects import Subjects
from ksched.bus.tokens import encode_token
from ksched.cache.ledger import ClusterCache
from ksched.cache.replica import image_of
from ksched.config.profile import build_frameworks
from ksched.config.types import KubeSchedulerConfiguration
from ksched.framework.events import ClusterEvent
from ksched.framework.nominator import Nominator
from ksched.framework.objects import TABLES, object_key
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework
from ksched.logcontext import pod_logging
from ksched.service.http import HealthServer
from ksched.service.kube import api_client
from ksched.service.leadership import Leadership
from ksched.service.tasks import TaskGroup
from ksched.tracing import Phase, Tracer
from ksched.tracing.context import TRACEPARENT
from ksched.tracing.export import span_sink
from ksched_informer import feeds, metrics
from ksched_informer.gangs import Gangs, GroupCommitter, committed_ids
from ksched_informer.options import InformerOptions
from ksched_informer.reflector import DELETED, Reflector
from ksched_informer.resources import EVENT_RESOURCE, NODES, OBJECTS, PODS

M = TypeVar("M", bound=Message)

log = logging.getLogger(__name__)
FINAL_FLUSH_TIMEOUT = 5.0
"""Seconds a stopping informer waits for its last deltas and feed messages to be stored."""


MAX_OPS_PER_DELTA = 100
"""Ops per published delta: nodes and pods are at most a few KiB each once trimmed."""


def decided_on_another_version(placement: Placement, pod: Pod) -> bool:
    """Whether the replica decided on a version of ``pod`` whose labels or spec differ from the
    pending one (the placement carries the pod it decided on)."""
    if placement.resource_version == pod.metadata.resource_version:
        return False
    try:
        decided = msgspec.json.decode(placement.pod, type=Pod)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return True
    return decided.spec != pod.spec or decided.metadata.labels != pod.metadata.labels


class InformerService:
    def __init__(self, options: InformerOptions, config: KubeSchedulerConfiguration) -> None:
        self.options = options
        self.config = config
        self.scheduler_names = {p.scheduler_name or "" for p in config.profiles}
        self.cache = ClusterCache(assumed_ttl=options.assumed_ttl, max_assumed_age=options.max_assumed_age)
        self.nominator = Nominator()
        self.frameworks: dict[str, Framework] = build_frameworks(
            config, self.cache.snapshot, nominator=self.nominator
        )
        self.epoch = uuid.uuid4().hex[:12]
        common = options.common
        self.subjects = Subjects(common.subject_prefix)
        self.tasks = TaskGroup()
        self.tracer = Tracer(
            "informer", common.identity, spans=span_sink(common.tracing, "informer", common.identity)
        )
        self.health = HealthServer(
            common.http_host,
            common.http_port,
            debug=self.debug_state,
            token=common.http_token,
            secure=common.secure,
            component="ksched-informer",
            config=config,
        )
        self.bus: Bus | None = None
        self.api: ApiClient | None = None
        self.kv: TypedKV[Placement] | None = None
        #: gang scheduling (GenericWorkload): group views, the Coscheduling adapter, group commits
        self.gangs = Gangs(options.common.feature_gates, self.cache)
        self.commits_kv: TypedKV[GangCommit] | None = None
        self.committer = GroupCommitter(
            self.cache, self.check_and_assume, self._record_commit, lambda: self.epoch
        )
        self.reflectors: list[Reflector] = []
        self.ready = False
        self._feed: list[Envelope] = []
        #: ledger keys of assumptions the watch confirmed or ended, deleted at the next flush
        self._ledger_drops: list[str] = []
        #: ops taken from the cache by a flush and not yet acknowledged by JetStream
        self._publishing = 0
        metrics.PUBLISH_LAG.set_function(lambda: len(self.cache.ops) + self._publishing)
        self._dirty = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self.leadership = Leadership("informer", common.identity, options.election)
        """One informer acts; losing the Lease calls ``leadership.on_lost`` (default: exit)."""
        self._stopping = False

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        common = self.options.common
        port = await self.health.start()
        log.info("informer %s: health and metrics on http://%s:%d", common.identity, common.http_host, port)
        self.health.live_checks["tasks"] = lambda: (not self.tasks.failed.is_set(), str(self.tasks.failure))
        self.health.ready_checks["nats"] = lambda: (self.bus is not None and self.bus.ready, "not connected")
        self.health.ready_checks["cache"] = lambda: (self.ready or self.standby, "informers not synced")
        self.bus = await connect(
            common.nats,
            name=f"informer:{common.identity}",
            subjects=self.subjects,
            jetstream_replicas=common.jetstream_replicas,
            **common.nats_credentials.connect_kwargs(),
        )
        await ensure_streams(self.bus)
        self.tracer.start(self.bus)
        self.kv = await TypedKV.open(self.bus, ASSUMED_LEDGER, Placement)
        if self.gangs.enabled:
            self.commits_kv = await TypedKV.open(self.bus, GANG_COMMITS, GangCommit)
        self.api = await api_client(common.kubeconfig, component="ksched-informer", master=common.master)
        if not self.leadership.elected:
            await self._start_active()
            return
        self.leadership.start(self.api, self.health)
        self.tasks.spawn("lead", self._lead_when_elected)

    @property
    def standby(self) -> bool:
        """Waiting for the Lease (a standby is ready as such: connected, nothing to serve)."""
        return self.leadership.standby

    def acting(self) -> bool:
        """Whether this instance may write (publish, answer, record): it leads, or runs alone."""
        return self.leadership.acting()

    async def _lead_when_elected(self) -> None:
        await self.leadership.wait_leader()
        log.info(
            "informer %s: leading (epoch %s); listing the cluster", self.options.common.identity, self.epoch
        )
        await self._start_active()

    async def _start_active(self) -> None:
        """The leader's work: serve the bus, list-watch, publish, expire assumptions."""
        assert self.bus is not None and self.api is not None
        bus = self.bus
        await bus.subscribe(SNAPSHOT_BOOTSTRAP, self.on_snapshot_bootstrap)
        await bus.subscribe(PENDING_BOOTSTRAP, self.on_pending_bootstrap)
        await bus.subscribe(ASSUME, self.on_assume)
        await bus.subscribe(FORGET, self.on_forget)
        if self.gangs.enabled:
            await bus.subscribe(ASSUME_GROUP, self.on_assume_group)
        self.reflectors = [Reflector(self.api, NODES, self.on_node_list, self.on_node_event)]
        for res in OBJECTS:
            self.reflectors.append(Reflector(self.api, res, self._object_list(res), self._object_event(res)))
        for res, on_list, on_event in self.gangs.resources(self._object_event, self._object_list):
            self.reflectors.append(Reflector(self.api, res, on_list, on_event))
        # Pods last: their nodes and PVCs are usually known by the time they are placed.
        self.reflectors.append(Reflector(self.api, PODS, self.on_pod_list, self.on_pod_event))
        for r in self.reflectors:
            self.tasks.spawn(f"reflector:{r.resource.kind}", r.run, restart=True)
        self.tasks.spawn("flush", self._flush_loop, restart=True)
        self.tasks.spawn("expire", self._expire_loop, restart=True)
        self.tasks.spawn("sync", self._await_sync)

    async def _await_sync(self) -> None:
        for r in self.reflectors:
            await r.synced.wait()
        await self._restore_ledger()
        self.ready = True
        self._dirty.set()
        log.info(
            "informer ready: epoch %s, %d nodes, %d placed pods, %d pending, %d assumed",
            self.epoch,
            len(self.cache.snapshot.nodes),
            len(self.cache.snapshot.pod_locations),
            len(self.cache.pending),
            len(self.cache.assumed),
        )

    async def stop(self) -> None:
        self._stopping = True  # no new assumes while the last changes go out
        self.leadership.stopping = True
        await self.tasks.cancel_all()
        try:
            # The last changes go out if NATS takes them soon; a successor re-lists anyway (new epoch).
            async with asyncio.timeout(FINAL_FLUSH_TIMEOUT):
                await self.flush()
        except Exception as exc:
            log.warning("stopping: last snapshot changes not published (%r); a successor re-lists", exc)
        await self.leadership.close()  # stopped acting: step down, release; a standby takes over
        await self.tracer.close()
        if self.bus is not None:
            await self.bus.close()
        if self.api is not None:
            await self.api.close()
        await self.health.stop()

    # --- publishing ------------------------------------------------------------------------------
    def _emit(self, endpoint: PublishEndpoint[M], message: M) -> None:
        self._feed.append(endpoint.envelope(message))
        self._dirty.set()

    def _feed_generation_now(self) -> int:
        """Feed messages carry the cache generation that includes their change (monotonic), so
        the queue can tell a scheduler which snapshot generation a pod's newest event is in."""
        return self.cache.generation

    def _emit_pending(self, action: PendingPodAction, pod: Pod, reason: str = "") -> None:
        msg = feeds.pending_event(
            action, pod, self.epoch, self._feed_generation_now(), reason, self.gangs.view(pod)
        )
        self._emit(PENDING_PODS.to(pod.spec.scheduler_name), msg)

    def _emit_events(self, events: Sequence[ClusterEvent], key: str, old: Any, new: Any) -> None:
        for ev in events:
            msg = feeds.cluster_event(ev, key, old, new, self.epoch, self._feed_generation_now())
            self._emit(CLUSTER_EVENTS.to(ev.resource), msg)

    async def _flush_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            await asyncio.sleep(self.options.flush_interval)
            await self.flush()

    async def flush(self) -> None:
        """Publish the cache's pending ops as one delta, then the feed messages, in order."""
        if self.bus is None or not self.acting():
            return
        async with self._flush_lock:
            await self._flush_locked()

    async def _flush_locked(self) -> None:
        """:meth:`flush` under ``_flush_lock``. It takes the ops and feed messages before its first
        await: state a caller read just before calling it is exactly what it publishes."""
        assert self.bus is not None
        base, generation, ops = self.cache.take_ops()
        self._publishing = len(ops)
        feed, self._feed = self._feed, []
        metrics.GENERATION.set(generation)
        # Consecutive deltas of bounded size (a NATS message is limited, 1 MiB by default);
        # each op advances the generation by one, so each part has its own base..generation.
        deltas: list[Envelope] = []
        for start in range(0, len(ops), MAX_OPS_PER_DELTA):
            part = ops[start : start + MAX_OPS_PER_DELTA]
            delta = SnapshotDelta(
                epoch=self.epoch,
                base=base + start,
                generation=base + start + len(part),
                ops=part,
                ts=time.time(),
            )
            deltas.append(SNAPSHOT_DELTA.envelope(delta))
        if deltas:
            await self._publish_in_order(deltas)
        self._publishing = 0
        if feed:
            await self._publish_in_order(feed)
        drops, self._ledger_drops = self._ledger_drops, []
        if drops and self.kv is not None:
            # A delete lost here is harmless: a restarted informer drops entries of bound pods.
            with contextlib.suppress(Exception):
                await self.kv.delete_many(self.bus, drops)
        self._update_sizes()

    async def _publish_in_order(self, messages: list[Envelope]) -> None:
        """Publish to a stream in order, cheaply: all but the last as core messages in one buffered
        write, the last through JetStream with an ack. The server stores one connection's messages
        in the order sent, so the last ack confirms the batch."""
        assert self.bus is not None
        for envelope in messages[:-1]:
            await self.bus.publish(envelope.endpoint, envelope.message)
        last = messages[-1]
        await self._publish_retrying(last.endpoint, last.message)

    async def _publish_retrying(self, endpoint: PublishEndpoint[M], message: M, msg_id: str = "") -> Any:
        assert self.bus is not None
        delay = 0.05
        while True:
            try:
                return await publish(self.bus, endpoint, message, msg_id=msg_id, timeout=5)
            except Exception as exc:
                log.warning("publishing to %s failed (%s); retrying", endpoint.subject(self.subjects), exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _update_sizes(self) -> None:
        snap = self.cache.snapshot
        metrics.CACHE_SIZE.labels("nodes").set(len(snap.nodes))
        metrics.CACHE_SIZE.labels("pods").set(len(snap.pod_locations))
        metrics.CACHE_SIZE.labels("assumed_pods").set(len(self.cache.assumed))

    # --- nodes -----------------------------------------------------------------------------------
    async def on_node_list(self, nodes: list[Node]) -> None:
        listed = {n.metadata.name for n in nodes}
        for ni in list(self.cache.snapshot.nodes):
            if ni.name not in listed and ni.node is not None:
                await self.on_node_event(DELETED, ni.node)
        for node in nodes:
            old = self.cache.snapshot.node_map.get(node.metadata.name)
            if (
                old is None
                or old.node is None
                or old.node.metadata.resource_version != node.metadata.resource_version
            ):
                await self.on_node_event("ADDED", node)

    async def on_node_event(self, kind: str, node: Node) -> None:
        metrics.EVENTS.labels("Node", kind).inc()
        name = node.metadata.name
        existing = self.cache.snapshot.node_map.get(name)
        old = existing.node if existing is not None else None
        if kind == DELETED:
            if old is None:
                return
            self.cache.remove_node(name)
            self._emit_events(feeds.node_events(old, None), name, old, None)
        else:
            self.cache.upsert_node(node)
            self._emit_events(feeds.node_events(old, node), name, old, node)
        self._dirty.set()

    # --- pods ------------------------------------------------------------------------------------
    def _schedulable(self, pod: Pod) -> bool:
        return not pod.spec.node_name and pod.spec.scheduler_name in self.scheduler_names

    async def on_pod_list(self, pods: list[Pod]) -> None:
        listed = {p.metadata.uid for p in pods}
        known = set(self.cache.pending) | {
            uid for uid in self.cache.snapshot.pod_locations if uid not in self.cache.assumed
        }
        for uid in known - listed:
            entry = self.cache.snapshot.pod_locations.get(uid)
            pod = entry[0].pod if entry is not None else self.cache.pending.get(uid)
            if pod is not None:
                await self.on_pod_event(DELETED, pod)
        for pod in pods:
            await self.on_pod_event("ADDED", pod)

    async def on_pod_event(self, kind: str, pod: Pod) -> None:
        metrics.EVENTS.labels("Pod", kind).inc()
        pod = self.gangs.adapt(pod)
        cache = self.cache
        uid = pod.metadata.uid
        was_pending = cache.pending.get(uid)
        was_assumed = uid in cache.assumed
        placed = cache.snapshot.pod_locations.get(uid)
        old_placed = placed[0].pod if placed is not None and not was_assumed else None
        if kind == DELETED:
            cache.remove_pod(uid)
            self.gangs.members.note(pod, known=False)
            self.nominator.remove(uid)
            if was_pending is not None:
                self._emit_pending(PendingPodAction.DELETE, was_pending, "deleted")
            if old_placed is not None:
                self._emit_events(feeds.assigned_pod_events(old_placed, None), _key(pod), old_placed, None)
            if was_assumed:
                self._ledger_drops.append(encode_token(uid))
            self._dirty.set()
            return
        if old_placed is not None and old_placed.metadata.resource_version == pod.metadata.resource_version:
            return  # a relist of an unchanged pod
        if was_pending is not None and was_pending.metadata.resource_version == pod.metadata.resource_version:
            return
        cache.upsert_pod(pod, schedulable=self._schedulable(pod))
        self.gangs.members.note(pod, known=uid in cache.pending or cache.snapshot.location(uid) is not None)
        if pod.spec.node_name:
            self.nominator.remove(uid)
            if was_pending is not None or was_assumed:
                self._emit_pending(PendingPodAction.DELETE, pod, PodLifecycle.BOUND)
            self._emit_events(feeds.assigned_pod_events(old_placed, pod), _key(pod), old_placed, pod)
            if was_assumed:
                self._ledger_drops.append(encode_token(uid))
        elif uid in cache.pending:
            if pod.status.nominated_node_name:
                self.nominator.add(PodInfo(pod), pod.status.nominated_node_name)
            else:
                self.nominator.remove(uid)
            action = PendingPodAction.UPDATE if was_pending is not None else PendingPodAction.ADD
            self._emit_pending(action, pod)
        elif was_pending is not None:
            self._emit_pending(PendingPodAction.DELETE, pod, "scheduler-changed")
        self._dirty.set()

    # --- other objects ---------------------------------------------------------------------------
    def _object_list(self, res: Collection) -> Any:
        async def on_list(items: list[Any]) -> None:
            table = self.cache.snapshot.objects.table(res.kind)
            listed = {object_key(o) for o in items}
            for key in [k for k in table if k not in listed]:
                await self._object_event(res)(DELETED, table[key])
            for obj in items:
                old = table.get(object_key(obj))
                if old is None or old.metadata.resource_version != obj.metadata.resource_version:
                    await self._object_event(res)("ADDED", obj)

        return on_list

    def _object_event(self, res: Collection) -> Any:
        async def on_event(kind: str, obj: Any) -> None:
            metrics.EVENTS.labels(res.kind, kind).inc()
            key = object_key(obj)
            table = self.cache.snapshot.objects.table(res.kind)
            old = table.get(key)
            if kind == DELETED:
                self.cache.remove_object(res.kind, key)
                new = None
            else:
                self.cache.upsert_object(obj)
                new = obj
            resource = EVENT_RESOURCE.get(res.kind)
            if resource is not None and (old is not None or new is not None):
                self._emit_events(feeds.object_events(resource, old, new), key, old, new)
            self._dirty.set()

        return on_event

    # --- assume ledger -----------------------------------------------------------------------------
    async def on_assume(self, req: AssumeRequest, msg: Msg) -> AssumeReply:
        p = req.placement
        since, started = time.time(), time.perf_counter()
        with pod_logging(f"{p.namespace}/{p.name}", p.node_name, p.profile, p.trace_id):
            reply = await self._assume(p, req)
        details = {"node": p.node_name, "accepted": reply.accepted, "code": reply.code}
        parent = (msg.headers or {}).get(TRACEPARENT, "")  # the scheduler's ``assumed`` span
        self.tracer.emit(
            Phase.ASSUME_CHECK,
            p.trace_id,
            p.pod_uid,
            p.namespace,
            p.name,
            ts=since,
            duration=time.perf_counter() - started,
            details=details,
            parent=parent,
        )
        return reply

    def check_and_assume(self, req: AssumeRequest) -> AssumeReply | None:
        """Check ``req``'s placement with the assume check (incremental over the change log, by the
        session's answers) and assume it (None), or the rejection. The answer is logged for the
        session; nothing is recorded or published yet: the caller does that, or forgets it."""
        p = req.placement
        cache = self.cache
        refused = self._refuse_early(p)
        if refused is not None:
            metrics.ASSUMES.labels(refused.code).inc()
            cache.answers.answered(req.session, req.seq, accepted=False)
            return refused
        pod = cache.pending[p.pod_uid]
        verdict = cache.assume(
            pod,
            p.node_name,
            generation=p.snapshot_generation,
            scheduler_id=p.scheduler_id,
            profile=self.frameworks[p.profile],
            session=req.session,
            seq=req.seq,
            basis_from=req.basis_from,
            spread_slack=req.spread_slack,
            pod_changed=decided_on_another_version(p, pod),
        )
        if verdict.full_check:
            metrics.ASSUME_FULL_CHECKS.labels(verdict.full_check).inc()
        for plugin in verdict.rerun:
            metrics.ASSUME_PLUGIN_RECHECKS.labels(plugin).inc()
        if not verdict.accepted:
            log.debug("assume rejected: %s", verdict.reason)
            metrics.ASSUMES.labels(AssumeRejectCode.DOES_NOT_FIT).inc()
            return AssumeReply(
                accepted=False,
                code=AssumeRejectCode.DOES_NOT_FIT,
                reason=verdict.reason,
                epoch=self.epoch,
                generation=cache.generation,
            )
        return None

    async def _assume(self, p: Placement, req: AssumeRequest) -> AssumeReply:
        pod = self.cache.pending.get(p.pod_uid)
        rejected = self.check_and_assume(req)
        if rejected is not None or pod is None:
            return rejected or AssumeReply(accepted=False, code=AssumeRejectCode.POD_NOT_PENDING)
        self._emit_pending(PendingPodAction.DELETE, pod, PodLifecycle.ASSUMED)
        self._dirty.set()
        placement = msgspec.structs.replace(p, assumed_at=time.time(), pod=p.pod or msgspec.json.encode(pod))
        try:
            assert self.kv is not None and self.bus is not None
            await self.kv.put(encode_token(p.pod_uid), placement)
            headers = self.tracer.headers(p.trace_id, Phase.ASSUME_CHECK)  # the binder's parent span
            await publish(self.bus, PLACEMENTS, placement, msg_id=p.placement_id, headers=headers, timeout=5)
        except Exception as exc:
            log.warning(
                "assume of %s/%s accepted but not recorded (%s); forgetting", p.namespace, p.name, exc
            )
            self._forget(p.pod_uid)
            metrics.ASSUMES.labels(AssumeRejectCode.NOT_READY).inc()
            return AssumeReply(
                accepted=False, code=AssumeRejectCode.NOT_READY, reason=str(exc), epoch=self.epoch
            )
        metrics.ASSUMES.labels("accepted").inc()
        return AssumeReply(accepted=True, epoch=self.epoch, generation=self.cache.generation)

    def _refuse_early(self, p: Placement) -> AssumeReply | None:
        """The answer to a placement refused before its check: cache not ready, another epoch,
        pod no longer pending, node gone, unknown profile."""
        code, reason = "", ""
        if not self.ready or not self.acting() or self._stopping:
            return AssumeReply(
                accepted=False, code=AssumeRejectCode.NOT_READY, reason="cache is not synced yet"
            )
        if p.epoch != self.epoch:
            code, reason = AssumeRejectCode.STALE_EPOCH, f"decision made in epoch {p.epoch}"
        elif p.pod_uid not in self.cache.pending:
            assumed = p.pod_uid in self.cache.assumed
            code = AssumeRejectCode.ALREADY_ASSUMED if assumed else AssumeRejectCode.POD_NOT_PENDING
            reason = "pod is no longer pending"
        elif p.node_name not in self.cache.snapshot.node_map:
            code, reason = AssumeRejectCode.NODE_NOT_FOUND, p.node_name
        elif p.profile not in self.frameworks:
            code, reason = AssumeRejectCode.DOES_NOT_FIT, f"no profile for schedulerName {p.profile!r}"
        if not code:
            return None
        return AssumeReply(accepted=False, code=code, reason=reason, epoch=self.epoch)

    def _forget(self, uid: str) -> bool:
        assumption = self.cache.assumed.get(uid)
        if assumption is None or not self.cache.forget(uid):
            return False
        pod = self.cache.pending.get(uid)
        if pod is not None:
            self._emit_pending(PendingPodAction.ADD, pod, "forgotten")
        self._dirty.set()
        return True

    async def on_forget(self, req: ForgetRequest, msg: Msg) -> Ack:
        trace_id = (msg.headers or {}).get(TRACE_ID_HEADER, "")
        with pod_logging(f"{req.namespace}/{req.name}", req.node_name, trace_id=trace_id):
            return await self._forget_placement(req)

    async def _forget_placement(self, req: ForgetRequest) -> Ack:
        if not self.acting():
            return Ack(ok=False, code="NotLeader", reason="this informer no longer leads")
        assumption = self.cache.assumed.get(req.pod_uid)
        if assumption is None or assumption.node != req.node_name:
            return Ack(ok=False, code="NotAssumed", reason="no such assumption")
        self._forget(req.pod_uid)
        await self._drop_ledger(req.pod_uid)
        return Ack()

    async def _drop_ledger(self, uid: str) -> None:
        if self.kv is None:
            return
        with contextlib.suppress(Exception):
            await self.kv.delete(encode_token(uid))

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(5)
            expired = self.cache.expire()
            for uid in expired:
                pod = self.cache.pending.get(uid)
                if pod is not None:
                    self._emit_pending(PendingPodAction.ADD, pod, "assumption expired")
                await self._drop_ledger(uid)
            if expired:
                log.warning("forgot %d assumed pods never confirmed", len(expired))
                self._dirty.set()
            for commit_id in self.committer.settled():
                await self._drop_commit(commit_id)

    async def _restore_ledger(self) -> None:
        """Re-assume placements accepted by a previous instance and not yet seen bound."""
        if self.kv is None:
            return
        assert self.bus is not None  # an older release's ledger (P_P_assumed), moved once we lead
        await migrate_kv_bucket(self.bus, legacy_assumed_ledger_bucket(self.subjects), self.kv)
        restored = 0
        committed = await committed_ids(self.commits_kv) if self.commits_kv is not None else set()
        for key in await self.kv.keys():
            entry = await self.kv.get(key)
            if entry is None:
                continue
            p = entry.value
            pod = self.cache.pending.get(p.pod_uid)
            if pod is None or (p.gang is not None and p.gang.commit_id not in committed):
                await self.kv.delete(key)  # bound or deleted meanwhile, or of a group commit never made
                continue
            self.cache.restore_assumption(pod, p.node_name, p.scheduler_id)
            if p.gang is not None:
                self.committer.open.setdefault(p.gang.commit_id, set()).add(p.pod_uid)
            self._emit_pending(PendingPodAction.DELETE, pod, PodLifecycle.ASSUMED)
            # The previous instance may have died between recording and publishing the placement:
            # publish it again (same msg id: the stream drops a repeat; binding is idempotent).
            assert self.bus is not None
            await self._publish_retrying(PLACEMENTS, p, msg_id=p.placement_id)
            restored += 1
        if restored:
            log.info("restored %d assumed placements from the ledger", restored)
        for commit_id in committed - self.committer.open.keys():
            await self._drop_commit(commit_id)  # every member bound, deleted or forgotten meanwhile

    # --- group commits (docs/gang.md) -----------------------------------------------------------------
    async def on_assume_group(self, req: AssumeGroupRequest, _msg: Msg) -> AssumeReply:
        reply, placements = await self.committer.commit(req)
        if not reply.accepted:
            log.debug("group commit of %s rejected: %s %s", req.group, reply.code, reply.reason)
            return reply
        for p in placements:
            pod = self.cache.assumed[p.pod_uid].pod.pod
            self._emit_pending(
                PendingPodAction.DELETE, msgspec.structs.replace(pod, spec=pod.spec), PodLifecycle.ASSUMED
            )
        self._dirty.set()
        for p in placements:  # committed: published whatever it takes (a successor re-publishes too)
            await self._publish_retrying(PLACEMENTS, p, msg_id=p.placement_id)
        return reply

    async def _record_commit(self, placements: list[Placement], commit: GangCommit) -> None:
        """Every member's ledger entry, then the commit record: the commit point."""
        assert self.kv is not None and self.commits_kv is not None
        try:
            for p in placements:
                await self.kv.put(encode_token(p.pod_uid), p)
            await self.commits_kv.put(encode_token(commit.commit_id), commit)
        except Exception:
            for p in placements:  # best effort: a successor drops entries without a commit record anyway
                await self._drop_ledger(p.pod_uid)
            raise

    async def _drop_commit(self, commit_id: str) -> None:
        if self.commits_kv is not None:
            with contextlib.suppress(Exception):
                await self.commits_kv.delete(encode_token(commit_id))

    # --- bootstrap -------------------------------------------------------------------------------
    async def _taken_at(self, stream: str) -> int:
        """The stream sequence a bootstrap is taken at; call under ``_flush_lock`` right after
        :meth:`_flush_locked`. Every message this informer published before is at or below it, the
        next flush's are above it, and so are messages of no other epoch that a consumer would have
        to replay (a previous leader's tail is below it; see docs/bus.md)."""
        assert self.bus is not None
        return await last_sequence(self.bus, stream)

    async def on_snapshot_bootstrap(self, req: SnapshotBootstrapRequest, _msg: Msg) -> BootstrapReply:
        if not self.ready or self.bus is None or not self.acting():
            return BootstrapReply(error="cache is not synced yet")
        if problem := deliver_problem(self.subjects, req.deliver):
            return BootstrapReply(error=problem)
        async with self._flush_lock:
            image = image_of(self.cache.snapshot, self.epoch, self.cache.generation)
            await self._flush_locked()
            seq = await self._taken_at(self.subjects.snapshot_stream)
        return await publish_chunks(
            self.bus,
            req.deliver,
            image.ops,
            epoch=self.epoch,
            generation=image.generation,
            stream_seq=seq,
            max_chunk_bytes=req.max_chunk_bytes,
        )

    async def on_pending_bootstrap(self, req: PendingPodsRequest, _msg: Msg) -> BootstrapReply:
        if not self.ready or self.bus is None or not self.acting():
            return BootstrapReply(error="cache is not synced yet")
        if problem := deliver_problem(self.subjects, req.deliver):
            return BootstrapReply(error=problem)
        names = set(req.scheduler_names)
        async with self._flush_lock:
            items = [
                feeds.pending_pod(pod, self.gangs.view(pod))
                for pod in self.cache.pending.values()
                if not names or pod.spec.scheduler_name in names
            ]
            generation = self.cache.generation
            await self._flush_locked()
            seq = await self._taken_at(self.subjects.feed_stream)
        return await publish_chunks(
            self.bus,
            req.deliver,
            items,
            epoch=self.epoch,
            generation=generation,
            stream_seq=seq,
            max_chunk_bytes=req.max_chunk_bytes,
        )

    # --- debug -----------------------------------------------------------------------------------
    def debug_state(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "generation": self.cache.generation,
            "nodes": len(self.cache.snapshot.nodes),
            "pods": len(self.cache.snapshot.pod_locations),
            "pending": len(self.cache.pending),
            "assumed": {uid: a.node for uid, a in self.cache.assumed.items()},
            "tasks": self.tasks.names(),
            "objects": {kind: len(self.cache.snapshot.objects.table(kind)) for kind in TABLES},
            "leader_election": self.leadership.describe(),
        }


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"
