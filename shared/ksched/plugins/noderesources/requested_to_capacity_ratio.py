"""RequestedToCapacityRatio: score utilization through a piecewise-linear shape
(upstream ``requested_to_capacity_ratio.go``; the shape is :mod:`ksched.plugins.helper.shape_score`).

Resources scoring 0 do not count in the weighted mean, which is rounded half away from zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksched.apimachinery.gomath import (
    Int64Array,
    Int64Rows,
    div,
    div_array,
    round_half_away,
    round_half_away_array,
    wrap64,
)
from ksched.plugins.helper.shape_score import MAX_UTILIZATION, BrokenLinearFunction, ShapePoint


class RequestedToCapacityRatio:
    """The RequestedToCapacityRatio strategy for ``weights`` and a scaled ``shape``."""

    def __init__(self, weights: Sequence[int], shape: Sequence[ShapePoint]) -> None:
        self.weights = tuple(weights)
        self.function = BrokenLinearFunction(shape)

    def resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return self.function(MAX_UTILIZATION)
        return self.function(div(wrap64(requested * MAX_UTILIZATION), capacity))

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, cap, weight in zip(requested, allocatable, self.weights, strict=True):
            if cap == 0:
                continue
            resource_score = self.resource_score(req, cap)
            if resource_score > 0:
                node_score = wrap64(node_score + resource_score * weight)
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return round_half_away(float(node_score) / float(weight_sum))

    def score_batch(
        self,
        requested: Int64Rows,
        allocated: Int64Rows,
        allocatable: Int64Rows,
    ) -> Int64Array:
        node_score = np.zeros(len(requested[0]), dtype=np.int64)
        weight_sum = np.zeros_like(node_score)
        full = self.function(MAX_UTILIZATION)
        for req, cap, weight in zip(requested, allocatable, self.weights, strict=True):
            utilization = div_array(req * MAX_UTILIZATION, cap)
            score = np.where((cap == 0) | (req > cap), full, self.function.batch(utilization))
            counted = (cap != 0) & (score > 0)
            node_score += np.where(counted, score * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        ratio = node_score.astype(np.float64) / np.where(weight_sum == 0, 1, weight_sum).astype(np.float64)
        return np.where(weight_sum == 0, 0, round_half_away_array(ratio)).astype(np.int64, copy=False)
