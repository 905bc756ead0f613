"""Utilization shapes (upstream ``helper.BuildBrokenLinearFunction`` in ``shape_score.go``): the
piecewise-linear function NodeResourcesFit's RequestedToCapacityRatio strategy and VolumeBinding's
capacity score map a utilization through.

Shapes are configured with scores on 0..10 (``MaxCustomPriorityScore``); :func:`scale_shape` maps them
to the node-score scale 0..100.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksched.apimachinery.gomath import Int64Array, div, div_array, wrap64
from ksched.framework.interfaces import MAX_NODE_SCORE
from ksched.plugins.args.types import MAX_CUSTOM_PRIORITY_SCORE

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
