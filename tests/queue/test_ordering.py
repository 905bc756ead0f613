"""activeQ order: QueueSort (PrioritySort: priority, then time in the queue), per-profile popping."""

from __future__ import annotations

import pytest
from ksched_queue.priority_queue import UnknownProfile

from ksched.api.lifecycle import PodLifecycle
from tests.queue.testing import active_order, new_core, pending_of, pod


def test_higher_priority_pops_first_then_older() -> None:
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("low", priority=1)))
    clock.advance(0.1)
    q.add(pending_of(pod("high-late", priority=100)))
    clock.advance(0.1)
    q.add(pending_of(pod("mid", priority=50)))
    q.add(pending_of(pod("high-later", priority=100)))
    popped = [q.pop() for _ in range(4)]
    assert [e.pending.name for e in popped if e] == ["high-late", "high-later", "mid", "low"]
    assert q.pop() is None


def test_equal_priority_is_first_in_first_out_by_queue_time() -> None:
    core, clock = new_core()
    q = core.queue
    names = [f"p{i}" for i in range(20)]
    for name in reversed(names):  # timestamps decide, not names
        q.add(pending_of(pod(name)))
        clock.advance(0.001)
    assert active_order(q, "default-scheduler") == [f"uid-{n}" for n in reversed(names)]


def test_same_timestamp_keeps_arrival_order() -> None:
    core, _ = new_core()
    q = core.queue
    for name in ("c", "a", "b"):
        q.add(pending_of(pod(name)))
    assert [q.pop().pending.name for _ in range(3)] == ["c", "a", "b"]  # type: ignore[union-attr]


def test_pop_serves_only_the_requested_profiles() -> None:
    core, _ = new_core()
    q = core.queue
    q.add(pending_of(pod("other-high", priority=10, scheduler_name="other-scheduler")))
    q.add(pending_of(pod("default-low", priority=1)))
    entry = q.pop(["default-scheduler"])
    assert entry is not None and entry.pending.name == "default-low"
    assert q.pop(["default-scheduler"]) is None
    assert q.pop(["no-such-profile"]) is None
    entry = q.pop(["other-scheduler", "default-scheduler"])
    assert entry is not None and entry.pending.name == "other-high"


def test_pop_across_profiles_compares_heads_with_queue_sort() -> None:
    core, _ = new_core()
    q = core.queue
    q.add(pending_of(pod("a", priority=1)))
    q.add(pending_of(pod("b", priority=5, scheduler_name="other-scheduler")))
    q.add(pending_of(pod("c", priority=3)))
    assert [q.pop().pending.name for _ in range(3)] == ["b", "c", "a"]  # type: ignore[union-attr]


def test_popped_pod_is_in_flight_and_attempts_count() -> None:
    core, _ = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    entry = q.pop()
    assert entry is not None
    assert q.state_of("uid-a") == PodLifecycle.IN_FLIGHT
    assert entry.info.attempts == 1
    assert entry.info.initial_attempt_timestamp is not None


def test_unknown_profile_is_refused_with_its_name() -> None:
    core, _ = new_core()
    with pytest.raises(UnknownProfile, match="nobody"):
        core.queue.add(pending_of(pod("x", scheduler_name="nobody")))


def test_priority_update_reorders_active_queue() -> None:
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("a", priority=1)))
    clock.advance(1)
    b = pod("b", priority=1)
    q.add(pending_of(b))
    b.spec.priority = 10  # (priority is immutable in Kubernetes; the heap must still follow updates)
    q.update(pending_of(b))
    assert active_order(q, "default-scheduler") == ["uid-b", "uid-a"]
