"""row_runs / take_rows / take_items: the search's rows read as views or two-slice copies, in order,
and any other rows gathered; the result is always what indexing row by row gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.framework.columns import row_runs, take_items, take_rows

SIZE = 10


def rows(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.intp)


@pytest.mark.parametrize(
    ("given_rows", "expected"),
    [
        (rows(3, 4, 5, 6), slice(3, 7)),
        (rows(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), slice(0, 10)),
        (rows(7, 8, 9, 0, 1), (slice(7, 10), slice(0, 2))),
        (rows(9, 0), (slice(9, 10), slice(0, 1))),
    ],
)
def test_runs_of_the_search(given_rows: np.ndarray, expected: object) -> None:
    assert row_runs(given_rows, SIZE) == expected


@pytest.mark.parametrize(
    "given_rows",
    [
        rows(),
        rows(4),
        rows(3, 5, 4, 6),  # span fits, order does not
        rows(2, 4, 6, 8),  # ascending with gaps
        rows(7, 8, 9, 1, 2),  # wraps, but skips row 0
        rows(7, 9, 8, 0, 1),  # wraps, first run out of order
        rows(8, 9, 0, 2, 1),  # wraps, second run out of order
        rows(6, 7, 8, 0, 1),  # wraps without reaching the last row
    ],
)
def test_other_rows_are_gathered(given_rows: np.ndarray) -> None:
    runs = row_runs(given_rows, SIZE)
    assert isinstance(runs, np.ndarray) and runs is given_rows


def test_one_run_is_a_view() -> None:
    matrix = np.arange(SIZE * 3, dtype=np.int64).reshape(SIZE, 3)
    taken = take_rows(matrix, row_runs(rows(2, 3, 4), SIZE))
    assert np.shares_memory(taken, matrix)


@given(st.lists(st.integers(0, SIZE - 1), max_size=2 * SIZE), st.integers(0, SIZE - 1), st.integers(0, SIZE))
def test_take_rows_is_fancy_indexing(arbitrary: list[int], start: int, length: int) -> None:
    """Arbitrary rows and every rotation of the search's range read exactly what ``matrix[rows]`` reads."""
    matrix = np.arange(SIZE * 4, dtype=np.int64).reshape(SIZE, 4) * 7
    rotated = np.roll(np.arange(SIZE, dtype=np.intp), -start)[:length]
    for candidate in (np.array(arbitrary, dtype=np.intp), rotated):
        assert np.array_equal(take_rows(matrix, row_runs(candidate, SIZE)), matrix[candidate])


@given(st.lists(st.integers(0, SIZE - 1), max_size=2 * SIZE), st.integers(0, SIZE - 1), st.integers(0, SIZE))
def test_take_items_is_indexing_row_by_row(arbitrary: list[int], start: int, length: int) -> None:
    """The search's runs (sliced) and arbitrary rows (gathered) give the items of a list in row order."""
    items = [f"node-{i}" for i in range(SIZE)]
    rotated = np.roll(np.arange(SIZE, dtype=np.intp), -start)[:length]
    for candidate in (np.array(arbitrary, dtype=np.intp), rotated):
        assert take_items(items, candidate) == [items[int(r)] for r in candidate]
