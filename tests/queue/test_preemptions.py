"""A pod whose attempt started a preemption (run by the replica) waits for it as upstream's does:
DefaultPreemption's PreEnqueue gates it until the feed shows the last victim being deleted, and then
only a Pod/Delete event moves it (found by ``ksched differential --pipeline``, extenders-s102-76: the
pipeline retried the preemptor at once and its PodScheduled message became the retry's)."""

from __future__ import annotations

import msgspec
from ksched_queue.core import QueueCore

from ksched.api.core import Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import ClusterEventMsg, DoneOutcome, PendingPodAction, PopRequest
from ksched.framework.events import ActionType, EventResource
from ksched.plugins.defaultpreemption import NAME
from tests.queue.testing import FakeClock, done_request, event_msg, new_core, node, pending_event, pod


def _pod_event(action: ActionType, old: Pod | None, new: Pod | None) -> ClusterEventMsg:
    """An assigned pod's event as the informer publishes it (keyed ``namespace/name``)."""
    obj = new if new is not None else old
    assert obj is not None
    return ClusterEventMsg(
        resource=EventResource.ASSIGNED_POD,
        action=int(action),
        key=f"{obj.metadata.namespace}/{obj.metadata.name}",
        old=msgspec.json.encode(old) if old is not None else None,
        new=msgspec.json.encode(new) if new is not None else None,
        epoch="e1",
        generation=0,
    )


def _preempting(last_victim: str = "default/v2") -> tuple[QueueCore, FakeClock]:
    """A queue whose pod ``p`` just failed an attempt whose preemption deletes ``last_victim`` last."""
    core, clock = new_core()
    core.apply_pending(pending_event(PendingPodAction.ADD, pod("p", priority=100)))
    (leased,) = core.pop(PopRequest(scheduler_id="r1", scheduler_names=["default-scheduler"], max_pods=1))
    ack = core.done(
        done_request(
            leased,
            DoneOutcome.UNSCHEDULABLE,
            unschedulable_plugins=["NodeResourcesFit"],
            nominated_node_name="n1",
            preemption_last_victim=last_victim,
        )
    )
    assert ack.ok and ack.code == PodLifecycle.UNSCHEDULABLE
    return core, clock


def _victim(name: str, *, deleting: bool = False) -> Pod:
    v = pod(name, priority=0, spec={"nodeName": "n1"})
    if deleting:
        v.metadata.deletion_timestamp = "2026-12-06T13:18:48Z"
    return v


def test_an_event_while_the_preemption_runs_gates_the_pod_instead_of_retrying_it() -> None:
    core, clock = _preempting()
    clock.advance(2)  # past the backoff: without the gate the pod would be active at once
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n9")))
    entry = core.queue.get("uid-p")
    assert entry is not None and core.state_of("uid-p") == PodLifecycle.GATED
    assert entry.info.gating_plugin == NAME
    assert core.queue.pop() is None
    # the first victims' updates, another node: still gated (only a Pod/Delete re-runs its PreEnqueue)
    core.apply_cluster_event(_pod_event(ActionType.UPDATE, _victim("v1"), _victim("v1", deleting=True)))
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n8")))
    assert core.state_of("uid-p") == PodLifecycle.GATED and "uid-p" in core.queue.preemptions
    # a pod deleted while the preemption runs re-runs PreEnqueue, which still gates it
    core.apply_cluster_event(_pod_event(ActionType.DELETE, _victim("other"), None))
    assert core.state_of("uid-p") == PodLifecycle.GATED
    # the last victim being deleted ends the preemption; the pod stays gated (an update is no gating event)
    core.apply_cluster_event(_pod_event(ActionType.UPDATE, _victim("v2"), _victim("v2", deleting=True)))
    assert "uid-p" not in core.queue.preemptions
    assert core.state_of("uid-p") == PodLifecycle.GATED
    # a victim gone: a Pod/Delete, PreEnqueue passes and NodeResourcesFit's hint requeues the pod
    core.apply_cluster_event(_pod_event(ActionType.DELETE, _victim("v1", deleting=True), None))
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE
    popped = core.queue.pop()
    assert popped is not None and popped.uid == "uid-p"


def test_the_last_victim_deleted_outright_ends_the_preemption() -> None:
    core, _ = _preempting()
    core.apply_cluster_event(_pod_event(ActionType.DELETE, _victim("v2"), None))
    assert "uid-p" not in core.queue.preemptions
    assert core.queue.get("uid-p") is not None


def test_a_preemption_the_feed_never_ends_is_taken_for_failed_and_the_pod_activated() -> None:
    core, clock = _preempting()
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n9")))
    assert core.state_of("uid-p") == PodLifecycle.GATED
    clock.advance(core.queue.preemptions.timeout - 1)
    assert core.queue.expire_preemptions() == 0
    clock.advance(1)
    assert core.queue.expire_preemptions() == 1
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE and not core.queue.preemptions


def test_a_deleted_preemptor_leaves_no_preemption_behind() -> None:
    core, _ = _preempting()
    core.apply_pending(pending_event(PendingPodAction.DELETE, pod("p", priority=100), reason="deleted"))
    assert not core.queue.preemptions
    assert not core.queue.preemptions.waits_for("default/v2")


def test_an_attempt_without_a_preemption_is_not_gated() -> None:
    core, clock = _preempting(last_victim="")
    clock.advance(2)
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n9")))
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE
