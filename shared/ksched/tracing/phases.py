"""Trace phases: the bus's :class:`~ksched.bus.messages.TracePhase` (one vocabulary, shared with the
pod states of :class:`~ksched.api.lifecycle.PodLifecycle`), and which phases end an attempt."""

from __future__ import annotations

from ksched.bus.messages import TracePhase

Phase = TracePhase
"""What services emit (``Phase.QUEUED`` ...): the bus enum itself, no second set of names."""


OUTCOMES = frozenset(
    {
        Phase.BOUND,
        Phase.BIND_FAILED,
        Phase.UNSCHEDULABLE,
        Phase.ERROR,
        Phase.ASSUME_CONFLICT,
        Phase.REQUEUED,
    }
)
"""Phases that tell how an attempt ended; the last one seen is the attempt's outcome."""
