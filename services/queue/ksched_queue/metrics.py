"""The queue's Prometheus metrics (default registry, served by the HealthServer's /metrics).

``scheduler_pending_pods``, ``scheduler_queue_incoming_pods_total``, ``scheduler_unschedulable_pods``,
``scheduler_inflight_events``, ``scheduler_event_handling_duration_seconds`` and, for PreEnqueue,
``scheduler_plugin_execution_duration_seconds`` and ``scheduler_framework_extension_point_duration_seconds``
are upstream's (same names, labels and label values); ``ksched_queue_*`` are ksched's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric

from ksched.api.lifecycle import PodLifecycle
from ksched.metrics.framework_metrics import EXTENSION_POINT_DURATION
from ksched.metrics.histogram import Histogram, exponential_buckets
from ksched.metrics.metric_children import Children
from ksched.metrics.plugin_metrics import CycleSampler, observe_plugin, sample_percent

if TYPE_CHECKING:
    from .core import QueueCore
    from .priority_queue import SchedulingQueue

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

REPAIRED_PODS = Counter(
    "ksched_queue_repaired_pods_total",
    "Pods the informer listed as pending that the queue had lost, found by the periodic comparison "
    "and added back (should stay 0: any other value is a bug worth reporting).",
)

EVENT_HANDLING_DURATION = Histogram(
    "scheduler_event_handling_duration_seconds",
    "Event handling latency in seconds.",
    ["event"],
    buckets=exponential_buckets(0.0001, 2, 12),
)

UNSCHEDULABLE_PODS_HELP = (
    "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for "
    "all plugins that caused it to not schedule and so this metric have meaning only when broken down "
    "by plugin."
)
INFLIGHT_EVENTS_HELP = "Number of events currently tracked in the scheduling queue."

FEED_RESYNCS = Counter(
    "ksched_queue_feed_resyncs_total",
    "Rebuilds of the queue from the informer's pending list (start, lost feed messages, new epoch).",
)

_GAUGE_STATES = (PodLifecycle.ACTIVE, PodLifecycle.BACKOFF, PodLifecycle.UNSCHEDULABLE, PodLifecycle.GATED)


_INCOMING = Children(INCOMING_PODS)


def observe_incoming(queue: str, event: str) -> None:
    _INCOMING(queue, event).inc()


def _reader(counts: Callable[[], dict[str, int]], state: str) -> Callable[[], float]:
    return lambda: float(counts()[state])


def bind_gauges(counts: Callable[[], dict[str, int]], leases: Callable[[], int]) -> None:
    """Read the gauges from the live queue at scrape time (the last bound queue wins)."""
    for state in _GAUGE_STATES:
        PENDING_PODS.labels(queue=str(state)).set_function(_reader(counts, state))
    LEASES.set_function(lambda: float(leases()))


def observe_event_handling(event: str, seconds: float) -> None:
    EVENT_HANDLING_DURATION.labels(event).observe(seconds)


def observe_pre_enqueue(profile: str, status: str, seconds: float) -> None:
    EXTENSION_POINT_DURATION.labels("PreEnqueue", status, profile).observe(seconds)


class QueueStateCollector:
    """``scheduler_unschedulable_pods`` and ``scheduler_inflight_events``, read from the bound queue
    at scrape time. An event label once seen stays, at 0 when no such event is in flight."""

    def __init__(self) -> None:
        self.queue: SchedulingQueue | None = None
        self._event_labels: set[str] = set()

    def bind(self, queue: SchedulingQueue) -> None:
        self.queue = queue
        self._event_labels = set()

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        unschedulable, inflight = self._families()
        queue = self.queue
        if queue is not None:
            for (plugin, profile), pods in sorted(queue.rejections.counts.items()):
                unschedulable.add_metric([plugin, profile], pods)
            events = queue.in_flight_event_counts()
            self._event_labels.update(events)
            for label in sorted(self._event_labels):
                inflight.add_metric([label], events.get(label, 0))
        yield unschedulable
        yield inflight

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "scheduler_unschedulable_pods", UNSCHEDULABLE_PODS_HELP, labels=["plugin", "profile"]
            ),
            GaugeMetricFamily("scheduler_inflight_events", INFLIGHT_EVENTS_HELP, labels=["event"]),
        )


QUEUE_STATE = QueueStateCollector()
REGISTRY.register(QUEUE_STATE)


def bind_queue_metrics(core: QueueCore) -> None:
    """Export the live queue's upstream metrics (the last bound queue wins): the gauges read from it
    at scrape time, event handling, PreEnqueue runs and sampled PreEnqueue plugin durations observed
    as they happen."""
    QUEUE_STATE.bind(core.queue)
    core.on_event_handled = observe_event_handling
    core.queue.observe_plugin = observe_plugin
    core.queue.observe_pre_enqueue = observe_pre_enqueue
    core.queue.sample_plugin_metrics = CycleSampler(sample_percent())
