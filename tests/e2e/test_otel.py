"""End to end: with ``--tracing-config-file`` (here ``KSCHED_TRACING_CONFIG_FILE``, Kubernetes'
TracingConfiguration) every service exports OTLP spans to a collector (an in-test OTLP/gRPC
receiver decoding the protobuf with opentelemetry-proto): one bound pod's attempt is one trace
spanning the four services, each span under the right parent, carried across services by the
lease's and the NATS messages' ``traceparent``; a gang member's too, through the group commit (gang
scheduling on); ``ksched trace`` keeps working beside it."""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.testing import (
    create_nodes,
    create_pods,
    eventually,
    ksched_trace,
    kube_api,
    node,
    pod,
    pod_nodes,
    running_stack,
)

pytestmark = pytest.mark.e2e


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """Collects every exported span as a plain dict."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def Export(self, request: Any, context: Any) -> Any:
        with self.lock:
            for resource_spans in request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            {
                                "service": resource.get("service.name"),
                                "name": span.name,
                                "trace": span.trace_id.hex(),
                                "span": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "attributes": {a.key: a.value for a in span.attributes},
                                "start": span.start_time_unix_nano,
                                "end": span.end_time_unix_nano,
                            }
                        )
        return trace_service_pb2.ExportTraceServiceResponse()

    def of_pod(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [s for s in self.spans if s["attributes"]["k8s.pod.name"].string_value == name]


@pytest.fixture(scope="module")
def receiver() -> Iterator[tuple[Receiver, int]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    collected = Receiver()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collected, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield collected, port
    finally:
        server.stop(grace=None)


@pytest.fixture(scope="module")
async def stack(
    tmp_path_factory: pytest.TempPathFactory, receiver: tuple[Receiver, int]
) -> AsyncIterator[Stack]:
    workdir = tmp_path_factory.mktemp("otel-stack")
    config = workdir / "tracing.yaml"
    config.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
        f"endpoint: 127.0.0.1:{receiver[1]}\nsamplingRatePerMillion: 1000000\n"
    )
    options = StackOptions(
        workdir=workdir,
        pod_start_delay=0.1,
        time_scale=0.01,
        feature_gates="GenericWorkload=true,GangScheduling=true",  # for the gang's trace
        extra_env={"KSCHED_TRACING_CONFIG_FILE": str(config)},
    )
    async with running_stack(options) as s:
        yield s


@pytest.fixture(scope="module")
async def two_nodes(stack: Stack) -> None:
    """``n1`` and ``n2`` (2 cpu each), made once for the tests that need them, whichever runs first."""
    async with kube_api(stack.kubeconfig) as api:
        await create_nodes(api, [node("n1", cpu="2"), node("n2", cpu="2")])


async def test_one_pods_trace_spans_the_four_services_with_their_parents(
    stack: Stack, api: ApiClient, receiver: tuple[Receiver, int], two_nodes: None
) -> None:
    collected, _ = receiver
    await create_pods(api, [pod("otel-pod", cpu="100m")])

    async def bound() -> bool:
        return bool((await pod_nodes(api)).get("otel-pod"))

    await eventually(bound, timeout=60)

    async def whole_trace() -> dict[str, dict[str, Any]] | None:
        spans = collected.of_pod("otel-pod")
        bound_span = next((s for s in spans if s["name"] == "bound"), None)
        if bound_span is None:
            return None
        mine = {s["name"]: s for s in spans if s["trace"] == bound_span["trace"]}
        wanted = {"queued", "popped", "snapshot", "filter", "assumed", "assume_check", "prebind", "bound"}
        return mine if wanted <= set(mine) else None

    trace = await eventually(whole_trace, timeout=30)
    services = {name: span["service"] for name, span in trace.items()}
    assert services["queued"] == services["popped"] == "ksched-queue"
    assert {services[n] for n in ("snapshot", "filter", "assumed")} == {"ksched-scheduler"}
    assert services["assume_check"] == "ksched-informer"
    assert services["prebind"] == services["bound"] == "ksched-binder"
    assert len({span["trace"] for span in trace.values()}) == 1

    def parent(name: str) -> str:
        by_id = {span["span"]: n for n, span in trace.items()}
        return str(by_id.get(trace[name]["parent"], "<none>" if not trace[name]["parent"] else "<unknown>"))

    assert parent("queued") == "<none>"  # the attempt's root
    assert parent("popped") == "queued"
    for name in ("snapshot", "filter", "assumed"):
        assert parent(name) == "popped", name  # through the lease's traceparent
    assert parent("assume_check") == "assumed"  # through the assume request's traceparent header
    assert parent("prebind") == parent("bound") == "assume_check"  # through the placement's header
    assert trace["bound"]["attributes"]["ksched.node"].string_value in ("n1", "n2")
    assert trace["filter"]["end"] > trace["filter"]["start"]  # a measured phase has its duration

    code, out, err = await ksched_trace(stack, "default/otel-pod")
    assert code == 0, err
    assert "informer" in out and "assume_check" in out and "bound on" in out


async def test_an_unschedulable_attempt_ends_under_the_scheduler(
    stack: Stack, api: ApiClient, receiver: tuple[Receiver, int], two_nodes: None
) -> None:
    collected, _ = receiver
    await create_pods(api, [pod("otel-huge", cpu="64")])

    async def attempt() -> dict[str, dict[str, Any]] | None:
        spans = collected.of_pod("otel-huge")
        requeued = next((s for s in spans if s["name"] == "requeued"), None)
        if requeued is None:
            return None
        mine = {s["name"]: s for s in spans if s["trace"] == requeued["trace"]}
        return mine if {"queued", "popped", "filter", "unschedulable"} <= set(mine) else None

    trace = await eventually(attempt, timeout=30)
    by_id = {span["span"]: name for name, span in trace.items()}
    assert by_id[trace["unschedulable"]["parent"]] == "popped"
    assert trace["unschedulable"]["service"] == "ksched-scheduler"
    # through the done request's traceparent header: the scheduler's span that ended the attempt
    assert by_id[trace["requeued"]["parent"]] == "unschedulable"
    assert trace["requeued"]["service"] == "ksched-queue"
    rejected = trace["filter"]["attributes"]["ksched.rejected"].string_value
    assert "NodeResourcesFit" in rejected  # details as attributes (a structure as JSON)


async def test_a_gang_members_trace_crosses_the_group_commit(
    stack: Stack, api: ApiClient, receiver: tuple[Receiver, int]
) -> None:
    """Members of a gang are placed by one group commit, yet each member's attempt is its own trace
    with the parents of a single pod's: the commit carries each member's ``assumed`` context (the
    informer's ``assume_check`` is its child) and each placement its ``assume_check``'s."""
    collected, _ = receiver
    await create_nodes(api, [node("gang-n1", cpu="2")])
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "otel-gang", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        "scheduling.k8s.io", "v1alpha2", "default", "podgroups", body
    )
    names = ["otel-gang-0", "otel-gang-1"]
    members = [pod(n, cpu="100m", schedulingGroup={"podGroupName": "otel-gang"}) for n in names]
    await create_pods(api, members)

    async def bound() -> bool:
        placed = await pod_nodes(api)
        return all(placed.get(n) for n in names)

    await eventually(bound, timeout=60)

    async def whole_trace(name: str) -> dict[str, dict[str, Any]] | None:
        spans = collected.of_pod(name)
        bound_span = next((s for s in spans if s["name"] == "bound"), None)
        if bound_span is None:
            return None
        mine = {s["name"]: s for s in spans if s["trace"] == bound_span["trace"]}
        return mine if {"popped", "assumed", "assume_check", "prebind", "bound"} <= set(mine) else None

    traces = [await eventually(functools.partial(whole_trace, n), timeout=30) for n in names]
    assert len({t["bound"]["trace"] for t in traces}) == 2  # one trace per member's attempt
    for trace in traces:
        by_id = {span["span"]: n for n, span in trace.items()}

        def parent(name: str, trace: dict[str, dict[str, Any]] = trace, by_id: dict[str, str] = by_id) -> str:
            return by_id.get(trace[name]["parent"], "<none>" if not trace[name]["parent"] else "<unknown>")

        assert parent("assumed") == "popped"
        assert parent("assume_check") == "assumed"  # through the group commit's traceparents
        assert parent("prebind") == parent("bound") == "assume_check"  # through the placement's header
        assert trace["assume_check"]["service"] == "ksched-informer"


def test_the_config_file_path_is_what_the_stack_passes(tmp_path: Path) -> None:
    """The variable the stack sets is the flag's (a renamed flag would leave the export off)."""
    import argparse

    from ksched.service.options import add_common_arguments

    parser = argparse.ArgumentParser()
    add_common_arguments(parser, 1, env={"KSCHED_TRACING_CONFIG_FILE": str(tmp_path / "t.yaml")})
    assert parser.parse_args([]).tracing_config_file == str(tmp_path / "t.yaml")
