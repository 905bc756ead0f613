"""The scheduler service on NATS: a serial scheduling cycle on a local snapshot replica.

Pops leased pods from the queue, schedules each on the replica (its own decisions count at once,
so it never waits for an assume reply before the next cycle), asks the informer to assume the
placement, and reports the outcome to the queue; renews its leases, follows the nominations and
answers the binder's Unreserve. Several replicas may run at once.

Its bookkeeping and decisions are :class:`~ksched_scheduler.core.SchedulerCore`'s (assume numbering,
placements, leases held, placements kept for Unreserve); this module runs the loops and moves the
messages. :class:`~ksched_scheduler.server.SchedulerServer` is the process around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

import msgspec
from nats.aio.msg import Msg

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import Pod
from ksched.api.scheduling import REASON_SCHEDULER_ERROR
from ksched.bus import endpoints
from ksched.bus.connect import Bus
from ksched.bus.messages import (
    Ack,
    AssumeBatchRequest,
    AssumeGroupRequest,
    AssumeReply,
    AssumeRequest,
    DoneBatchRequest,
    DoneOutcome,
    DoneRequest,
    LeasedPod,
    LeaseRenewRequest,
    Placement,
    PopRequest,
    UnreserveRequest,
)
from ksched.cache.assume_check import spread_slack
from ksched.cache.follower import ReplicaFollower
from ksched.cache.replica import SnapshotReplica
from ksched.client.rest import Client
from ksched.config.profile import build_frameworks
from ksched.config.types import KubeSchedulerConfiguration
from ksched.extenders import HTTPExtenders
from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.nominator import Nominator
from ksched.framework.podgroup_cycle import GroupResult
from ksched.framework.podinfo import PodInfo
from ksched.logcontext import bind, pod_logging, set_node, unbind
from ksched.metrics.plugin_metrics import observe_plugin
from ksched.reporting.reporter import PodRef, Reporter
from ksched.reporting.result_writer import ResultWriter
from ksched.reporting.simulator_results import result_annotations
from ksched.service import gc_pacing
from ksched.service.faults import fault_point
from ksched.service.tasks import TaskGroup
from ksched.tracing import Phase
from ksched.tracing.context import TRACEPARENT
from ksched.tracing.export import service_tracer
from ksched.tracing.tracer import Tracer
from ksched_scheduler import metrics
from ksched_scheduler.batching import Batcher
from ksched_scheduler.core import (
    ASSUMED,
    COMMITTED,
    REJECTED,
    STALLED,
    Basis,
    GroupPlaced,
    Prepared,
    SchedulerCore,
    behind,
    ended,
    is_gang,
    leased_batches,
    needed_generation,
    needed_nominations,
    pod_group_result,
    refusal,
)
from ksched_scheduler.cycle import ERROR, SCHEDULED, UNSCHEDULABLE, CycleOutcome, SchedulingCycle
from ksched_scheduler.dra import claims_writer
from ksched_scheduler.group_cycle import GroupCycle
from ksched_scheduler.nominations import NOMINATIONS_WAIT, NominationTracker, follow_nominations
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.pop_size import PopSize
from ksched_scheduler.preemption import PreemptionRunner, status_nomination
from ksched_scheduler.tracing import trace_assume, trace_cycle

log = logging.getLogger(__name__)

BEFORE_ASSUME = "before-assume"
"""Fault point (:mod:`ksched.service.faults`) per pod: right before a replica sends the assume of a
pod it decided (``stop``: a test changes the cluster between decision and assume, then continues it
with SIGCONT)."""
AFTER_GROUP_COMMIT = "scheduler-after-group-commit"
"""Fault point (:mod:`ksched.service.faults`): as soon as the informer accepted a group
commit, before the replica ends its members' leases (docs/gang.md: the group's outcome is written
all the same)."""


class SchedulerService:
    """One replica's loops on ``bus`` (given to ``start()``), its state in ``core``. Its tasks and
    tracer are the process's (:class:`~ksched_scheduler.server.SchedulerServer` shares them); so
    are ``api``, ``reporter`` and ``results``, set before ``start()`` when the API is reachable."""

    def __init__(
        self,
        options: SchedulerOptions,
        config: KubeSchedulerConfiguration,
        *,
        tasks: TaskGroup | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.options = options
        self.config = config
        common = options.common
        self.identity = common.identity
        self.core = SchedulerCore(self.identity)
        self.tasks = tasks or TaskGroup()
        self.tracer = tracer or service_tracer("scheduler", common)
        self.nominator = Nominator()
        self.nominations = NominationTracker(self.nominator, self._placed)
        self.preemptions: PreemptionRunner | None = None
        self.scheduler_names = [p.scheduler_name or "" for p in config.profiles]
        self.bus: Bus | None = None
        self.api: Client | None = None
        self.reporter: Reporter | None = None
        self.results: ResultWriter | None = None
        self.follower: ReplicaFollower | None = None
        self.cycle: SchedulingCycle | None = None
        #: pod group cycles (GenericWorkload), on ``cycle``
        self.group_cycle: GroupCycle | None = None
        self.algorithm = ScheduleAlgorithm(config.percentage_of_nodes_to_score or 0, seed=options.seed)
        self.extenders = HTTPExtenders(config.extenders)
        self._assume_slots = asyncio.Semaphore(options.max_inflight_assumes)
        self._assumes: Batcher[AssumeRequest, AssumeReply] = Batcher("assume-batch", self._send_assumes)
        self._dones: Batcher[DoneRequest, Ack] = Batcher("done-batch", self._send_dones)
        self.pop_size = PopSize(options.batch, options.pop_window)

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self, bus: Bus) -> None:
        """Follow the snapshot on ``bus``, serve Unreserve, start the loops."""
        self.bus = bus
        self.follower = ReplicaFollower(self.bus, self.identity)
        self.follower.on_change = self._on_replica_change
        self.build_cycle(self.follower.replica)
        await self.bus.subscribe(endpoints.UNRESERVE.to(self.identity), self.on_unreserve)
        self.tasks.spawn("replica", self.follower.run, restart=True)
        self.tasks.spawn("schedule", self._schedule_loop, restart=True)
        self.tasks.spawn("renew", self._renew_loop, restart=True)
        if every := gc_pacing.interval():
            self.tasks.spawn("gc", lambda: gc_pacing.full_collections(every), restart=True)
        self.preemptions = PreemptionRunner(self.api, self.reporter, self.nominations, self.tasks)
        self.tasks.spawn("nominations", self._follow_nominations, restart=True, pause=2.0)

    def build_cycle(self, replica: SnapshotReplica) -> SchedulingCycle:
        """The scheduling cycle on ``replica``'s snapshot: the profiles' frameworks, observed and
        with the extenders, and the replica's callbacks (also what the in-process harness runs); the
        pod group cycle on top of it with GenericWorkload."""
        frameworks = build_frameworks(
            self.config, replica.snapshot, nominator=self.nominator, gates=self.options.common.feature_gates
        )
        for name, fw in frameworks.items():
            claims_writer(fw, self.api, lambda coro: self.tasks.job("dra-claim-write", coro))
            fw.observe = _observer(name)
            fw.observe_plugin = observe_plugin
            fw.extenders = self.extenders.extenders
            metrics.PLUGIN_EVALUATIONS.track(name, fw.evaluations)
        replica.on_bound = self._bound
        self.cycle = SchedulingCycle(
            frameworks, replica.snapshot, self.algorithm, self.nominator, record=self.options.record_results
        )
        if self.options.common.feature_gates.enabled(GENERIC_WORKLOAD):
            self.group_cycle = GroupCycle(self.cycle)
        return self.cycle

    # --- the loop --------------------------------------------------------------------------------
    async def _schedule_loop(self) -> None:
        assert self.bus is not None and self.follower is not None
        while True:
            await self.follower.synced.wait()
            request = PopRequest(
                scheduler_id=self.identity,
                scheduler_names=self.scheduler_names,
                max_pods=self.pop_size.next(),
                wait_seconds=0.5,
            )
            try:
                reply = await self.bus.request(endpoints.QUEUE_POP, request, timeout=5)
            except Exception as exc:
                log.debug("pop failed: %s", exc)
                await asyncio.sleep(0.2)
                continue
            started = time.perf_counter()
            if reply.pods:
                metrics.POP_PODS.observe(len(reply.pods))
            for batch in leased_batches(reply.pods, group_cycles=self.group_cycle is not None):
                for leased in batch:
                    self.core.hold(leased)
                if batch[0].group:
                    await self._schedule_group(batch)
                    continue
                pending = batch[0].pod
                token = bind(
                    f"{pending.namespace}/{pending.name}", "", pending.scheduler_name, batch[0].trace_id
                )
                try:  # log lines of this pod's cycle (and of the tasks it spawns) name it
                    await self._schedule_one(batch[0])
                finally:
                    unbind(token)
            self.pop_size.spent(time.perf_counter() - started, len(reply.pods))

    async def _prepared(self, leased: LeasedPod) -> Prepared | None:
        """The leased pod, once the replica has caught up with its newest event; None (and the
        attempt ended) for a pod that does not decode, or when the replica is still behind it."""
        return (await self._prepared_all([leased]))[0]

    async def _prepared_all(self, batch: list[LeasedPod]) -> list[Prepared | None]:
        """:meth:`_prepared` for pods leased together: the replica waits once, up to 2 s, for the
        newest event of them all; still behind, it gives every one of them back (:meth:`_behind`).
        A pod the replica then has placed (assumed or bound) is not scheduled: its attempt ends as
        scheduled."""
        assert self.follower is not None
        replica = self.follower.replica
        arrived, wait_started = time.time(), time.perf_counter()
        epoch, seen = replica.epoch, replica.generation
        needed = needed_generation(batch, epoch)
        if needed > seen:
            await self._catch_up(epoch, needed)
            why = behind(epoch, seen, needed, replica.epoch, replica.generation)
            if why is not None:
                stalled = why == STALLED
                if stalled:
                    self.follower.request_resync()
                for leased in batch:
                    await self._behind(leased, stalled=stalled)
                return [None] * len(batch)
        nominated = needed_nominations(batch, epoch)
        if nominated and not await self.nominations.reached(epoch, nominated, NOMINATIONS_WAIT):
            log.warning(
                "nominations: not applied through feed seq %d after %.0f s (at %s); deciding anyway",
                nominated,
                NOMINATIONS_WAIT,
                self.nominations.position,
            )
        waited = time.perf_counter() - wait_started
        prepared: list[Prepared | None] = []
        for leased in batch:
            try:
                pod = msgspec.json.decode(leased.pod.pod, type=Pod)
            except DECODE_ERRORS as exc:
                await self._done(leased, DoneOutcome.ERROR, message=f"undecodable pod: {exc}")
                prepared.append(None)
                continue
            placed = replica.snapshot.location(pod.metadata.uid)
            if placed is not None:
                # Assumed or bound already (a placement accepted after this lease's attempt gave
                # up on its answer, or the lease expired first): skipped, as upstream's
                # skipPodSchedule skips an assumed pod. Deciding it again would move it off its
                # node in this replica's snapshot while that assume is in flight, and the
                # informer, which reads only the changes after a decision's snapshot, would then
                # accept other decisions that ignore it there.
                log.debug(
                    "pod %s/%s is already on node %s: skipped",
                    pod.metadata.namespace,
                    pod.metadata.name,
                    placed,
                )
                await self._done(leased, DoneOutcome.SCHEDULED, node=placed)
                prepared.append(None)
                continue
            self.nominations.observe(leased.pod)
            prepared.append(Prepared(leased, pod, arrived, waited))
        return prepared

    def _traced(self, p: Prepared, outcome: CycleOutcome, elapsed: float) -> None:
        assert self.follower is not None
        replica = self.follower.replica
        trace_cycle(
            self.tracer,
            p.leased,
            outcome,
            epoch=replica.epoch,
            generation=replica.generation,
            arrived=p.arrived,
            waited=p.waited,
            started=p.arrived + p.waited,
            elapsed=elapsed,
        )
        metrics.ALGORITHM_DURATION.observe(elapsed)

    async def _schedule_one(self, leased: LeasedPod) -> None:
        assert self.cycle is not None
        p = await self._prepared(leased)
        if p is None:
            return
        log.debug("Attempting to schedule pod (attempt %d)", leased.attempts)
        basis = self._basis()
        started = time.perf_counter()
        try:
            outcome = await self.cycle.run_async(p.pod) if self.extenders else self.cycle.run(p.pod)
        except ValueError as exc:  # a pod the cycle cannot read (a quantity that does not parse...)
            log.warning("cannot schedule pod: %s", exc)
            await self._done(leased, DoneOutcome.ERROR, message=f"unreadable pod: {exc}")
            return
        elapsed = time.perf_counter() - started
        self._traced(p, outcome, elapsed)
        if outcome.kind == SCHEDULED:
            set_node(outcome.node)
            await self._assume_slots.acquire()
            self.tasks.job("assume", self._assume(leased, outcome, elapsed, self.core.next_seq(basis)))
            return
        await self._failed(leased, outcome, elapsed)

    # --- pod groups (docs/gang.md) ------------------------------------------------------------------
    async def _schedule_group(self, batch: list[LeasedPod]) -> None:
        """One pod group cycle over the members the queue leased together, then their outcomes: a
        gang's placements in one group commit, a basic group's one by one; the PodGroup's condition."""
        assert self.group_cycle is not None
        ready = [p for p in await self._prepared_all(batch) if p is not None]
        if not ready:
            return
        ready = [ready[i] for i in GroupCycle.order([(p.pod, p.leased.initial_attempt_at) for p in ready])]
        group = batch[0].group
        log.debug("Attempting to schedule pod group %s (%d pods)", group, len(ready))
        basis = self._basis()
        started = time.perf_counter()
        pods = [p.pod for p in ready]
        cycle = self.group_cycle
        try:
            result = await cycle.run_async(pods) if self.extenders else cycle.run(pods)
        except ValueError as exc:  # a member the cycle cannot read (a quantity that does not parse...)
            log.warning("cannot schedule pod group %s: %s", group, exc)
            for p in ready:
                await self._done(p.leased, DoneOutcome.ERROR, message=f"unreadable pod group member: {exc}")
            return
        metrics.POD_GROUP_ALGORITHM_DURATION.observe(time.perf_counter() - started)
        elapsed = (time.perf_counter() - started) / len(ready)
        tried = {m.record.pod.uid: m for m in result.members}
        binding: list[tuple[LeasedPod, CycleOutcome]] = []
        for p in ready:
            member = tried.get(p.pod.metadata.uid)
            outcome = member.record if member is not None else self._untried(p.pod, result)
            self._traced(p, outcome, elapsed)
            status = result.member_status(member) if member is not None else result.status
            if status is None:
                binding.append((p.leased, outcome))
            else:
                await self._failed(p.leased, ended(outcome, member, status, result), elapsed)
        placed = await self._place_group(group, binding, elapsed, basis)
        if placed == REJECTED:
            return  # a gang's commit was rejected: its members are retried at once
        label = pod_group_result(result)
        profile = ready[0].pod.spec.scheduler_name
        metrics.POD_GROUP_ATTEMPTS.labels(label, profile).inc()
        metrics.POD_GROUP_ATTEMPT_DURATION.labels(label, profile).observe(time.perf_counter() - started)
        if self.reporter is not None:
            namespace, _, name = group.partition("/")
            uid = self._pod_group_uid(group)
            if placed == COMMITTED:  # the commit's outcome is the informer's to write
                self.reporter.pod_group_committed(namespace, name, uid=uid)
            else:
                self.reporter.pod_group_scheduled(namespace, name, *result.condition(), uid=uid)

    def _untried(self, pod: Pod, result: GroupResult[CycleOutcome]) -> CycleOutcome:
        """The outcome of a member the cycle never reached (it stopped on an error)."""
        assert self.cycle is not None
        fw = self.cycle.frameworks[pod.spec.scheduler_name]
        message = result.status.message if result.status is not None else ""
        return CycleOutcome(ERROR, PodInfo(pod), fw, CycleState(), message=message)

    async def _place_group(
        self, group: str, binding: list[tuple[LeasedPod, CycleOutcome]], elapsed: float, basis: Basis
    ) -> GroupPlaced:
        """Hand the members that go to binding to the informer: a gang's in one group commit
        (COMMITTED, or REJECTED: its members are retried, no PodGroup condition for this attempt), a
        basic group's one by one (ASSUMED; also when no member goes to binding)."""
        if not binding:
            return ASSUMED
        if self._is_gang(group):
            accepted = await self._commit_group(group, binding, elapsed, basis)
            return COMMITTED if accepted else REJECTED
        for leased, outcome in binding:  # a basic group: each member on its own, in cycle order
            await self._assume_slots.acquire()
            self.tasks.job("assume", self._assume(leased, outcome, elapsed, self.core.next_seq(basis)))
        return ASSUMED

    def _pod_group_uid(self, group: str) -> str:
        """The uid of PodGroup ``group`` (namespace/name) in the replica; "" when it has none."""
        assert self.follower is not None
        found = self.follower.replica.snapshot.objects.pod_groups.get(group)
        return found.metadata.uid if found is not None else ""

    def _is_gang(self, group: str) -> bool:
        assert self.follower is not None
        gangs = self.options.common.feature_gates.enabled(GANG_SCHEDULING)
        return is_gang(gangs, self.follower.replica.snapshot.objects.pod_groups.get(group))

    async def _commit_group(
        self, group: str, binding: list[tuple[LeasedPod, CycleOutcome]], elapsed: float, basis: Basis
    ) -> bool:
        """Every member's placement in one ``AssumeGroupRequest``: accepted all or none. The members
        are consecutive assumes of the session, in the order the group cycle decided them."""
        assert self.bus is not None
        seqs = [self.core.next_seq(basis).seq for _ in binding]
        placements = [self.core.placement(leased, outcome, basis) for leased, outcome in binding]
        request = AssumeGroupRequest(
            group=group,
            commit_id=uuid.uuid4().hex,
            placements=placements,
            session=self.core.session,
            seq=seqs[0],
            basis_from=basis.first_unanswered,
            spread_slacks=[self._spread_slack(outcome) for _, outcome in binding],
            traceparents=[
                _traceparent(self.tracer.headers(leased.trace_id, Phase.ASSUMED)) for leased, _ in binding
            ],
        )
        sent, sent_at = time.perf_counter(), time.time()
        try:
            reply = await self.bus.request(endpoints.ASSUME_GROUP, request, timeout=10)
        except Exception as exc:
            reply = AssumeReply(accepted=False, code="Unreachable", reason=str(exc))
            self.core.unreachable()  # as for a single assume without an answer
        finally:
            self.core.answered(seqs)
        rtt = time.perf_counter() - sent
        if reply.accepted:
            fault_point(AFTER_GROUP_COMMIT)
        else:
            log.debug("group commit of %s rejected: %s %s", group, reply.code, reply.reason)
        for (leased, outcome), placement in zip(binding, placements, strict=True):
            await self._settle(leased, outcome, placement, reply, elapsed, sent_at, rtt)
        return reply.accepted

    async def _failed(self, leased: LeasedPod, outcome: CycleOutcome, elapsed: float) -> None:
        """End an attempt that placed nothing: metrics, PodScheduled/FailedScheduling, preemption."""
        pod = outcome.pod.pod
        profile = pod.spec.scheduler_name
        result = "unschedulable" if outcome.kind == UNSCHEDULABLE else "error"
        log.debug("Unable to schedule pod (%s): %s", result, outcome.message)
        metrics.ATTEMPTS_OF(result, profile).inc()
        metrics.ATTEMPT_DURATION.labels(result, profile).observe(elapsed)
        for plugin in outcome.plugins:
            metrics.UNSCHEDULABLE_PODS.labels(plugin, profile).inc()
        ref = PodRef(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid)
        status_written = None
        if self.reporter is not None and outcome.kind == UNSCHEDULABLE:
            nomination = status_nomination(outcome.pod, outcome.post_filter, outcome.evict_only)
            status_written = self.reporter.unschedulable(ref, outcome.message, nomination, controller=profile)
        elif self.reporter is not None:  # an error: said as upstream's, a nomination cleared
            clear = "" if pod.status.nominated_node_name else None
            self.reporter.unschedulable(
                ref, outcome.message, clear, controller=profile, reason=REASON_SCHEDULER_ERROR
            )
        if self.results is not None and outcome.state.record is not None:
            self.results.write(ref.namespace, ref.name, ref.uid, result_annotations(outcome.state.record))
        last_victim = ""
        if outcome.kind == UNSCHEDULABLE and self.preemptions is not None:
            # nominations now, victims deleted in the background once the pod's status is written
            last_victim = self.preemptions.after_failure(outcome, after=status_written)
        await self._done(
            leased,
            DoneOutcome.UNSCHEDULABLE if outcome.kind == UNSCHEDULABLE else DoneOutcome.ERROR,
            message=outcome.message,
            plugins=sorted(outcome.plugins),
            pending=sorted(outcome.pending_plugins),
            nominated=outcome.nominated_node,
            span=Phase.UNSCHEDULABLE if outcome.kind == UNSCHEDULABLE else Phase.ERROR,
            last_victim=last_victim,
        )

    def _basis(self) -> Basis:
        """What a decision about to be made is based on (:meth:`SchedulerCore.basis`): the replica's
        generation and this session's unanswered placements."""
        assert self.follower is not None
        replica = self.follower.replica
        return self.core.basis(replica.epoch, replica.generation, replica.loads)

    def _spread_slack(self, outcome: CycleOutcome) -> int | None:
        assert self.follower is not None
        node_info = self.follower.replica.snapshot.node_map.get(outcome.node)
        return spread_slack(outcome.state, node_info) if node_info is not None else None

    async def _assume(self, leased: LeasedPod, outcome: CycleOutcome, elapsed: float, basis: Basis) -> None:
        assert self.bus is not None
        try:
            fault_point(BEFORE_ASSUME, outcome.pod.key)
            placement = self.core.placement(leased, outcome, basis)
            slack = self._spread_slack(outcome)  # outside the request's try: a bug here is not "Unreachable"
            sent, sent_at = time.perf_counter(), time.time()
            request = AssumeRequest(
                placement=placement,
                session=self.core.session,
                seq=basis.seq,
                basis_from=basis.first_unanswered,
                spread_slack=slack,
                traceparent=_traceparent(self.tracer.headers(leased.trace_id, Phase.ASSUMED)),
            )
            try:
                reply = await self._assumes.submit(request)
            except Exception as exc:
                reply = AssumeReply(accepted=False, code="Unreachable", reason=str(exc))
                self.core.unreachable()
            finally:
                self.core.answered([basis.seq])
            await self._settle(
                leased, outcome, placement, reply, elapsed, sent_at, time.perf_counter() - sent
            )
        finally:
            self._assume_slots.release()

    async def _settle(
        self,
        leased: LeasedPod,
        outcome: CycleOutcome,
        placement: Placement,
        reply: AssumeReply,
        elapsed: float,
        sent_at: float,
        rtt: float,
    ) -> None:
        """The informer's answer to a placement: scheduled, or undone and retried."""
        assert self.follower is not None and self.cycle is not None
        metrics.ASSUME_LATENCY.observe(rtt)
        trace_assume(
            self.tracer,
            leased,
            outcome.node,
            placement.placement_id,
            placement.snapshot_generation,
            reply,
            sent=sent_at,
            rtt=rtt,
        )
        profile = outcome.pod.pod.spec.scheduler_name
        if reply.accepted:
            metrics.ATTEMPTS_OF("scheduled", profile).inc()
            metrics.ATTEMPT_DURATION.labels("scheduled", profile).observe(elapsed)
            self.core.remember(placement.placement_id, leased, outcome, time.monotonic())
            log.debug(
                "Pod assumed on node (%d/%d nodes feasible, %d evaluated)",
                outcome.feasible_nodes,
                outcome.num_nodes,
                outcome.evaluated_nodes,
            )
            # no done(scheduled): the queue ends the attempt when the informer's feed says assumed
            self.core.release(leased.lease_id)
            return
        metrics.ASSUME_CONFLICTS.labels(reply.code or "unknown").inc()
        self.cycle.forget_locally(outcome)
        refused = refusal(reply)
        if refused.resync:
            self.follower.request_resync()
        log.debug(
            "assume of %s on %s rejected: %s %s", outcome.pod.key, outcome.node, reply.code, reply.reason
        )
        if refused.catch_up:
            # Retry on a snapshot that has what made the filters fail, so the next cycle sees it
            # (and, if the pod fits nowhere, reports upstream's FailedScheduling for it).
            await self._catch_up(reply.epoch, reply.generation)
        await self._done(leased, DoneOutcome.RETRY, message=refused.message, span=Phase.ASSUME_CONFLICT)

    async def _behind(self, leased: LeasedPod, *, stalled: bool) -> None:
        """The replica did not reach the pod's newest event in time: give the pod back (no backoff)
        rather than decide on a snapshot older than what the queue knew of the cluster (a verdict of
        unschedulable there waits for an event that already happened). ``stalled``: no delta moved
        it while it waited, its stream is lost (the caller has it bootstrap again)."""
        assert self.follower is not None
        log.warning(
            "replica at generation %d, the newest event of %s/%s at %d: %s",
            self.follower.replica.generation,
            leased.pod.namespace,
            leased.pod.name,
            leased.min_generation,
            "no delta arrived for 2s; re-bootstrapping" if stalled else "still catching up; pod given back",
        )
        await self._done(leased, DoneOutcome.RETRY, message="snapshot replica behind the pod's newest event")

    async def _catch_up(self, epoch: str, generation: int, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout`` s) until the replica has ``generation`` of ``epoch``."""
        assert self.follower is not None
        await self.follower.reached(epoch, generation, timeout)

    def _bound(self, uid: str) -> None:
        """The snapshot shows the pod bound: the binder is done with its placement (no Unreserve will
        come for it), what its PreBind wrote is no longer in flight here, and it is nominated nowhere."""
        self.nominations.gone(uid)
        outcome = self.core.bound(uid)
        if outcome is not None and self.cycle is not None:
            self.cycle.bound_locally(outcome)

    async def _done(
        self,
        leased: LeasedPod,
        outcome: DoneOutcome,
        *,
        node: str = "",
        message: str = "",
        plugins: list[str] | None = None,
        pending: list[str] | None = None,
        nominated: str = "",
        span: str = "",
        last_victim: str = "",
    ) -> None:
        """End the lease; ``span``: the traced phase that ended the attempt (the OpenTelemetry export
        hands it to the queue as the parent of its ``requeued``); ``last_victim``: the preemption the
        attempt started deletes it last (``DoneRequest.preemption_last_victim``)."""
        assert self.bus is not None
        self.core.release(leased.lease_id)
        headers = self.tracer.headers(leased.trace_id, span) if span else None
        request = DoneRequest(
            lease_id=leased.lease_id,
            scheduler_id=self.identity,
            pod_uid=leased.pod.uid,
            namespace=leased.pod.namespace,
            name=leased.pod.name,
            outcome=outcome,
            node_name=node,
            unschedulable_plugins=plugins or [],
            pending_plugins=pending or [],
            message=message,
            nominated_node_name=nominated,
            trace_id=leased.trace_id,
            traceparent=_traceparent(headers),
            preemption_last_victim=last_victim,
        )
        try:
            await self._dones.submit(request)
        except Exception as exc:
            log.warning("done for %s/%s failed (%s)", leased.pod.namespace, leased.pod.name, exc)

    async def _send_assumes(self, requests: list[AssumeRequest]) -> list[AssumeReply]:
        """The assumes of one loop turn in one request (a lone one as an ``AssumeRequest``)."""
        assert self.bus is not None
        trace_id = requests[0].placement.trace_id
        if len(requests) == 1:
            reply = await self.bus.request(
                endpoints.ASSUME, requests[0], timeout=5, trace_id=trace_id, headers=_headers(requests[0])
            )
            return [reply]
        batch = await self.bus.request(
            endpoints.ASSUME_BATCH, AssumeBatchRequest(items=requests), timeout=5, trace_id=trace_id
        )
        return batch.replies

    async def _send_dones(self, requests: list[DoneRequest]) -> list[Ack]:
        """The lease ends of one loop turn in one request, tried three times."""
        assert self.bus is not None
        trace_id = requests[0].trace_id
        for attempt in range(3):
            try:
                if len(requests) == 1:
                    ack = await self.bus.request(
                        endpoints.QUEUE_DONE,
                        requests[0],
                        timeout=5,
                        trace_id=trace_id,
                        headers=_headers(requests[0]),
                    )
                else:
                    ack = await self.bus.request(
                        endpoints.QUEUE_DONE_BATCH,
                        DoneBatchRequest(items=requests),
                        timeout=5,
                        trace_id=trace_id,
                    )
                return [ack] * len(requests)
            except Exception as exc:
                log.warning("done for %d pod(s) failed (%s), attempt %d", len(requests), exc, attempt + 1)
                if attempt == 2:
                    raise
                await asyncio.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")

    async def _renew_loop(self) -> None:
        assert self.bus is not None
        while True:
            await asyncio.sleep(2.0)
            held = list(self.core.held)
            if not held:
                continue
            with contextlib.suppress(Exception):
                reply = await self.bus.request(
                    endpoints.QUEUE_RENEW,
                    LeaseRenewRequest(scheduler_id=self.identity, lease_ids=held),
                    timeout=2,
                )
                for lease_id in reply.expired:
                    self.core.release(lease_id)

    # --- nominations ------------------------------------------------------------------------------
    def _placed(self, uid: str) -> bool:
        return self.follower is not None and self.follower.replica.snapshot.location(uid) is not None

    async def _follow_nominations(self) -> None:
        """Nominations made anywhere (the pending pods' nominatedNodeName), once the replica is synced."""
        assert self.bus is not None and self.follower is not None
        await self.follower.synced.wait()
        replica = self.follower.replica
        await follow_nominations(
            self.bus, self.nominations, self.scheduler_names, self.identity, lambda: replica.epoch
        )

    # --- binder callbacks ------------------------------------------------------------------------
    async def on_unreserve(self, req: UnreserveRequest, _msg: Msg) -> Ack:
        """The binder failed this placement: undo Reserve and our local assumption."""
        assert self.cycle is not None
        entry = self.core.unreserve(req.placement_id)
        if entry is None:
            return Ack(ok=False, code="Unknown", reason="placement not held by this replica")
        leased = entry.leased
        with pod_logging(
            f"{req.namespace}/{req.name}", req.node_name, leased.pod.scheduler_name, leased.trace_id
        ):
            self.cycle.forget_locally(entry.outcome)
        return Ack()

    def _on_replica_change(self) -> None:
        if self.follower is not None:
            metrics.REPLICA_LAG.set(self.follower.last_delta_lag)
            metrics.REPLICA_GENERATION.set(self.follower.replica.generation)


def _observer(profile: str) -> Any:
    def observe(point: str, status: str, seconds: float) -> None:
        metrics.EXTENSION_POINT_DURATION.labels(point, status, profile).observe(seconds)

    return observe


def _traceparent(headers: dict[str, str] | None) -> str:
    """The ``traceparent`` of ``headers`` ('' without the OpenTelemetry export)."""
    return (headers or {}).get(TRACEPARENT, "")


def _headers(request: AssumeRequest | DoneRequest) -> dict[str, str] | None:
    """A lone request's ``traceparent`` as the header the receiver reads (batches carry it per item)."""
    return {TRACEPARENT: request.traceparent} if request.traceparent else None
