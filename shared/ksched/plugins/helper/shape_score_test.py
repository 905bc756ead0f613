"""The broken linear function of utilization shapes (upstream ``TestBrokenLinearFunction``, in
``requested_to_capacity_ratio_test.go``), per point and batched."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.plugins.helper.shape_score import BrokenLinearFunction

BROKEN_LINEAR_CASES = [
    (
        [(10, 1), (90, 9)],
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
    ),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize(("points", "assertions"), BROKEN_LINEAR_CASES, ids=["case_0", "case_1", "case_2"])
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    function = BrokenLinearFunction(points)
    for p, expected in assertions:
        assert function(p) == expected
    batch = function.batch(np.array([p for p, _ in assertions], dtype=np.int64))
    assert batch.tolist() == [expected for _, expected in assertions]
