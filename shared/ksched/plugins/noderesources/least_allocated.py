"""LeastAllocated: favour nodes with the most unrequested capacity (upstream ``least_allocated.go``).

Per resource ``(capacity - requested) * 100 / capacity`` (0 when over capacity), then the
weighted mean over the resources the node has, all in Go int64 arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksched.apimachinery.gomath import Int64Array, Int64Rows, all_small_non_negative, div, div_array, wrap64
from ksched.framework.interfaces import MAX_NODE_SCORE


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return div(wrap64((capacity - requested) * MAX_NODE_SCORE), capacity)


class LeastAllocated:
    """The LeastAllocated strategy for the resources weighted by ``weights``."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)
        self._weight_column = np.array(self.weights, dtype=np.int64).reshape(-1, 1)

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, cap, weight in zip(requested, allocatable, self.weights, strict=True):
            if cap == 0:
                continue
            node_score = wrap64(node_score + least_requested_score(req, cap) * weight)
            weight_sum += weight
        return div(node_score, weight_sum) if weight_sum else 0

    def score_batch(self, requested: Int64Rows, allocated: Int64Rows, allocatable: Int64Rows) -> Int64Array:
        req, cap = np.asarray(requested, dtype=np.int64), np.asarray(allocatable, dtype=np.int64)
        if not all_small_non_negative([req, cap]):
            return self._score_batch_exact(req, cap)
        # One numpy call per step for every resource at once (a row each). Over capacity (or no
        # capacity: cap - req <= 0) floors to <= 0 and clamps to 0; the sums are exact integers.
        weights = self._weight_column
        score = np.maximum((cap - req) * MAX_NODE_SCORE // np.maximum(cap, 1), 0)
        node_score = (score * weights).sum(axis=0)
        weight_sum = ((cap != 0) * weights).sum(axis=0)
        return np.asarray(node_score // np.maximum(weight_sum, 1), dtype=np.int64)

    def _score_batch_exact(self, requested: Int64Rows, allocatable: Int64Rows) -> Int64Array:
        node_score = np.zeros(len(requested[0]), dtype=np.int64)
        weight_sum = np.zeros_like(node_score)
        for req, cap, weight in zip(requested, allocatable, self.weights, strict=True):
            present = cap != 0
            score = div_array((cap - req) * MAX_NODE_SCORE, cap)
            score = np.where(req > cap, 0, score)
            node_score += np.where(present, score * weight, 0)
            weight_sum += np.where(present, weight, 0)
        return div_array(node_score, weight_sum)
