"""Gated pods: PreEnqueue plugins (SchedulingGates) hold a pod out of activeQ until an update of the
pod lifts the gate; gated pods are reported apart from unschedulable ones."""

from __future__ import annotations

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import PendingPodAction
from ksched.framework.events import ActionType, EventResource
from tests.queue.testing import counts, event_msg, new_core, node, pending_event, pod


def test_gated_pod_waits_until_its_gates_are_removed() -> None:
    core, clock = new_core()
    p = pod("gated", gates=["example.com/wait"])
    core.apply_pending(pending_event(PendingPodAction.ADD, p))
    assert core.state_of("uid-gated") == PodLifecycle.GATED
    assert counts(core)["gated"] == 1 and counts(core)["unschedulable"] == 0
    assert core.queue.pop() is None
    entry = core.queue.get("uid-gated")
    assert entry is not None and entry.info.gating_plugin == "SchedulingGates"

    # a label change does not lift the gate
    p.metadata.labels = {"x": "y"}
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
    assert core.state_of("uid-gated") == PodLifecycle.GATED
    # neither does any cluster event, nor the unschedulable timeout
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    clock.advance(600)
    core.queue.flush_unschedulable_leftover()
    assert core.state_of("uid-gated") == PodLifecycle.GATED

    p.spec.scheduling_gates = []
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
    assert core.state_of("uid-gated") == PodLifecycle.ACTIVE
    assert counts(core)["gated"] == 0
    popped = core.queue.pop()
    assert popped is not None and popped.uid == "uid-gated"
    assert popped.info.attempts == 1


def test_removing_one_of_two_gates_keeps_the_pod_gated() -> None:
    core, _ = new_core()
    p = pod("gated", gates=["a", "b"])
    core.apply_pending(pending_event(PendingPodAction.ADD, p))
    p.spec.scheduling_gates = p.spec.scheduling_gates[:1]
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
    assert core.state_of("uid-gated") == PodLifecycle.GATED


def test_deleting_a_gated_pod_drops_it() -> None:
    core, _ = new_core()
    p = pod("gated", gates=["a"])
    core.apply_pending(pending_event(PendingPodAction.ADD, p))
    core.apply_pending(pending_event(PendingPodAction.DELETE, p, reason="deleted"))
    assert core.state_of("uid-gated") is None
    assert sum(counts(core).values()) == 0


def test_gated_pod_never_attempted_has_no_backoff() -> None:
    core, _ = new_core()
    p = pod("gated", gates=["a"])
    core.apply_pending(pending_event(PendingPodAction.ADD, p))
    p.spec.scheduling_gates = []
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p))
    entry = core.queue.get("uid-gated")
    assert entry is not None
    assert core.queue.backoff.backoff_time(entry) == 0.0
