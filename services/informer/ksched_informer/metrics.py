"""The informer's metrics (default registry; upstream names where the meaning is the same)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from ksched.metrics.metric_children import Children

CACHE_SIZE = Gauge(
    "scheduler_cache_size",
    "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
    ["type"],
)
EVENTS = Counter(
    "ksched_informer_events_total", "Watch events processed, by kind and type.", ["kind", "type"]
)
ASSUMES = Counter(
    "ksched_assume_total", "Assume requests, by result (accepted or a reject code).", ["result"]
)
EVENTS_OF = Children(EVENTS)
"""``EVENTS``'s children, kept (two watch events per pod)."""
ASSUMES_OF = Children(ASSUMES)
ASSUME_FULL_CHECKS = Counter(
    "ksched_assume_full_checks_total",
    "Assume checks that ran the profile's whole PreFilter and Filter, by why (the others read only "
    "the changes since the decision).",
    ["reason"],
)
ASSUME_PLUGIN_RECHECKS = Counter(
    "ksched_assume_plugin_rechecks_total",
    "Plugins an assume check ran again alone (changes since the decision could affect only them).",
    ["plugin"],
)
GENERATION = Gauge("ksched_cache_generation", "The cache's current snapshot generation.")
PUBLISH_LAG = Gauge(
    "ksched_informer_unpublished_ops",
    "Snapshot ops waiting to be published: cache changes not yet acknowledged by JetStream.",
)
"""Read at scrape time from the running informer (see ``InformerService.__init__``)."""
