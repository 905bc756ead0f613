"""LIST: pagination, selectors, resourceVersion semantics and the list shapes."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests import kube
from tests.contract.testing import bind, create_pod, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


@pytest.fixture(scope="module")
async def listing(cluster: Cluster) -> AsyncIterator[str]:
    """A namespace of its own with five known pods: two bound, one Succeeded."""
    from tests.fixtures.kubesim import api_client_for

    namespace = f"{cluster.prefix}-list"
    api = await api_client_for(cluster.kubeconfig)
    async with api:
        core = client.CoreV1Api(api)
        await core.create_namespace(kube.body({"metadata": {"name": namespace, "labels": cluster.labels()}}))
        await create_pod(api, namespace, "a-web", labels={"app": "web", "tier": "be"})
        await create_pod(api, namespace, "b-web", labels={"app": "web", "tier": "fe"})
        await create_pod(api, namespace, "c-db", labels={"app": "db", "tier": "be"})
        await create_pod(api, namespace, "d-db", labels={"app": "db", "gone": "yes"})
        await create_pod(api, namespace, "e-other", labels={"app": "other"})
        node_a, node_b = cluster.name("list-a"), cluster.name("list-b")
        assert (await bind(api, namespace, "a-web", node_a))[0] == 201
        assert (await bind(api, namespace, "e-other", node_b))[0] == 201
        await core.patch_namespaced_pod_status("e-other", namespace, {"status": {"phase": "Succeeded"}})
        try:
            yield namespace
        finally:
            await core.delete_namespace(namespace)


def _names(body: dict[str, object]) -> list[str]:
    items = body["items"]
    assert isinstance(items, list)
    return [i["metadata"]["name"] for i in items]


async def test_list_shape(raw: Raw, listing: str) -> None:
    body = (await raw.get(f"/api/v1/namespaces/{listing}/pods")).json()
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert set(body["metadata"]) == {"resourceVersion"}
    assert _names(body) == ["a-web", "b-web", "c-db", "d-db", "e-other"]
    assert all("kind" not in i and "apiVersion" not in i for i in body["items"])


async def test_empty_list_has_empty_items(raw: Raw, cluster: Cluster) -> None:
    body = (
        await raw.get(f"/api/v1/namespaces/{cluster.namespace}/pods", labelSelector="nothing=matches")
    ).json()
    assert body["items"] == []


async def test_limit_and_continue(raw: Raw, listing: str) -> None:
    path = f"/api/v1/namespaces/{listing}/pods"
    first = (await raw.get(path, limit="2")).json()
    assert _names(first) == ["a-web", "b-web"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded["v"] == "meta.k8s.io/v1" and decoded["rv"] == int(first["metadata"]["resourceVersion"])
    second = (await raw.get(path, limit="2", **{"continue": token})).json()
    assert _names(second) == ["c-db", "d-db"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["metadata"]["remainingItemCount"] == 1
    third = (await raw.get(path, limit="2", **{"continue": second["metadata"]["continue"]})).json()
    assert _names(third) == ["e-other"]
    assert "continue" not in third["metadata"]


async def test_continue_sees_the_first_pages_snapshot(raw: Raw, api: ApiClient, listing: str) -> None:
    path = f"/api/v1/namespaces/{listing}/pods"
    first = (await raw.get(path, limit="3")).json()
    await client.CoreV1Api(api).patch_namespaced_pod(
        "d-db", listing, {"metadata": {"labels": {"later": "x"}}}
    )
    second = (await raw.get(path, limit="3", **{"continue": first["metadata"]["continue"]})).json()
    d_db = next(i for i in second["items"] if i["metadata"]["name"] == "d-db")
    assert "later" not in d_db["metadata"]["labels"]
    current = (await raw.get(f"{path}/d-db")).json()
    assert current["metadata"]["labels"]["later"] == "x"
    await client.CoreV1Api(api).patch_namespaced_pod(
        "d-db", listing, [{"op": "remove", "path": "/metadata/labels/later"}]
    )


async def test_resource_version_zero_ignores_limit(raw: Raw, listing: str) -> None:
    body = (await raw.get(f"/api/v1/namespaces/{listing}/pods", resourceVersion="0", limit="1")).json()
    assert len(body["items"]) == 5
    assert "continue" not in body["metadata"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=", ["b-web", "c-db", "d-db"]),
        ("spec.nodeName!=", ["a-web", "e-other"]),
        ("status.phase!=Succeeded", ["a-web", "b-web", "c-db", "d-db"]),
        ("spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed", ["b-web", "c-db", "d-db"]),
        ("metadata.name=c-db", ["c-db"]),
        ("metadata.name==c-db", ["c-db"]),
    ],
)
async def test_field_selectors(raw: Raw, listing: str, selector: str, expected: list[str]) -> None:
    body = (await raw.get(f"/api/v1/namespaces/{listing}/pods", fieldSelector=selector)).json()
    assert _names(body) == expected


async def test_field_selector_on_node_name_across_namespaces(
    raw: Raw, cluster: Cluster, listing: str
) -> None:
    body = (await raw.get("/api/v1/pods", fieldSelector=f"spec.nodeName={cluster.name('list-a')}")).json()
    assert _names(body) == ["a-web"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a-web", "b-web"]),
        ("app!=web", ["c-db", "d-db", "e-other"]),
        ("app in (web,db),tier notin (fe),!gone", ["a-web", "c-db"]),
        ("gone", ["d-db"]),
        ("app==db,tier", ["c-db"]),
    ],
)
async def test_label_selectors(raw: Raw, listing: str, selector: str, expected: list[str]) -> None:
    body = (await raw.get(f"/api/v1/namespaces/{listing}/pods", labelSelector=selector)).json()
    assert _names(body) == expected


async def test_paging_with_a_selector_has_no_remaining_count(raw: Raw, listing: str) -> None:
    body = (
        await raw.get(f"/api/v1/namespaces/{listing}/pods", labelSelector="app in (web,db)", limit="2")
    ).json()
    assert _names(body) == ["a-web", "b-web"]
    assert "continue" in body["metadata"] and "remainingItemCount" not in body["metadata"]


async def test_invalid_label_selector_is_400(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.get(f"/api/v1/namespaces/{cluster.namespace}/pods", labelSelector="app in (web")
    assert resp.status == 400
    assert resp.json()["message"] == "unable to parse requirement: found '', expected: ',' or ')'"


async def test_unsupported_field_label_is_400(raw: Raw) -> None:
    resp = await raw.get("/api/v1/pods", fieldSelector="spec.foo=bar")
    assert resp.status == 400
    assert resp.json()["message"] == "field label not supported: spec.foo"


async def test_list_at_a_future_resource_version_is_504(raw: Raw, cluster: Cluster) -> None:
    current = int(
        (await raw.get(f"/api/v1/namespaces/{cluster.namespace}/pods")).json()["metadata"]["resourceVersion"]
    )
    started = time.monotonic()
    resp = await raw.get(
        f"/api/v1/namespaces/{cluster.namespace}/pods", resourceVersion=str(current + 100000)
    )
    assert resp.status == 504
    assert resp.headers.get("Retry-After") == "1"
    status = resp.json()
    assert status["reason"] == "Timeout"
    assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert time.monotonic() - started < 10


async def test_list_at_an_exact_resource_version(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    path = f"/api/v1/namespaces/{cluster.namespace}/pods"
    before = (await raw.get(path)).json()["metadata"]["resourceVersion"]
    name = unique("later")
    await create_pod(api, cluster.namespace, name)
    exact = (await raw.get(path, resourceVersion=before, resourceVersionMatch="Exact")).json()
    assert exact["metadata"]["resourceVersion"] == before
    assert name not in _names(exact)
    latest = (await raw.get(path, resourceVersion=before, resourceVersionMatch="NotOlderThan")).json()
    assert name in _names(latest)


async def test_list_nodes_with_name_field_selector(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    from tests.contract.testing import node_manifest

    node = node_manifest(cluster, unique("listed"))
    await client.CoreV1Api(api).create_node(kube.body(node))
    body = (await raw.get("/api/v1/nodes", fieldSelector=f"metadata.name={node['metadata']['name']}")).json()
    assert body["kind"] == "NodeList"
    assert _names(body) == [node["metadata"]["name"]]
