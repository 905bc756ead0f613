"""backoffQ: ``initial * 2^(n-1)`` capped at ``max`` per unschedulable attempt (or consecutive
error), ends aligned to whole seconds, flushed to activeQ; popped from when activeQ is empty."""

from __future__ import annotations

import pytest

from ksched.api.lifecycle import PodLifecycle
from ksched.framework.events import ActionType, EventResource
from tests.queue.testing import START, cluster_event, new_core, node, pending_of, pod

FIT = "NodeResourcesFit"
NODE_ADD = cluster_event(EventResource.NODE, ActionType.ADD)


def _pop_and_fail(core, uid: str, plugins: tuple[str, ...] = (FIT,)) -> None:  # type: ignore[no-untyped-def]
    """Pop ``uid`` and fail it as unschedulable by ``plugins``."""
    entry = core.queue.pop()
    assert entry is not None and entry.uid == uid
    assert core.queue.failed(uid, plugins) in (PodLifecycle.UNSCHEDULABLE, PodLifecycle.BACKOFF)


@pytest.mark.parametrize(
    ("attempts", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (40, 10.0)]
)
def test_backoff_duration_per_attempt(attempts: int, expected: float) -> None:
    core, _ = new_core()
    assert core.queue.backoff.duration(attempts) == expected


def test_backoff_times_after_successive_failures() -> None:
    """Each failure at a whole second T backs off until T + duration; the pod is back at once after."""
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    for expected in (1, 2, 4, 8, 10, 10):
        entry = q.pop()
        assert entry is not None
        failed_at = clock.now()
        assert q.failed("uid-a", ()) == PodLifecycle.BACKOFF  # an error: no plugin to wait for
        assert q.backoff.backoff_time(entry) == failed_at + expected
        clock.set(failed_at + expected - 0.001)
        assert q.flush_backoff_completed() == 0
        assert q.state_of("uid-a") == PodLifecycle.BACKOFF
        # the window containing the end still counts as backing off (upstream isPodBackingoff)
        clock.set(failed_at + expected + 0.999)
        assert q.flush_backoff_completed() == 0
        clock.set(failed_at + expected + 1)
        assert q.flush_backoff_completed() == 1
        assert q.state_of("uid-a") == PodLifecycle.ACTIVE


def test_backoff_end_is_aligned_to_the_second() -> None:
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    entry = q.pop()
    assert entry is not None
    clock.set(START + 0.7)
    q.failed("uid-a", ())
    assert q.backoff.backoff_time(entry) == START + 1  # floor(START + 0.7 + 1)


def test_unschedulable_pod_waits_out_its_backoff_when_an_event_wakes_it() -> None:
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    for _ in range(3):  # three unschedulable attempts: 4 s backoff
        _pop_and_fail(core, "uid-a")
        assert q.state_of("uid-a") == PodLifecycle.UNSCHEDULABLE
        q.activate(["uid-a"])
    entry = q.pop()
    assert entry is not None
    q.failed("uid-a", (FIT,))
    assert entry.unschedulable_count == 4
    t0 = clock.now()
    clock.advance(2)
    q.on_cluster_event(NODE_ADD, None, node("n1"))  # a node the pod fits: Fit says Queue
    assert q.state_of("uid-a") == PodLifecycle.BACKOFF
    assert q.backoff.backoff_time(entry) == t0 + 8
    clock.set(t0 + 9)
    assert q.flush_backoff_completed() == 1
    assert q.state_of("uid-a") == PodLifecycle.ACTIVE


def test_event_after_backoff_ended_goes_straight_to_active() -> None:
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    _pop_and_fail(core, "uid-a")
    clock.advance(5)
    q.on_cluster_event(NODE_ADD, None, node("n1"))
    assert q.state_of("uid-a") == PodLifecycle.ACTIVE


def test_errors_count_consecutively_and_reset_after_an_unschedulable_attempt() -> None:
    core, clock = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    entry = q.pop()
    assert entry is not None
    q.failed("uid-a", ())
    q.failed("uid-a", ())  # not in flight any more: ignored
    assert entry.info.consecutive_errors == 1
    clock.advance(2)
    q.flush_backoff_completed()
    q.pop()
    q.failed("uid-a", ())
    assert entry.info.consecutive_errors == 2
    assert q.backoff.backoff_time(entry) == clock.now() + 2
    clock.advance(3)
    q.flush_backoff_completed()
    q.pop()
    q.failed("uid-a", (FIT,))
    assert entry.info.consecutive_errors == 0
    assert entry.unschedulable_count == 1


def test_pop_from_backoff_queue_when_active_is_empty() -> None:
    """SchedulerPopFromBackoffQ: an idle replica takes the pod whose backoff ends first."""
    core, _ = new_core()
    q = core.queue
    for name, fails in (("a", 2), ("b", 1)):
        q.add(pending_of(pod(name)))
        for i in range(fails):
            _pop_and_fail(core, f"uid-{name}")
            if i < fails - 1:
                q.activate([f"uid-{name}"])
    q.on_cluster_event(NODE_ADD, None, node("n1"))
    assert q.state_of("uid-a") == PodLifecycle.BACKOFF  # until START + 2
    assert q.state_of("uid-b") == PodLifecycle.BACKOFF  # until START + 1
    assert q.counts()[PodLifecycle.ACTIVE] == 0
    popped = [q.pop(), q.pop()]
    assert [e.uid for e in popped if e] == ["uid-b", "uid-a"]
    assert q.state_of("uid-a") == PodLifecycle.IN_FLIGHT


def test_error_backoff_is_not_popped_early() -> None:
    core, _ = new_core()
    q = core.queue
    q.add(pending_of(pod("a")))
    q.pop()
    q.failed("uid-a", ())
    assert q.state_of("uid-a") == PodLifecycle.BACKOFF
    assert q.pop() is None  # only the unschedulable backoff heap is popped early, as upstream


def test_zero_max_backoff_disables_backoff() -> None:
    core, _ = new_core(
        config_text="""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
"""
    )
    q = core.queue
    q.backoff.maximum = 0
    q.add(pending_of(pod("a")))
    q.pop()
    assert q.failed("uid-a", ()) == PodLifecycle.ACTIVE
