"""The simulation loop: pending pods in queue order, one scheduling cycle each, every
placement assumed before the next pod; PostFilter (preemption) applied as if it succeeded."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ksched.api.core import Pod
from ksched.api.resource import ResourceClaim
from ksched.api.scheduling import POD_GROUP_SCHEDULED
from ksched.framework.algorithm import NoNodesAvailable, ScheduleAlgorithm, ScheduleResult, SchedulingError
from ksched.framework.cycle_state import CycleState
from ksched.framework.extender import EXTENDER_NAME
from ksched.framework.nominator import Nominator
from ksched.framework.podgroup_cycle import MemberAttempt, run_pod_group
from ksched.framework.podgroups import PodGroupTable, group_key
from ksched.framework.podinfo import PodInfo
from ksched.framework.record import CycleRecord
from ksched.framework.results import FitError, PostFilterResult, QueuedPodInfo, chosen_node_failure
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import with_node_name
from ksched.framework.status import Code, Status
from ksched.plugins.dynamicresources.claims import claim_summary
from ksched.simulate.cluster import Cluster


@dataclass
class PodOutcome:
    """What ``ksched simulate`` reports for one pending pod."""

    pod: str
    node: str | None
    filter: dict[str, dict[str, object]] = field(default_factory=dict)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    message: str | None = None
    gated_by: str | None = None
    nominated: str | None = None
    victims: list[str] | None = None
    error: str | None = None
    #: the pod's ResourceClaims once bound: ``ns/name`` -> {"node", "devices"}
    claims: dict[str, dict[str, object]] = field(default_factory=dict)
    #: for a member of a pod group (GenericWorkload): the group and its outcome (docs/gang.md)
    pod_group: dict[str, object] | None = None
    #: what each plugin returned (``--output simulator`` only)
    record: CycleRecord | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "pod": self.pod,
            "node": self.node,
            "filter": self.filter,
            "scores": self.scores,
            "totals": self.totals,
            "message": self.message,
            "claims": self.claims,
        }
        if self.gated_by is not None:
            out["gatedBy"] = self.gated_by
        if self.victims is not None:
            out["nominated"] = self.nominated
            out["victims"] = self.victims
        if self.error is not None:
            out["error"] = self.error
        if self.pod_group is not None:
            out["podGroup"] = self.pod_group
        return out


def _timestamp(pod: Pod) -> float:
    ts = pod.metadata.creation_timestamp
    if not ts:
        return 0.0
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def queue_order(pods: list[Pod], fw: Framework) -> list[Pod]:
    """Pending pods as the active queue would pop them (the profile's QueueSort, stable by file order)."""
    if not fw.plugins.queue_sort:
        return list(pods)
    less = fw.queue_sort_less()
    infos = [QueuedPodInfo(PodInfo(p), timestamp=_timestamp(p)) for p in pods]

    def compare(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        if less(a, b):
            return -1
        if less(b, a):
            return 1
        return 0

    ordered = sorted(infos, key=functools.cmp_to_key(compare))
    return [qi.pod_info.pod for qi in ordered]


class Simulation:
    """Runs the pending pods of a cluster through the frameworks of their profiles."""

    def __init__(
        self,
        cluster: Cluster,
        frameworks: Mapping[str, Framework],
        algorithm: ScheduleAlgorithm,
        group_scheduling: bool = False,
        record: bool = False,
    ) -> None:
        self.cluster = cluster
        #: record what each plugin returned in each outcome (kube-scheduler-simulator's results)
        self.record = record
        self.frameworks = frameworks
        self.algorithm = algorithm
        self.nominator = Nominator()
        #: GenericWorkload: the pending members of a pod group are scheduled together (docs/gang.md)
        self.group_scheduling = group_scheduling
        groups = PodGroupTable(
            [*cluster.pending, *(pi.pod for pi, _ in cluster.snapshot.pod_locations.values())]
        )
        for fw in frameworks.values():
            fw.nominator = self.nominator
            fw.rng = algorithm.rng  # --seed also fixes DefaultPreemption's dry-run offset
            fw.pod_group_manager = groups  # every pod of the file, as upstream's cache knows them
        for pod in cluster.pending:
            if pod.status.nominated_node_name:
                self.nominator.add(PodInfo(pod), pod.status.nominated_node_name)

    def run(self, advance: Callable[[int], None] | None = None) -> list[PodOutcome]:
        """Every pending pod in queue order; ``advance(1)`` after each (a progress bar). With group
        scheduling (GenericWorkload), the pending members of a pod group are scheduled together, with
        upstream's pod group cycle, where the first of them comes."""
        ordered = self._ordered()
        outcomes: list[PodOutcome | None] = [None] * len(ordered)
        for batch in self._batches(ordered):
            pods = [ordered[i] for i in batch]
            done = self.schedule_group(pods) if self._is_group(pods) else [self.schedule_one(pods[0])]
            for i, outcome in zip(batch, done, strict=True):
                outcomes[i] = outcome
            if advance is not None:
                advance(len(batch))
        return [o for o in outcomes if o is not None]

    async def run_async(self, advance: Callable[[int], None] | None = None) -> list[PodOutcome]:
        """:meth:`run` consulting the frameworks' extenders (their HTTP calls are awaited; a pod group's
        cycle runs without them)."""
        ordered = self._ordered()
        outcomes: list[PodOutcome | None] = [None] * len(ordered)
        for batch in self._batches(ordered):
            pods = [ordered[i] for i in batch]
            done = (
                self.schedule_group(pods)
                if self._is_group(pods)
                else [await self.schedule_one_async(pods[0])]
            )
            for i, outcome in zip(batch, done, strict=True):
                outcomes[i] = outcome
            if advance is not None:
                advance(len(batch))
        return [o for o in outcomes if o is not None]

    def _batches(self, ordered: list[Pod]) -> list[list[int]]:
        """Positions in ``ordered``, one per batch, but a pod group's members (same profile) together
        at the place of the first (upstream pops them with it)."""
        batches: list[list[int]] = []
        where: dict[tuple[str, str, str], list[int]] = {}
        for i, pod in enumerate(ordered):
            key = group_key(pod) if self.group_scheduling else None
            if key is None:
                batches.append([i])
                continue
            slot = (*key, pod.spec.scheduler_name)
            if slot not in where:
                where[slot] = []
                batches.append(where[slot])
            where[slot].append(i)
        return batches

    def _is_group(self, batch: list[Pod]) -> bool:
        return self.group_scheduling and group_key(batch[0]) is not None

    # --- pod groups (docs/gang.md) ------------------------------------------------------------------
    def schedule_group(self, members: list[Pod]) -> list[PodOutcome]:
        """The pending members of one pod group (their outcomes in the same order), as upstream's pod
        group cycle places them: gated ones stay gated; the others are tried in order on the snapshot;
        all placed or none (a gang)."""
        fw = self.frameworks[members[0].spec.scheduler_name]
        started = [self._start(fw, pod) for pod in members]
        ready = [pi for _, pi in started if pi is not None]
        outcomes = [out for out, _ in started]
        if not ready:
            return outcomes
        with self.nominator.in_flight(pi.uid for pi in ready):  # popped together upstream
            result = run_pod_group(ready, lambda pi: self._group_member(fw, pi))
        namespace, name = group_key(members[0]) or ("", "")
        status, reason, message = result.condition()
        summary = {
            "name": f"{namespace}/{name}",
            "scheduled": result.status is None,
            "condition": {
                "type": POD_GROUP_SCHEDULED,
                "status": status,
                "reason": reason,
                "message": message,
            },
        }
        tried = {id(m.pod): m for m in result.members}
        for position, (_, pi) in enumerate(started):
            if pi is None:
                continue
            member = tried.get(id(pi))
            out = member.record if member is not None else outcomes[position]
            ended = result.member_status(member) if member is not None else result.status
            if ended is not None:
                host, out.node = out.node, None
                out.message = ended.message
                if member is not None and result.nominated_where_assumed(member) and host:
                    out.nominated, out.victims = host, out.victims or []
                if member is not None and result.evicts_unnominated(member):
                    out.nominated = None  # the victims, evicted already, stay reported
                    self.nominator.remove(pi.uid)
            elif member is not None:
                self.nominator.remove(pi.uid)
            fw.waiting_pods.remove(pi.uid)
            outcomes[position] = out
        for out in outcomes:
            out.pod_group = summary
        return outcomes

    def _group_member(self, fw: Framework, pi: PodInfo) -> MemberAttempt[PodOutcome]:
        """One member's attempt: scheduled, assumed in the snapshot, reserved and asked Permit; a
        member that only a preemption would place is assumed on the nominated node (its victims stay)."""
        out = PodOutcome(pod=pi.key, node=None)
        state = CycleState()
        state.pod_group_cycle = True
        host: str | None = None
        try:
            result = self.algorithm.schedule_pod(fw, state, pi, explain=True)
            self._record_result(out, result)
            host = result.suggested_host
        except FitError as fit:
            self._record_rejections(out, fit)
            if fw.plugins.post_filter:
                post, status = fw.run_post_filter_plugins(state, pi, fit.diagnosis.node_to_status)
                fit.diagnosis.post_filter_msg = status.message if status.code != Code.SUCCESS else ""
                if post is not None and post.nominated_node_name:
                    out.nominated, out.victims = post.nominated_node_name, sorted(v.key for v in post.victims)
                    host = post.nominated_node_name
            out.message = str(fit)
        except (NoNodesAvailable, SchedulingError) as exc:
            _failed(out, exc)
            code = Code.ERROR if out.error is not None else Code.UNSCHEDULABLE
            return MemberAttempt(pi, Status(code, out.message or ""), out)
        preempting = out.nominated is not None
        if host is None:
            return MemberAttempt(pi, Status(Code.UNSCHEDULABLE, out.message or ""), out)
        failure = fw.run_reserve_plugins_reserve(state, pi, host)
        permit: Status | None = None
        if failure is None:
            fw.snapshot.add_pod(with_node_name(pi.pod, host))
            permit, waits = fw.run_permit_plugins(state, pi, host)
            if permit is not None and permit.code != Code.WAIT:
                fw.snapshot.remove_pod(pi.uid)
                failure = permit
            elif permit is not None:
                fw.waiting_pods.add(pi, waits)
        if failure is not None:  # as upstream's podGroupPodSchedulingAlgorithm ends the member
            fw.run_reserve_plugins_unreserve(state, pi, host)
            out.message = chosen_node_failure(host, failure)
            if failure.is_rejected():
                status = Status(failure.code, out.message).with_plugin(failure.plugin)
            else:
                status = Status.as_error(out.message)
            if preempting:  # the nomination cleared; the victims, evicted already, stay reported
                out.nominated = None
                self.nominator.remove(pi.uid)
            return MemberAttempt(pi, status, out)
        out.node = None if preempting else host

        def revert() -> None:
            fw.waiting_pods.remove(pi.uid)
            fw.snapshot.remove_pod(pi.uid)
            fw.run_reserve_plugins_unreserve(state, pi, host)

        needs = Status(Code.UNSCHEDULABLE, out.message or "") if preempting else None
        return MemberAttempt(pi, needs, out, permit, preempting, revert)

    def _ordered(self) -> list[Pod]:
        return queue_order(self.cluster.pending, next(iter(self.frameworks.values())))

    def schedule_one(self, pod: Pod) -> PodOutcome:
        fw = self.frameworks[pod.spec.scheduler_name]
        out, pi = self._start(fw, pod)
        if pi is None:
            return out
        state = self._state(out)
        try:
            result = self.algorithm.schedule_pod(fw, state, pi, explain=True)
        except FitError as fit:
            self._record_rejections(out, fit)
            if fw.plugins.post_filter:
                statuses = fit.diagnosis.node_to_status
                self._apply_post_filter(fw, pi, fit, out, *fw.run_post_filter_plugins(state, pi, statuses))
            out.message = str(fit)
            return out
        except (NoNodesAvailable, SchedulingError) as exc:
            return _failed(out, exc)
        return self._scheduled(fw, state, pi, out, result)

    async def schedule_one_async(self, pod: Pod) -> PodOutcome:
        """:meth:`schedule_one` with extenders: their scores appear under their names, the nodes they
        reject under the plugin ``Extender`` (with the extender's name)."""
        fw = self.frameworks[pod.spec.scheduler_name]
        if not fw.extenders:
            return self.schedule_one(pod)
        out, pi = self._start(fw, pod)
        if pi is None:
            return out
        state = self._state(out)
        try:
            result = await self.algorithm.schedule_pod_async(fw, state, pi, explain=True)
        except FitError as fit:
            self._record_rejections(out, fit)
            if fw.plugins.post_filter:
                statuses = fit.diagnosis.node_to_status
                post = await fw.run_post_filter_plugins_async(state, pi, statuses)
                self._apply_post_filter(fw, pi, fit, out, *post)
            out.message = str(fit)
            return out
        except (NoNodesAvailable, SchedulingError) as exc:
            return _failed(out, exc)
        return self._scheduled(fw, state, pi, out, result)

    def _state(self, out: PodOutcome) -> CycleState:
        state = CycleState()
        if self.record:
            state.record = out.record = CycleRecord()
        return state

    @staticmethod
    def _start(fw: Framework, pod: Pod) -> tuple[PodOutcome, PodInfo | None]:
        """The outcome to fill and the pod, or no pod when a PreEnqueue plugin gates it."""
        pi = PodInfo(pod)
        out = PodOutcome(pod=pi.key, node=None)
        gate = fw.run_pre_enqueue_plugins(pod)
        if gate is not None:
            out.gated_by = gate.plugin
            out.message = gate.message or None
            return out, None
        return out, pi

    @staticmethod
    def _record_result(out: PodOutcome, result: ScheduleResult) -> None:
        """The filtered-out nodes and the scores of a successful cycle."""
        diagnosis = result.diagnosis
        if diagnosis is not None:
            for node, st in diagnosis.node_to_status:
                out.filter[node] = _filter_entry(st, diagnosis.extender_rejections.get(node))
        out.scores, out.totals = result.scores, result.totals

    def _scheduled(
        self, fw: Framework, state: CycleState, pi: PodInfo, out: PodOutcome, result: ScheduleResult
    ) -> PodOutcome:
        self._record_result(out, result)
        host = result.suggested_host
        reserve = fw.run_reserve_plugins_reserve(state, pi, host)
        if reserve is not None:
            fw.run_reserve_plugins_unreserve(state, pi, host)
            out.message = chosen_node_failure(host, reserve)
            return out
        out.node = host
        self.nominator.remove(pi.uid)
        fw.snapshot.add_pod(with_node_name(pi.pod, host))
        self._apply_pre_bind(fw, state, pi, out)
        return out

    @staticmethod
    def _apply_pre_bind(fw: Framework, state: CycleState, pi: PodInfo, out: PodOutcome) -> None:
        """Objects as PreBind would leave them (a claim allocated and reserved for the pod) go into
        the snapshot, as if binding succeeded; the pod's claims are reported."""
        for pl in fw.plugins.pre_bind:
            after = getattr(pl, "objects_after_pre_bind", None)
            if after is None:
                continue
            for obj in after(state, pi):
                fw.snapshot.objects.put(obj)
                if isinstance(obj, ResourceClaim):
                    out.claims[obj.key] = claim_summary(obj)

    def _record_rejections(self, out: PodOutcome, fit: FitError) -> None:
        nts = fit.diagnosis.node_to_status
        by_extender = fit.diagnosis.extender_rejections
        for ni in self.cluster.snapshot.nodes:
            out.filter[ni.name] = _filter_entry(nts.get(ni.name), by_extender.get(ni.name))

    def _apply_post_filter(
        self,
        fw: Framework,
        pi: PodInfo,
        fit: FitError,
        out: PodOutcome,
        result: PostFilterResult | None,
        status: Status,
    ) -> None:
        fit.diagnosis.post_filter_msg = status.message if status.code != Code.SUCCESS else ""
        if result is None or not result.nominated_node_name:
            if any(pl.name == "DefaultPreemption" for pl in fw.plugins.post_filter):
                out.nominated, out.victims = None, []
            return
        out.nominated = result.nominated_node_name
        out.victims = sorted(v.key for v in result.victims)
        snapshot = fw.snapshot
        for victim in result.victims:
            snapshot.remove_pod(victim.uid)
        snapshot.add_pod(with_node_name(pi.pod, result.nominated_node_name))


def _filter_entry(status: Status, extender: str | None) -> dict[str, object]:
    """A rejected node as reported: the plugin and its reasons; an extender's rejection names the
    pseudo plugin ``Extender`` (as upstream's unschedulable plugins do) and the extender."""
    entry: dict[str, object] = {"plugin": status.plugin, "reasons": list(status.all_reasons())}
    if extender is not None:
        entry["plugin"] = EXTENDER_NAME
        entry["extender"] = extender
    return entry


def _failed(out: PodOutcome, exc: NoNodesAvailable | SchedulingError) -> PodOutcome:
    if isinstance(exc, SchedulingError):
        out.error = exc.status.message
        out.message = exc.status.message
    else:
        out.message = str(exc)
    return out
