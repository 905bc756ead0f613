"""MostAllocated: favour nodes with the most requested capacity (upstream ``most_allocated.go``).

Per resource ``min(requested, capacity) * 100 / capacity``, then the weighted mean over the
resources the node has, all in Go int64 arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksched.apimachinery.gomath import Int64Array, Int64Rows, all_small_non_negative, div, div_array, wrap64
from ksched.framework.interfaces import MAX_NODE_SCORE


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # requested may exceed capacity: pods without requests count with the non-zero defaults
    requested = min(requested, capacity)
    return div(wrap64(requested * MAX_NODE_SCORE), capacity)


class MostAllocated:
    """The MostAllocated strategy for the resources weighted by ``weights``."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, cap, weight in zip(requested, allocatable, self.weights, strict=True):
            if cap == 0:
                continue
            node_score = wrap64(node_score + most_requested_score(req, cap) * weight)
            weight_sum += weight
        return div(node_score, weight_sum) if weight_sum else 0

    def score_batch(
        self,
        requested: Int64Rows,
        allocated: Int64Rows,
        allocatable: Int64Rows,
    ) -> Int64Array:
        exact = not all_small_non_negative([*requested, *allocatable])
        node_score: Int64Array | int = 0
        weight_sum: Int64Array | int = 0
        for req, cap, weight in zip(requested, allocatable, self.weights, strict=True):
            present = cap != 0
            used = np.minimum(req, cap)
            if exact:
                score = np.where(present, div_array(used * MAX_NODE_SCORE, cap), 0)
            else:  # without capacity min(req, 0) is 0: the score is 0
                score = used * MAX_NODE_SCORE // np.maximum(cap, 1)
            node_score = node_score + score * weight
            weight_sum = weight_sum + present * weight
        node_scores = np.asarray(node_score, dtype=np.int64)
        weight_sums = np.asarray(weight_sum, dtype=np.int64)
        if exact:
            return div_array(node_scores, weight_sums)
        return node_scores // np.maximum(weight_sums, 1)
