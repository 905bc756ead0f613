"""The histogram every service observes on its per-pod paths (``scheduler_*_duration_seconds`` ...).

prometheus_client's ``Histogram.observe`` takes two locks and walks the buckets one by one: about a
microsecond, and the scheduler observes nine histograms per pod. Here an observation is one bisect
and two additions into the series of its label values. It is a collector on the registry like any
other, exposed the same way (``_bucket`` with ``le``, ``_count``, ``_sum``; no ``_created``).

An observation may carry a multiplicity (``observe(value, count)``: ``count`` observations of
``value`` each): the plugin execution histogram counts a batch plugin's call once per node it judged.

Not thread-safe: one event loop owns it (prometheus_client's aiohttp handler collects on that loop).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import REGISTRY, HistogramMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

_go_float: Callable[[float], str] = floatToGoString
"""How Prometheus spells a bucket bound (``1e-05``, ``0.0001``, ``+Inf``)."""

DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""The Go client's ``prometheus.DefBuckets`` (upstream's histograms that name no buckets)."""


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream ``metrics.ExponentialBuckets``: ``start * factor**i`` for ``i`` in ``range(count)``."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError(
            f"exponential buckets need start > 0, factor > 1, count >= 1 (got {start}, {factor}, {count})"
        )
    return tuple(start * factor**i for i in range(count))


class Series:
    """The buckets and sum of one set of label values."""

    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: list[float]) -> None:
        self._bounds = bounds
        #: observations per bucket, not cumulative; the last is +Inf
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float, count: int = 1) -> None:
        """Count ``count`` observations of ``value`` (a value on a bound falls in that bucket: ``le``)."""
        if count > 0:
            self.counts[bisect.bisect_left(self._bounds, value)] += count
            self.sum += value * count


class Histogram:
    """A histogram with ``labelnames``; ``labels(*values)`` is the series of those values (made on
    first use and kept), ``observe`` the series of a histogram without labels."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        buckets: Sequence[float] = DEFAULT_BUCKETS,
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
        self._series: dict[tuple[str, ...], Series] = {}
        if not self.labelnames:
            self._series[()] = Series(bounds)  # exposed at zero from the start, as prometheus_client's
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> Series:
        """The series of ``values`` (in ``labelnames`` order)."""
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self.labelnames) or not self.labelnames:
                raise ValueError(f"histogram {self.name}: labels {values} do not match {self.labelnames}")
            series = self._series[values] = Series(self._bounds)
        return series

    def observe(self, value: float, count: int = 1) -> None:
        """An observation of a histogram without labels."""
        series = self._series.get(())
        if series is None:
            raise ValueError(f"histogram {self.name}: observe needs its labels {self.labelnames}")
        series.observe(value, count)

    def count(self, values: tuple[str, ...] = ()) -> int:
        """Observations under ``values`` so far (tests, debugging)."""
        series = self._series.get(values)
        return sum(series.counts) if series is not None else 0

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for values, series in list(self._series.items()):
            cumulative = 0
            buckets: list[tuple[str, float]] = []
            for le, n in zip(self._les, series.counts, strict=True):
                cumulative += n
                buckets.append((le, float(cumulative)))
            family.add_metric(list(values), buckets, sum_value=series.sum)
        yield family
