"""Per-node resource aggregates as numpy matrices, aligned with the snapshot's node order.

Hot filters and scores (NodeResourcesFit, BalancedAllocation, ...) read these instead of
walking NodeInfo objects, so a cycle costs a handful of vector operations over all nodes.
Column 0..3 are cpu (millicores), memory, ephemeral-storage and pods; scalar resources
(extended, hugepages, attachable volumes) get columns as they are first seen.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ksched.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource

Int64Array = npt.NDArray[np.int64]
IntpArray = npt.NDArray[np.intp]
BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


class NodeColumns:
    """Allocatable, requested and non-zero-requested amounts for every node row."""

    def __init__(self, capacity: int = 64) -> None:
        self.resource_index: dict[str, int] = {name: i for i, name in enumerate(BASE_RESOURCES)}
        self.size = 0
        self.alloc: Int64Array = np.zeros((capacity, len(BASE_RESOURCES)), dtype=np.int64)
        self.req: Int64Array = np.zeros_like(self.alloc)
        self.nonzero: Int64Array = np.zeros((capacity, 2), dtype=np.int64)
        #: each row's ``NodeInfo.generation``, as the snapshot last wrote it
        self.generations: Int64Array = np.zeros(capacity, dtype=np.int64)

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
        for attr in ("alloc", "req", "nonzero", "generations"):
            old = getattr(self, attr)
            new = np.zeros((cap, *old.shape[1:]), dtype=np.int64)
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
        self.generations[row] = 0
        return row

    def move_row(self, src: int, dst: int) -> None:
        self.alloc[dst] = self.alloc[src]
        self.req[dst] = self.req[src]
        self.nonzero[dst] = self.nonzero[src]
        self.generations[dst] = self.generations[src]

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


RowRuns = slice | tuple[slice, slice] | IntpArray
"""How to read some rows of a column matrix: one slice (a view), two slices (the search's rotation
wrapped past the last node), or the rows themselves (a gather)."""


def row_runs(rows: IntpArray, size: int) -> RowRuns:
    """``rows`` (of a matrix with ``size`` rows) as a slice when they are one ascending run
    ``a..b``, as two when they are ``a..size-1`` then ``0..b`` (the search's rotating start), else
    the rows. The search examines nodes in such runs unless a PreFilter narrowed them, and reading a
    run is a view or a copy of memory where a gather costs per row."""
    n = len(rows)
    if n < 2:
        return rows
    first, last = int(rows[0]), int(rows[-1])
    if last - first == n - 1:
        if bool(np.all(rows[1:] > rows[:-1])):
            return slice(first, last + 1)
        return rows
    k = size - first  # the length of the first run if rows wrap
    if last < first and n == k + last + 1 and int(rows[k - 1]) == size - 1 and int(rows[k]) == 0:
        steps = rows[1:] - rows[:-1]
        if int(np.count_nonzero(steps != 1)) == 1:  # the one step back is at k-1 (checked above)
            return slice(first, size), slice(0, last + 1)
    return rows


T = TypeVar("T")


def take_items(items: list[T], rows: IntpArray) -> list[T]:
    """``[items[r] for r in rows]``, read as one or two slices of the list when ``rows`` are the
    search's runs (see :func:`row_runs`): a copy of memory where the comprehension costs per row."""
    runs = row_runs(rows, len(items))
    if isinstance(runs, slice):
        return items[runs]
    if isinstance(runs, tuple):
        return items[runs[0]] + items[runs[1]]
    return [items[r] for r in rows.tolist()]  # tolist: Python ints, no per-row numpy scalar


def take_rows(matrix: npt.NDArray[np.int64], runs: RowRuns) -> npt.NDArray[np.int64]:
    """The rows ``runs`` (see :func:`row_runs`) of ``matrix``, in order: a view for one run."""
    if isinstance(runs, slice):
        return matrix[runs]
    if isinstance(runs, tuple):
        return np.concatenate((matrix[runs[0]], matrix[runs[1]]))
    return matrix[runs]
