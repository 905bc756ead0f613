"""Pod lifecycle tracing over the bus.

Every service publishes :class:`~ksched.bus.messages.TraceEvent` messages for each pod attempt
through a :class:`Tracer` (fire-and-forget: a bounded buffer flushed by a background task); they
land in the JetStream stream ``P_trace``. ``ksched trace`` (:mod:`ksched.tracing.cli`) reads them
back as a timeline per attempt. One trace id covers one attempt, from the pod entering the queue
to its binding or its return to the queue; it travels in ``LeasedPod.trace_id``,
``Placement.trace_id`` and the ``Ksched-Trace-Id`` header. See docs/tracing.md.
"""

from ksched.tracing.phases import Phase
from ksched.tracing.tracer import Details, Tracer, new_trace_id, tracing_enabled

__all__ = ["Details", "Phase", "Tracer", "new_trace_id", "tracing_enabled"]
