"""The pipeline's metrics on ``ksched kube-scheduler``'s one port: every service's /metrics, merged.

kube-scheduler serves its scheduler series (``scheduler_schedule_attempts_total``,
``scheduler_pending_pods`` ...) on its secure port; the drop-in's pipeline exports them from four
kinds of child processes, each on its own loopback port. :class:`PipelineMetrics` scrapes them when
/metrics is asked (:meth:`PipelineMetrics.refresh`) and serves one exposition, one HELP and TYPE per
family:

- counters, histograms and summaries are summed over the processes for each label set, so they count
  what one kube-scheduler would (``scheduler_schedule_attempts_total`` of every scheduler replica,
  ``scheduler_pod_scheduling_sli_duration_seconds`` of every binder);
- gauges of the replicated services (scheduler and binder replicas) carry a ``replica`` label, the
  process's name (``scheduler-0``, ``binder-1``): a replica's snapshot generation or lag does not
  add up; the informer's and the queue's (one process each: ``scheduler_pending_pods``,
  ``scheduler_cache_size``) are served as they export them;
- each child's ``process_*`` and ``python_*`` series, ``leader_election_master_status`` (the
  children are not elected, the launcher is) and every ``*_created`` series (a counter's creation
  time; the Go client that kube-scheduler uses has none) are left out; the launcher's own registry
  (its process, its election) comes first and wins any name both have.

A process whose scrape fails keeps its last scraped values, so a summed counter never goes down while
the pipeline runs (a child's restart ends the pipeline: the drop-in exits).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import aiohttp
from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

REPLICATED = frozenset({"scheduler", "binder"})
"""Services that run as several processes, whose gauges are labelled with the process's name."""
REPLICA_LABEL = "replica"
SCRAPE_TIMEOUT = 2.0
_OWN_PREFIXES = ("process_", "python_")
_OWN_NAMES = frozenset({"leader_election_master_status"})
_ADDITIVE = frozenset({"counter", "histogram", "gaugehistogram", "summary"})


@dataclass(frozen=True)
class Child:
    """One service process of the pipeline and its plain-HTTP loopback port."""

    name: str
    service: str
    port: int


def _kept(family: Metric) -> bool:
    return not (
        family.name.startswith(_OWN_PREFIXES) or family.name in _OWN_NAMES or family.name.endswith("_created")
    )


def merge(children: Sequence[tuple[Child, Sequence[Metric]]]) -> list[Metric]:
    """The families of every child as one exposition (the rules of this module's docstring)."""
    merged: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], tuple[dict[str, str], float]]] = {}
    for child, families in children:
        for family in families:
            if not _kept(family):
                continue
            out = merged.get(family.name)
            if out is None:
                out = merged[family.name] = Metric(
                    family.name, family.documentation, family.type, family.unit
                )
                values[family.name] = {}
            elif out.type != family.type:
                log.debug(
                    "%s: %s is a %s here, a %s before; left out",
                    child.name,
                    family.name,
                    family.type,
                    out.type,
                )
                continue
            label = family.type not in _ADDITIVE and child.service in REPLICATED
            series = values[family.name]
            for sample in family.samples:
                if sample.name.endswith("_created"):
                    continue
                labels = {**sample.labels, REPLICA_LABEL: child.name} if label else sample.labels
                key = (sample.name, tuple(sorted(labels.items())))
                known = series.get(key)
                series[key] = (labels, sample.value + (known[1] if known is not None else 0.0))
    for name, out in merged.items():
        for (sample_name, _), (labels, value) in values[name].items():
            out.add_sample(sample_name, labels, value)
    return list(merged.values())


class PipelineMetrics(Collector):
    """A collector of the launcher's own registry followed by the children's merged families."""

    def __init__(self, children: Callable[[], Sequence[Child]], own: Collector = REGISTRY) -> None:
        self._children = children
        self._own = own
        self._last: dict[str, tuple[Child, list[Metric]]] = {}

    async def refresh(self) -> None:
        """Scrape every running child (concurrently); a child that does not answer keeps its last."""
        children = list(self._children())
        names = {c.name for c in children}
        for gone in set(self._last) - names:
            del self._last[gone]
        if not children:
            return
        timeout = aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            scraped = await asyncio.gather(*(_scrape(session, c) for c in children))
        for child, families in zip(children, scraped, strict=True):
            if families is not None:
                self._last[child.name] = (child, families)

    def collect(self) -> Iterable[Metric]:
        own = list(self._own.collect())
        taken = {family.name for family in own}
        yield from own
        for family in merge([self._last[name] for name in sorted(self._last)]):
            if family.name not in taken:
                yield family


async def _scrape(session: aiohttp.ClientSession, child: Child) -> list[Metric] | None:
    try:
        async with session.get(f"http://127.0.0.1:{child.port}/metrics") as r:
            if r.status != 200:
                log.debug("%s: /metrics answered HTTP %d", child.name, r.status)
                return None
            text = await r.text()
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.debug("%s: /metrics: %s", child.name, exc)
        return None
    try:
        return list(text_string_to_metric_families(text))
    except ValueError as exc:
        log.warning("%s: /metrics is not Prometheus text (%s); its last values are kept", child.name, exc)
        return None
