"""One scheduling cycle on the local snapshot replica: PreFilter … Permit, then a local
assumption so the next cycle already sees this placement (pipelining)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ksched.api.core import Pod
from ksched.framework.algorithm import NoNodesAvailable, ScheduleAlgorithm, ScheduleResult, SchedulingError
from ksched.framework.cycle_state import CycleState
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.record import CycleRecord
from ksched.framework.results import Diagnosis, FitError, PostFilterResult, chosen_node_failure
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.metrics.plugin_metrics import CycleSampler, sample_percent
from ksched.plugins.defaultpreemption.plugin import preemption_attempted
from ksched.plugins.dynamicresources.plugin import NAME as DYNAMIC_RESOURCES
from ksched_scheduler import metrics

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"


@dataclass
class CycleOutcome:
    """What a cycle decided; ``state`` is kept to Unreserve if the assume or binding fails."""

    kind: str
    pod: PodInfo
    fw: Framework
    state: CycleState
    node: str = ""
    message: str = ""
    plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    nominated_node: str = ""
    victims: list[PodInfo] = field(default_factory=list)
    #: what PostFilter returned (a PreemptionResult when DefaultPreemption nominated a node)
    post_filter: PostFilterResult | None = None
    #: a pod group member whose preemption ran in the group's cycle while the group waits for none:
    #: its victims are deleted all the same (upstream's PostFilter started their eviction), but it is
    #: not nominated (upstream's failure handler clears the nomination)
    evict_only: bool = False
    #: what Permit said (None: allowed; a Wait status: ``permit_waits`` holds the waiting plugins)
    permit: Status | None = None
    #: plugins whose Permit asked to wait, with their timeouts (the binder waits for them)
    permit_waits: dict[str, float] = field(default_factory=dict)
    feasible_nodes: int = 0
    evaluated_nodes: int = 0
    num_nodes: int = 0
    #: for the trace (rejections per plugin, top scores); the service drops them once traced
    diagnosis: Diagnosis | None = None
    result: ScheduleResult | None = None
    #: where the replica had the pod before the local assumption (pod, node): a pod leased again
    #: although placed (its lease expired before the queue heard of the placement); put back when
    #: the assumption is undone
    replaced: tuple[PodInfo, str] | None = None


class SchedulingCycle:
    """Runs cycles for every profile against one snapshot (the replica's)."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        snapshot: Snapshot,
        algorithm: ScheduleAlgorithm,
        nominator: Nominator,
        sampler: Callable[[], bool] | None = None,
        record: bool = False,
    ) -> None:
        self.frameworks = frameworks
        #: record what each plugin returned (kube-scheduler-simulator's results, --record-results)
        self.record = record
        self.snapshot = snapshot
        self.algorithm = algorithm
        self.nominator = nominator
        #: whether a cycle records plugin durations (upstream: 10 % of cycles, at random)
        self.sampler = sampler or CycleSampler(sample_percent())
        for fw in frameworks.values():
            fw.nominator = nominator
            fw.rng = algorithm.rng

    def run(self, pod: Pod, pod_group_cycle: bool = False) -> CycleOutcome:
        """One cycle; ``pod_group_cycle``: as a member of a pod group cycle (docs/gang.md)."""
        fw = self.frameworks[pod.spec.scheduler_name]
        pi = PodInfo(pod)
        state = self._state(pod_group_cycle)
        try:
            result = self.algorithm.schedule_pod(fw, state, pi)
        except FitError as fit:
            out = self._unschedulable(fw, pi, state, fit)
            if fw.plugins.post_filter:
                self._post_filtered(
                    out, fit, *fw.run_post_filter_plugins(state, pi, fit.diagnosis.node_to_status)
                )
            return out
        except NoNodesAvailable as exc:
            return CycleOutcome(UNSCHEDULABLE, pi, fw, state, message=str(exc))
        except SchedulingError as exc:
            return CycleOutcome(ERROR, pi, fw, state, message=exc.status.message)
        return self._scheduled(fw, pi, state, result)

    async def run_async(self, pod: Pod, pod_group_cycle: bool = False) -> CycleOutcome:
        """:meth:`run` for a profile with extenders: their HTTP calls (Filter, Prioritize, and
        ProcessPreemption in PostFilter) are awaited. Without extenders it is :meth:`run`."""
        fw = self.frameworks[pod.spec.scheduler_name]
        if not fw.extenders:
            return self.run(pod, pod_group_cycle)
        pi = PodInfo(pod)
        state = self._state(pod_group_cycle)
        try:
            result = await self.algorithm.schedule_pod_async(fw, state, pi)
        except FitError as fit:
            out = self._unschedulable(fw, pi, state, fit)
            if fw.plugins.post_filter:
                statuses = fit.diagnosis.node_to_status
                self._post_filtered(out, fit, *await fw.run_post_filter_plugins_async(state, pi, statuses))
            return out
        except NoNodesAvailable as exc:
            return CycleOutcome(UNSCHEDULABLE, pi, fw, state, message=str(exc))
        except SchedulingError as exc:
            return CycleOutcome(ERROR, pi, fw, state, message=exc.status.message)
        return self._scheduled(fw, pi, state, result)

    def _state(self, pod_group_cycle: bool) -> CycleState:
        state = CycleState()
        state.record_plugin_metrics = self.sampler()
        state.pod_group_cycle = pod_group_cycle
        if self.record:
            state.record = CycleRecord()
        return state

    @staticmethod
    def _unschedulable(fw: Framework, pi: PodInfo, state: CycleState, fit: FitError) -> CycleOutcome:
        out = CycleOutcome(UNSCHEDULABLE, pi, fw, state, plugins=set(fit.diagnosis.unschedulable_plugins))
        out.pending_plugins = set(fit.diagnosis.pending_plugins)
        out.diagnosis, out.num_nodes = fit.diagnosis, fit.num_all_nodes
        out.message = str(fit)
        return out

    @staticmethod
    def _post_filtered(out: CycleOutcome, fit: FitError, res: PostFilterResult | None, st: Status) -> None:
        """Record PostFilter's outcome (a nomination, its victims) and its message; count a preemption
        attempt when DefaultPreemption ran (upstream counts each call, whatever it found)."""
        if preemption_attempted(out.state):
            metrics.PREEMPTION_ATTEMPTS.inc()
        fit.diagnosis.post_filter_msg = st.message if st.code != Code.SUCCESS else ""
        out.post_filter = res
        if res is not None and res.nominated_node_name:
            out.nominated_node = res.nominated_node_name
            out.victims = list(res.victims)
        out.message = str(fit)

    def _scheduled(
        self, fw: Framework, pi: PodInfo, state: CycleState, result: ScheduleResult
    ) -> CycleOutcome:
        out = CycleOutcome(
            SCHEDULED,
            pi,
            fw,
            state,
            node=result.suggested_host,
            feasible_nodes=result.feasible_nodes,
            evaluated_nodes=result.evaluated_nodes,
            num_nodes=len(self.snapshot.nodes),
            result=result,
        )
        failure = self.reserve_and_permit(out, out.node)
        if failure is None:
            return out
        return self.failed_on(out, out.node, failure)

    def failed_on(self, out: CycleOutcome, host: str, failure: Status) -> CycleOutcome:
        """``out`` ended by Reserve or Permit's ``failure`` on ``host``, as upstream ends it: a
        rejection as the FitError of that one node (``0/1 nodes are available: 1 <reason>.``, the
        plugin among the rejectors), an error as it is."""
        return self._failed(out, chosen_node_failure(host, failure), _rejectors(failure))

    def reserve_and_permit(self, out: CycleOutcome, host: str) -> Status | None:
        """Assume ``out.pod`` on ``host`` locally, run Reserve and Permit (upstream ``assumeAndReserve``
        and Permit): None with ``out.permit``/``permit_waits`` set, or the failure (the assumption
        undone)."""
        fw, state, pi = out.fw, out.state, out.pod
        out.node = host
        self.assume_locally(out)
        reserve = fw.run_reserve_plugins_reserve(state, pi, host)
        if reserve is not None:
            self.forget_locally(out)
            return reserve
        permit, waits = fw.run_permit_plugins(state, pi, host)
        if permit is not None and permit.code != Code.WAIT:
            self.forget_locally(out)
            return permit
        out.permit, out.permit_waits = permit, waits
        return None

    @staticmethod
    def _failed(out: CycleOutcome, message: str, plugins: set[str]) -> CycleOutcome:
        out.kind = UNSCHEDULABLE if plugins else ERROR
        out.message = message
        out.plugins = plugins
        return out

    def assume_locally(self, out: CycleOutcome) -> None:
        """Count the placement in our snapshot at once, so the next cycle sees it."""
        out.replaced = self.snapshot.pod_locations.get(out.pod.uid)
        self.snapshot.add_local(out.pod.placed_on(out.node), out.node)
        self.nominator.remove(out.pod.uid)

    def bound_locally(self, out: CycleOutcome) -> None:
        """The snapshot shows the placement bound, so the binder's PreBind wrote what Reserve put in
        flight: DynamicResources' allocations end (as upstream's PreBind ends them)."""
        dra = out.fw.plugin(DYNAMIC_RESOURCES)
        if dra is not None:
            dra.bound_elsewhere(out.state, out.pod)

    def forget_locally(self, out: CycleOutcome) -> None:
        """Undo our local assumption (assume rejected or unanswered, reserve failed, binding failed),
        running Unreserve. The snapshot is undone only if no delta placed or removed the pod since
        (:meth:`Snapshot.undo_local`); a pod the replica had placed before goes back where it was.
        Either way the replica keeps every placement the informer has: the informer's check of later
        decisions reads only what changed after their snapshot, so a placement missing here (an
        assume whose answer timed out after its delta arrived, or one refused because another
        replica put the pod on the same node) would let a pod it rules out be accepted."""
        self.snapshot.undo_local(out.pod.uid, out.node, out.replaced)
        out.fw.run_reserve_plugins_unreserve(out.state, out.pod, out.node)


def _rejectors(status: Status) -> set[str]:
    """The plugin a rejection names (an error names none: the attempt failed, nobody rejected it)."""
    return {status.plugin} if status.is_rejected() else set()
