"""``scheduler_plugin_execution_duration_seconds``: how long each plugin ran at an extension point,
recorded on a sample of scheduling cycles as upstream (``pluginMetricsSamplePercent``, 10 %).

The scheduler (PreFilter … Permit, Unreserve), the binder (PreBind, Bind, PostBind) and the queue
(PreEnqueue) each export it. Batch plugins judge or score many nodes in one call; that call counts as
one run per node, each taking the call's mean time per node, so ``_count`` and ``_sum`` mean what
they mean upstream (runs per node, and their total time). That needs a histogram that takes an
observation with a multiplicity, which prometheus_client's does not: :class:`WeightedHistogram`.
"""

from __future__ import annotations

import bisect
import math
import os
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from prometheus_client.core import REGISTRY, HistogramMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

_go_float: Callable[[float], str] = floatToGoString
"""How Prometheus spells a bucket bound (``1e-05``, ``0.0001``, ``+Inf``)."""

SAMPLE_PERCENT = 10
"""Upstream's ``pluginMetricsSamplePercent``: the share of cycles whose plugins are timed."""
SAMPLE_PERCENT_ENV = "KSCHED_PLUGIN_METRICS_SAMPLE_PERCENT"


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream ``metrics.ExponentialBuckets``: ``start * factor**i`` for ``i`` in ``range(count)``."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError(
            f"exponential buckets need start > 0, factor > 1, count >= 1 (got {start}, {factor}, {count})"
        )
    return tuple(start * factor**i for i in range(count))


PLUGIN_DURATION_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
"""0.01 ms up to ~22 ms, factor 1.5 (upstream's buckets for this metric)."""


class WeightedHistogram:
    """A labelled histogram (a prometheus_client collector) whose ``observe`` takes a multiplicity:
    ``count`` observations of ``value`` each, in one step. Not thread-safe: one event loop owns it
    (prometheus_client's aiohttp handler collects on that loop)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        bounds = sorted(float(b) for b in buckets if not math.isinf(b))
        if not bounds:
            raise ValueError(f"histogram {name}: needs at least one finite bucket bound")
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._bounds = bounds
        self._les = [_go_float(b) for b in bounds] + ["+Inf"]
        #: labels -> per-bucket counts (not cumulative; the last is +Inf), then the sum at the end
        self._series: dict[tuple[str, ...], list[float]] = {}
        if registry is not None:
            registry.register(self)

    def observe(self, labels: tuple[str, ...], value: float, count: int = 1) -> None:
        """Count ``count`` observations of ``value`` under ``labels`` (in ``labelnames`` order)."""
        if count <= 0:
            return
        series = self._series.get(labels)
        if series is None:
            if len(labels) != len(self.labelnames):
                raise ValueError(f"histogram {self.name}: labels {labels} do not match {self.labelnames}")
            series = self._series[labels] = [0.0] * (len(self._bounds) + 2)
        series[bisect.bisect_left(self._bounds, value)] += count
        series[-1] += value * count

    def count(self, labels: tuple[str, ...]) -> float:
        """Observations under ``labels`` so far (tests, debugging)."""
        series = self._series.get(labels)
        return sum(series[:-1]) if series is not None else 0.0

    def series(self) -> Iterable[tuple[str, ...]]:
        return list(self._series)

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for labels, series in list(self._series.items()):
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for le, n in zip(self._les, series[:-1], strict=True):
                cumulative += n
                buckets.append((le, cumulative))
            family.add_metric(list(labels), buckets, sum_value=series[-1])
        yield family


PLUGIN_EXECUTION_DURATION = WeightedHistogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    PLUGIN_DURATION_BUCKETS,
)


def observe_plugin(plugin: str, extension_point: str, status: str, seconds: float, runs: int) -> None:
    """The observer services install on their frameworks (``Framework.observe_plugin``)."""
    PLUGIN_EXECUTION_DURATION.observe((plugin, extension_point, status), seconds, runs)


def sample_percent(env: Mapping[str, str] | None = None) -> int:
    """The sampling percentage: ``KSCHED_PLUGIN_METRICS_SAMPLE_PERCENT`` (0-100) or upstream's 10."""
    text = (os.environ if env is None else env).get(SAMPLE_PERCENT_ENV, "")
    if not text:
        return SAMPLE_PERCENT
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 100:
        raise ValueError(f"{SAMPLE_PERCENT_ENV}={text!r}: expected an integer from 0 to 100")
    return value


class CycleSampler:
    """Decides whether a cycle records plugin metrics (upstream ``rand.Intn(100) < percent``), with
    its own random source so seeded tie-breaking is not disturbed."""

    __slots__ = ("_draw", "percent")

    def __init__(self, percent: int = SAMPLE_PERCENT, seed: int | None = None) -> None:
        self.percent = percent
        self._draw = random.Random(seed).randrange

    def __call__(self) -> bool:
        return self._draw(100) < self.percent
