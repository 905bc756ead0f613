"""Prometheus counters of the tracer (default registry, served by every service's /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

PUBLISHED = Counter(
    "ksched_trace_published_total",
    "Trace events handed to NATS (subjects P.trace.<namespace>.<name>, stream P_trace).",
)

DROPPED = Counter(
    "ksched_trace_dropped_total",
    "Trace events dropped instead of published: buffer_full (more events than the buffer holds "
    "between flushes), disconnected (NATS away; traces never fill the reconnect buffer) or error "
    "(a publish or a details builder failed).",
    ["reason"],
)
for _reason in ("buffer_full", "disconnected", "error"):
    DROPPED.labels(_reason)
