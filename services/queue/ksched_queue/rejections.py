"""Upstream's ``scheduler_unschedulable_pods{plugin, profile}``, kept exactly as the pods move.

Upstream adds one to the gauge of every plugin in a pod's unschedulable and pending plugins when its
attempt fails (whichever queue it then goes to) and when a PreEnqueue plugin gates it, and takes it
away when the pod is popped again or deleted. So a pod counts, once per rejecting plugin, while it
waits in activeQ, backoffQ or unschedulable (gated included) with the plugins of its last rejection;
in flight and assumed pods do not count. :class:`RejectorTally` keeps that invariant: the queue calls
:meth:`RejectorTally.sync` after each move (the property test compares the figures with a count
from the pods' states).
"""

from __future__ import annotations

from ksched.api.lifecycle import QUEUED

from .queued_pod import QueuedPod

COUNTED_STATES = QUEUED
"""Where a pod counts for its rejecting plugins (upstream: from the failure until the next pop)."""

_NONE: frozenset[str] = frozenset()


def rejectors_counted(entry: QueuedPod) -> frozenset[str]:
    """The plugins ``entry`` should count for now: its rejectors while it waits in a queue."""
    info = entry.info
    if entry.state in COUNTED_STATES and (info.unschedulable_plugins or info.pending_plugins):
        return frozenset(info.unschedulable_plugins | info.pending_plugins)
    return _NONE


class RejectorTally:
    """Pods per (plugin, profile) as the gauge reports them. A (plugin, profile) seen once stays,
    at 0 when no pod counts for it (as upstream's GaugeVec keeps its series)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def sync(self, entry: QueuedPod) -> None:
        """Bring ``entry``'s contribution in line with its state and plugins (cheap when unchanged)."""
        counted = entry.counted_rejectors
        info = entry.info
        if not counted and not (info.unschedulable_plugins or info.pending_plugins):
            return
        want = rejectors_counted(entry)
        profile = entry.scheduler_name
        if want == counted and entry.counted_profile == profile:
            return
        counts = self.counts
        for plugin in counted:
            counts[plugin, entry.counted_profile] -= 1
        for plugin in want:
            key = (plugin, profile)
            counts[key] = counts.get(key, 0) + 1
        entry.counted_rejectors = want
        entry.counted_profile = profile

    def nonzero(self) -> dict[tuple[str, str], int]:
        return {key: n for key, n in self.counts.items() if n}
