"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods (upstream
``defaultpreemption`` with the ``preemption`` evaluator, kube-scheduler 1.36.2).

PostFilter, for a pod no node fits:

1. the pod must be eligible: not ``preemptionPolicy: Never`` ("not eligible due to
   preemptionPolicy=Never."), and, when it already has a nominated node that its filters do not
   reject as UnschedulableAndUnresolvable, that node must not still hold a lower-priority pod being
   terminated by preemption ("not eligible due to a terminating pod on the nominated node.");
2. candidates come from dry runs on the Unschedulable nodes (:mod:`.candidates`, :mod:`.victims`,
   :mod:`.resource_only`), from a random offset, until ``max(minCandidateNodesPercentage% of them,
   minCandidateNodesAbsolute)`` candidates including one that violates no PodDisruptionBudget;
3. the node is picked by upstream's ordering (:mod:`.pick`).

It returns a :class:`PreemptionResult` nominating that node, with the victims and the
lower-priority pods nominated there (whose nominations must be cleared) and a success status; or
``(PostFilterResult(""), Unschedulable "preemption: 0/N nodes are available: ...")`` when no node
can be helped (the result clears a stale nomination); or ``(None, Unschedulable "preemption: not
eligible ...")``. Configured extenders that support preemption narrow the candidates before the
node is picked (upstream ``callExtenders``); that HTTP call is async, so with such extenders the
PostFilter runs as :meth:`DefaultPreemption.post_filter_async`. The workload-aware (pod group)
preemption of alpha gates is not modelled.

The plugin only decides. The effects -- nominating the preemptor, deleting the victims with the
``DisruptionTarget`` condition, clearing lower-priority nominations -- are carried out by a service
through :mod:`.effects` (see there); while they run, PreEnqueue keeps the preemptor out of the
active queue ("waiting for the preemption for this pod to be finished"), as SchedulerAsyncPreemption
does upstream.
"""

from __future__ import annotations

import random
from typing import Final

from ksched.api.core import Pod
from ksched.apimachinery.field import aggregate_message
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.extender import Victims
from ksched.framework.extender_calls import process_preemption_with_extenders
from ksched.framework.handle import Handle
from ksched.framework.interfaces import (
    AsyncPostFilterPlugin,
    EnqueueExtensions,
    PostFilterPlugin,
    PreEnqueuePlugin,
)
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import Diagnosis, NodeToStatus, PostFilterResult, fit_error_message
from ksched.framework.status import Code, Status
from ksched.plugins.args.types import DefaultPreemptionArgs
from ksched.plugins.args.validation import validate_default_preemption_args
from ksched.plugins.defaultpreemption.candidates import (
    Candidate,
    DryRun,
    calculate_num_candidates,
    nodes_for_status_code,
)
from ksched.plugins.defaultpreemption.effects import PreemptionExecutor
from ksched.plugins.defaultpreemption.index import LowerPriorityIndex
from ksched.plugins.defaultpreemption.pdb import PDBCache
from ksched.plugins.defaultpreemption.pick import pick_one_node_for_preemption
from ksched.plugins.defaultpreemption.result import PreemptionResult
from ksched.plugins.defaultpreemption.victims import (
    EligibleFn,
    MoreImportantFn,
    VictimPolicy,
    any_pod_eligible,
)

NAME: Final = "DefaultPreemption"
PREFIX: Final = "preemption: "
MSG_PREEMPT_NEVER: Final = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING_ON_NOMINATED: Final = "not eligible due to a terminating pod on the nominated node."
MSG_NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
MSG_NO_CANDIDATE: Final = "no candidate node for preemption"
MSG_WAITING: Final = "waiting for the preemption for this pod to be finished"
MSG_EXTENDERS_NEED_ASYNC: Final = (
    "extenders that support preemption are configured: run the PostFilter with post_filter_async"
)
PREEMPT_NEVER: Final = "Never"
DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
ATTEMPTED: Final = "DefaultPreemption/attempted"
"""The cycle-state key PostFilter writes at each call, whatever it finds: a scheduler counts its
preemption attempts from it (upstream's ``scheduler_preemption_attempts_total``, which the plugin
increments at each call)."""


def preemption_attempted(state: CycleState) -> bool:
    """Whether DefaultPreemption's PostFilter ran in the cycle of ``state``."""
    return state.get(ATTEMPTED, bool) is True


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted and marked ``DisruptionTarget=True`` with reason PreemptionByScheduler."""
    if pod.metadata.deletion_timestamp is None:
        return False
    for cond in pod.status.conditions:
        if cond.type == DISRUPTION_TARGET:
            return cond.status == "True" and cond.reason == REASON_PREEMPTION_BY_SCHEDULER
    return False


class DefaultPreemption:
    """The DefaultPreemption plugin: PostFilter, PreEnqueue and its queueing hint.

    ``is_eligible_pod`` and ``more_important_pod`` may be replaced, as upstream's
    ``IsEligiblePod`` / ``MoreImportantPod`` (victim eligibility beyond lower priority; victim
    importance, most important first). ``rng`` draws the dry-run offset: the handle's ``rng`` when
    it has one, else the one given here (seeded for reproducible results).
    """

    name = NAME

    def __init__(
        self,
        args: DefaultPreemptionArgs,
        handle: Handle,
        *,
        rng: random.Random | None = None,
        executor: PreemptionExecutor | None = None,
    ) -> None:
        errors = validate_default_preemption_args(args)
        if errors:
            raise ValueError("; ".join(errors))
        self.args = args
        self.handle = handle
        self._rng = rng if rng is not None else random.Random(0)
        self.executor = executor if executor is not None else PreemptionExecutor()
        self.is_eligible_pod: EligibleFn = any_pod_eligible
        self.more_important_pod: MoreImportantFn | None = None
        #: use the vectorized pre-check and resource-only dry runs (exact either way; off for comparison)
        self.shortcuts = True
        self._index = LowerPriorityIndex()
        self._pdbs = PDBCache()

    @property
    def rng(self) -> random.Random:
        own = getattr(self.handle, "rng", None)
        return own if isinstance(own, random.Random) else self._rng

    # --- PreEnqueue and queueing -----------------------------------------------------------------
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if self.executor.is_running(pod.metadata.uid, self._pod_gone):
            return Status.unresolvable(MSG_WAITING)
        return None

    def _pod_gone(self, uid: str) -> bool:
        entry = self.handle.snapshot.pod_locations.get(uid)
        return entry is None or entry[0].pod.metadata.deletion_timestamp is not None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod deletions may end a preemption; the plugins that rejected the pod decide requeueing."""
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), self.hint_pod_deleted)
        ]

    @staticmethod
    def hint_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
        return QueueingHint.QUEUE_SKIP

    # --- eligibility -------------------------------------------------------------------------------
    def policy(self) -> VictimPolicy:
        return VictimPolicy(self.is_eligible_pod, self.more_important_pod)

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``: (eligible, reason when not)."""
        spec = pod.pod.spec
        if spec.preemption_policy == PREEMPT_NEVER:
            return False, MSG_PREEMPT_NEVER
        nominated = pod.pod.status.nominated_node_name
        if nominated:
            code = nominated_node_status.code if nominated_node_status is not None else Code.SUCCESS
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node = self.handle.snapshot.node_map.get(nominated)
            if node is not None:
                policy = self.policy()
                for pi in node.pods:
                    if policy.allowed(node, pi, pod) and terminating_by_preemption(pi.pod):
                        return False, MSG_TERMINATING_ON_NOMINATED
        return True, ""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset into the potential nodes and how many candidates to look for."""
        num = calculate_num_candidates(
            num_nodes, self.args.min_candidate_nodes_percentage, self.args.min_candidate_nodes_absolute
        )
        return self.rng.randrange(num_nodes), num

    # --- PostFilter ------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        state.write(ATTEMPTED, True)
        return _prefixed(*self.preempt(state, pod, statuses))

    async def post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter consulting the extenders that support preemption."""
        state.write(ATTEMPTED, True)
        return _prefixed(*await self.preempt_async(state, pod, statuses))

    def preempt(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``Evaluator.Preempt`` (messages without the ``preemption:`` prefix)."""
        early, candidates = self._candidates(state, pod, statuses)
        if early is not None:
            return early
        if any(ext.supports_preemption() and ext.is_interested(pod.pod) for ext in self.handle.extenders):
            return None, Status.as_error(RuntimeError(MSG_EXTENDERS_NEED_ASYNC))
        return self._nominate(pod, candidates)

    async def preempt_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """:meth:`preempt` with the extenders narrowing the candidates (upstream ``callExtenders``)."""
        early, candidates = self._candidates(state, pod, statuses)
        if early is not None:
            return early
        candidates, status = await self.call_extenders(pod, candidates)
        if status is not None:
            return None, status
        return self._nominate(pod, candidates)

    def _candidates(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[tuple[PostFilterResult | None, Status | None] | None, list[Candidate]]:
        """Eligibility and the dry runs: (the outcome when preemption ends here, the candidates)."""
        nominated_status = statuses.get(pod.pod.status.nominated_node_name or "")
        eligible, reason = self.pod_eligible_to_preempt_others(pod, nominated_status)
        if not eligible:
            return (None, Status.unschedulable(reason)), []
        snapshot = self.handle.snapshot
        num_all = len(snapshot.nodes)
        if num_all == 0:
            return (None, Status.as_error(RuntimeError("no nodes available"))), []
        candidates, node_statuses, errors = self.find_candidates(state, pod, statuses)
        if errors and not candidates:
            return (None, Status(Code.ERROR, aggregate_message([e.message for e in errors]))), []
        if not candidates:
            node_statuses.absent = Status.unresolvable(MSG_NOT_HELPFUL)
            message = fit_error_message(num_all, Diagnosis(node_to_status=node_statuses))
            return (PostFilterResult(nominated_node_name=""), Status.unschedulable(message)), []
        return None, candidates

    async def call_extenders(
        self, pod: PodInfo, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status | None]:
        """The candidates the extenders that support preemption accept, with their victims."""
        extenders = self.handle.extenders
        if not extenders:
            return candidates, None
        victims = {c.node_name: Victims(list(c.victims), c.num_pdb_violations) for c in candidates}
        node_map = self.handle.snapshot.node_map
        answer, status = await process_preemption_with_extenders(extenders, pod.pod, victims, node_map)
        if status is not None:
            return [], status
        if answer is victims:
            return candidates, None
        last = len(self.handle.snapshot.nodes)
        out: list[Candidate] = []
        for name, v in answer.items():
            order = node_map[name].index if name in node_map else last
            out.append(Candidate(name, list(v.pods), v.num_pdb_violations, order))
        return out, None

    def _nominate(
        self, pod: PodInfo, candidates: list[Candidate]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Pick the node among ``candidates`` and describe the preemption there."""
        best = self.select_candidate(candidates)
        if best is None or not best.node_name:
            return None, Status.unschedulable(MSG_NO_CANDIDATE)
        lower_nominated = [
            pi
            for pi in self.handle.nominator.nominated_pods_for_node(best.node_name)
            if pi.priority < pod.priority
        ]
        result = PreemptionResult(
            nominated_node_name=best.node_name,
            victims=list(best.victims),
            lower_priority_nominated=lower_nominated,
            num_pdb_violations=best.num_pdb_violations,
        )
        return result, None

    def find_candidates(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[Status]]:
        """Dry-run the nodes preemption might help (upstream ``findCandidates``)."""
        snapshot = self.handle.snapshot
        potential = nodes_for_status_code(snapshot, statuses, Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus(), []
        pdbs = self._pdbs.compile(snapshot.objects.pod_disruption_budgets.values())
        offset, num = self.get_offset_and_num_candidates(len(potential))
        index = self._index if self.shortcuts else None
        dry_run = DryRun(self.handle, state, pod, pdbs, self.policy(), index)
        dry_run.prepare(potential)
        outcome = dry_run.run(potential, offset, num)
        return outcome.candidates, outcome.statuses, outcome.errors

    @staticmethod
    def select_candidate(candidates: list[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        return pick_one_node_for_preemption(candidates)


# The extension points DefaultPreemption implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &DefaultPreemption{}`` lines).
_PRE_ENQUEUE: type[PreEnqueuePlugin] = DefaultPreemption
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = DefaultPreemption
_POST_FILTER: type[PostFilterPlugin] = DefaultPreemption
_ASYNC_POST_FILTER: type[AsyncPostFilterPlugin] = DefaultPreemption


def _prefixed(
    result: PostFilterResult | None, status: Status | None
) -> tuple[PostFilterResult | None, Status | None]:
    """PostFilter messages read ``preemption: ...``."""
    if status is not None and status.message:
        return result, Status(status.code, PREFIX + status.message)
    return result, status


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args if args is not None else DefaultPreemptionArgs(), handle)
