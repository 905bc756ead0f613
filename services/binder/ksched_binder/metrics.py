"""The binder's metrics (upstream names where the meaning is the same)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from ksched.metrics.histogram import Histogram, exponential_buckets
from ksched.metrics.metric_children import Children

_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)

BINDINGS = Counter("ksched_binder_bindings_total", "Placements finished, by result.", ["result"])
BINDINGS_OF = Children(BINDINGS)
BIND_DURATION = Histogram(
    "ksched_binder_binding_duration_seconds",
    "WaitOnPermit + PreBind + Bind + PostBind per placement.",
    buckets=_BUCKETS,
)
PERMIT_WAIT = Histogram(
    "scheduler_permit_wait_duration_seconds",
    "Duration of waiting on permit.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),  # 1 ms up to ~16 s, as upstream
)
SLI_DURATION = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
    "involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),  # 10 ms up to ~87 min, as upstream
)
QUEUE_DEPTH = Gauge(
    "ksched_binder_queue_depth", "Placements waiting in the binder work queue (pending + unacked)."
)
BUSY_WORKERS = Gauge(
    "ksched_binder_busy_workers", "Binder workers handling a placement now (read at scrape time)."
)
EVENTS_GIVEN_UP = Counter(
    "ksched_binder_scheduled_events_given_up_total",
    "Bound placements acknowledged without their Scheduled event: its write failed on every delivery.",
)
POD_READS_FAILED = Counter(
    "ksched_binder_pod_reads_failed_total",
    "Reads of a pod that failed when a placement delivered before (or a refused Binding) was checked "
    "against it, by HTTP status code ('error': no answer); the placement is kept and tried again.",
    ["code"],
)
POD_SCHEDULING_ATTEMPTS = Histogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
)
POD_SCHEDULED_AFTER_FLUSH = Counter(
    "scheduler_pod_scheduled_after_flush_total",
    "Number of pods that were successfully scheduled after being flushed from unschedulablePods due to "
    "timeout. This metric helps detect potential queueing hint misconfigurations or event handling issues.",
)


def attempts_label(attempts: int) -> str:
    """Upstream ``getAttemptsLabel``: the attempt count, capped at ``15+``."""
    return "15+" if attempts >= 15 else str(attempts)
