"""Go's int64 and float64 arithmetic where it differs from Python's, for bit-identical scores.

Go integer division truncates toward zero (Python's ``//`` floors), int64 operations wrap,
``math.Round`` rounds half away from zero (Python's ``round`` rounds half to even) and
``int64(f)`` truncates. Each helper has a scalar form and an elementwise numpy form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
Int64Rows = Int64Array | Sequence[Int64Array]
"""Equal-length int64 vectors: the rows of a 2-D array (one numpy call covers them all) or a list."""

_INT64_SIGN = 1 << 63
_UINT64_MASK = (1 << 64) - 1
INT64_MIN = -_INT64_SIGN
INT64_MAX = _INT64_SIGN - 1


def wrap64(x: int) -> int:
    """``x`` reduced to int64 as Go's two's-complement overflow leaves it."""
    return ((x + _INT64_SIGN) & _UINT64_MASK) - _INT64_SIGN


def wrap32(x: int) -> int:
    """``x`` reduced to int32 (Go's ``int32(x)`` conversion)."""
    return ((x + (1 << 31)) & ((1 << 32) - 1)) - (1 << 31)


def div(a: int, b: int) -> int:
    """Go's ``a / b`` for int64 (truncated toward zero); ``b`` must not be 0."""
    q = abs(a) // abs(b)
    return wrap64(q if (a >= 0) == (b > 0) else -q)


SMALL_LIMIT = 1 << 55
"""Amounts below this can be multiplied by 100 (the score scale) without int64 overflow."""


def all_small_non_negative(arrays: Sequence[Int64Array]) -> bool:
    """Whether every entry is in [0, 2^55): then Go's truncating division equals numpy's floor
    division and ``x * 100`` cannot overflow, so the cheap vectorized formulas are exact."""
    return all(a.size == 0 or (int(a.min()) >= 0 and int(a.max()) < SMALL_LIMIT) for a in arrays)


def div_array(a: Int64Array, b: Int64Array | int) -> Int64Array:
    """Elementwise Go ``a / b``; entries where ``b`` is 0 yield 0 (callers mask them out)."""
    if isinstance(b, int) and b > 0 and (a.size == 0 or int(a.min()) >= 0):
        return a // b
    b_arr = np.asarray(b, dtype=np.int64)
    safe = np.where(b_arr == 0, 1, b_arr)
    q = np.floor_divide(a, safe)
    inexact = (q * safe) != a
    q = q + (inexact & ((a < 0) != (safe < 0)))
    return np.where(b_arr == 0, 0, q).astype(np.int64, copy=False)


def round_half_away(x: float) -> int:
    """Go's ``int64(math.Round(x))`` for finite ``x`` in int64 range."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t


def round_half_away_array(x: Float64Array) -> Int64Array:
    t = np.trunc(x)
    t = t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)
    return t.astype(np.int64)


def float_to_int64(x: float) -> int:
    """Go's ``int64(x)`` on amd64: truncation, and INT64_MIN for NaN or out-of-range values."""
    if math.isnan(x) or not (-9.223372036854775808e18 <= x < 9.223372036854775808e18):
        return INT64_MIN
    return math.trunc(x)


def float_to_int64_array(x: Float64Array) -> Int64Array:
    bad = np.isnan(x) | (x < -9.223372036854775808e18) | (x >= 9.223372036854775808e18)
    out = np.trunc(np.where(bad, 0.0, x)).astype(np.int64)
    return np.where(bad, INT64_MIN, out).astype(np.int64, copy=False)
