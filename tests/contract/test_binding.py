"""POST pods/{name}/binding: the Status answer, the bound pod, and the 409/404 cases."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests import kube
from tests.contract.testing import bind, create_pod, node_manifest, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


@pytest.fixture
async def node(api: ApiClient, cluster: Cluster) -> str:
    body = node_manifest(cluster, unique("bind"), zone="zone-1")
    await client.CoreV1Api(api).create_node(kube.body(body))
    return str(body["metadata"]["name"])


async def test_binding_answers_a_status_and_assigns_the_node(
    api: ApiClient, cluster: Cluster, node: str
) -> None:
    name = unique("bind-me")
    created = await create_pod(api, cluster.namespace, name, labels={"app": "web"})
    status, body = await bind(api, cluster.namespace, name, node)
    assert (status, body) == (201, SUCCESS)
    pod = await client.CoreV1Api(api).read_namespaced_pod(name, cluster.namespace)
    assert pod.spec.node_name == node
    assert pod.status.phase in ("Pending", "Running")
    scheduled = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert len(scheduled) == 1 and scheduled[0].status == "True"
    assert scheduled[0].reason is None and scheduled[0].message is None
    assert pod.metadata.labels["topology.kubernetes.io/zone"] == "zone-1"
    assert pod.metadata.labels["app"] == "web"
    assert int(pod.metadata.resource_version) > int(created.metadata.resource_version)


async def test_binding_replaces_an_unschedulable_condition(
    api: ApiClient, cluster: Cluster, node: str
) -> None:
    name = unique("was-unsched")
    core = client.CoreV1Api(api)
    await create_pod(api, cluster.namespace, name)
    await core.patch_namespaced_pod_status(
        name,
        cluster.namespace,
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/1 nodes are available",
                    }
                ]
            }
        },
    )
    assert (await bind(api, cluster.namespace, name, node))[0] == 201
    pod = await core.read_namespaced_pod(name, cluster.namespace)
    [condition] = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    got: tuple[object, ...] = (condition.status, condition.reason, condition.message)  # stubs: never None
    assert got == ("True", None, None)


async def test_binding_an_assigned_pod_is_409(api: ApiClient, cluster: Cluster, node: str) -> None:
    name = unique("twice")
    await create_pod(api, cluster.namespace, name)
    assert (await bind(api, cluster.namespace, name, node))[0] == 201
    for target in ("elsewhere", node):
        status, body = await bind(api, cluster.namespace, name, target)
        assert status == 409
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": (
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned '
                f'to node "{node}"'
            ),
            "reason": "Conflict",
            "details": {"name": name, "kind": "pods/binding"},
            "code": 409,
        }


async def test_binding_a_gated_pod_is_409(api: ApiClient, cluster: Cluster, node: str) -> None:
    name = unique("gated")
    await create_pod(api, cluster.namespace, name, schedulingGates=[{"name": "example.com/gate"}])
    status, body = await bind(api, cluster.namespace, name, node)
    assert status == 409
    assert body["message"] == (
        f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} has non-empty '
        ".spec.schedulingGates"
    )


async def test_binding_a_missing_pod_is_404(api: ApiClient, cluster: Cluster) -> None:
    status, body = await bind(api, cluster.namespace, "ghost", "anywhere")
    assert status == 404
    assert body["message"] == 'pods "ghost" not found'
    assert body["details"] == {"name": "ghost", "kind": "pods"}


async def test_binding_does_not_check_the_node_exists(api: ApiClient, cluster: Cluster) -> None:
    name = unique("ghost-node")
    await create_pod(api, cluster.namespace, name)
    status, _ = await bind(api, cluster.namespace, name, cluster.name("no-such-node"))
    assert status == 201
    pod = await client.CoreV1Api(api).read_namespaced_pod(name, cluster.namespace)
    assert pod.spec.node_name == cluster.name("no-such-node")
    assert "topology.kubernetes.io/zone" not in (pod.metadata.labels or {})


async def test_legacy_bindings_collection(raw: Raw, api: ApiClient, cluster: Cluster, node: str) -> None:
    name = unique("legacy")
    await create_pod(api, cluster.namespace, name)
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node},
    }
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/bindings", body=body)
    assert resp.status == 201
    pod = await client.CoreV1Api(api).read_namespaced_pod(name, cluster.namespace)
    assert pod.spec.node_name == node


async def test_binding_name_must_match_the_url(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    name = unique("mismatch")
    await create_pod(api, cluster.namespace, name)
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "other"}, "target": {"name": "n"}}
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods/{name}/binding", body=body)
    assert resp.status == 400


async def test_what_the_binding_rest_refuses(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    """The body decodes as a Binding and names the pod; a target that does not validate is a 500 with
    the field errors' text (the binding REST returns them unwrapped); the legacy collection needs a
    name."""
    name = unique("refused")
    await create_pod(api, cluster.namespace, name)
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}/binding"
    cases: list[tuple[dict[str, Any], int, str]] = [
        (
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}},
            400,
            'Node in version "v1" cannot be handled as a Binding: converting (v1.Node) to '
            "(core.Binding): unknown conversion",
        ),
        (
            {"kind": "Binding", "metadata": {"name": name}, "target": "n"},
            400,
            'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal string '
            "into Go struct field Binding.target of type v1.ObjectReference",
        ),
        (
            {"kind": "Binding", "target": {"name": "n"}},
            400,
            "name in URL does not match name in Binding object",
        ),
        (
            {"kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Pod", "name": "n"}},
            500,
            'target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"',
        ),
        ({"kind": "Binding", "metadata": {"name": name}}, 500, "target.name: Required value"),
    ]
    for body, status, message in cases:
        resp = await raw.request("POST", path, body=body)
        assert resp.status == status, resp.body
        assert resp.json()["message"] == message
        assert resp.json().get("reason", "") == ("" if status == 500 else "BadRequest")
    resp = await raw.request(
        "POST",
        f"/api/v1/namespaces/{cluster.namespace}/bindings",
        body={"kind": "Binding", "target": {"name": "n"}},
    )
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == "Name parameter required."
    pod = await client.CoreV1Api(api).read_namespaced_pod(name, cluster.namespace)
    assert pod.spec.node_name is None
