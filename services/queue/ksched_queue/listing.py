"""The queue's answer to ``P.queue.list``: the pods it holds, where and why (``ksched ui``)."""

from __future__ import annotations

import heapq

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import QUEUE_LIST_MAX, QueueListEntry, QueueListReply, QueueListRequest

from .priority_queue import SchedulingQueue
from .queued_pod import QueuedPod

_ORDER = {
    state: i
    for i, state in enumerate(
        (
            PodLifecycle.ACTIVE,
            PodLifecycle.BACKOFF,
            PodLifecycle.UNSCHEDULABLE,
            PodLifecycle.GATED,
            PodLifecycle.IN_FLIGHT,
            PodLifecycle.ASSUMED,
        )
    )
}


def list_queue(queue: SchedulingQueue, request: QueueListRequest) -> QueueListReply:
    """Pods whose ``namespace/name`` contains ``request.name_contains`` (case-insensitive), by state
    (active first) then by the time they were queued, at most ``request.limit`` (capped at
    :data:`QUEUE_LIST_MAX`); ``counts`` covers every pod."""
    needle = request.name_contains.lower()
    limit = max(0, min(request.limit, QUEUE_LIST_MAX))
    matched = [
        (state, entry)
        for state, entry in queue.entries()
        if not needle or needle in f"{entry.pending.namespace}/{entry.pending.name}".lower()
    ]
    first = heapq.nsmallest(
        limit, matched, key=lambda pair: (_ORDER[pair[0]], pair[1].info.timestamp, pair[1].seq)
    )
    return QueueListReply(
        pods=[_entry(queue, state, entry) for state, entry in first],
        counts={str(state): count for state, count in queue.counts().items()},
        matched=len(matched),
    )


def _entry(queue: SchedulingQueue, state: PodLifecycle, entry: QueuedPod) -> QueueListEntry:
    pending, info = entry.pending, entry.info
    backoff = queue.backoff.backoff_time(entry) if state == PodLifecycle.BACKOFF else 0.0
    return QueueListEntry(
        uid=pending.uid,
        namespace=pending.namespace,
        name=pending.name,
        scheduler_name=pending.scheduler_name,
        queue=str(state),
        priority=pending.priority,
        attempts=info.attempts,
        queued_at=info.timestamp,
        initial_attempt_at=info.initial_attempt_timestamp or 0.0,
        backoff_until=backoff or None,
        plugins=sorted(entry.rejector_plugins),
        gating_plugin=info.gating_plugin,
        message=entry.message,
        nominated_node=pending.nominated_node_name,
        trace_id=entry.trace_id,
    )
