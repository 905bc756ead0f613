"""The informer's feed at the message level: the cursor that spots lost messages and new epochs,
and the rebuild that makes the queue hold exactly the informer's pending pods."""

from __future__ import annotations

import pytest

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.feed import FeedCursor, FeedVerdict
from ksched.bus.messages import PendingPodAction, PopRequest
from tests.queue.testing import new_core, pending_event, pending_of, pod


def test_cursor_applies_in_order_and_skips_redeliveries() -> None:
    cursor = FeedCursor(epoch="e1", stream_seq=100)
    assert cursor.check("e1", 101) == FeedVerdict.APPLY
    assert cursor.check("e1", 102) == FeedVerdict.APPLY
    assert cursor.check("e1", 102) == FeedVerdict.SKIP  # redelivered
    assert cursor.check("e1", 90) == FeedVerdict.SKIP
    assert cursor.stream_seq == 102


def test_cursor_applies_every_message_after_the_bootstrap_whatever_its_generation() -> None:
    """A pod created in a quiet cluster changes no snapshot generation: its event carries the
    bootstrap's generation and is still news (issue 16: the queue used to skip it)."""
    cursor = FeedCursor(epoch="e1", stream_seq=100)
    assert cursor.check("e1", 101) == FeedVerdict.APPLY


def test_cursor_wants_a_resync_after_a_gap_or_a_new_epoch() -> None:
    assert FeedCursor("e1", 100).check("e1", 102) == FeedVerdict.RESYNC  # seq 101 lost
    assert FeedCursor("e1", 100).check("e2", 101) == FeedVerdict.RESYNC


def test_rebuild_reconciles_with_the_pending_list() -> None:
    core, _ = new_core()
    names = ("keep", "gone", "flying", "gone-flying", "assumed", "forgotten")
    pods = {n: pod(n) for n in names}
    for p in pods.values():
        core.apply_pending(pending_event(PendingPodAction.ADD, p))
    popped = core.pop(PopRequest(scheduler_id="r1", scheduler_names=[], max_pods=6))
    by_name = {lp.pod.name: lp for lp in popped}
    for name in ("keep", "gone"):
        core.leases.release(by_name[name].lease_id)
        core.queue.failed(f"uid-{name}", ("NodeResourcesFit",))
    for name in ("assumed", "forgotten"):
        core.leases.release(by_name[name].lease_id)
        core.queue.scheduled(f"uid-{name}")
    new = pod("new")
    # the informer lists pending pods only: not the deleted, bound or assumed ones
    listed = [pending_of(pods[n]) for n in ("keep", "flying", "forgotten")] + [pending_of(new)]
    report = core.rebuild("e2", 50, 7, listed)
    assert (report.added, report.updated, report.dropped) == (1, 3, 3)
    assert core.state_of("uid-keep") == PodLifecycle.UNSCHEDULABLE
    assert core.state_of("uid-flying") == PodLifecycle.IN_FLIGHT
    assert "uid-flying" in core.leases.pods()
    assert core.state_of("uid-forgotten") == PodLifecycle.BACKOFF  # its assumption was forgotten
    assert core.state_of("uid-new") == PodLifecycle.ACTIVE
    for name in ("gone", "gone-flying", "assumed"):
        assert core.state_of(f"uid-{name}") is None
    assert "uid-gone-flying" not in core.leases.pods()
    assert (core.cursor.epoch, core.cursor.stream_seq) == ("e2", 7)
    assert core.bootstrapped


def test_pods_of_other_schedulers_are_ignored() -> None:
    core, _ = new_core()
    core.apply_pending(pending_event(PendingPodAction.ADD, pod("x", scheduler_name="someone-else")))
    assert core.queue.uids() == set()
    report = core.rebuild("e1", 1, 1, [pending_of(pod("y", scheduler_name="someone-else"))])
    assert report.skipped == 1 and core.queue.uids() == set()


@pytest.mark.parametrize("bad", [b"{broken", b'{"metadata": {"name": "\xff"}}'], ids=["json", "utf8"])
def test_bad_pod_json_is_counted_and_dropped(bad: bytes) -> None:
    core, _ = new_core()
    event = pending_event(PendingPodAction.ADD, pod("x"))
    event.pod.pod = bad
    core.apply_pending(event)
    assert core.bad_feed_items == 1
    assert core.queue.uids() == set()


def test_min_generation_follows_the_newest_pod_event() -> None:
    core, _ = new_core()
    p = pod("a")
    core.apply_pending(pending_event(PendingPodAction.ADD, p, generation=5))
    p.metadata.labels = {"v": "2"}
    core.apply_pending(pending_event(PendingPodAction.UPDATE, p, generation=9))
    (lp,) = core.pop(PopRequest(scheduler_id="r1", scheduler_names=["default-scheduler"]))
    assert lp.min_generation == 9  # the replica schedules it on a snapshot holding its newest change
    assert lp.pod.resource_version == p.metadata.resource_version
