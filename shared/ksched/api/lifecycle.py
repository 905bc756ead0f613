"""The states of a pending pod across ksched's services: one vocabulary for all of them.

docs/architecture.md ("The pod's state machine") draws these states by member name and the
transitions between them (``tests/test_docs.py`` checks that drawing against this enum). Each
state has one owner. The queue's pod states, the informer's pending-pod events ("stopped being
pending because ...") and the trace phases that report a state use these values, which are also
what travels on the bus (``Ack.code`` of a done request, ``PendingPodEvent.reason``, trace phases)
and in metric labels (``scheduler_pending_pods{queue}``). Not a Kubernetes API field: ksched's own.
"""

from __future__ import annotations

from enum import StrEnum


class PodLifecycle(StrEnum):
    """Where a pending pod is between the services (the values are upstream's queue names where
    upstream has one)."""

    ACTIVE = "active"
    """Queued (queue): in activeQ, ready to be popped."""
    BACKOFF = "backoff"
    """Queued (queue): in backoffQ, waiting out its backoff after a failed attempt."""
    UNSCHEDULABLE = "unschedulable"
    """Queued (queue): in the unschedulable pods, until an event its rejectors care about (or the
    flush timeout) moves it."""
    GATED = "gated"
    """Queued (queue): held by a PreEnqueue plugin (scheduling gates)."""
    IN_FLIGHT = "in-flight"
    """Popped (queue -> one scheduler replica, under a lease): its scheduling cycle runs."""
    ASSUMED = "assumed"
    """The informer accepted its placement: in the informer's ledger and every replica's snapshot,
    the placement in the binder's work queue (WaitOnPermit, PreBind, Bind)."""
    BOUND = "bound"
    """The informer's watch shows ``spec.nodeName``: no longer pending."""


QUEUED = frozenset(
    {PodLifecycle.ACTIVE, PodLifecycle.BACKOFF, PodLifecycle.UNSCHEDULABLE, PodLifecycle.GATED}
)
"""The states of a pod in the queue (upstream's activeQ, backoffQ, unschedulable pods, gated)."""
