"""PreFilter / Filter / AddPod / RemovePod of PodTopologySpread (upstream ``filtering.go``).

PreFilter counts, per DoNotSchedule constraint, the matching pods in every topology domain of the
eligible nodes (nodes with all the constraints' topology keys that pass the constraint's node
inclusion policies). Filter then checks ``matchNum + selfMatch - globalMin <= maxSkew`` where the
global minimum is 0 while fewer than ``minDomains`` domains exist.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ksched.api.core import Node, Pod
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.plugins.podtopologyspread.common import (
    Constraint,
    count_matching,
    matches_inclusion_policies,
    node_has_all_keys,
)
from ksched.plugins.podtopologyspread.index import SpreadIndex, Topology, required_affinity

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]

PRE_FILTER_STATE_KEY = "PreFilterPodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two domains with the fewest matching pods (upstream ``criticalPaths``).

    ``first_num`` is the minimum right after PreFilter; AddPod/RemovePod update both entries the
    way upstream does, including its approximations.
    """

    __slots__ = ("first_num", "first_value", "second_num", "second_value")

    def __init__(self) -> None:
        self.first_value = ""
        self.first_num = MAX_INT32
        self.second_value = ""
        self.second_num = MAX_INT32

    def update(self, value: str, num: int) -> None:
        if value == self.first_value:
            self.first_num = num
        elif value == self.second_value:
            self.second_num = num
        elif num < self.first_num:
            self.second_value, self.second_num = self.first_value, self.first_num
            self.first_value, self.first_num = value, num
            return
        elif num < self.second_num:
            self.second_value, self.second_num = value, num
            return
        else:
            return
        if self.first_num > self.second_num:
            self.first_value, self.first_num, self.second_value, self.second_num = (
                self.second_value,
                self.second_num,
                self.first_value,
                self.first_num,
            )

    def clone(self) -> CriticalPaths:
        out = CriticalPaths()
        out.first_value, out.first_num = self.first_value, self.first_num
        out.second_value, out.second_num = self.second_value, self.second_num
        return out

    def as_tuple(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return (self.first_value, self.first_num), (self.second_value, self.second_num)


class Domains:
    """Matching pods per topology value of one constraint (upstream ``TpValueToMatchNum[i]``).

    Values are ids of the index's :class:`Topology`, so batch filtering reads counts by row.
    """

    __slots__ = ("counts", "domains", "paths", "present", "topology")

    def __init__(self, topology: Topology, counts: Int64Array, present: BoolArray) -> None:
        self.topology = topology
        self.counts = counts
        self.present = present
        self.domains = int(present.sum())
        self.paths = CriticalPaths()

    def init_paths(self) -> None:
        """Critical paths as upstream builds them from the finished counts."""
        ids = np.flatnonzero(self.present)
        values = self.topology.values
        empty = self.topology.value_ids.get("")
        if empty is not None and empty < len(self.present) and self.present[empty]:
            # An empty topology value collides with the paths' zero value: replay upstream exactly.
            for vid in ids.tolist():
                self.paths.update(values[vid], int(self.counts[vid]))
            return
        order = ids[np.argsort(self.counts[ids], kind="stable")][:2].tolist()
        for vid in order:
            self.paths.update(values[vid], int(self.counts[vid]))

    def count(self, value: str) -> int:
        vid = self.topology.value_ids.get(value)
        if vid is None or vid >= len(self.counts):
            return 0
        return int(self.counts[vid])

    def add(self, value: str, delta: int) -> None:
        vid = self.topology.intern(value)
        if vid >= len(self.counts):
            size = len(self.topology.values)
            counts = np.zeros(size, dtype=np.int64)
            counts[: len(self.counts)] = self.counts
            present = np.zeros(size, dtype=np.bool_)
            present[: len(self.present)] = self.present
            self.counts, self.present = counts, present
        if not self.present[vid]:
            self.present[vid] = True
            self.domains += 1
        self.counts[vid] += delta
        self.paths.update(value, int(self.counts[vid]))

    def counts_at(self, ids: npt.NDArray[np.int32]) -> Int64Array:
        """Counts for topology value ids (0 for ids unknown to this state, including -1)."""
        size = len(self.counts)
        if size == 0:
            return np.zeros(len(ids), dtype=np.int64)
        known = (ids >= 0) & (ids < size)
        return np.where(known, self.counts[np.clip(ids, 0, size - 1)], 0)

    def as_dict(self) -> dict[str, int]:
        values = self.topology.values
        return {values[vid]: int(self.counts[vid]) for vid in np.flatnonzero(self.present).tolist()}

    def clone(self) -> Domains:
        out = Domains.__new__(Domains)
        out.topology = self.topology
        out.counts = self.counts.copy()
        out.present = self.present.copy()
        out.domains = self.domains
        out.paths = self.paths.clone()
        return out


class PreFilterState:
    """What PreFilter computed: the constraints, their domain counts, and whether the pod matches each."""

    __slots__ = ("constraints", "domains", "self_match")

    def __init__(self, constraints: list[Constraint], domains: list[Domains], self_match: list[int]) -> None:
        self.constraints = constraints
        self.domains = domains
        self.self_match = self_match

    def min_match(self, i: int) -> int:
        """The global minimum for constraint ``i``: 0 while fewer than ``minDomains`` domains exist."""
        d = self.domains[i]
        if d.domains < self.constraints[i].min_domains:
            return 0
        return d.paths.first_num

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [d.clone() for d in self.domains], self.self_match)


def _eligible(index: SpreadIndex, pod: PodInfo, constraint: Constraint, keys_ok: BoolArray) -> BoolArray:
    """Rows counted for ``constraint``: all topology keys present, inclusion policies passed."""
    mask = keys_ok
    if constraint.honor_node_affinity:
        aff = index.affinity_mask(pod)
        if aff is not None:
            mask = mask & aff
    if constraint.honor_node_taints:
        taints = index.taints_mask(pod.pod)
        if taints is not None:
            mask = mask & taints
    return mask


def compute_state_indexed(index: SpreadIndex, pod: PodInfo, constraints: list[Constraint]) -> PreFilterState:
    """PreFilter state from the index (synced to the snapshot) over all its rows, vectorized."""
    keys_ok = index.has_keys([c.topology_key for c in constraints])
    ns = pod.namespace
    domains: list[Domains] = []
    for c in constraints:
        topo = index.topology(c.topology_key)
        eligible = _eligible(index, pod, c, keys_ok)
        ids = topo.ids[: index.size]
        weights = index.counts(ns, c)
        if not eligible.all():
            rows = np.flatnonzero(eligible)
            ids, weights = ids[rows], weights[rows]
        size = len(topo.values)
        present = np.zeros(size, dtype=np.bool_)
        present[ids] = True
        counts = np.bincount(ids, weights=weights, minlength=size).astype(np.int64)
        d = Domains(topo, counts, present)
        d.init_paths()
        domains.append(d)
    labels = pod.labels
    return PreFilterState(constraints, domains, [1 if c.matches(labels) else 0 for c in constraints])


def compute_state_direct(
    index: SpreadIndex, pod: PodInfo, constraints: list[Constraint], nodes: Sequence[NodeInfo]
) -> PreFilterState:
    """PreFilter state from an arbitrary node list, node by node (upstream's algorithm as written)."""
    topologies = [index.topology(c.topology_key) for c in constraints]
    domains = [Domains(t, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_)) for t in topologies]
    affinity = required_affinity(pod)
    ns = pod.namespace
    for ni in nodes:
        node = ni.node
        if node is None or not node_has_all_keys(node.metadata.labels, constraints):
            continue
        for c, d in zip(constraints, domains, strict=True):
            if not matches_inclusion_policies(c, pod.pod, node, affinity):
                continue
            d.add(node.metadata.labels[c.topology_key], count_matching(ni.pods, c, ns))
    for d in domains:
        d.paths = CriticalPaths()
        d.init_paths()
    labels = pod.labels
    return PreFilterState(constraints, domains, [1 if c.matches(labels) else 0 for c in constraints])


def filter_node(state: PreFilterState, node: Node) -> Status | None:
    """Upstream Filter for one node."""
    labels = node.metadata.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
        skew = state.domains[i].count(value) + state.self_match[i] - state.min_match(i)
        if skew > c.max_skew:
            return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


def filter_rows(state: PreFilterState, rows: Rows) -> BoolArray:
    """:func:`filter_node` for snapshot rows at once (the index topologies give each row's value)."""
    ok = np.ones(len(rows), dtype=np.bool_)
    for i, c in enumerate(state.constraints):
        d = state.domains[i]
        ids = d.topology.ids[rows]
        skew = d.counts_at(ids) + (state.self_match[i] - state.min_match(i))
        ok &= (ids >= 0) & (skew <= c.max_skew)
    return ok


def update_with_pod(
    state: PreFilterState, updated: Pod, preemptor: PodInfo, node: Node | None, delta: int
) -> None:
    """Upstream ``updateWithPod``: AddPod (+1) / RemovePod (-1) of ``updated`` on ``node``."""
    if updated.metadata.namespace != preemptor.namespace or node is None:
        return
    labels = node.metadata.labels
    if not node_has_all_keys(labels, state.constraints):
        return
    affinity = required_affinity(preemptor)
    pod_labels = updated.metadata.labels
    for i, c in enumerate(state.constraints):
        if not c.matches(pod_labels):
            continue
        if not matches_inclusion_policies(c, preemptor.pod, node, affinity):
            continue
        state.domains[i].add(labels[c.topology_key], delta)
