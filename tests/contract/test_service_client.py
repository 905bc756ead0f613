"""The services' API client (``ksched.client.config.api_client``) and the DefaultBinder's call through
it, against the contract cluster: its session does not read netrc or proxy variables per request,
the environment's proxy still applies (resolved once), and the binding answers keep their meaning
(201 bound, 409 already bound to the same node, 409 bound elsewhere, 404 pod gone)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from ksched_binder.service import already_bound_to, pod_gone
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, Configuration

from ksched import __version__
from ksched.client.config import api_client, load_configuration
from ksched.client.rest import Client
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.testing import FakeHandle, make_pod
from ksched.plugins.defaultbinder import BindError, DefaultBinder, binding_path
from tests.contract.testing import create_pod, node_manifest, unique
from tests.fixtures.kubesim import Cluster

pytestmark = pytest.mark.contract


@pytest.fixture
async def service_api(cluster: Cluster) -> AsyncIterator[Client]:
    api = await api_client(str(cluster.kubeconfig))
    async with api:
        yield api


@pytest.fixture
async def node(api: ApiClient, cluster: Cluster) -> str:
    body = node_manifest(cluster, unique("svc-bind"))
    core: Any = client.CoreV1Api(api)  # typed for V1Node; a manifest dict is sent as is
    await core.create_node(body)
    return str(body["metadata"]["name"])


async def pod_info(api: ApiClient, namespace: str, name: str) -> PodInfo:
    created = await create_pod(api, namespace, name)
    return PodInfo(make_pod(name, namespace, uid=created.metadata.uid))


async def test_session_does_not_trust_the_environment_per_request(service_api: Client) -> None:
    session = service_api.session()
    connector = session.connector
    assert session.trust_env is False
    assert connector is not None and connector.limit == 64
    async with service_api.stream("/api/v1") as resp:  # the session's path (watches take it)
        assert resp.status == 200
        assert (await resp.read()).startswith(b"{")
    status, body = await service_api.request("GET", "/api/v1")  # the pool's path
    assert status == 200 and b'"groupVersion":"v1"' in body.replace(b" ", b"")
    await service_api.close()
    assert session.closed and connector.closed


async def test_the_client_names_its_service_in_the_user_agent(cluster: Cluster) -> None:
    """As kube-scheduler does: audit logs and field managers show which ksched service wrote."""
    async with await api_client(str(cluster.kubeconfig), component="ksched-binder") as api:
        assert api.user_agent == f"ksched-binder/{__version__}"


async def test_environment_proxy_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with Client(Configuration(host="https://10.96.0.1:443")) as api:
        assert api.proxy == "http://proxy.example:3128"
        assert api.proxy_headers == {"Proxy-Authorization": "Basic dXNlcjpzZWNyZXQ="}
        assert api.http1 is None  # the pool does not speak to proxies
    monkeypatch.setenv("NO_PROXY", "10.96.0.1")
    async with Client(Configuration(host="https://10.96.0.1:443")) as api:
        assert not api.proxy and api.http1 is not None
    explicit = Configuration(host="https://10.96.0.1:443")
    explicit.proxy = "http://configured:8080"
    async with Client(explicit) as api:
        assert api.proxy == "http://configured:8080"


async def test_binding_answers_through_the_service_client(
    service_api: Client, api: ApiClient, cluster: Cluster, node: str
) -> None:
    binder = DefaultBinder(FakeHandle(client=service_api))
    pi = await pod_info(api, cluster.namespace, unique("svc-bind"))
    assert await binder.bind(CycleState(), pi, node) is None
    pod = await client.CoreV1Api(api).read_namespaced_pod(pi.name, cluster.namespace)
    assert pod.spec.node_name == node

    again = await binder.bind(CycleState(), pi, node)  # a redelivered placement: the binder's success
    assert again is not None and isinstance(again.error, BindError) and again.error.code == 409
    assert already_bound_to(again, node)

    elsewhere = await binder.bind(CycleState(), pi, cluster.name("other-node"))
    assert elsewhere is not None and isinstance(elsewhere.error, BindError)
    assert elsewhere.error.code == 409 and not already_bound_to(elsewhere, cluster.name("other-node"))

    await client.CoreV1Api(api).delete_namespaced_pod(pi.name, cluster.namespace, grace_period_seconds=0)
    gone = PodInfo(make_pod(pi.name, cluster.namespace, uid=pi.uid))
    missing = await binder.bind(CycleState(), gone, node)
    assert missing is not None and isinstance(missing.error, BindError) and missing.error.code == 404
    assert pod_gone(missing)
    # these writes went over the client's own HTTP/1.1 connections (ksched.client.http1)
    pool = service_api.http1
    assert pool is not None and pool._open, "the request did not use the service client's pool"


async def test_writes_take_aiohttp_when_a_proxy_is_configured(cluster: Cluster) -> None:
    """The small client speaks to the API server directly; a configured proxy takes aiohttp's path."""
    cfg = await load_configuration(str(cluster.kubeconfig))
    cfg.proxy = "http://127.0.0.1:9"  # nothing listens: a request must try it
    async with Client(cfg) as api:
        assert api.http1 is None
        with pytest.raises(Exception, match=r"127\.0\.0\.1:9|Cannot connect"):
            await api.request("GET", "/api/v1/namespaces")


def test_binding_path_escapes_segments() -> None:
    assert binding_path("ns", "web-0") == "/api/v1/namespaces/ns/pods/web-0/binding"
    assert binding_path("ns", "a/b") == "/api/v1/namespaces/ns/pods/a%2Fb/binding"
