"""PATCH: merge patch, strategic merge patch, JSON patch, and the /status subresource rules."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.contract.testing import create_pod, node_manifest, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "lastProbeTime": None,
    "lastTransitionTime": "2026-01-01T00:00:00Z",
    "reason": "Unschedulable",
    "message": "0/2 nodes are available: 2 node(s) had untolerated taint.",
}


async def _patch(raw: Raw, path: str, body: Any, content_type: str) -> dict[str, Any]:
    resp = await raw.request("PATCH", path, body=body, content_type=content_type)
    assert resp.status == 200, resp.body
    result: dict[str, Any] = resp.json()
    return result


@pytest.fixture
async def pod_path(api: ApiClient, cluster: Cluster) -> str:
    name = unique("patched")
    await create_pod(api, cluster.namespace, name, labels={"app": "db"})
    return f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"


@pytest.mark.parametrize("content_type", [MERGE, STRATEGIC])
async def test_status_patch_sets_condition_and_nomination(raw: Raw, pod_path: str, content_type: str) -> None:
    body = {"status": {"conditions": [UNSCHEDULABLE], "nominatedNodeName": "node-b"}}
    pod = await _patch(raw, f"{pod_path}/status", body, content_type)
    assert pod["status"] == {
        "phase": "Pending",
        "conditions": [UNSCHEDULABLE],
        "nominatedNodeName": "node-b",
        "qosClass": "Burstable",
    }


async def test_strategic_merge_merges_conditions_by_type(raw: Raw, pod_path: str) -> None:
    await _patch(raw, f"{pod_path}/status", {"status": {"conditions": [UNSCHEDULABLE]}}, STRATEGIC)
    pod = await _patch(
        raw,
        f"{pod_path}/status",
        {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Testing"}]}},
        STRATEGIC,
    )
    assert pod["status"]["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": None,
            "reason": "Testing",
        },
        UNSCHEDULABLE,
    ]


async def test_merge_patch_replaces_the_condition_list(raw: Raw, pod_path: str) -> None:
    await _patch(raw, f"{pod_path}/status", {"status": {"conditions": [UNSCHEDULABLE]}}, MERGE)
    pod = await _patch(
        raw,
        f"{pod_path}/status",
        {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Testing"}]}},
        MERGE,
    )
    assert [c["type"] for c in pod["status"]["conditions"]] == ["Ready"]


async def test_null_clears_the_nominated_node(raw: Raw, pod_path: str) -> None:
    await _patch(raw, f"{pod_path}/status", {"status": {"nominatedNodeName": "node-b"}}, MERGE)
    pod = await _patch(raw, f"{pod_path}/status", {"status": {"nominatedNodeName": None}}, MERGE)
    assert "nominatedNodeName" not in pod["status"]


async def test_status_patch_ignores_spec_but_applies_labels(raw: Raw, pod_path: str) -> None:
    before = (await raw.get(pod_path)).json()
    pod = await _patch(
        raw, f"{pod_path}/status", {"spec": {"nodeName": "node-a"}, "metadata": {"labels": {"x": "y"}}}, MERGE
    )
    assert "nodeName" not in pod["spec"]
    assert pod["metadata"]["labels"] == {"app": "db", "x": "y"}
    assert int(pod["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])


async def test_main_resource_patch_ignores_status(raw: Raw, pod_path: str) -> None:
    pod = await _patch(
        raw, pod_path, {"status": {"phase": "Running"}, "metadata": {"labels": {"y": "z"}}}, MERGE
    )
    assert pod["status"]["phase"] == "Pending"
    assert pod["metadata"]["labels"]["y"] == "z"


async def test_json_patch(raw: Raw, pod_path: str) -> None:
    ops = [
        {"op": "add", "path": "/metadata/labels/added", "value": "yes"},
        {"op": "remove", "path": "/metadata/labels/app"},
        {"op": "test", "path": "/metadata/labels/added", "value": "yes"},
    ]
    pod = await _patch(raw, pod_path, ops, JSON_PATCH)
    assert pod["metadata"]["labels"] == {"added": "yes"}
    failing = [{"op": "test", "path": "/metadata/labels/added", "value": "no"}]
    resp = await raw.request("PATCH", pod_path, body=failing, content_type=JSON_PATCH)
    assert resp.status == 422
    assert resp.json() == REJECTED


#: the API server's answer to any JSON patch that does not apply (it shows nothing of the reason)
REJECTED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


@pytest.mark.parametrize(
    ("ops", "labels"),
    [
        ([{"op": "replace", "path": "/metadata/labels/new", "value": "x"}], {"app": "db", "new": "x"}),
        ([{"op": "replace", "path": "/metadata/nope/x", "value": "x"}], None),
        ([{"op": "remove", "path": "/metadata/labels/nope"}], None),
        ([{"op": "move", "from": "/metadata/labels/nope", "path": "/metadata/labels/b"}], None),
        ([{"op": "replace", "path": "/spec/containers/5", "value": {}}], None),
        ([{"op": "add", "path": "", "value": {}}], None),
        ([{"op": "frob", "path": "/x"}], None),
        ([{"op": "test", "path": "/metadata/labels/nope", "value": None}], {"app": "db"}),
    ],
    ids=[
        "replace-a-missing-key",
        "missing-parent",
        "remove-missing",
        "move-missing",
        "index",
        "add-root",
        "op",
        "test-null",
    ],
)
async def test_json_patch_operations(
    raw: Raw, pod_path: str, ops: list[Any], labels: dict[str, str] | None
) -> None:
    """As the API server's json-patch library applies them: replacing a missing key of an object sets
    it, a missing key tests equal to null; what does not apply is one generic 422."""
    resp = await raw.request("PATCH", pod_path, body=ops, content_type=JSON_PATCH)
    if labels is None:
        assert resp.status == 422, resp.body
        assert resp.json() == REJECTED
    else:
        assert resp.status == 200, resp.body
        assert resp.json()["metadata"]["labels"] == labels


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"op": "add"}, "cannot unmarshal object into Go value of type []handlers.jsonPatchOp"),
        ([1], "cannot unmarshal number into Go value of type handlers.jsonPatchOp"),
        (
            [{"op": "add", "path": 5}],
            "cannot unmarshal number into Go struct field jsonPatchOp.path of type string",
        ),
    ],
    ids=["object", "number", "path"],
)
async def test_a_json_patch_that_does_not_decode_is_400(
    raw: Raw, pod_path: str, body: Any, error: str
) -> None:
    resp = await raw.request("PATCH", pod_path, body=body, content_type=JSON_PATCH)
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == f"error decoding patch: json: {error}"


async def test_patch_with_stale_resource_version_is_409(raw: Raw, pod_path: str) -> None:
    body = {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}}
    resp = await raw.request("PATCH", pod_path, body=body, content_type=MERGE)
    assert resp.status == 409
    assert resp.json()["reason"] == "Conflict"


async def test_noop_patch_keeps_the_resource_version(raw: Raw, pod_path: str) -> None:
    before = (await raw.get(pod_path)).json()
    pod = await _patch(raw, pod_path, {"metadata": {"labels": {"app": "db"}}}, MERGE)
    assert pod["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_unsupported_patch_type_is_415(raw: Raw, pod_path: str) -> None:
    resp = await raw.request("PATCH", pod_path, body={"metadata": {}}, content_type="application/json")
    assert resp.status == 415
    assert resp.json()["reason"] == "UnsupportedMediaType"


async def test_a_create_with_a_patch_type_is_415(raw: Raw, cluster: Cluster) -> None:
    """A patch's media type is for PATCH only: a create sent with it is refused (ksched's DRA PreBind
    once created its extended-resource claim so, which only the real server refused)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "typed"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    resp = await raw.request(
        "POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=pod, content_type=MERGE
    )
    assert resp.status == 415
    assert resp.json()["reason"] == "UnsupportedMediaType"
    assert resp.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )


async def test_patch_of_missing_pod_is_404(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.request(
        "PATCH",
        f"/api/v1/namespaces/{cluster.namespace}/pods/missing",
        body={"metadata": {}},
        content_type=MERGE,
    )
    assert resp.status == 404


async def test_typed_client_status_patch(api: ApiClient, cluster: Cluster) -> None:
    """The scheduler's own call: patch_namespaced_pod_status with a dict body."""
    name = unique("typed")
    core = client.CoreV1Api(api)
    await create_pod(api, cluster.namespace, name)
    pod = await core.patch_namespaced_pod_status(
        name, cluster.namespace, {"status": {"conditions": [UNSCHEDULABLE], "nominatedNodeName": "n1"}}
    )
    assert pod.status.nominated_node_name == "n1"
    assert pod.status.conditions[0].reason == "Unschedulable"


async def test_node_status_merge_patch_replaces_lists_and_merges_maps(
    api: ApiClient, raw: Raw, cluster: Cluster
) -> None:
    body = node_manifest(cluster, unique("status"))
    body["spec"]["podCIDR"] = "10.244.1.0/24"
    body["status"]["allocatable"] = {"cpu": "7800m", "memory": "31Gi", "pods": "110"}
    body["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
        {
            "type": "MemoryPressure",
            "status": "False",
            "reason": "KubeletHasSufficientMemory",
            "message": "kubelet has sufficient memory available",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
    ]
    resp = await raw.request("POST", "/api/v1/nodes", body=body)
    assert resp.status == 201
    node = resp.json()
    assert node["spec"]["podCIDRs"] == ["10.244.1.0/24"]
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}
    assert len(node["status"]["conditions"]) == 2
    name = body["metadata"]["name"]
    patch = {
        "status": {
            "conditions": [dict(body["status"]["conditions"][0], lastHeartbeatTime="2026-01-01T00:05:00Z")],
            "allocatable": {"cpu": "7500m"},
        }
    }
    node = await _patch(raw, f"/api/v1/nodes/{name}/status", patch, MERGE)
    assert [c["type"] for c in node["status"]["conditions"]] == ["Ready"]
    assert node["status"]["allocatable"] == {"cpu": "7500m", "memory": "31Gi", "pods": "110"}
