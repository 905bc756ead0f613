"""PrioritySort tests ported from upstream ``priority_sort_test.go``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.podinfo import PodInfo
from ksched.framework.results import QueuedPodInfo
from ksched.framework.testing import make_pod
from ksched.plugins.queuesort import new

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


def queued(priority: int | None, timestamp: float = 0.0) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(make_pod("p", priority=priority)), timestamp=timestamp)


@pytest.mark.parametrize(
    ("p1", "p2", "expected"),
    [
        (queued(LOW), queued(HIGH), False),
        (queued(HIGH), queued(LOW), True),
        (queued(HIGH, T1), queued(HIGH, T2), True),
        (queued(HIGH, T2), queued(HIGH, T1), False),
        (queued(None, T2), queued(-1, T1), True),  # unset priority is 0
        (queued(HIGH, T1), queued(HIGH, T1), False),  # strict: equal pods are not less
    ],
    ids=[
        "p1.priority less than p2.priority",
        "p1.priority greater than p2.priority",
        "equal priority. p1 is added to schedulingQ earlier than p2",
        "equal priority. p2 is added to schedulingQ earlier than p1",
        "unset priority counts as zero",
        "identical priority and timestamp",
    ],
)
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    assert plugin.less(p1, p2) is expected
    assert (plugin.sort_key(p1) < plugin.sort_key(p2)) is expected  # the key the queue orders by


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    st.floats(0, 2e9, allow_nan=False),
    st.floats(0, 2e9, allow_nan=False),
)
def test_the_sort_key_orders_as_less(p1: int | None, p2: int | None, t1: float, t2: float) -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    a, b = queued(p1, t1), queued(p2, t2)
    assert plugin.less(a, b) is (plugin.sort_key(a) < plugin.sort_key(b))
