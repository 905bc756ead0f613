"""RequestedToCapacityRatio: score utilization through a piecewise-linear shape
(upstream ``requested_to_capacity_ratio.go`` and ``helper.BuildBrokenLinearFunction``).

Shape scores are given on 0..10 (``MaxCustomPriorityScore``) and scaled to 0..100. Resources
scoring 0 do not count in the weighted mean, which is rounded half away from zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksched.apimachinery.gomath import (
    Int64Array,
    div,
    div_array,
    round_half_away,
    round_half_away_array,
    wrap64,
)
from ksched.framework.interfaces import MAX_NODE_SCORE

MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

ShapePoint = tuple[int, int]
"""(utilization 0..100, score on the 0..100 node-score scale)."""


def scale_shape(points: Sequence[tuple[int, int]]) -> tuple[ShapePoint, ...]:
    """Shape points as configured (score 0..10) mapped to the node-score scale."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((utilization, score * factor) for utilization, score in points)


class BrokenLinearFunction:
    """f(p): the first point's score below it, the last point's above it, linear between."""

    def __init__(self, shape: Sequence[ShapePoint]) -> None:
        if not shape:
            raise ValueError("a utilization shape needs at least one point")
        self.shape = tuple(shape)

    def __call__(self, p: int) -> int:
        shape = self.shape
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return score
                prev_u, prev_s = shape[i - 1]
                return prev_s + div(wrap64((score - prev_s) * (p - prev_u)), utilization - prev_u)
        return shape[-1][1]

    def batch(self, p: Int64Array) -> Int64Array:
        shape = self.shape
        conditions = [p <= utilization for utilization, _ in shape]
        choices = [np.full_like(p, shape[0][1])]
        for i in range(1, len(shape)):
            (prev_u, prev_s), (utilization, score) = shape[i - 1], shape[i]
            choices.append(prev_s + div_array((score - prev_s) * (p - prev_u), utilization - prev_u))
        return np.select(conditions, choices, default=shape[-1][1]).astype(np.int64, copy=False)


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
        requested: Sequence[Int64Array],
        allocated: Sequence[Int64Array],
        allocatable: Sequence[Int64Array],
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
