"""The flush flag behind scheduler_pod_scheduled_after_flush_total (upstream
``WasFlushedFromUnschedulable``): set when the unschedulable timeout moves a pod, carried by the lease,
cleared when the pod comes back from an attempt."""

from __future__ import annotations

from ksched_queue.core import QueueCore

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import DoneOutcome, DoneRequest, LeasedPod, PopRequest, RequeueRequest
from ksched.framework.events import ActionType, EventResource
from tests.queue.testing import event_msg, new_core, node, pending_of, pod

FIT = "NodeResourcesFit"
TIMEOUT = 301.0  # past upstream's podMaxInUnschedulablePodsDuration (5 min)


def pop(core: QueueCore) -> LeasedPod:
    (leased,) = core.pop(PopRequest(scheduler_id="r1", scheduler_names=["default-scheduler"], max_pods=1))
    return leased


def done(core: QueueCore, leased: LeasedPod, outcome: DoneOutcome, plugins: list[str] | None = None) -> None:
    request = DoneRequest(
        lease_id=leased.lease_id,
        scheduler_id="r1",
        pod_uid=leased.pod.uid,
        namespace=leased.pod.namespace,
        name=leased.pod.name,
        outcome=outcome,
        unschedulable_plugins=plugins or [],
    )
    assert core.done(request).ok


def unschedulable(core: QueueCore, name: str) -> LeasedPod:
    core.queue.add(pending_of(pod(name, requests={"cpu": "3"})))
    leased = pop(core)
    assert not leased.flushed_from_unschedulable  # never flushed yet
    done(core, leased, DoneOutcome.UNSCHEDULABLE, [FIT])
    assert core.state_of(f"uid-{name}") == PodLifecycle.UNSCHEDULABLE
    return leased


def test_a_flushed_pod_carries_the_flag_in_its_lease_until_it_comes_back() -> None:
    core, clock = new_core()
    unschedulable(core, "p")
    clock.advance(TIMEOUT)
    assert core.queue.flush_unschedulable_leftover() == 1
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE
    leased = pop(core)
    assert leased.flushed_from_unschedulable
    # rejected again: the attempt clears it (upstream AddUnschedulableIfNotPresent)
    done(core, leased, DoneOutcome.UNSCHEDULABLE, [FIT])
    clock.advance(10)
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    clock.advance(10)
    core.queue.flush_backoff_completed()
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE
    assert not pop(core).flushed_from_unschedulable  # moved by an event, not by the flush


def test_a_pod_moved_by_an_event_is_not_flagged() -> None:
    core, clock = new_core()
    unschedulable(core, "p")
    clock.advance(10)
    core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1")))
    clock.advance(TIMEOUT)
    core.queue.flush_backoff_completed()
    assert core.queue.flush_unschedulable_leftover() == 0  # it had already left the pool
    assert not pop(core).flushed_from_unschedulable


def test_a_failed_binding_clears_the_flag() -> None:
    core, clock = new_core()
    unschedulable(core, "p")
    clock.advance(TIMEOUT)
    core.queue.flush_unschedulable_leftover()
    leased = pop(core)
    assert leased.flushed_from_unschedulable
    done(core, leased, DoneOutcome.SCHEDULED)
    assert core.state_of("uid-p") == PodLifecycle.ASSUMED
    # the binder gives it back: the pod returns to the queue after an attempt
    ack = core.requeue(RequeueRequest(pod_uid="uid-p", namespace="default", name="p", reason="bind failed"))
    assert ack.ok
    clock.advance(20)
    core.queue.flush_backoff_completed()
    assert not pop(core).flushed_from_unschedulable


def test_an_expired_lease_or_a_rejected_assume_keeps_the_flag() -> None:
    core, clock = new_core(lease_seconds=10)
    unschedulable(core, "p")
    clock.advance(TIMEOUT)
    core.queue.flush_unschedulable_leftover()
    leased = pop(core)
    # the replica vanished: the attempt never ended, the pod goes back as it was
    clock.advance(11)
    assert [lease.uid for lease in core.expire_leases()] == ["uid-p"]
    leased = pop(core)
    assert leased.flushed_from_unschedulable
    # the cache refused the placement (a stale snapshot): the same decision is retried at once
    done(core, leased, DoneOutcome.RETRY)
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE
    assert pop(core).flushed_from_unschedulable
