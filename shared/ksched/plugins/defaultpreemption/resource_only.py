"""Preemption dry runs without the framework when only resources can change the verdict.

When, for this pod and cycle, NodeResourcesFit is the only active Filter plugin whose verdict
depends on the pods of a node (the others are among NodeUnschedulable, NodeName, TaintToleration
and NodeAffinity, which read only the node and the pod) and no active PreFilter plugin has
AddPod/RemovePod extensions, then removing and re-adding victims can only change Fit's verdict.
The dry run of upstream ``SelectVictimsOnNode`` then reduces to integer arithmetic on the node's
requested amounts -- no NodeInfo or CycleState copies, no plugin calls per victim -- with exactly
the same victims, order and PDB violation count. Nodes with nominated pods of at least the
preemptor's priority, and custom victim policies, still take the framework path.

Two vectorized checks come before any per-node work (they need only NodeResourcesFit to be an
active filter): nodes with no pod of lower priority cannot have victims, and nodes where even the
removal of every lower-priority pod leaves too little cpu, memory, ephemeral-storage or pod room
for the preemptor cannot be candidates. Both read a per-pod table of the snapshot
(:class:`LowerPriorityIndex`) and the snapshot's columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.apimachinery.gomath import wrap64
from ksched.framework import interfaces as ifc
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interfaces import BoolArray, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, Resource
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.plugins.defaultpreemption.index import LowerPriorityIndex
from ksched.plugins.defaultpreemption.ordering import sort_by_importance
from ksched.plugins.defaultpreemption.pdb import CompiledPDB, split_by_pdb_violation
from ksched.plugins.defaultpreemption.victims import NO_VICTIMS_REASON, VictimSelection
from ksched.plugins.noderesources.fit import PRE_FILTER_STATE_KEY, Fit
from ksched.plugins.noderesources.fits import FitRequest

POD_INDEPENDENT_FILTERS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"})
"""In-tree Filter plugins whose verdict on a node does not depend on the pods running there."""
_BASE = {CPU: 0, MEMORY: 1, EPHEMERAL_STORAGE: 2}


def _in_tree(plugin: object) -> bool:
    return type(plugin).__module__.startswith("ksched.plugins.")


def active_filters(handle: Handle, state: CycleState) -> list[ifc.FilterPlugin] | None:
    """The Filter plugins a cycle runs (PreFilter skips removed), when the handle tells them."""
    plugins = getattr(handle, "plugins", None)
    filters = getattr(plugins, "filter", None)
    if filters is None:
        return None
    skip = state.skip_filter_plugins
    return [pl for pl in filters if pl.name not in skip]


def active_fit_request(handle: Handle, state: CycleState) -> tuple[Fit, FitRequest] | None:
    """NodeResourcesFit and the pod's FitRequest, when Fit is an active Filter plugin."""
    filters = active_filters(handle, state)
    if filters is None:
        return None
    fit = next((pl for pl in filters if isinstance(pl, Fit)), None)
    if fit is None:
        return None
    request = state.get(PRE_FILTER_STATE_KEY, FitRequest)
    return (fit, request) if request is not None else None


@dataclass(slots=True)
class PreCheck:
    """Per potential-node row: whether it has no lower-priority pod, and whether removing every
    lower-priority pod would still leave too little room (so it cannot be a candidate)."""

    no_victims: BoolArray
    cannot_fit: BoolArray


def resource_pre_check(
    index: LowerPriorityIndex, snapshot: Snapshot, request: FitRequest, priority: int, rows: Rows
) -> PreCheck:
    """Vectorized over ``rows``: the two shortcuts of the module docstring."""
    index.sync(snapshot)
    counts, lower = index.lower_priority_totals(priority, len(snapshot.nodes))
    cols = snapshot.columns
    alloc, req = cols.alloc[rows], cols.req[rows]
    lower_rows, count_rows = lower[rows], counts[rows]
    fits: BoolArray = req[:, 3] - count_rows + 1 <= alloc[:, 3]
    if not request.empty:
        for d, want in enumerate((request.milli_cpu, request.memory, request.ephemeral_storage)):
            if want > 0:
                fits &= alloc[:, d] - (req[:, d] - lower_rows[:, d]) >= want
    return PreCheck(no_victims=count_rows == 0, cannot_fit=~fits)


class ResourceOnlyDryRun:
    """Dry runs by arithmetic, valid for one pod and cycle (see the module docstring)."""

    def __init__(
        self,
        handle: Handle,
        state: CycleState,
        pod: PodInfo,
        fit: Fit,
        request: FitRequest,
        independents: Sequence[ifc.FilterPlugin],
    ) -> None:
        self.handle = handle
        self.state = state
        self.pod = pod
        self.request = request
        self._batch_ok: dict[int, bool] = {}
        self._independents = list(independents)
        self._per_node: list[ifc.FilterPlugin] = self._independents
        self._dims: list[tuple[int, str]] = []  # (base index or -1, scalar name)
        wants: list[int] = []
        if not request.empty:
            for name, want in ((CPU, request.milli_cpu), (MEMORY, request.memory)):
                if want > 0:
                    self._dims.append((_BASE[name], name))
                    wants.append(want)
            if request.ephemeral_storage > 0:
                self._dims.append((2, EPHEMERAL_STORAGE))
                wants.append(request.ephemeral_storage)
            for name, want in request.scalars:
                if want > 0 and name not in fit.ignored:
                    self._dims.append((-1, name))
                    wants.append(want)
        self._wants = wants
        self._cache_key = "defaultpreemption/amounts/" + ",".join(name for _, name in self._dims)

    @classmethod
    def detect(cls, handle: Handle, state: CycleState, pod: PodInfo) -> ResourceOnlyDryRun | None:
        """The fast dry run when it is exact for this pod and cycle, else None."""
        filters = active_filters(handle, state)
        fit_request = active_fit_request(handle, state)
        if filters is None or fit_request is None:
            return None
        fit, request = fit_request
        independents = [pl for pl in filters if pl is not fit]
        if not all(pl.name in POD_INDEPENDENT_FILTERS and _in_tree(pl) for pl in independents):
            return None
        pre_filters = getattr(getattr(handle, "plugins", None), "pre_filter", None)
        if pre_filters is None:
            return None
        skip = state.skip_filter_plugins
        if any(pl.name not in skip and isinstance(pl, ifc.PreFilterExtensions) for pl in pre_filters):
            return None
        return cls(handle, state, pod, fit, request, independents)

    # --- node checks -----------------------------------------------------------------------------
    def prepare(self, snapshot: Snapshot, rows: Rows) -> None:
        """Run the batch-capable pod-independent filters over ``rows`` at once."""
        ok = np.ones(len(rows), dtype=np.bool_)
        per_node: list[ifc.FilterPlugin] = []
        for pl in self._independents:
            if isinstance(pl, ifc.BatchFilterPlugin):
                ok &= pl.filter_batch(self.state, self.pod, snapshot, rows)
            else:
                per_node.append(pl)
        self._batch_ok = dict(zip(rows.tolist(), ok.tolist(), strict=True))
        self._per_node = per_node

    def _independents_pass(self, node: NodeInfo) -> bool:
        batch_ok = self._batch_ok.get(node.index)
        if batch_ok is False:
            return False
        plugins = self._per_node if batch_ok is not None else self._independents
        for pl in plugins:
            st = pl.filter(self.state, self.pod, node)
            if st is not None and st.code != Code.SUCCESS:
                return False
        return True

    def has_nominated_pods(self, node: NodeInfo) -> bool:
        """Nominated pods of at least the preemptor's priority: the framework path is needed."""
        pod = self.pod
        return any(
            pi.priority >= pod.priority and pi.uid != pod.uid
            for pi in self.handle.nominator.nominated_pods_for_node(node.name)
        )

    def _amounts(self, r: Resource) -> list[int]:
        base = (r.milli_cpu, r.memory, r.ephemeral_storage)
        return [base[i] if i >= 0 else r.scalar.get(name, 0) for i, name in self._dims]

    def _pod_amounts(self, pod: PodInfo) -> tuple[int, ...]:
        """The pod's requests in the checked dimensions, memoized on the PodInfo per dimension set."""
        cached = pod.cache.get(self._cache_key)
        if cached is None:
            cached = tuple(self._amounts(pod.requests))
            pod.cache[self._cache_key] = cached
        return cached  # type: ignore[return-value]

    # --- the dry run ---------------------------------------------------------------------------
    def select_victims(self, node: NodeInfo, pdbs: Sequence[CompiledPDB]) -> VictimSelection | None:
        """Victims on ``node``; a status when it has none; None when it cannot be a candidate
        (its exact status is then the framework path's, computed only if needed)."""
        priority = self.pod.priority
        potential = [pi for pi in node.pods if pi.priority < priority]
        if not potential:
            return VictimSelection(status=Status.unresolvable(NO_VICTIMS_REASON))
        if not self._independents_pass(node):
            return None
        alloc = self._amounts(node.allocatable)
        used = self._amounts(node.requested)
        amounts = {id(pi): self._pod_amounts(pi) for pi in potential}
        for removed in amounts.values():
            for d, amount in enumerate(removed):
                used[d] -= amount
        count = len(node.pods) - len(potential)
        allowed = node.allocatable.allowed_pod_number
        wants = self._wants

        dims = range(len(wants))

        def fits() -> bool:
            if count + 1 > allowed:
                return False
            for d in dims:  # noqa: SIM110 (a plain loop: this is the hot path)
                if wants[d] > wrap64(alloc[d] - used[d]):
                    return False
            return True

        if not fits():
            return None
        sort_by_importance(potential)
        violating, non_violating = split_by_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violations = 0
        for group_is_violating, group in ((True, violating), (False, non_violating)):
            for pi in group:
                back = amounts[id(pi)]
                for d, a in enumerate(back):
                    used[d] += a
                count += 1
                if fits():
                    continue
                for d, a in enumerate(back):
                    used[d] -= a
                count -= 1
                victims.append(pi)
                if group_is_violating:
                    num_violations += 1
        if violating and non_violating:
            sort_by_importance(victims)
        return VictimSelection(victims, num_violations)
