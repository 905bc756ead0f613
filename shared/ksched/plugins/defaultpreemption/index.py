"""A flat table of the pods on a snapshot's nodes, so the requests of every pod below a priority
can be summed per node with a few vector operations (the resource pre-check of preemption).

Rows of the table are (node row, priority, cpu, memory, ephemeral-storage). The table follows the
snapshot incrementally: a node whose ``generation`` changed has its entries retired and re-added;
a change to the node set (``nodes_version``) or too many retired entries rebuilds it.
"""

from __future__ import annotations

import weakref

import numpy as np
import numpy.typing as npt

from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.snapshot import Snapshot

Int64Array = npt.NDArray[np.int64]

RETIRED = np.iinfo(np.int64).max
"""Priority of a retired entry: never below any preemptor's priority."""
_EXACT_FLOAT_SUM = 2**53


class LowerPriorityIndex:
    """Per-pod (node row, priority, base requests) of one snapshot, synced by node generations."""

    def __init__(self) -> None:
        self._snapshot: weakref.ref[Snapshot] | None = None
        self._nodes_version = -1
        self._generations: Int64Array = np.empty(0, dtype=np.int64)
        self._segments: list[tuple[int, int]] = []
        self._node_row: Int64Array = np.empty(0, dtype=np.int64)
        self._priority: Int64Array = np.empty(0, dtype=np.int64)
        self._amounts: Int64Array = np.empty((0, 3), dtype=np.int64)
        self._size = 0
        self._retired = 0

    # --- sync ------------------------------------------------------------------------------------
    def sync(self, snapshot: Snapshot) -> None:
        """Bring the table up to date with ``snapshot``."""
        same = self._snapshot is not None and self._snapshot() is snapshot
        if not same or snapshot.nodes_version != self._nodes_version:
            self._rebuild(snapshot)
            return
        nodes = snapshot.nodes
        generations = snapshot.node_generations().copy()
        for row in np.flatnonzero(generations != self._generations).tolist():
            self._replace(row, nodes[row])
        self._generations = generations
        if self._retired > max(4096, self._size // 2):
            self._rebuild(snapshot)

    def _rebuild(self, snapshot: Snapshot) -> None:
        self._snapshot = weakref.ref(snapshot)
        self._nodes_version = snapshot.nodes_version
        total = sum(len(ni.pods) for ni in snapshot.nodes)
        self._allocate(max(64, total * 2))
        self._size = 0
        self._retired = 0
        self._segments = []
        for ni in snapshot.nodes:
            self._segments.append(self._append(ni))
        self._generations = snapshot.node_generations().copy()

    def _allocate(self, capacity: int) -> None:
        self._node_row = np.zeros(capacity, dtype=np.int64)
        self._priority = np.full(capacity, RETIRED, dtype=np.int64)
        self._amounts = np.zeros((capacity, 3), dtype=np.int64)

    def _grow(self, needed: int) -> None:
        capacity = len(self._priority)
        if needed <= capacity:
            return
        capacity = max(needed, capacity * 2)
        size = self._size
        node_row, priority, amounts = self._node_row, self._priority, self._amounts
        self._allocate(capacity)
        self._node_row[:size] = node_row[:size]
        self._priority[:size] = priority[:size]
        self._amounts[:size] = amounts[:size]

    def _append(self, ni: NodeInfo) -> tuple[int, int]:
        start, count = self._size, len(ni.pods)
        self._grow(start + count)
        for k, pi in enumerate(ni.pods, start):
            r = pi.requests
            self._priority[k] = pi.priority
            self._amounts[k, 0] = r.milli_cpu
            self._amounts[k, 1] = r.memory
            self._amounts[k, 2] = r.ephemeral_storage
        self._node_row[start : start + count] = ni.index
        self._size = start + count
        return start, count

    def _replace(self, row: int, ni: NodeInfo) -> None:
        start, count = self._segments[row]
        self._priority[start : start + count] = RETIRED
        self._retired += count
        self._segments[row] = self._append(ni)

    # --- queries ---------------------------------------------------------------------------------
    def lower_priority_totals(self, priority: int, num_nodes: int) -> tuple[Int64Array, Int64Array]:
        """Per node row: how many pods have priority below ``priority``, and the sum of their
        (cpu, memory, ephemeral-storage) requests."""
        size = self._size
        selected = self._priority[:size] < priority
        rows = self._node_row[:size][selected]
        counts: Int64Array = np.bincount(rows, minlength=num_nodes).astype(np.int64)
        amounts = self._amounts[:size][selected]
        totals: Int64Array = np.zeros((num_nodes, 3), dtype=np.int64)
        if len(rows) == 0:
            return counts, totals
        if int(np.abs(amounts).max()) * len(rows) < _EXACT_FLOAT_SUM:
            for d in range(3):
                totals[:, d] = np.rint(np.bincount(rows, weights=amounts[:, d], minlength=num_nodes))
        else:
            np.add.at(totals, rows, amounts)
        return counts, totals
