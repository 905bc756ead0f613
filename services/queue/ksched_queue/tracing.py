"""The queue's trace events, and where each attempt's trace id is born.

An attempt starts when the pod enters a queue (``queued``, with the queue and the event that moved
it: PodAdd, NodeAdd, BackoffComplete ...) and its id rides the lease to the scheduler and on to the
binder. The queue ends an attempt when the pod comes back (``requeued``, under the old id, with the
event: ScheduleAttemptFailure, AssumeRejected, LeaseExpired, and the rejecting plugins); the next
move starts a new id. A pod parked in unschedulable starts its next attempt only when an event
moves it out.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ksched.api.lifecycle import PodLifecycle
from ksched.tracing import Phase, Tracer, new_trace_id

from .core import QueueCore
from .events import ASSUME_REJECTED, LEASE_EXPIRED, SCHEDULE_ATTEMPT_FAILURE
from .leases import Lease
from .priority_queue import SchedulingQueue
from .queued_pod import QueuedPod

ATTEMPT_ENDS = frozenset({SCHEDULE_ATTEMPT_FAILURE, ASSUME_REJECTED, LEASE_EXPIRED})
"""Move events that return a pod from an attempt (in flight or assumed) to a queue."""

UNSCHEDULABLE = "unschedulable"

ENDED_BY: ContextVar[str] = ContextVar("ended_by", default="")
"""The ``traceparent`` of the done or requeue request being handled (the span that ended the attempt
in the scheduler or the binder): the parent of the ``requeued`` it causes (OpenTelemetry export)."""


class QueueTracing:
    """Observes the queue's moves and pops (``install``) and publishes them through ``tracer``."""

    def __init__(self, tracer: Tracer, queue: SchedulingQueue) -> None:
        self.tracer = tracer
        self.queue = queue

    def install(self, core: QueueCore) -> None:
        if self.tracer.enabled:
            core.queue.on_move = self.moved
            core.on_pop = self.popped
            if self.tracer.spans is not None:
                core.lease_context = self.lease_context

    def moved(self, entry: QueuedPod, queue: str, event: str) -> None:
        details = self._details(entry, queue, event)
        if event in ATTEMPT_ENDS:
            if entry.trace_id:
                self._emit(Phase.REQUEUED, entry, entry.trace_id, details)
            entry.trace_id = ""
            if queue == PodLifecycle.UNSCHEDULABLE:
                return  # the next attempt starts when an event moves the pod out
        if not entry.trace_id:
            entry.trace_id = new_trace_id()
        self._emit(Phase.QUEUED, entry, entry.trace_id, details)

    def popped(self, entry: QueuedPod, lease: Lease, scheduler_id: str) -> None:
        entry.trace_id = lease.trace_id
        details = {"scheduler": scheduler_id, "attempt": entry.info.attempts, "lease": lease.lease_id}
        self._emit(Phase.POPPED, entry, lease.trace_id, details)

    def lease_context(self, trace_id: str) -> str:
        """The ``popped`` span, parent of the scheduler's spans of the attempt."""
        return self.tracer.traceparent(trace_id, Phase.POPPED)

    def _details(self, entry: QueuedPod, queue: str, event: str) -> dict[str, Any]:
        details: dict[str, Any] = {"queue": queue, "event": event}
        if queue == PodLifecycle.BACKOFF:
            remaining = self.queue.backoff.backoff_time(entry) - self.queue.clock.now()
            details["backoff"] = round(max(remaining, 0.0), 3)
        if entry.rejector_plugins:
            details["plugins"] = sorted(entry.rejector_plugins)
        if entry.gated:
            details["gated_by"] = entry.info.gating_plugin
        return details

    def _emit(self, phase: str, entry: QueuedPod, trace_id: str, details: dict[str, Any]) -> None:
        pending = entry.pending
        # the attempt's root is ``queued``; ``popped`` is its child, ``requeued`` the child of the span
        # that ended the attempt elsewhere (or of ``queued``: a lease that expired)
        parent = ""
        if phase == Phase.REQUEUED:
            parent = ENDED_BY.get()
        if phase != Phase.QUEUED and not parent:
            parent = self.tracer.traceparent(trace_id, Phase.QUEUED)
        self.tracer.emit(
            phase, trace_id, pending.uid, pending.namespace, pending.name, details=details, parent=parent
        )
