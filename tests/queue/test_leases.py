"""Leases at the message level (no NATS): a popped pod belongs to one replica until ``done``, a
renewal, or the lease's expiry, which returns it to activeQ."""

from __future__ import annotations

from ksched_queue.core import AckCode, QueueCore

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import (
    DoneOutcome,
    LeasedPod,
    LeaseRenewRequest,
    PendingPodAction,
    PopRequest,
    RequeueRequest,
)
from tests.queue.testing import done_request as _done
from tests.queue.testing import new_core, pending_event, pending_of, pod


def _pop(core: QueueCore, replica: str = "r1", n: int = 1) -> list[LeasedPod]:
    return core.pop(PopRequest(scheduler_id=replica, scheduler_names=["default-scheduler"], max_pods=n))


def test_expired_lease_returns_the_pod_to_active() -> None:
    core, clock = new_core(lease_seconds=10)
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    assert lp.deadline == clock.now() + 10 and lp.lease_seconds == 10
    assert lp.attempts == 1
    clock.advance(9.9)
    assert core.expire_leases() == []
    clock.advance(0.2)
    expired = core.expire_leases()
    assert [lease.uid for lease in expired] == ["uid-a"]
    assert core.state_of("uid-a") == PodLifecycle.ACTIVE
    # the late replica's done is refused and changes nothing
    ack = core.done(_done(lp, DoneOutcome.SCHEDULED))
    assert not ack.ok and ack.code == AckCode.LEASE_UNKNOWN
    assert core.state_of("uid-a") == PodLifecycle.ACTIVE
    # another replica gets it, with a new lease
    (again,) = _pop(core, "r2")
    assert again.lease_id != lp.lease_id and again.attempts == 2


def test_renewal_extends_the_lease() -> None:
    core, clock = new_core(lease_seconds=10)
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    clock.advance(8)
    reply = core.renew(LeaseRenewRequest(scheduler_id="r1", lease_ids=[lp.lease_id, "nope"]))
    assert reply.renewed == [lp.lease_id] and reply.expired == ["nope"]
    assert reply.deadline == clock.now() + 10
    clock.advance(8)
    assert core.expire_leases() == []
    # someone else cannot renew it
    assert core.renew(LeaseRenewRequest(scheduler_id="r2", lease_ids=[lp.lease_id])).expired == [lp.lease_id]


def test_a_pod_is_never_leased_twice() -> None:
    core, _ = new_core()
    for i in range(5):
        core.queue.add(pending_of(pod(f"p{i}")))
    first = _pop(core, "r1", n=3)
    second = _pop(core, "r2", n=3)
    uids = [lp.pod.uid for lp in first + second]
    assert len(uids) == 5 == len(set(uids))
    assert _pop(core, "r3") == []
    assert len(core.leases) == 5


def test_done_by_another_replica_is_refused() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    ack = core.done(_done(lp, DoneOutcome.SCHEDULED, replica="r2"))
    assert not ack.ok and ack.code == AckCode.LEASE_MISMATCH
    assert core.state_of("uid-a") == PodLifecycle.IN_FLIGHT


def test_scheduled_pod_leaves_every_queue() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    assert core.done(_done(lp, DoneOutcome.SCHEDULED)).ok
    assert core.state_of("uid-a") == PodLifecycle.ASSUMED
    assert sum(v for k, v in core.queue.counts().items() if k != PodLifecycle.ASSUMED) == 0
    assert len(core.leases) == 0
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="bound"))
    assert core.state_of("uid-a") is None
    assert core.queue.uids() == set()


def test_unschedulable_done_records_plugins_and_nomination() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    ack = core.done(
        _done(
            lp,
            DoneOutcome.UNSCHEDULABLE,
            unschedulable_plugins=["NodeResourcesFit"],
            nominated_node_name="n1",
        )
    )
    assert ack.ok and ack.code == PodLifecycle.UNSCHEDULABLE
    entry = core.queue.get("uid-a")
    assert entry is not None and entry.info.unschedulable_plugins == {"NodeResourcesFit"}
    assert core.queue.nominator.node_of("uid-a") == "n1"


def test_rejected_assume_retries_once_without_backoff_then_backs_off() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    assert core.done(_done(lp, DoneOutcome.RETRY)).code == PodLifecycle.ACTIVE
    (lp,) = _pop(core)
    assert core.done(_done(lp, DoneOutcome.RETRY)).code == PodLifecycle.BACKOFF


def test_binder_requeue_backs_off_an_assumed_pod() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    core.done(_done(lp, DoneOutcome.SCHEDULED))
    ack = core.requeue(RequeueRequest(pod_uid="uid-a", namespace="default", name="a", reason="bind failed"))
    assert ack.ok and ack.code == PodLifecycle.BACKOFF
    entry = core.queue.get("uid-a")
    assert entry is not None and entry.info.consecutive_errors == 1
    again = core.requeue(RequeueRequest(pod_uid="uid-a", namespace="default", name="a", reason="twice"))
    assert again.ok and again.code == AckCode.ALREADY_QUEUED
    unknown = core.requeue(RequeueRequest(pod_uid="uid-x", namespace="default", name="x", reason="?"))
    assert not unknown.ok and unknown.code == AckCode.POD_UNKNOWN


def test_binder_requeue_that_overtakes_done_is_applied_after_it() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    ack = core.requeue(RequeueRequest(pod_uid="uid-a", namespace="default", name="a", reason="fast fail"))
    assert ack.ok and ack.code == PodLifecycle.IN_FLIGHT
    assert core.done(_done(lp, DoneOutcome.SCHEDULED)).code == PodLifecycle.BACKOFF


def test_deleting_an_in_flight_pod_ends_its_lease() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="deleted"))
    assert core.state_of("uid-a") is None
    assert core.renew(LeaseRenewRequest(scheduler_id="r1", lease_ids=[lp.lease_id])).expired == [lp.lease_id]
    assert core.done(_done(lp, DoneOutcome.UNSCHEDULABLE)).code == AckCode.LEASE_UNKNOWN
    assert core.queue.uids() == set()


def test_pop_batch_respects_max_pods_and_order() -> None:
    core, _ = new_core()
    for i in range(4):
        core.queue.add(pending_of(pod(f"p{i}", priority=i)))
    batch = _pop(core, n=3)
    assert [lp.pod.name for lp in batch] == ["p3", "p2", "p1"]


def test_the_cache_accepting_the_placement_ends_the_attempt() -> None:
    """The informer's feed says delete/assumed as soon as it accepts: the pod is assumed and its lease
    ended, so the replica sends no done(scheduled) (one of an older replica finds no lease)."""
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="assumed"))
    assert core.state_of("uid-a") == PodLifecycle.ASSUMED
    assert core.renew(LeaseRenewRequest(scheduler_id="r1", lease_ids=[lp.lease_id])).expired == [lp.lease_id]
    assert core.done(_done(lp, DoneOutcome.SCHEDULED)).code == AckCode.LEASE_UNKNOWN
    assert core.state_of("uid-a") == PodLifecycle.ASSUMED


def test_done_scheduled_before_the_cache_feed_still_makes_the_pod_assumed() -> None:
    """A replica of an earlier release reports done(scheduled) itself, maybe before the feed."""
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    assert core.done(_done(lp, DoneOutcome.SCHEDULED)).code == PodLifecycle.ASSUMED
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="assumed"))
    assert core.state_of("uid-a") == PodLifecycle.ASSUMED


def test_assumed_pod_whose_replica_vanished_is_not_requeued() -> None:
    core, clock = new_core(lease_seconds=5)
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="assumed"))
    clock.advance(6)
    core.expire_leases()
    assert core.state_of("uid-a") == PodLifecycle.ASSUMED  # the binder has it; no second attempt


def test_forgotten_assumption_requeues_with_backoff() -> None:
    """Bind failed: the cache forgets and re-adds the pod to the feed, the binder sends a requeue;
    either order ends in backoffQ once."""
    for order in ("feed-first", "binder-first"):
        core, _ = new_core()
        core.queue.add(pending_of(pod("a")))
        (lp,) = _pop(core)
        core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="assumed"))
        requeue = RequeueRequest(pod_uid="uid-a", namespace="default", name="a", reason="bind failed")
        if order == "feed-first":
            core.apply_pending(pending_event(PendingPodAction.ADD, lp.pod, reason="forgotten"))
            assert core.requeue(requeue).code == AckCode.ALREADY_QUEUED
        else:
            assert core.requeue(requeue).code == PodLifecycle.BACKOFF
            core.apply_pending(pending_event(PendingPodAction.ADD, lp.pod, reason="forgotten"))
        assert core.state_of("uid-a") == PodLifecycle.BACKOFF, order
        entry = core.queue.get("uid-a")
        assert entry is not None and entry.info.consecutive_errors == 1


def test_forget_after_the_assume_requeues_with_backoff_whatever_the_replica_reports() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="assumed"))
    core.apply_pending(pending_event(PendingPodAction.ADD, lp.pod, reason="forgotten"))
    assert core.state_of("uid-a") == PodLifecycle.BACKOFF
    assert core.done(_done(lp, DoneOutcome.SCHEDULED)).code == AckCode.LEASE_UNKNOWN
    assert core.state_of("uid-a") == PodLifecycle.BACKOFF


def test_queued_pod_assumed_by_a_late_replica_leaves_the_queue() -> None:
    """A lease expired, the pod went back to activeQ, then the old replica's assume was accepted."""
    core, clock = new_core(lease_seconds=5)
    core.queue.add(pending_of(pod("a")))
    (lp,) = _pop(core)
    clock.advance(6)
    core.expire_leases()
    assert core.state_of("uid-a") == PodLifecycle.ACTIVE
    core.apply_pending(pending_event(PendingPodAction.DELETE, lp.pod, reason="assumed"))
    assert core.state_of("uid-a") == PodLifecycle.ASSUMED
    assert _pop(core) == []
