"""DELETE: graceful deletion of bound pods, immediate deletion of unbound ones, preconditions."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.contract.testing import bind, create_pod, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


async def _bound_pod(api: ApiClient, cluster: Cluster, base: str, grace: int = 600) -> str:
    name = unique(base)
    await create_pod(api, cluster.namespace, name, terminationGracePeriodSeconds=grace)
    assert (await bind(api, cluster.namespace, name, cluster.name("ghost")))[0] == 201
    return name


async def test_bound_pod_is_deleted_gracefully(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    name = await _bound_pod(api, cluster, "graceful")
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"
    resp = await raw.request("DELETE", path)
    assert resp.status == 200
    pod = resp.json()
    assert pod["kind"] == "Pod"
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 600
    assert pod["metadata"]["deletionTimestamp"]
    assert pod["metadata"]["generation"] == 2
    still = await raw.get(path)
    assert still.status == 200
    assert still.json()["metadata"]["deletionTimestamp"] == pod["metadata"]["deletionTimestamp"]
    again = await raw.request("DELETE", path, query={"gracePeriodSeconds": "0"})
    assert again.status == 200
    final = again.json()
    assert final["metadata"]["deletionGracePeriodSeconds"] == 0
    assert final["metadata"]["generation"] == 2
    assert int(final["metadata"]["resourceVersion"]) > int(pod["metadata"]["resourceVersion"])
    assert (await raw.get(path)).status == 404


async def test_repeating_a_longer_grace_changes_nothing(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    name = await _bound_pod(api, cluster, "repeat")
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"
    first = (await raw.request("DELETE", path)).json()
    second = (await raw.request("DELETE", path)).json()
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    await raw.request("DELETE", path, query={"gracePeriodSeconds": "0"})


async def test_bound_pod_with_grace_zero_goes_at_once(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    name = await _bound_pod(api, cluster, "grace0")
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"
    resp = await raw.request("DELETE", path, query={"gracePeriodSeconds": "0"})
    assert resp.status == 200
    assert resp.json()["metadata"]["deletionGracePeriodSeconds"] == 0
    assert (await raw.get(path)).status == 404


async def test_unbound_pod_goes_at_once_even_with_default_grace(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    name = unique("unbound")
    await create_pod(api, cluster.namespace, name)
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"
    resp = await raw.request("DELETE", path)
    assert resp.status == 200
    body = resp.json()
    assert body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert body["metadata"]["generation"] == 2
    assert (await raw.get(path)).status == 404


async def test_deleting_a_missing_pod_is_404(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.request("DELETE", f"/api/v1/namespaces/{cluster.namespace}/pods/missing")
    assert resp.status == 404
    assert resp.json()["details"] == {"name": "missing", "kind": "pods"}


async def test_failing_resource_version_precondition_is_409(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    name = unique("precondition")
    pod = await create_pod(api, cluster.namespace, name)
    body = {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"resourceVersion": "1"},
    }
    resp = await raw.request("DELETE", f"/api/v1/namespaces/{cluster.namespace}/pods/{name}", body=body)
    assert resp.status == 409
    status = resp.json()
    assert status["message"] == (
        f'Operation cannot be fulfilled on Pod "{name}": the ResourceVersion in the precondition '
        "(1) does not "
        f"match the ResourceVersion in record ({pod.metadata.resource_version}). The object might "
        "have been modified"
    )
    assert status["details"] == {"name": name, "kind": "Pod"}


async def test_typed_client_delete_with_body(api: ApiClient, cluster: Cluster) -> None:
    name = unique("typed-delete")
    await create_pod(api, cluster.namespace, name)
    core = client.CoreV1Api(api)
    await core.delete_namespaced_pod(
        name, cluster.namespace, body=client.V1DeleteOptions(grace_period_seconds=0)
    )
    pods = await core.list_namespaced_pod(cluster.namespace, field_selector=f"metadata.name={name}")
    assert pods.items == []


async def test_delete_of_a_lease_answers_a_status(raw: Raw, cluster: Cluster) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases"
    name = unique("lease")
    created = await raw.request(
        "POST",
        path,
        body={
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name},
            "spec": {"holderIdentity": "x"},
        },
    )
    resp = await raw.request("DELETE", f"{path}/{name}")
    assert resp.status == 200
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": name,
            "group": "coordination.k8s.io",
            "kind": "leases",
            "uid": created.json()["metadata"]["uid"],
        },
    }


async def test_finalizers_hold_a_deleted_object(raw: Raw, cluster: Cluster) -> None:
    path = f"/api/v1/namespaces/{cluster.namespace}/services"
    name = unique("held")
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "finalizers": ["example.com/hold"]},
        "spec": {"ports": [{"port": 80}]},
    }
    assert (await raw.request("POST", path, body=body)).status == 201
    held = await raw.request("DELETE", f"{path}/{name}")
    assert held.status == 200
    assert held.json()["metadata"]["deletionTimestamp"]
    assert (await raw.get(f"{path}/{name}")).status == 200
    patch = {"metadata": {"finalizers": None}}
    resp = await raw.request(
        "PATCH", f"{path}/{name}", body=patch, content_type="application/merge-patch+json"
    )
    assert resp.status == 200
    assert (await raw.get(f"{path}/{name}")).status == 404
