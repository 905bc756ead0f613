"""The shared scoring core of NodeResourcesFit and BalancedAllocation (upstream
``resource_allocation.go``): which node amounts are compared with which pod requests.

For each configured resource the node contributes (allocatable, allocated), where allocated
is the node's non-zero requested cpu/memory (``use_requested=False``, NodeResourcesFit) or its
plain requested amounts (BalancedAllocation); ephemeral-storage and scalar resources always
use the plain requested amounts. A scalar resource the pod does not request, and any resource
the node does not offer, is left out (all three entries 0) so strategies skip it. An extended
resource a DeviceClass backs that the node does not offer counts the node's matching devices
instead (``dra``, see ``dra_scoring``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec
import numpy as np

from ksched.api.core import Pod
from ksched.apimachinery.gomath import Int64Array, Int64Rows, wrap64
from ksched.framework.columns import NodeColumns, row_runs, take_rows
from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_scalar_resource,
    pod_requests,
    some_container_lacks,
)
from ksched.framework.snapshot import Snapshot
from ksched.plugins.noderesources.dra_scoring import DRAScoring

NON_ZERO_DEFAULTS: Mapping[str, int] = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
"""Requests a container leaves out count as 100m cpu / 200Mi memory when scoring (non-zero requests)."""


class Gathered:
    """The snapshot columns' rows of the scored nodes, gathered once per cycle and shared by
    NodeResourcesFit's and BalancedAllocation's scores (same pod, same nodes, same snapshot)."""

    __slots__ = ("alloc", "generation", "nonzero", "req", "rows", "state")

    def __init__(self, columns: NodeColumns, rows: Rows, state: object = None, generation: int = -1) -> None:
        runs = row_runs(rows, columns.size)
        self.rows = rows
        self.state = state
        self.generation = generation
        self.alloc: Int64Array = take_rows(columns.alloc, runs)
        self.req: Int64Array = take_rows(columns.req, runs)
        self.nonzero: Int64Array = take_rows(columns.nonzero, runs)


class _LastGathered:
    """One slot: the rows gathered by the last scorer, for the next one of the same cycle."""

    value: Gathered | None = None


def gathered(state: CycleState, snapshot: Snapshot, rows: Rows) -> Gathered:
    """The rows of ``snapshot``'s columns for this cycle's scored ``rows``: those the previous scorer
    gathered when it scored the same rows of the same snapshot generation in the same cycle (identity
    checks: the slot keeps ``rows`` and ``state`` alive, so neither id can be reused), else new ones."""
    found = _LastGathered.value
    if (
        found is None
        or found.rows is not rows
        or found.state is not state
        or found.generation != snapshot.generation
    ):
        found = _LastGathered.value = Gathered(snapshot.columns, rows, state, snapshot.generation)
    return found


class ScoreError(RuntimeError):
    """A score could not be computed (the runtime turns it into an Error status)."""


class AllocationStrategy(Protocol):
    """Scores a node from per-resource (requested incl. the pod, allocated, allocatable) amounts.

    ``score_batch`` takes one int64 array per resource (entries are nodes) and must return, for
    every node, what ``score`` returns; entries of resources the node does not offer
    (allocatable 0) may hold anything and must be ignored, as ``score`` ignores them.
    """

    def score(
        self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]
    ) -> int: ...

    def score_batch(
        self,
        requested: Int64Rows,
        allocated: Int64Rows,
        allocatable: Int64Rows,
    ) -> Int64Array: ...


def without_pod_level_resources(pod: Pod) -> Pod:
    """The pod with ``spec.resources`` removed (requests summed from containers only)."""
    if pod.spec.resources is None:
        return pod
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, resources=None))


def scoring_requests(pod_info: PodInfo, *, non_zero_defaults: bool, pod_level: bool) -> Mapping[str, int]:
    """The pod's requests by resource name as a scorer sees them, memoized on the PodInfo.

    ``non_zero_defaults`` fills cpu/memory a container leaves out (upstream ``!useRequested``);
    ``pod_level`` honours ``spec.resources`` (upstream ``enablePodLevelResources`` of the scorer).
    """
    key = f"noderesources/requests/{int(non_zero_defaults)}{int(pod_level)}"
    cached = pod_info.cache.get(key)
    if cached is None:
        pod = pod_info.pod
        if (pod_level or pod.spec.resources is None) and (
            not non_zero_defaults or not some_container_lacks(pod, NON_ZERO_DEFAULTS)
        ):
            # the PodInfo's requests: the same pod's, and no container default would apply
            cached = pod_info.requests_map
        else:
            pod = pod_info.pod if pod_level else without_pod_level_resources(pod_info.pod)
            cached = pod_requests(pod, NON_ZERO_DEFAULTS if non_zero_defaults else None)
        pod_info.cache[key] = cached
    return cached  # type: ignore[return-value]


class ResourceAllocation:
    """A strategy applied to a weighted resource list (upstream ``resourceAllocationScorer``)."""

    def __init__(
        self,
        name: str,
        resources: Sequence[tuple[str, int]],
        strategy: AllocationStrategy,
        *,
        use_requested: bool,
        pod_level_resources: bool,
    ) -> None:
        self.name = name
        self.names = tuple(n for n, _ in resources)
        self.weights = tuple(w for _, w in resources)
        self.strategy = strategy
        self.use_requested = use_requested
        self.pod_level_resources = pod_level_resources
        self._scalar = tuple(is_scalar_resource(n) for n in self.names)
        self._cpu_memory = self.names == (CPU, MEMORY)  # the defaults: columns 0 and 1, no DRA

    # --- the pod ---------------------------------------------------------------------------------
    def pod_requests(self, pod_info: PodInfo) -> tuple[int, ...]:
        """The pod's request for each configured resource, in order (upstream ``podRequests``)."""
        requests = scoring_requests(
            pod_info, non_zero_defaults=not self.use_requested, pod_level=self.pod_level_resources
        )
        return tuple(requests.get(name, 0) for name in self.names)

    # --- one node --------------------------------------------------------------------------------
    def _node_amounts(self, node: NodeInfo, name: str, dra: DRAScoring | None = None) -> tuple[int, int]:
        """(allocatable, allocated) of resource ``name`` on ``node``; (0, 0) when not offered."""
        used = node.requested if self.use_requested else node.non_zero_requested
        if name == CPU:
            return node.allocatable.milli_cpu, used.milli_cpu
        if name == MEMORY:
            return node.allocatable.memory, used.memory
        if name == EPHEMERAL_STORAGE:
            return node.allocatable.ephemeral_storage, node.requested.ephemeral_storage
        allocatable = node.allocatable.scalar.get(name)
        if not allocatable and dra is not None:
            devices, in_use = dra.amounts(node.node, name)
            if devices > 0:
                return devices, in_use
        if allocatable is None:
            return 0, 0
        return allocatable, node.requested.scalar.get(name, 0)

    def node_vectors(
        self, node: NodeInfo, pod_requests: Sequence[int], dra: DRAScoring | None = None
    ) -> tuple[list[int], list[int], list[int]]:
        """(requested incl. the pod, allocated, allocatable) per configured resource."""
        k = len(self.names)
        requested, allocated, allocatable = [0] * k, [0] * k, [0] * k
        for i, name in enumerate(self.names):
            if pod_requests[i] == 0 and self._scalar[i]:
                continue
            cap, used = self._node_amounts(node, name, dra)
            if cap == 0:
                continue
            allocatable[i] = cap
            allocated[i] = used
            requested[i] = wrap64(used + pod_requests[i])
        return requested, allocated, allocatable

    def score(self, node: NodeInfo, pod_requests: Sequence[int], dra: DRAScoring | None = None) -> int:
        if not self.names:
            raise ScoreError("resources not found")
        requested, allocated, allocatable = self.node_vectors(node, pod_requests, dra)
        return self.strategy.score(requested, allocated, allocatable)

    # --- many nodes ------------------------------------------------------------------------------
    def _column_amounts(
        self, columns: NodeColumns, block: Gathered, name: str
    ) -> tuple[Int64Array, Int64Array] | None:
        """(allocatable, allocated) of ``name`` over the gathered rows: views of ``block``."""
        if name in (CPU, MEMORY):
            base = 0 if name == CPU else 1
            used = block.req if self.use_requested else block.nonzero
            return block.alloc[:, base], used[:, base]
        if name == EPHEMERAL_STORAGE:
            return block.alloc[:, 2], block.req[:, 2]
        col = columns.resource_index.get(name)
        if col is None or not is_scalar_resource(name):
            return None
        return block.alloc[:, col], block.req[:, col]

    def _with_dra(
        self,
        amounts: tuple[Int64Array, Int64Array] | None,
        rows: Rows,
        name: str,
        dra: DRAScoring,
        nodes: Sequence[NodeInfo],
    ) -> tuple[Int64Array, Int64Array] | None:
        """``amounts`` with the device counts of the nodes that do not offer ``name`` as allocatable."""
        if dra.resolver.get(name) is None:
            return amounts
        n = len(rows)
        cap = amounts[0].copy() if amounts is not None else np.zeros(n, dtype=np.int64)
        used = amounts[1].copy() if amounts is not None else np.zeros(n, dtype=np.int64)
        changed = False
        for j, row in enumerate(rows.tolist()):
            if cap[j] != 0:
                continue
            devices, in_use = dra.amounts(nodes[row].node, name)
            if devices > 0:
                cap[j], used[j], changed = devices, in_use, True
        return (cap, used) if changed else amounts

    def node_arrays(
        self,
        columns: NodeColumns,
        rows: Rows,
        pod_requests: Sequence[int],
        dra: DRAScoring | None = None,
        nodes: Sequence[NodeInfo] = (),
        block: Gathered | None = None,
    ) -> tuple[Int64Rows, Int64Rows, Int64Rows]:
        """(requested incl. the pod, allocated, allocatable): a row over ``rows`` per resource.

        Unlike ``node_vectors`` the entries of a resource the node does not offer are not zeroed
        (strategies ignore them); a resource left out entirely is all zeros. ``block``: the rows
        already gathered this cycle (see :func:`gathered`). For cpu and memory (the defaults) each is
        one 2-D array.
        """
        if block is None or block.rows is not rows:
            block = Gathered(columns, rows)
        if self._cpu_memory:  # DRA backs scalar resources only
            used_block = block.req if self.use_requested else block.nonzero
            # contiguous rows: numpy is several times slower on the transposed views
            allocatable_2d = np.ascontiguousarray(block.alloc[:, :2].T)
            allocated_2d = np.ascontiguousarray(used_block[:, :2].T)
            pod = np.array([wrap64(pod_requests[0]), wrap64(pod_requests[1])], dtype=np.int64)
            return allocated_2d + pod[:, None], allocated_2d, allocatable_2d
        zeros = np.zeros(len(rows), dtype=np.int64)
        requested: list[Int64Array] = []
        allocated: list[Int64Array] = []
        allocatable: list[Int64Array] = []
        for i, name in enumerate(self.names):
            amounts = None
            if pod_requests[i] != 0 or not self._scalar[i]:
                amounts = self._column_amounts(columns, block, name)
                if dra is not None and self._scalar[i]:
                    amounts = self._with_dra(amounts, rows, name, dra, nodes)
            if amounts is None:
                requested.append(zeros)
                allocated.append(zeros)
                allocatable.append(zeros)
                continue
            cap, used = amounts
            allocatable.append(cap)
            allocated.append(used)
            requested.append(used + np.int64(wrap64(pod_requests[i])))
        return requested, allocated, allocatable

    def score_rows(
        self,
        columns: NodeColumns,
        rows: Rows,
        pod_requests: Sequence[int],
        dra: DRAScoring | None = None,
        nodes: Sequence[NodeInfo] = (),
        block: Gathered | None = None,
    ) -> Int64Array:
        if not self.names:
            raise ScoreError("resources not found")
        return self.strategy.score_batch(*self.node_arrays(columns, rows, pod_requests, dra, nodes, block))
