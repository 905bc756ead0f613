"""Prometheus counters of the bus layer (default registry, labelled by subject family only)."""

from __future__ import annotations

from prometheus_client import Counter

BAD_MESSAGES = Counter(
    "ksched_bus_bad_messages_total",
    "Messages dropped because they were malformed, of another type, or of an unreadable version.",
    ["subject_kind"],
)

HANDLER_ERRORS = Counter(
    "ksched_bus_handler_errors_total",
    "Messages whose handler raised an exception (logged; the subscription keeps running).",
    ["subject_kind"],
)
