"""/metrics in the Prometheus text format, with the API server's metric names.

Request counts are kept in a plain Counter on the hot path and turned into metric families only when
scraped: ``apiserver_request_total``, ``apiserver_registered_watchers``, ``apiserver_storage_objects``,
plus ``kubesim_resource_version`` and ``kubesim_client_requests_total`` (requests per client, the
product of its User-Agent, so tests can see which service called what: the RBAC check).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .resources import ResourceType
from .store import Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

RequestKey = tuple[str, str, str, str, str, str, str]
ClientKey = tuple[str, str, str, str, str]  # client, verb, group, resource, subresource


class ApiMetrics(Collector):
    """Counts requests and reports store sizes and watchers when scraped."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.requests: Counter[RequestKey] = Counter()
        self.clients: Counter[ClientKey] = Counter()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def observe(
        self, verb: str, rt: ResourceType, subresource: str | None, namespaced: bool, code: int
    ) -> None:
        """A request that was answered (a watch once it ends, as the API server counts it)."""
        scope = "namespace" if namespaced else ("cluster" if not rt.namespaced else "resource")
        self.requests[(verb, rt.group, rt.version, rt.plural, subresource or "", scope, str(code))] += 1

    def observe_client(self, user_agent: str, verb: str, rt: ResourceType, subresource: str | None) -> None:
        """A request as it arrives, by its client (the User-Agent product: ``ksched-binder``)."""
        self.clients[(user_agent.partition("/")[0], verb, rt.group, rt.plural, subresource or "")] += 1

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
            "resource, scope, component, and HTTP response code.",
            labels=["verb", "group", "version", "resource", "subresource", "scope", "component", "code"],
        )
        for (verb, group, version, resource, sub, scope, code), count in sorted(self.requests.items()):
            requests.add_metric([verb, group, version, resource, sub, scope, "apiserver", code], count)
        yield requests
        watchers = GaugeMetricFamily(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            labels=["group", "version", "kind"],
        )
        objects = GaugeMetricFamily(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            labels=["resource"],
        )
        for table in self.store.tables.values():
            rt = table.rt
            watchers.add_metric([rt.group, rt.version, rt.kind], len(table.watchers))
            objects.add_metric([rt.key], len(table.objects))
        yield watchers
        yield objects
        clients = CounterMetricFamily(
            "kubesim_client_requests",
            "Requests per client (the product of its User-Agent), verb, group, resource and subresource.",
            labels=["client", "verb", "group", "resource", "subresource"],
        )
        for key, count in sorted(self.clients.items()):
            clients.add_metric(list(key), count)
        yield clients
        rv = GaugeMetricFamily("kubesim_resource_version", "The current global resourceVersion of kubesim.")
        rv.add_metric([], self.store.rv)
        yield rv

    def render(self) -> bytes:
        return generate_latest(self.registry)
