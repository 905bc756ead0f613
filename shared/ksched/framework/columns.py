"""Per-node resource aggregates as numpy matrices, aligned with the snapshot's node order.

Hot filters and scores (NodeResourcesFit, BalancedAllocation, ...) read these instead of
walking NodeInfo objects, so a cycle costs a handful of vector operations over all nodes.
Column 0..3 are cpu (millicores), memory, ephemeral-storage and pods; scalar resources
(extended, hugepages, attachable volumes) get columns as they are first seen.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ksched.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource

Int64Array = npt.NDArray[np.int64]
BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


class NodeColumns:
    """Allocatable, requested and non-zero-requested amounts for every node row."""

    def __init__(self, capacity: int = 64) -> None:
        self.resource_index: dict[str, int] = {name: i for i, name in enumerate(BASE_RESOURCES)}
        self.size = 0
        self.alloc: Int64Array = np.zeros((capacity, len(BASE_RESOURCES)), dtype=np.int64)
        self.req: Int64Array = np.zeros_like(self.alloc)
        self.nonzero: Int64Array = np.zeros((capacity, 2), dtype=np.int64)

    # --- shape -----------------------------------------------------------------------------------
    def column(self, name: str) -> int:
        """The column of resource ``name``, adding one (for every row) when it is new."""
        idx = self.resource_index.get(name)
        if idx is None:
            idx = len(self.resource_index)
            self.resource_index[name] = idx
            pad = np.zeros((self.alloc.shape[0], 1), dtype=np.int64)
            self.alloc = np.hstack([self.alloc, pad])
            self.req = np.hstack([self.req, pad.copy()])
        return idx

    def _ensure_rows(self, rows: int) -> None:
        if rows <= self.alloc.shape[0]:
            return
        cap = max(rows, self.alloc.shape[0] * 2)
        for attr in ("alloc", "req", "nonzero"):
            old = getattr(self, attr)
            new = np.zeros((cap, old.shape[1]), dtype=np.int64)
            new[: self.size] = old[: self.size]
            setattr(self, attr, new)

    # --- rows ------------------------------------------------------------------------------------
    def append_row(self) -> int:
        self._ensure_rows(self.size + 1)
        row = self.size
        self.size += 1
        self.alloc[row] = 0
        self.req[row] = 0
        self.nonzero[row] = 0
        return row

    def move_row(self, src: int, dst: int) -> None:
        self.alloc[dst] = self.alloc[src]
        self.req[dst] = self.req[src]
        self.nonzero[dst] = self.nonzero[src]

    def pop_row(self) -> None:
        self.size -= 1

    def set_allocatable(self, row: int, alloc: Resource) -> None:
        cols = [self.column(name) for name in alloc.scalar]  # may widen the matrices: do it first
        self.alloc[row] = 0
        self.alloc[row, 0] = alloc.milli_cpu
        self.alloc[row, 1] = alloc.memory
        self.alloc[row, 2] = alloc.ephemeral_storage
        self.alloc[row, 3] = alloc.allowed_pod_number
        for col, amount in zip(cols, alloc.scalar.values(), strict=True):
            self.alloc[row, col] = amount

    def set_requested(
        self, row: int, requested: Resource, pod_count: int, non0_cpu: int, non0_mem: int
    ) -> None:
        cols = [self.column(name) for name in requested.scalar]  # may widen the matrices: do it first
        self.req[row] = 0
        self.req[row, 0] = requested.milli_cpu
        self.req[row, 1] = requested.memory
        self.req[row, 2] = requested.ephemeral_storage
        self.req[row, 3] = pod_count
        for col, amount in zip(cols, requested.scalar.values(), strict=True):
            self.req[row, col] = amount
        self.nonzero[row, 0] = non0_cpu
        self.nonzero[row, 1] = non0_mem
