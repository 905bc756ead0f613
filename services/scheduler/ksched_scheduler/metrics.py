"""The scheduler's metrics: upstream names where the meaning is the same, ksched_ otherwise."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from ksched.metrics.framework_metrics import EXTENSION_POINT_DURATION, PLUGIN_EVALUATIONS
from ksched.metrics.histogram import Histogram, exponential_buckets
from ksched.metrics.metric_children import Children

__all__ = ["EXTENSION_POINT_DURATION", "PLUGIN_EVALUATIONS"]

_BUCKETS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
_ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
"""1 ms up to ~16 s, factor 2: upstream's buckets for the attempt and algorithm durations."""

ATTEMPTS = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)
ATTEMPT_DURATION = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=_ATTEMPT_BUCKETS,
)
ATTEMPTS_OF = Children(ATTEMPTS)
ALGORITHM_DURATION = Histogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds",
    buckets=_ATTEMPT_BUCKETS,
)
POD_GROUP_ATTEMPTS = Counter(
    "scheduler_podgroup_schedule_attempts_total",
    "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not be "
    "scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
)
POD_GROUP_ATTEMPT_DURATION = Histogram(
    "scheduler_podgroup_scheduling_attempt_duration_seconds",
    "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=_ATTEMPT_BUCKETS,
)
POD_GROUP_ALGORITHM_DURATION = Histogram(
    "scheduler_podgroup_scheduling_algorithm_duration_seconds",
    "Pod group scheduling algorithm latency in seconds",
    buckets=_ATTEMPT_BUCKETS,
)
UNSCHEDULABLE_PODS = Counter(
    "ksched_unschedulable_rejections_total",
    "Unschedulable attempts by a plugin that rejected the pod "
    "(upstream's scheduler_unschedulable_pods gauge is kept by the queue).",
    ["plugin", "profile"],
)
ASSUME_LATENCY = Histogram(
    "ksched_assume_request_duration_seconds", "Round trip of an assume request.", buckets=_BUCKETS
)
POP_PODS = Histogram(
    "ksched_scheduler_pop_pods",
    "Pods received per pop from the queue, pops that brought none left out (the size asked for "
    "follows --pop-window and --batch).",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
ASSUME_CONFLICTS = Counter(
    "ksched_assume_conflicts_total", "Placements the informer rejected, by reason code.", ["code"]
)

PREEMPTION_ATTEMPTS = Counter(
    "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now"
)
PREEMPTION_VICTIMS = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    buckets=exponential_buckets(1, 2, 7),
)
REPLICA_LAG = Gauge(
    "ksched_snapshot_delta_lag_seconds", "Age of the newest snapshot delta when this replica applied it."
)
REPLICA_GENERATION = Gauge("ksched_snapshot_generation", "Generation of this replica's snapshot.")
