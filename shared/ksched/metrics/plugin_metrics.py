"""``scheduler_plugin_execution_duration_seconds``: how long each plugin ran at an extension point,
recorded on a sample of scheduling cycles as upstream (``pluginMetricsSamplePercent``, 10 %).

The scheduler (PreFilter … Permit, Unreserve), the binder (PreBind, Bind, PostBind) and the queue
(PreEnqueue) each export it. Batch plugins judge or score many nodes in one call; that call counts as
one run per node, each taking the call's mean time per node, so ``_count`` and ``_sum`` mean what
they mean upstream (runs per node, and their total time): an observation with a multiplicity
(:meth:`ksched.metrics.histogram.Series.observe`).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping

from ksched.metrics.histogram import Histogram, exponential_buckets

SAMPLE_PERCENT = 10
"""Upstream's ``pluginMetricsSamplePercent``: the share of cycles whose plugins are timed."""
SAMPLE_PERCENT_ENV = "KSCHED_PLUGIN_METRICS_SAMPLE_PERCENT"


PLUGIN_DURATION_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
"""0.01 ms up to ~22 ms, factor 1.5 (upstream's buckets for this metric)."""


PLUGIN_EXECUTION_DURATION = Histogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    PLUGIN_DURATION_BUCKETS,
)


def observe_plugin(plugin: str, extension_point: str, status: str, seconds: float, runs: int) -> None:
    """The observer services install on their frameworks (``Framework.observe_plugin``)."""
    PLUGIN_EXECUTION_DURATION.labels(plugin, extension_point, status).observe(seconds, runs)


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
