"""Go arithmetic where it differs from Python's."""

from __future__ import annotations

import numpy as np

from ksched.apimachinery.gomath import (
    INT64_MIN,
    div,
    div_array,
    float_to_int64,
    float_to_int64_array,
    round_half_away,
    round_half_away_array,
    wrap32,
    wrap64,
)


def test_round_half_away_from_zero_like_go() -> None:
    values = (0.5, 1.5, 2.5, 2.4999999, 0.49999999999999994, -0.5, -2.5, -2.4)
    want = [1, 2, 3, 2, 0, -1, -3, -2]
    assert [round_half_away(x) for x in values] == want
    assert round_half_away_array(np.array(values)).tolist() == want


def test_integer_division_truncates_toward_zero() -> None:
    assert [div(7, 2), div(-7, 2), div(7, -2), div(-7, -2)] == [3, -3, -3, 3]
    assert div_array(np.array([7, -7, 7, -7]), np.array([2, 2, -2, 0])).tolist() == [3, -3, -3, 0]


def test_wrapping_and_float_conversion() -> None:
    assert wrap64(2**63) == INT64_MIN
    assert wrap32(2**32 + 1) == 1
    assert float_to_int64(float("nan")) == INT64_MIN
    assert float_to_int64(1e19) == INT64_MIN
    assert float_to_int64(-2.7) == -2
    assert float_to_int64_array(np.array([1e19, -2.7])).tolist() == [INT64_MIN, -2]
