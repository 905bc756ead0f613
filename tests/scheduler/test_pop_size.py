"""The pop size follows the replica's time per pod: ``window`` seconds of work, 1 to ``largest`` pods."""

from __future__ import annotations

import pytest
from ksched_scheduler.pop_size import PopSize


def settle(size: PopSize, per_pod: float, pops: int = 40) -> int:
    for _ in range(pops):
        pods = size.next()
        size.spent(per_pod * pods, pods)
    return size.next()


def test_the_first_pop_is_the_old_fixed_size() -> None:
    assert PopSize(64, 0.1).next() == 16
    assert PopSize(8, 0.1).next() == 8


@pytest.mark.parametrize(
    ("per_pod", "expected"),
    [(0.0005, 64), (0.002, 50), (0.005, 20), (0.04, 2), (0.5, 1)],
)
def test_a_pop_holds_about_the_window(per_pod: float, expected: int) -> None:
    size = PopSize(64, 0.1)
    assert settle(size, per_pod) == pytest.approx(expected, abs=1)


def test_it_follows_a_change_of_the_cycle_time() -> None:
    size = PopSize(64, 0.1)
    assert settle(size, 0.001) == 64
    assert settle(size, 0.01, pops=30) == 10  # the cluster grew: cycles ten times as long
    assert settle(size, 0.001, pops=30) == 64


def test_instant_pods_do_not_stall_the_estimate() -> None:
    size = PopSize(64, 0.1)
    settle(size, 0.0, pops=200)
    assert size.next() == 64
    size.spent(0.1 * 64, 64)  # one slow pop is seen at once
    assert size.next() < 64


def test_empty_pops_and_bad_settings() -> None:
    size = PopSize(64, 0.1)
    size.spent(3.0, 0)  # a long poll that brought nothing says nothing about the time per pod
    assert size.next() == 16
    with pytest.raises(ValueError, match="at least 1"):
        PopSize(0, 0.1)
    with pytest.raises(ValueError, match="positive"):
        PopSize(64, 0.0)
