"""Victim selection on one node by a dry run through the framework (upstream ``SelectVictimsOnNode``).

On a copy of the node and of the cycle state: remove every pod the preemptor may preempt (telling
the PreFilter plugins through their RemovePod extensions), check that the preemptor then passes
the Filter plugins (with nominated pods, as a real cycle), and add the pods back one at a time --
the PDB-violating ones first, then the others, each group from the most important down -- keeping
each one that still leaves room for the preemptor. The pods that could not be added back are the
victims, most important first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.plugins.defaultpreemption.gosort import go_sort_slice
from ksched.plugins.defaultpreemption.ordering import sort_by_importance
from ksched.plugins.defaultpreemption.pdb import CompiledPDB, split_by_pdb_violation

NO_VICTIMS_REASON = "No preemption victims found for incoming pod"

EligibleFn = Callable[[NodeInfo, PodInfo, PodInfo], bool]
"""(node, victim, preemptor) -> whether the victim may be preempted (besides lower priority)."""
MoreImportantFn = Callable[[PodInfo, PodInfo], bool]
"""(a, b) -> whether ``a`` is more important than ``b`` (``b`` is preempted first)."""


def any_pod_eligible(node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
    """The default eligibility: no restriction beyond lower priority."""
    return True


@dataclass(slots=True)
class VictimSelection:
    """Outcome of a dry run on one node: victims (most important first) and PDB violations, or a
    status saying why the node cannot be a candidate (``None`` means it can)."""

    victims: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0
    status: Status | None = None


@dataclass(slots=True)
class VictimPolicy:
    """What a preemption plugin may customise: victim eligibility and importance order."""

    is_eligible: EligibleFn = any_pod_eligible
    more_important: MoreImportantFn | None = None

    @property
    def is_default(self) -> bool:
        return self.is_eligible is any_pod_eligible and self.more_important is None

    def allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Upstream ``isPreemptionAllowed``: lower priority, then the custom eligibility."""
        return victim.priority < preemptor.priority and self.is_eligible(node, victim, preemptor)

    def sort(self, pods: list[PodInfo]) -> None:
        """Sort in place, most important first (as upstream's ``sort.Slice``)."""
        if self.more_important is None:
            sort_by_importance(pods)
        else:
            go_sort_slice(pods, self.more_important)


def _error(status: Status) -> Status:
    """A non-success extension status as an Error status (upstream ``AsStatus(status.AsError())``)."""
    if status.code == Code.ERROR:
        return status
    return Status.as_error(RuntimeError(status.message))


def select_victims_on_node(
    handle: Handle,
    state: CycleState,
    pod: PodInfo,
    node: NodeInfo,
    pdbs: Sequence[CompiledPDB],
    policy: VictimPolicy,
) -> VictimSelection:
    """Dry-run preemption on ``node`` and ``state``, which this mutates: pass copies."""
    potential = [pi for pi in node.pods if policy.allowed(node, pi, pod)]
    for pi in potential:
        node.remove_pod(pi.uid)
        st = handle.run_pre_filter_extension_remove_pod(state, pod, pi, node)
        if st is not None and st.code != Code.SUCCESS:
            return VictimSelection(status=_error(st))
    if not potential:
        return VictimSelection(status=Status.unresolvable(NO_VICTIMS_REASON))
    st = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
    if st is not None and st.code != Code.SUCCESS:
        return VictimSelection(status=st)
    policy.sort(potential)
    violating, non_violating = split_by_pdb_violation(potential, pdbs)
    victims: list[PodInfo] = []
    num_violations = 0
    for group_is_violating, group in ((True, violating), (False, non_violating)):
        for pi in group:
            node.add_pod(pi)
            st = handle.run_pre_filter_extension_add_pod(state, pod, pi, node)
            if st is not None and st.code != Code.SUCCESS:
                return VictimSelection(status=_error(st))
            fits = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
            if fits is None or fits.code == Code.SUCCESS:
                continue
            node.remove_pod(pi.uid)
            st = handle.run_pre_filter_extension_remove_pod(state, pod, pi, node)
            if st is not None and st.code != Code.SUCCESS:
                return VictimSelection(status=_error(st))
            victims.append(pi)
            if group_is_violating:
                num_violations += 1
    if violating and non_violating:
        policy.sort(victims)
    return VictimSelection(victims, num_violations)
