"""Event matching and the event labels of the queue's metrics (upstream ``framework/types.go`` and
``framework/events.go``)."""

from __future__ import annotations

from collections.abc import Iterable

from ksched.framework.events import (
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
)

__all__ = [
    "ASSUME_REJECTED",
    "BACKOFF_COMPLETE",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "FORCE_ACTIVATE",
    "LEASE_EXPIRED",
    "POP_FROM_BACKOFF_Q",
    "SCHEDULE_ATTEMPT_FAILURE",
    "UNSCHEDULABLE_TIMEOUT",
    "event_label",
    "event_matches",
    "is_wildcard",
    "matches_any",
]

# Upstream's special labels
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
# ksched's own transitions (leases and the cache's assume check have no upstream counterpart)
LEASE_EXPIRED = "LeaseExpired"
ASSUME_REJECTED = "AssumeRejected"

EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(EventResource.UNSCHEDULED_POD, int(ActionType.ADD))
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(EventResource.UNSCHEDULED_POD, int(ActionType.UPDATE))
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, int(ActionType.DELETE))


def is_wildcard(event: ClusterEvent) -> bool:
    """Upstream ``ClusterEventIsWildCard``: every resource, every action."""
    return event.is_wildcard


def event_matches(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Upstream ``MatchClusterEvents``: ``incoming`` is ``registered`` or more specific."""
    return registered.matches(incoming)


def matches_any(incoming: ClusterEvent, registered: Iterable[ClusterEvent]) -> bool:
    """Upstream ``MatchAnyClusterEvent``."""
    return any(event_matches(r, incoming) for r in registered)


def event_label(event: ClusterEvent) -> str:
    """The metric label of an event, spelled as upstream (``NodeAdd``, ``UnschedulablePodUpdate`` ...)."""
    return event.label
