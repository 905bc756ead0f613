"""In-flight events: what happens while a pod is being scheduled is replayed through its rejecting
plugins' hints when it comes back, so it goes to backoff/active instead of waiting for a flush."""

from __future__ import annotations

from ksched.api.core import Toleration
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import PendingPodAction
from ksched.framework.events import ActionType, EventResource
from tests.queue.testing import event_msg, new_core, node, pending_event, pending_of, pod

FIT = "NodeResourcesFit"
TAINTS = "TaintToleration"


def test_event_during_attempt_sends_the_failed_pod_to_backoff() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("big", requests={"cpu": "3"})))
    assert core.queue.pop() is not None
    # a node the pod fits arrives while the replica still evaluates the old snapshot
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    assert core.queue.in_flight_events() == 1
    assert core.queue.failed("uid-big", (FIT,)) == PodLifecycle.BACKOFF
    assert core.queue.in_flight_events() == 0  # nobody in flight needs them any more


def test_irrelevant_event_during_attempt_leaves_pod_unschedulable() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("big", requests={"cpu": "64"})))
    core.queue.pop()
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))  # too small
    assert core.queue.failed("uid-big", (FIT,)) == PodLifecycle.UNSCHEDULABLE


def test_event_before_the_pop_is_not_replayed() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a", requests={"cpu": "3"})))
    core.queue.add(pending_of(pod("b", requests={"cpu": "3"})))
    core.queue.pop()  # a in flight
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    core.queue.pop()  # b popped after the event
    assert core.queue.failed("uid-b", (FIT,)) == PodLifecycle.UNSCHEDULABLE
    assert core.queue.in_flight_events() == 1  # a still needs it
    assert core.queue.failed("uid-a", (FIT,)) == PodLifecycle.BACKOFF
    assert core.queue.in_flight_events() == 0


def test_events_are_kept_exactly_as_long_as_the_oldest_attempt_needs_them() -> None:
    """Attempts ending in any order, pods popped again: the events kept are those after the pop of
    the oldest attempt still in flight."""
    core, _ = new_core()
    names = ["a", "b", "c", "d"]
    for name in names:
        core.queue.add(pending_of(pod(name, requests={"cpu": "3"})))
    seen = 0

    def event() -> None:
        nonlocal seen
        seen += 1
        core.apply_cluster_event(
            event_msg(EventResource.NODE, ActionType.ADD, None, node(f"n{seen}", cpu="1"))
        )

    core.queue.pop()  # a
    event()  # 1
    core.queue.pop()  # b
    event()  # 2
    core.queue.pop()  # c
    event()  # 3
    assert core.queue.in_flight_events() == 3
    assert core.queue.failed("uid-b", (FIT,)) == PodLifecycle.UNSCHEDULABLE
    assert core.queue.in_flight_events() == 3  # a (the oldest) still flies
    assert core.queue.failed("uid-a", (FIT,)) == PodLifecycle.UNSCHEDULABLE
    assert core.queue.in_flight_events() == 1  # c needs only the event after its pop
    core.queue.pop()  # d
    event()  # 4
    assert core.queue.failed("uid-c", (FIT,)) == PodLifecycle.UNSCHEDULABLE
    assert core.queue.in_flight_events() == 1  # d's
    assert core.queue.failed("uid-d", (FIT,)) == PodLifecycle.UNSCHEDULABLE
    assert core.queue.in_flight_events() == 0


def test_events_are_recorded_only_while_something_is_in_flight() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    assert core.queue.in_flight_events() == 0


def test_update_of_in_flight_pod_is_replayed_with_its_own_hints() -> None:
    core, _ = new_core()
    p = pod("p")
    core.queue.add(pending_of(p))
    core.queue.pop()
    p.spec.tolerations = [Toleration(key="k", operator="Exists")]
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
    entry = core.queue.get("uid-p")
    assert entry is not None and entry.state == PodLifecycle.IN_FLIGHT
    assert len(entry.pod.spec.tolerations) == 1  # the newest version comes back to the queue
    assert core.queue.failed("uid-p", (TAINTS,)) == PodLifecycle.BACKOFF


def test_error_without_plugins_always_backs_off() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("p")))
    core.queue.pop()
    assert core.queue.failed("uid-p", ()) == PodLifecycle.BACKOFF


def test_force_activate_while_in_flight_requeues_only_that_pod() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    core.queue.add(pending_of(pod("b")))
    core.queue.pop()
    core.queue.pop()
    assert core.queue.activate(["uid-a"]) == 0
    assert core.queue.failed("uid-b", (TAINTS,)) == PodLifecycle.UNSCHEDULABLE
    assert core.queue.failed("uid-a", (TAINTS,)) == PodLifecycle.BACKOFF
