"""Go's ``sort.Slice`` (pattern-defeating quicksort, Go 1.19+), reimplemented step for step.

Upstream sorts victims with ``sort.Slice`` and a comparator that is not a strict weak order when
pods have no start time (each lookup reads the clock, so of two such pods of equal priority the
one compared first always looks older). The result then depends on the exact sequence of
comparisons and swaps, so ksched reproduces Go's algorithm rather than using Python's stable sort:
for up to 12 elements it is an insertion sort, beyond that pdqsort with Go's deterministic
pattern breaking.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import TypeVar

T = TypeVar("T")
Less = Callable[[T, T], bool]

_MAX_INSERTION = 12
_SHORTEST_NINTHER = 50
_MAX_SWAPS = 4 * 3
_UINT64 = (1 << 64) - 1
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2


class _Data:
    """Index-based Less/Swap over a list, as Go's ``lessSwap``."""

    __slots__ = ("items", "less_fn")

    def __init__(self, items: MutableSequence[T], less: Less[T]) -> None:
        self.items: MutableSequence[object] = items  # type: ignore[assignment]
        self.less_fn: Callable[[object, object], bool] = less  # type: ignore[assignment]

    def less(self, i: int, j: int) -> bool:
        return self.less_fn(self.items[i], self.items[j])

    def swap(self, i: int, j: int) -> None:
        items = self.items
        items[i], items[j] = items[j], items[i]


def go_sort_slice(items: MutableSequence[T], less: Less[T]) -> None:
    """Sort ``items`` in place exactly as Go's ``sort.Slice(items, less)`` would."""
    n = len(items)
    _pdqsort(_Data(items, less), 0, n, n.bit_length())


def _insertion_sort(data: _Data, a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and data.less(j, j - 1):
            data.swap(j, j - 1)
            j -= 1


def _sift_down(data: _Data, lo: int, hi: int, first: int) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and data.less(first + child, first + child + 1):
            child += 1
        if not data.less(first + root, first + child):
            return
        data.swap(first + root, first + child)
        root = child


def _heap_sort(data: _Data, a: int, b: int) -> None:
    first, hi = a, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(data, i, hi, first)
    for i in range(hi - 1, -1, -1):
        data.swap(first, first + i)
        _sift_down(data, 0, i, first)


def _pdqsort(data: _Data, a: int, b: int, limit: int) -> None:
    was_balanced = True
    was_partitioned = True
    while True:
        length = b - a
        if length <= _MAX_INSERTION:
            _insertion_sort(data, a, b)
            return
        if limit == 0:
            _heap_sort(data, a, b)
            return
        if not was_balanced:
            _break_patterns(data, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(data, a, b)
        if hint == _DECREASING:
            _reverse_range(data, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING
        if was_balanced and was_partitioned and hint == _INCREASING and _partial_insertion_sort(data, a, b):
            return
        if a > 0 and not data.less(a - 1, pivot):
            a = _partition_equal(data, a, b, pivot)
            continue
        mid, already = _partition(data, a, b, pivot)
        was_partitioned = already
        left, right = mid - a, b - mid
        threshold = length // 8
        if left < right:
            was_balanced = left >= threshold
            _pdqsort(data, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right >= threshold
            _pdqsort(data, mid + 1, b, limit)
            b = mid


def _partition(data: _Data, a: int, b: int, pivot: int) -> tuple[int, bool]:
    data.swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and data.less(i, a):
        i += 1
    while i <= j and not data.less(j, a):
        j -= 1
    if i > j:
        data.swap(j, a)
        return j, True
    data.swap(i, j)
    i += 1
    j -= 1
    while True:
        while i <= j and data.less(i, a):
            i += 1
        while i <= j and not data.less(j, a):
            j -= 1
        if i > j:
            break
        data.swap(i, j)
        i += 1
        j -= 1
    data.swap(j, a)
    return j, False


def _partition_equal(data: _Data, a: int, b: int, pivot: int) -> int:
    data.swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not data.less(a, i):
            i += 1
        while i <= j and data.less(a, j):
            j -= 1
        if i > j:
            return i
        data.swap(i, j)
        i += 1
        j -= 1


def _partial_insertion_sort(data: _Data, a: int, b: int) -> bool:
    max_steps, shortest_shifting = 5, 50
    i = a + 1
    for _ in range(max_steps):
        while i < b and not data.less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < shortest_shifting:
            return False
        data.swap(i, i - 1)
        if i - a >= 2:
            for j in range(i - 1, 0, -1):
                if not data.less(j, j - 1):
                    break
                data.swap(j, j - 1)
        if b - i >= 2:
            for j in range(i + 1, b):
                if not data.less(j, j - 1):
                    break
                data.swap(j, j - 1)
    return False


def _break_patterns(data: _Data, a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    state = length
    modulus = 1 << length.bit_length()
    start = a + (length // 4) * 2 - 1
    for idx in range(start, start + 3):
        state ^= (state << 13) & _UINT64
        state ^= state >> 7
        state ^= (state << 17) & _UINT64
        other = state & (modulus - 1)
        if other >= length:
            other -= length
        data.swap(idx, a + other)


def _choose_pivot(data: _Data, a: int, b: int) -> tuple[int, int]:
    n = b - a
    swaps = [0]
    i, j, k = a + n // 4 * 1, a + n // 4 * 2, a + n // 4 * 3
    if n >= 8:
        if n >= _SHORTEST_NINTHER:
            i = _median(data, i - 1, i, i + 1, swaps)
            j = _median(data, j - 1, j, j + 1, swaps)
            k = _median(data, k - 1, k, k + 1, swaps)
        j = _median(data, i, j, k, swaps)
    if swaps[0] == 0:
        return j, _INCREASING
    if swaps[0] == _MAX_SWAPS:
        return j, _DECREASING
    return j, _UNKNOWN


def _order2(data: _Data, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
    if data.less(b, a):
        swaps[0] += 1
        return b, a
    return a, b


def _median(data: _Data, a: int, b: int, c: int, swaps: list[int]) -> int:
    a, b = _order2(data, a, b, swaps)
    b, c = _order2(data, b, c, swaps)
    a, b = _order2(data, a, b, swaps)
    return b


def _reverse_range(data: _Data, a: int, b: int) -> None:
    i, j = a, b - 1
    while i < j:
        data.swap(i, j)
        i += 1
        j -= 1
