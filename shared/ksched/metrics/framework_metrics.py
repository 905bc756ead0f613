"""Framework metrics more than one service exports (default registry).

``scheduler_framework_extension_point_duration_seconds``: the scheduler observes its cycle's extension
points, the queue PreEnqueue (where upstream's queue runs it). ``scheduler_plugin_evaluation_total``:
the scheduler's frameworks count their plugin calls in plain integers
(:class:`ksched.framework.evaluations.PluginEvaluations`); :data:`PLUGIN_EVALUATIONS` reads them at
scrape time.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, Metric

from ksched.framework.evaluations import PluginEvaluations
from ksched.metrics.histogram import Histogram, exponential_buckets

EXTENSION_POINT_DURATION = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
)
"""0.1 ms up to ~205 ms, factor 2 (upstream's buckets)."""

PLUGIN_EVALUATION_HELP = (
    "Number of attempts to schedule pods by each plugin and the extension point "
    "(available only in PreFilter, Filter, PreScore, and Score)."
)


class PluginEvaluationCollector:
    """``scheduler_plugin_evaluation_total{plugin,extension_point,profile}`` from the tracked
    frameworks' counts. Counts of several frameworks of one profile (several schedulers in one
    process, as in tests) add up. A tracked count object is kept for good, so a counter never goes
    back."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._sources: list[tuple[str, PluginEvaluations]] = []
        self._registry = registry
        self._registered = False

    def track(self, profile: str, evaluations: PluginEvaluations) -> None:
        """Export ``evaluations`` under ``profile``; the first call registers the collector, so a
        service that tracks nothing (the queue) exports no empty family."""
        if not any(counts is evaluations for _, counts in self._sources):
            self._sources.append((profile, evaluations))
        if self._registry is not None and not self._registered:
            self._registry.register(self)
            self._registered = True

    def values(self) -> dict[tuple[str, str, str], int]:
        """``(plugin, extension point, profile) -> evaluations`` (tests, debugging)."""
        out: dict[tuple[str, str, str], int] = {}
        for profile, counts in self._sources:
            for plugin, point, n in counts.totals():
                key = (plugin, point, profile)
                out[key] = out.get(key, 0) + n
        return out

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            "scheduler_plugin_evaluation",
            PLUGIN_EVALUATION_HELP,
            labels=["plugin", "extension_point", "profile"],
        )

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for labels, n in self.values().items():
            family.add_metric(list(labels), n)
        yield family


PLUGIN_EVALUATIONS = PluginEvaluationCollector(REGISTRY)
