"""Queueing hints alone (``ksched_queue.queueing_hints``, upstream ``isPodWorthRequeuing`` and
``determineSchedulingHintForInFlightPod``): the strategy a profile's hints give a pod for an event."""

from __future__ import annotations

from ksched_queue.profiles import QueueProfile
from ksched_queue.queued_pod import QueuedPod, decode_pending_pod
from ksched_queue.queueing_hints import (
    InFlightEvent,
    Strategy,
    hint_for_in_flight,
    is_event_of_interest,
    worth_requeuing,
)

from ksched.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from tests.queue.testing import START, pending_of, pod

NODE_ADD = ClusterEvent(EventResource.NODE, int(ActionType.ADD))
NODE_LABEL = ClusterEvent(EventResource.NODE, int(ActionType.UPDATE_NODE_LABEL))
POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, int(ActionType.DELETE))
WILDCARD = ClusterEvent(EventResource.WILDCARD, int(ActionType.ALL))


def queue_hint(pod: object, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE


def skip_hint(pod: object, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


def broken_hint(pod: object, old: object, new: object) -> QueueingHint:
    raise RuntimeError("bug in a hint")


def profile() -> QueueProfile:
    p = QueueProfile("default-scheduler")
    p.register("Fit", NODE_ADD, queue_hint)
    p.register("Affinity", NODE_LABEL, skip_hint)
    p.register("Broken", POD_DELETE, broken_hint)
    return p


def rejected(by: set[str], pending: set[str] | None = None, in_flight_seq: int = 0) -> QueuedPod:
    p = pending_of(pod("p"))
    e = QueuedPod(p, decode_pending_pod(p), START, 1)
    e.info.unschedulable_plugins = by
    e.info.pending_plugins = pending or set()
    e.in_flight_seq = in_flight_seq
    return e


def test_a_hint_of_a_rejecting_plugin_that_says_queue_requeues_after_backoff() -> None:
    assert worth_requeuing(profile(), rejected({"Fit"}), NODE_ADD, None, object()) == Strategy.AFTER_BACKOFF


def test_hints_of_plugins_that_did_not_reject_the_pod_are_not_asked() -> None:
    assert worth_requeuing(profile(), rejected({"Affinity"}), NODE_ADD, None, object()) == Strategy.SKIP


def test_queue_skip_keeps_the_pod() -> None:
    assert worth_requeuing(profile(), rejected({"Affinity"}), NODE_LABEL, None, object()) == Strategy.SKIP


def test_a_pending_plugin_that_says_queue_requeues_immediately() -> None:
    entry = rejected({"Affinity"}, pending={"Fit"})
    assert worth_requeuing(profile(), entry, NODE_ADD, None, object()) == Strategy.IMMEDIATELY


def test_a_failing_hint_counts_as_queue() -> None:
    assert (
        worth_requeuing(profile(), rejected({"Broken"}), POD_DELETE, object(), None) == Strategy.AFTER_BACKOFF
    )


def test_a_pod_no_plugin_rejected_goes_back_after_backoff() -> None:
    assert worth_requeuing(profile(), rejected(set()), NODE_LABEL, None, object()) == Strategy.AFTER_BACKOFF


def test_a_wildcard_event_requeues_unless_it_is_about_another_pod() -> None:
    entry = rejected({"Affinity"})
    assert worth_requeuing(profile(), entry, WILDCARD, None, None) == Strategy.AFTER_BACKOFF
    other = pod("other")
    assert worth_requeuing(profile(), entry, WILDCARD, None, other) == Strategy.SKIP


def test_events_of_interest() -> None:
    profiles = {"default-scheduler": profile()}
    assert is_event_of_interest(profiles, NODE_ADD)
    assert is_event_of_interest(profiles, WILDCARD)
    assert not is_event_of_interest(
        profiles, ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, int(ActionType.ADD))
    )


def test_in_flight_replay_sees_only_events_after_the_pop() -> None:
    entry = rejected({"Fit"}, in_flight_seq=1)
    before = InFlightEvent(1, NODE_ADD, None, object())  # arrived before the pod was popped
    unrelated = InFlightEvent(2, NODE_LABEL, None, object())
    assert hint_for_in_flight(profile(), entry, [before, unrelated]) == Strategy.SKIP
    after = InFlightEvent(3, NODE_ADD, None, object())
    assert hint_for_in_flight(profile(), entry, [before, unrelated, after]) == Strategy.AFTER_BACKOFF


def test_in_flight_replay_stops_at_immediately() -> None:
    entry = rejected({"Affinity"}, pending={"Fit"})
    events = [InFlightEvent(1, NODE_LABEL, None, object()), InFlightEvent(2, NODE_ADD, None, object())]
    assert hint_for_in_flight(profile(), entry, events) == Strategy.IMMEDIATELY
