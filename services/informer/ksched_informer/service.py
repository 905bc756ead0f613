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
from typing import Any

import msgspec
from nats.aio.msg import Msg

from ksched.api.collections import NODES, OBJECTS, PODS
from ksched.api.core import Node
from ksched.api.lifecycle import PodLifecycle
from ksched.api.scheduling import REASON_SCHEDULED
from ksched.bus.connect import TRACE_ID_HEADER, Bus, connect
from ksched.bus.endpoints import (
    ASSUME,
    ASSUME_BATCH,
    ASSUME_GROUP,
    FORGET,
    PENDING_BOOTSTRAP,
    PLACEMENTS,
    SNAPSHOT_BOOTSTRAP,
)
from ksched.bus.jetstream import TypedKV, ensure_streams
from ksched.bus.messages import (
    Ack,
    AssumeBatchReply,
    AssumeBatchRequest,
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
)
from ksched.bus.streams import ASSUMED_LEDGER, GANG_COMMITS
from ksched.bus.subjects import Subjects
from ksched.bus.tokens import encode_token
from ksched.cache.ledger import ClusterCache
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.config.profile import build_frameworks
from ksched.config.types import KubeSchedulerConfiguration
from ksched.framework.nominator import Nominator
from ksched.framework.objects import TABLES
from ksched.framework.runtime import Framework
from ksched.logcontext import pod_logging
from ksched.reporting.reporter import Reporter
from ksched.service import gc_pacing
from ksched.service.http import service_health_server
from ksched.service.leadership import Leadership
from ksched.service.shutdown import stop_steps
from ksched.service.tasks import TaskGroup
from ksched.tracing import Phase
from ksched.tracing.context import TRACEPARENT
from ksched.tracing.export import service_tracer
from ksched_informer import assume, bootstrap, metrics
from ksched_informer.gangs import Gangs, GroupCommitter, commit_records
from ksched_informer.ledger import LEDGER_ENTRY, Ledger
from ksched_informer.options import InformerOptions
from ksched_informer.outcomes import GroupOutcomes
from ksched_informer.publisher import Publisher
from ksched_informer.reflector import Reflector
from ksched_informer.watch import WatchHandlers

log = logging.getLogger(__name__)
FINAL_FLUSH_TIMEOUT = 5.0
"""Seconds a stopping informer waits for its last deltas and feed messages to be stored."""


class InformerService:
    def __init__(self, options: InformerOptions, config: KubeSchedulerConfiguration) -> None:
        self.options = options
        self.config = config
        self.scheduler_names = {p.scheduler_name or "" for p in config.profiles}
        self.cache = ClusterCache(max_assumed_age=options.max_assumed_age)
        self.nominator = Nominator()
        self.frameworks: dict[str, Framework] = build_frameworks(
            config, self.cache.snapshot, nominator=self.nominator, gates=options.common.feature_gates
        )
        self.epoch = uuid.uuid4().hex[:12]
        common = options.common
        self.subjects = Subjects(common.subject_prefix)
        self.tasks = TaskGroup()
        self.tracer = service_tracer("informer", common)
        self.health = service_health_server(common, "ksched-informer", config, self.debug_state)
        self.bus: Bus | None = None
        self.api: Client | None = None
        self.reflectors: list[Reflector] = []
        self.ready = False
        #: gang scheduling (GenericWorkload): group views, the Coscheduling adapter, group commits
        self.gangs = Gangs(common.feature_gates, self.cache)
        self.commits_kv: TypedKV[GangCommit] | None = None
        self.publisher = Publisher(self.cache, self.subjects, self.epoch, self.acting)
        self.publisher.group_view = self.gangs.view
        self.ledger = Ledger(self.cache, self.publisher, self.frameworks)
        self.publisher.after_flush = self.ledger.flush_drops
        self.watch = WatchHandlers(
            self.cache,
            self.nominator,
            self.publisher,
            self.scheduler_names,
            self.ledger.confirmed,
            self.gangs,
        )
        #: the outcome of each group commit (PodGroupScheduled=True), written from its commit record
        self.outcomes = GroupOutcomes(self._write_outcome, self.acting, self.tasks)
        self.committer = GroupCommitter(
            self.cache,
            self.check_and_assume,
            self._record_commit,
            lambda: self.epoch,
            self.outcomes.written,
            self.nominator,
            self.gangs.members,
        )
        self.reporter: Reporter | None = None
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
        self.publisher.bus = self.ledger.bus = self.bus
        self.ledger.kv = await TypedKV.open(self.bus, ASSUMED_LEDGER, LEDGER_ENTRY)
        if self.gangs.enabled:
            self.commits_kv = await TypedKV.open(self.bus, GANG_COMMITS, GangCommit)
        self.api = await api_client(common.kubeconfig, component="ksched-informer", master=common.master)
        self.reporter = Reporter(self.api, self.tasks)
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
        await bus.subscribe(ASSUME_BATCH, self.on_assume_batch)
        await bus.subscribe(FORGET, self.on_forget)
        if self.gangs.enabled:
            await bus.subscribe(ASSUME_GROUP, self.on_assume_group)
        watch = self.watch
        self.reflectors = [Reflector(self.api, NODES, watch.on_node_list, watch.on_node_event)]
        for res in OBJECTS:
            self.reflectors.append(Reflector(self.api, res, watch.object_list(res), watch.object_event(res)))
        for res, on_list, on_event in self.gangs.resources(watch.object_event, watch.object_list):
            self.reflectors.append(Reflector(self.api, res, on_list, on_event))
        # Pods last: their nodes and PVCs are usually known by the time they are placed.
        self.reflectors.append(Reflector(self.api, PODS, watch.on_pod_list, watch.on_pod_event))
        for r in self.reflectors:
            self.tasks.spawn(f"reflector:{r.resource.kind}", r.run, restart=True)
        self.tasks.spawn("flush", self._flush_loop, restart=True)
        self.tasks.spawn("expire", self._expire_loop, restart=True)
        self.tasks.spawn("sync", self._await_sync)
        if every := gc_pacing.interval():
            self.tasks.spawn("gc", lambda: gc_pacing.full_collections(every), restart=True)

    async def _await_sync(self) -> None:
        for r in self.reflectors:
            await r.synced.wait()
        await self._restore()
        self.ready = True
        self.publisher.dirty.set()
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
        await stop_steps(
            "informer",
            [
                ("tasks", self.tasks.cancel_all),
                ("final flush", self._final_flush),
                ("leadership", self.leadership.close),  # step down, release: a standby takes over
                ("tracer", self.tracer.close),
                ("bus", self.bus.close if self.bus is not None else None),
                ("api", self.api.close if self.api is not None else None),
                ("health", self.health.stop),
            ],
        )

    async def _final_flush(self) -> None:
        """The last changes go out if NATS takes them soon; a successor re-lists anyway (new epoch)."""
        try:
            async with asyncio.timeout(FINAL_FLUSH_TIMEOUT):
                await self.flush()
        except Exception as exc:
            log.warning("stopping: last snapshot changes not published (%r); a successor re-lists", exc)

    async def _flush_loop(self) -> None:
        await self.publisher.flush_loop(self.options.flush_interval, self.options.binding_hold)

    async def flush(self) -> None:
        """Publish what changed since the last flush (see :class:`Publisher`)."""
        await self.publisher.flush()

    @property
    def kv(self) -> TypedKV[Message] | None:
        """The ledger's bucket (None before the connection)."""
        return self.ledger.kv

    async def on_node_event(self, kind: str, node: Node) -> None:
        await self.watch.on_node_event(kind, node)

    # --- assume ledger -----------------------------------------------------------------------------
    def serving(self) -> bool:
        """Whether assumes may be accepted: synced, acting and not stopping."""
        return self.ready and self.acting() and not self._stopping

    def check_and_assume(self, req: AssumeRequest) -> AssumeReply | None:
        """Check ``req``'s placement and assume it (None), or the rejection; nothing is recorded or
        published yet (the group commit's step: docs/gang.md)."""
        verdict = assume.decide(self.cache, self.frameworks, self.epoch, req, self.serving())
        return None if verdict.pod is not None else verdict.reply

    async def on_assume(self, req: AssumeRequest, msg: Msg) -> AssumeReply:
        p = req.placement
        since, started = time.time(), time.perf_counter()
        with pod_logging(f"{p.namespace}/{p.name}", p.node_name, p.profile, p.trace_id):
            replies = await self.accept([req])
        # the parent: the scheduler's ``assumed`` span (its header; a batch's items carry their own)
        self._trace_checks([req], replies, since, started, (msg.headers or {}).get(TRACEPARENT, ""))
        return replies[0]

    async def on_assume_batch(self, req: AssumeBatchRequest, _msg: Msg) -> AssumeBatchReply:
        since, started = time.time(), time.perf_counter()
        replies = await self.accept(req.items)
        self._trace_checks(req.items, replies, since, started)
        return AssumeBatchReply(replies=replies)

    def _trace_checks(
        self,
        items: list[AssumeRequest],
        replies: list[AssumeReply],
        since: float,
        started: float,
        parent: str = "",
    ) -> None:
        """One ``assume_check`` trace event per placement (each its own attempt's; a batch's share
        the batch's start and duration: they were checked, recorded and published together)."""
        duration = time.perf_counter() - started
        for req, reply in zip(items, replies, strict=True):
            p = req.placement
            self.tracer.emit(
                Phase.ASSUME_CHECK,
                p.trace_id,
                p.pod_uid,
                p.namespace,
                p.name,
                ts=since,
                duration=duration,
                details={"node": p.node_name, "accepted": reply.accepted, "code": reply.code},
                parent=parent or req.traceparent,
            )

    def _decide(self, req: AssumeRequest, serving: bool) -> assume.Verdict:
        """:func:`assume.decide` of ``req``; a basic pod group's member with its group's pods in
        flight: the pod group cycle that placed it tried them together, so their nominations keep no
        room from each other, as in the replica's cycle and a gang's group commit (upstream's queue
        hands them over as bare references, of no priority; gangs-s9503-1003: a member that fit in
        the replica was refused here for the pods nominated with it, for ever)."""
        mates = self.gangs.cycle_mates(self.cache.pending.get(req.placement.pod_uid))
        if not mates:
            return assume.decide(self.cache, self.frameworks, self.epoch, req, serving)
        with self.nominator.in_flight(mates):
            return assume.decide(self.cache, self.frameworks, self.epoch, req, serving)

    async def accept(self, items: list[AssumeRequest]) -> list[AssumeReply]:
        """Check ``items`` in order (each sees the earlier accepted ones assumed), record the
        accepted ones as one batch and publish it to the binders; if that fails, forget them."""
        serving = self.serving()
        verdicts = [self._decide(req, serving) for req in items]
        replies = [v.reply for v in verdicts]
        accepted = [i for i, v in enumerate(verdicts) if v.pod is not None]
        if not accepted:
            return replies
        now = time.time()
        placements = []
        for i in accepted:
            p, pod = items[i].placement, verdicts[i].pod
            assert pod is not None
            self.publisher.emit_pending(PendingPodAction.DELETE, pod, PodLifecycle.ASSUMED)
            placements.append(
                msgspec.structs.replace(p, assumed_at=now, pod=p.pod or msgspec.json.encode(pod))
            )
        # the binder's parent span: the first placement's assume_check (a binder derives the others')
        headers = self.tracer.headers(placements[0].trace_id, Phase.ASSUME_CHECK)
        try:
            await self.ledger.record(self.ledger.new_batch(placements), headers)
        except Exception as exc:
            names = ", ".join(f"{p.namespace}/{p.name}" for p in placements)
            log.warning("assume of %s accepted but not recorded (%s); forgetting", names, exc)
            for i, p in zip(accepted, placements, strict=True):
                self.ledger.forget(p.pod_uid)
                replies[i] = AssumeReply(
                    accepted=False, code=AssumeRejectCode.NOT_READY, reason=str(exc), epoch=self.epoch
                )
            metrics.ASSUMES_OF(AssumeRejectCode.NOT_READY).inc(len(accepted))
            return replies
        metrics.ASSUMES_OF("accepted").inc(len(accepted))
        generation = self.cache.generation
        for i in accepted:
            replies[i] = AssumeReply(accepted=True, epoch=self.epoch, generation=generation)
        return replies

    async def on_forget(self, req: ForgetRequest, msg: Msg) -> Ack:
        trace_id = (msg.headers or {}).get(TRACE_ID_HEADER, "")
        with pod_logging(f"{req.namespace}/{req.name}", req.node_name, trace_id=trace_id):
            if not self.acting():
                return Ack(ok=False, code="NotLeader", reason="this informer no longer leads")
            if not self.ready:  # the ledger not restored yet: the assumption may be about to come back
                return Ack(ok=False, code="NotReady", reason="restoring the ledger")
            assumption = self.cache.assumed.get(req.pod_uid)
            if assumption is None or assumption.node != req.node_name:
                return Ack(ok=False, code="NotAssumed", reason="no such assumption")
            recorded = self.ledger.placement_of(req.pod_uid)
            if recorded is not None and req.placement_id and recorded.placement_id != req.placement_id:
                # a forget sent again (a binder skipping a placement it failed) after the pod was
                # forgotten and placed on the same node anew: not this placement's assumption
                return Ack(ok=False, code="NotAssumed", reason=f"assumed by {recorded.placement_id}")
            self.ledger.forget(req.pod_uid)
            await self.ledger.drop(req.pod_uid)
            return Ack()

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(5)
            expired = self.cache.expire()
            for uid in expired:
                pod = self.cache.pending.get(uid)
                if pod is not None:
                    self.publisher.emit_pending(PendingPodAction.ADD, pod, "assumption expired")
                await self.ledger.drop(uid)
            if expired:
                log.warning("forgot %d assumed pods never confirmed", len(expired))
                self.publisher.dirty.set()
            for commit_id in self.committer.settled():
                await self._drop_commit(commit_id)

    async def _restore(self) -> None:
        """Re-assume what a previous instance accepted (its ledger), and write the outcome of every
        commit it recorded (it may have died before writing it); a commit record goes once its
        outcome is written and none of its members is assumed any more."""
        records = await commit_records(self.commits_kv) if self.commits_kv is not None else {}
        await self.ledger.restore(set(records), self.committer.open)
        for commit_id, group in records.items():
            self.committer.open.setdefault(commit_id, set())  # every member bound or deleted meanwhile
            self.outcomes.committed(commit_id, group)

    # --- group commits (docs/gang.md) -----------------------------------------------------------------
    async def on_assume_group(self, req: AssumeGroupRequest, _msg: Msg) -> AssumeReply:
        since, started = time.time(), time.perf_counter()
        reply, placements = await self.committer.commit(req)
        # one assume_check span per member, under that member's ``assumed`` span (its traceparent in
        # the request, as a batch's items): the binders' spans of the member are its children
        members = [req.member(i) for i in range(len(req.placements))]
        self._trace_checks(members, [reply] * len(members), since, started)
        if not reply.accepted:
            log.debug("group commit of %s rejected: %s %s", req.group, reply.code, reply.reason)
            return reply
        for p in placements:
            pod = self.cache.assumed[p.pod_uid].pod.pod
            self.publisher.emit_pending(
                PendingPodAction.DELETE, msgspec.structs.replace(pod, spec=pod.spec), PodLifecycle.ASSUMED
            )
        self.publisher.dirty.set()
        for p in placements:  # committed: published whatever it takes (a successor re-publishes too)
            headers = self.tracer.headers(p.trace_id, Phase.ASSUME_CHECK)
            await self.publisher.publish_retrying(PLACEMENTS, p, msg_id=p.placement_id, headers=headers)
        # the group's outcome, written by this informer from the commit (a successor from the record)
        self.outcomes.committed(req.commit_id, req.group)
        return reply

    async def _write_outcome(self, namespace: str, name: str) -> bool:
        """PodGroupScheduled=True/Scheduled on a committed group (upstream's condition of a scheduled
        pod group, never regressed); True once settled."""
        assert self.reporter is not None
        return await self.reporter.write_pod_group_condition(namespace, name, ("True", REASON_SCHEDULED, ""))

    async def _record_commit(self, placements: list[Placement], commit: GangCommit) -> None:
        """Every member's ledger entry, then the commit record: the commit point. A record put that
        raises may be stored all the same (a nats-server paused past the timeout stores it when it
        resumes; a successor would then restore and publish the members): the members stay assumed
        and the record is put again under the same key until stored, so nothing is published before
        it is and nothing is forgotten that a successor would bind. It gives up (raises: the commit
        is rolled back) only once this informer no longer acts or a member's assumption expired;
        nothing is published then, and the entries stay for a successor to decide by the record."""
        assert self.commits_kv is not None
        try:
            await self.ledger.put_each(placements)
        except Exception:
            for p in placements:  # best effort: a successor drops entries without a commit record anyway
                await self.ledger.drop(p.pod_uid)
            raise
        key, delay = encode_token(commit.commit_id), 0.05
        while True:
            try:
                await self.commits_kv.put(key, commit)
                return
            except Exception as exc:
                if not self.acting() or any(p.pod_uid not in self.cache.assumed for p in placements):
                    raise
                log.warning("commit record %s not acknowledged (%r): putting it again", commit.commit_id, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _drop_commit(self, commit_id: str) -> None:
        if self.commits_kv is not None:
            with contextlib.suppress(Exception):
                await self.commits_kv.delete(encode_token(commit_id))

    # --- bootstrap -------------------------------------------------------------------------------
    async def on_snapshot_bootstrap(self, req: SnapshotBootstrapRequest, _msg: Msg) -> BootstrapReply:
        if not self.ready or self.bus is None or not self.acting():
            return BootstrapReply(error="cache is not synced yet")
        return await bootstrap.snapshot(self.publisher, req)

    async def on_pending_bootstrap(self, req: PendingPodsRequest, _msg: Msg) -> BootstrapReply:
        if not self.ready or self.bus is None or not self.acting():
            return BootstrapReply(error="cache is not synced yet")
        return await bootstrap.pending_pods(self.publisher, req)

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
