"""Queueing hints: whether a cluster event may make an unschedulable pod schedulable, and so where
it goes: upstream's ``isPodWorthRequeuing`` and ``determineSchedulingHintForInFlightPod``
(``pkg/scheduler/backend/queue/scheduling_queue.go``). Pure functions of the pod, the event and the
hints its profile's plugins registered (:class:`~ksched_queue.profiles.QueueProfile`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from ksched.api.core import Pod
from ksched.framework.events import ClusterEvent, QueueingHint

from .events import event_label, event_matches, is_wildcard
from .profiles import QueueProfile
from .queued_pod import QueuedPod

log = logging.getLogger(__name__)


class Strategy(IntEnum):
    """Upstream ``queueingStrategy``: where a pod goes after an event."""

    SKIP = 0
    """Stays unschedulable."""
    AFTER_BACKOFF = 1
    """To backoffQ, or activeQ if its backoff is over."""
    IMMEDIATELY = 2
    """To activeQ at once (a plugin that only asked to wait, Pending, now says Queue)."""


@dataclass(slots=True)
class InFlightEvent:
    """An event that arrived while pods were in flight, numbered in arrival order."""

    seq: int
    event: ClusterEvent
    old: object
    new: object
    generation: int = 0
    """The cache generation that includes the change (0: not known)."""


def is_event_of_interest(profiles: Mapping[str, QueueProfile], event: ClusterEvent) -> bool:
    """Whether some plugin of some profile registered for ``event`` (a wildcard always is)."""
    if is_wildcard(event):
        return True
    return any(event_matches(registered, event) for p in profiles.values() for registered in p.hints)


def worth_requeuing(
    profile: QueueProfile, entry: QueuedPod, event: ClusterEvent, old: object, new: object
) -> Strategy:
    """Upstream ``isPodWorthRequeuing``: ask the hints of the plugins that rejected the pod. A pod
    no plugin rejected (an error) goes back after its backoff; a hint that fails counts as Queue."""
    rejectors = entry.rejector_plugins
    if not rejectors:
        return Strategy.AFTER_BACKOFF
    if is_wildcard(event):
        if new is not None and (not isinstance(new, Pod) or new.metadata.uid != entry.uid):
            return Strategy.SKIP
        return Strategy.AFTER_BACKOFF
    pending = entry.info.pending_plugins
    strategy = Strategy.SKIP
    for fns in profile.matching(event):
        for hint_fn in fns:
            if hint_fn.plugin not in rejectors:
                continue
            try:
                hint = hint_fn.fn(entry.pod, old, new)
            except Exception as exc:
                log.warning(
                    "queueing hint of %s for pod %s on %s failed (requeueing): %s",
                    hint_fn.plugin,
                    entry.key,
                    event_label(event),
                    exc,
                )
                hint = QueueingHint.QUEUE
            if hint == QueueingHint.QUEUE_SKIP:
                continue
            if hint_fn.plugin in pending:
                return Strategy.IMMEDIATELY
            if not pending:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
    return strategy


def newest_generation(entry: QueuedPod, events: Iterable[InFlightEvent]) -> int:
    """The newest cache generation among the events that arrived while ``entry`` was popped: a pod
    they requeue must be scheduled on a snapshot that has them."""
    return max((e.generation for e in events if e.seq > entry.in_flight_seq), default=0)


def hint_for_in_flight(profile: QueueProfile, entry: QueuedPod, events: Iterable[InFlightEvent]) -> Strategy:
    """Upstream ``determineSchedulingHintForInFlightPod``: replay the events that arrived while the
    pod was popped (those numbered after its ``in_flight_seq``) through its hints."""
    if not entry.rejector_plugins:
        return Strategy.AFTER_BACKOFF
    strategy = Strategy.SKIP
    for recorded in events:
        if recorded.seq <= entry.in_flight_seq:
            continue
        found = worth_requeuing(profile, entry, recorded.event, recorded.old, recorded.new)
        if found == Strategy.IMMEDIATELY:
            return found
        if found == Strategy.AFTER_BACKOFF:
            strategy = found
            if not entry.info.pending_plugins:
                return strategy
    return strategy
