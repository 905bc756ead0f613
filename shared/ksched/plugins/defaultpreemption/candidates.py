"""Finding preemption candidates (upstream ``findCandidates`` / ``DryRunPreemption``).

Potential nodes are those whose Filter status is Unschedulable (UnschedulableAndUnresolvable
nodes cannot be helped). They are dry-run in snapshot order starting at a random offset; the search
stops once it has at least one candidate that violates no PodDisruptionBudget and as many
candidates as the plugin asks for. Upstream runs the dry runs in parallel and so may look at a few
more nodes; ksched runs them in order, which is upstream's behaviour with parallelism 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.plugins.defaultpreemption.index import LowerPriorityIndex
from ksched.plugins.defaultpreemption.pdb import CompiledPDB
from ksched.plugins.defaultpreemption.resource_only import (
    PreCheck,
    ResourceOnlyDryRun,
    active_fit_request,
    resource_pre_check,
)
from ksched.plugins.defaultpreemption.victims import (
    NO_VICTIMS_REASON,
    VictimPolicy,
    VictimSelection,
    select_victims_on_node,
)


@dataclass(slots=True)
class Candidate:
    """A node the preemptor could run on once ``victims`` (most important first) are gone."""

    node_name: str
    victims: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0
    #: the node's row in the snapshot (the last tie-break of node picking)
    order: int = 0


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """``max(num_nodes * percentage / 100, absolute)``, at most ``num_nodes``."""
    n = num_nodes * percentage // 100
    return min(max(n, absolute), num_nodes)


def nodes_for_status_code(snapshot: Snapshot, statuses: NodeToStatus, code: Code) -> list[NodeInfo]:
    """Nodes (in snapshot order) whose status has ``code``; absent nodes take the absent status."""
    if statuses.absent.code == code:
        if not len(statuses):
            return list(snapshot.nodes)
        return [ni for ni in snapshot.nodes if statuses.get(ni.name).code == code]
    node_map = snapshot.node_map
    wanted = {name for name, st in statuses if st.code == code and name in node_map}
    return [ni for ni in snapshot.nodes if ni.name in wanted]


def _no_victim_error(node: NodeInfo) -> Status:
    return Status.as_error(RuntimeError(f'expected at least one victim pod on node "{node.name}"'))


@dataclass(slots=True)
class DryRunOutcome:
    """Candidates (non-violating first), the statuses of the nodes that are not, and the errors."""

    candidates: list[Candidate]
    statuses: NodeToStatus
    errors: list[Status]


class DryRun:
    """Dry-runs preemption of one pod over potential nodes (framework path and shortcuts)."""

    def __init__(
        self,
        handle: Handle,
        state: CycleState,
        pod: PodInfo,
        pdbs: Sequence[CompiledPDB],
        policy: VictimPolicy,
        index: LowerPriorityIndex | None = None,
    ) -> None:
        self.handle = handle
        self.state = state
        self.pod = pod
        self.pdbs = pdbs
        self.policy = policy
        self.index = index
        self.fast: ResourceOnlyDryRun | None = None
        self.pre_check: PreCheck | None = None
        self._pre_check_pos: dict[int, int] = {}

    def prepare(self, nodes: Sequence[NodeInfo]) -> None:
        """Set up the shortcuts (vectorized pre-check, resource-only dry runs) for ``nodes``."""
        if self.index is None or not nodes:
            return
        fit_request = active_fit_request(self.handle, self.state)
        if fit_request is None:
            return
        snapshot = self.handle.snapshot
        rows = np.fromiter((ni.index for ni in nodes), dtype=np.intp, count=len(nodes))
        self.pre_check = resource_pre_check(self.index, snapshot, fit_request[1], self.pod.priority, rows)
        self._pre_check_pos = {ni.index: i for i, ni in enumerate(nodes)}
        if self.policy.is_default:
            self.fast = ResourceOnlyDryRun.detect(self.handle, self.state, self.pod)
            if self.fast is not None:
                self.fast.prepare(snapshot, rows)

    def exact(self, node: NodeInfo) -> VictimSelection:
        """The framework path on copies of the node and the cycle state."""
        return select_victims_on_node(
            self.handle, self.state.clone(), self.pod, node.clone(), self.pdbs, self.policy
        )

    def evaluate(self, node: NodeInfo) -> VictimSelection | None:
        """The dry run of one node; None when it cannot be a candidate and its status can wait."""
        pre = self.pre_check
        if pre is not None:
            pos = self._pre_check_pos.get(node.index)
            if pos is not None:
                if pre.no_victims[pos]:
                    return VictimSelection(status=Status.unresolvable(NO_VICTIMS_REASON))
                if pre.cannot_fit[pos]:
                    return None
        fast = self.fast
        if fast is not None and not fast.has_nominated_pods(node):
            return fast.select_victims(node, self.pdbs)
        return self.exact(node)

    def run(self, nodes: Sequence[NodeInfo], offset: int, num_candidates: int) -> DryRunOutcome:
        """Dry-run ``nodes`` from ``offset`` (wrapping) until enough candidates are found."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[Status] = []
        deferred: list[NodeInfo] = []
        n = len(nodes)

        def record(node: NodeInfo, selection: VictimSelection) -> None:
            status = selection.status
            if status is None:
                if selection.victims:
                    return
                status = _no_victim_error(node)
            if status.code == Code.ERROR:
                errors.append(status)
            statuses.set(node.name, status)

        for i in range(n):
            node = nodes[(offset + i) % n]
            selection = self.evaluate(node)
            if selection is None:
                deferred.append(node)
                continue
            if selection.status is None and selection.victims:
                c = Candidate(node.name, selection.victims, selection.num_pdb_violations, node.index)
                target = non_violating if c.num_pdb_violations == 0 else violating
                if len(target) < num_candidates:
                    target.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            record(node, selection)
        if not non_violating and not violating:
            for node in deferred:
                selection = self.exact(node)
                if selection.status is None and selection.victims:  # the shortcuts never allow this
                    c = Candidate(node.name, selection.victims, selection.num_pdb_violations, node.index)
                    (non_violating if c.num_pdb_violations == 0 else violating).append(c)
                else:
                    record(node, selection)
        return DryRunOutcome(non_violating + violating, statuses, errors)
