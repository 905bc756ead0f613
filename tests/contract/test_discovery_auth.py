"""Discovery documents and authentication answers."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.client.config import load_configuration
from ksched.client.rest import Client
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


async def test_version_is_served(raw: Raw) -> None:
    resp = await raw.get("/version")
    assert resp.status == 200
    body = resp.json()
    assert body["major"] == "1"
    assert body["gitVersion"].startswith("v1.")


async def test_version_api_of_the_client(api: ApiClient) -> None:
    info = await client.VersionApi(api).get_code()
    assert info.major == "1"


async def test_core_group_lists_pods_and_subresources(raw: Raw) -> None:
    body = (await raw.get("/api/v1")).json()
    assert body["kind"] == "APIResourceList"
    assert body["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in body["resources"]}
    assert by_name["pods"]["namespaced"] is True
    assert by_name["pods"]["shortNames"] == ["po"]
    assert set(by_name["pods"]["verbs"]) >= {"create", "delete", "get", "list", "patch", "update", "watch"}
    assert by_name["pods/binding"]["verbs"] == ["create"]
    assert by_name["pods/eviction"]["group"] == "policy"
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["nodes"]["namespaced"] is False


async def test_groups_and_group_versions(raw: Raw) -> None:
    groups = (await raw.get("/apis")).json()
    assert groups["kind"] == "APIGroupList"
    names = [g["name"] for g in groups["groups"]]
    for wanted in (
        "apps",
        "events.k8s.io",
        "policy",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
    ):
        assert wanted in names
    assert names.index("apps") < names.index("policy") < names.index("scheduling.k8s.io")
    leases = (await raw.get("/apis/coordination.k8s.io/v1")).json()
    assert leases["groupVersion"] == "coordination.k8s.io/v1"
    assert [r["name"] for r in leases["resources"]] == ["leases"]
    apps = (await raw.get("/apis/apps/v1")).json()
    assert {"replicasets", "statefulsets"} <= {r["name"] for r in apps["resources"]}


async def test_aggregated_discovery_content_type(raw: Raw) -> None:
    resp = await raw.request("GET", "/api", headers={"Accept": AGGREGATED})
    assert resp.status == 200
    assert (
        resp.headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    body = resp.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    resources = {r["resource"]: r for r in body["items"][0]["versions"][0]["resources"]}
    assert resources["pods"]["scope"] == "Namespaced"
    assert "binding" in [s["subresource"] for s in resources["pods"]["subresources"]]


async def test_unknown_resource_is_404(raw: Raw) -> None:
    resp = await raw.get("/api/v1/namespaces/default/nosuchthings")
    assert resp.status == 404


# --- authentication ------------------------------------------------------------------------------


@pytest.fixture
async def anonymous(cluster: Cluster) -> AsyncIterator[Raw]:
    cfg = copy.copy(await load_configuration(str(cluster.kubeconfig)))
    cfg.api_key = {}
    cfg.cert_file = None
    cfg.key_file = None
    async with Client(cfg) as anon:
        yield Raw(anon)


@pytest.fixture
async def bad_token(cluster: Cluster) -> AsyncIterator[Raw]:
    cfg = copy.copy(await load_configuration(str(cluster.kubeconfig)))
    cfg.api_key = {"BearerToken": "Bearer not-the-token"}
    cfg.cert_file = None
    cfg.key_file = None
    async with Client(cfg) as bad:
        yield Raw(bad)


async def test_no_credentials_is_403_for_system_anonymous(anonymous: Raw, cluster: Cluster) -> None:
    resp = await anonymous.get(f"/api/v1/namespaces/{cluster.namespace}/pods")
    assert resp.status == 403
    body = resp.json()
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the '
        f'namespace "{cluster.namespace}"'
    )
    assert body["details"] == {"kind": "pods"}


async def test_no_credentials_may_read_version(anonymous: Raw) -> None:
    resp = await anonymous.get("/version")
    assert resp.status == 200


async def test_bad_token_is_401(bad_token: Raw, cluster: Cluster) -> None:
    resp = await bad_token.get(f"/api/v1/namespaces/{cluster.namespace}/pods")
    assert resp.status == 401
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
