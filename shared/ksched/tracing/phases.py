"""Trace phases: the bus's :class:`~ksched.bus.messages.TracePhase` plus the few ksched adds as
plain strings (``TraceEvent.phase`` accepts newer strings), and which phases end an attempt."""

from __future__ import annotations

from ksched.bus.messages import TracePhase


class Phase:
    """Phase names as published (``TracePhase`` values, plus ``error``)."""

    QUEUED = TracePhase.QUEUED.value
    POPPED = TracePhase.POPPED.value
    SNAPSHOT = TracePhase.SNAPSHOT.value
    FILTER = TracePhase.FILTER.value
    SCORE = TracePhase.SCORE.value
    ASSUMED = TracePhase.ASSUMED.value
    ASSUME_CONFLICT = TracePhase.ASSUME_CONFLICT.value
    UNSCHEDULABLE = TracePhase.UNSCHEDULABLE.value
    PERMIT_WAIT = TracePhase.PERMIT_WAIT.value
    PREBIND = TracePhase.PREBIND.value
    BOUND = TracePhase.BOUND.value
    BIND_FAILED = TracePhase.BIND_FAILED.value
    REQUEUED = TracePhase.REQUEUED.value
    ERROR = "error"
    """A plugin failed with an error during the scheduling cycle (not a rejection)."""
    ASSUME_CHECK = "assume_check"
    """The informer checked a placement (accepted, or refused with a code)."""


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
