"""The queue's Prometheus metrics (default registry, served by the HealthServer's /metrics).

``scheduler_pending_pods`` and ``scheduler_queue_incoming_pods_total`` are upstream's (same names,
labels and label values); ``ksched_queue_*`` are ksched's own.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import Counter, Gauge

from .queued_pod import PodState

PENDING_PODS = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
    "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that "
    "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
    "the scheduler never attempted to schedule because they are gated.",
    ["queue"],
)

INCOMING_PODS = Counter(
    "scheduler_queue_incoming_pods_total",
    "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"],
)

LEASES = Gauge("ksched_queue_leases", "Pods currently leased to scheduler replicas (in flight).")

LEASES_EXPIRED = Counter(
    "ksched_queue_lease_expired_total",
    "Leases that ran out before their replica ended them; their pods went back to the active queue.",
)

FEED_RESYNCS = Counter(
    "ksched_queue_feed_resyncs_total",
    "Rebuilds of the queue from the informer's pending list (start, lost feed messages, new epoch).",
)

_GAUGE_STATES = (PodState.ACTIVE, PodState.BACKOFF, PodState.UNSCHEDULABLE, PodState.GATED)


def observe_incoming(queue: str, event: str) -> None:
    INCOMING_PODS.labels(queue=queue, event=event).inc()


def _reader(counts: Callable[[], dict[str, int]], state: str) -> Callable[[], float]:
    return lambda: float(counts()[state])


def bind_gauges(counts: Callable[[], dict[str, int]], leases: Callable[[], int]) -> None:
    """Read the gauges from the live queue at scrape time (the last bound queue wins)."""
    for state in _GAUGE_STATES:
        PENDING_PODS.labels(queue=str(state)).set_function(_reader(counts, state))
    LEASES.set_function(lambda: float(leases()))
