"""DefaultNormalizeScore (upstream helper ``normalize_score_test.go`` cases)."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.plugins.helper.normalize import default_normalize_score


@pytest.mark.parametrize(
    ("reverse", "scores", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (True, [1, 1, 1, 1], [0, 0, 0, 0]),
        (False, [0, 0, 0, 0], [0, 0, 0, 0]),
        (True, [0, 0, 0, 0], [100, 100, 100, 100]),
        (False, [], []),
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    arr = np.array(scores, dtype=np.int64)
    default_normalize_score(100, reverse, arr)
    assert arr.tolist() == expected
