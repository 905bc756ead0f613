"""resource.k8s.io/v1 through kubernetes_asyncio: defaults, validation texts, the claim status
subresource and the resourceclaim controller, compared with the real API server's answers in the
captures (tests/kubesim/captures/14*)."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests import kube
from tests.contract.testing import unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

CAPTURES = Path(__file__).parent.parent / "kubesim" / "captures"
GROUP = "/apis/resource.k8s.io/v1"


def capture(name: str) -> dict[str, Any]:
    [path] = CAPTURES.glob(f"{name}-*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _renamed(body: dict[str, Any], name: str, cluster: Cluster, namespaced: bool) -> dict[str, Any]:
    body = copy.deepcopy(body)
    body["metadata"]["name"] = name
    if not namespaced:
        body["metadata"]["labels"] = cluster.labels()
    return body


async def raw_delete(raw: Raw, path: str) -> None:
    """DELETE answering a Status (the typed client would decode it as the deleted kind)."""
    resp = await raw.request("DELETE", path)
    assert resp.status == 200, resp.body


def _message(status: dict[str, Any], old: str, new: str) -> str:
    return str(status["message"]).replace(f'"{old}"', f'"{new}"')


async def test_a_claim_gets_the_api_servers_defaults(api: ApiClient, cluster: Cluster) -> None:
    name = unique("one-gpu")
    body = _renamed(capture("14h")["request"]["body"], name, cluster, True)
    created = await client.ResourceV1Api(api).create_namespaced_resource_claim(
        cluster.namespace, kube.body(body)
    )
    want = capture("14h")["body"]["spec"]["devices"]["requests"][0]["exactly"]
    exactly = created.spec.devices.requests[0].exactly
    assert (exactly.device_class_name, exactly.allocation_mode, exactly.count) == (
        want["deviceClassName"],
        want["allocationMode"],
        want["count"],
    )
    first = _renamed(capture("14i")["request"]["body"], unique("prio"), cluster, True)
    prio = await client.ResourceV1Api(api).create_namespaced_resource_claim(
        cluster.namespace, kube.body(first)
    )
    assert [(s.allocation_mode, s.count) for s in prio.spec.devices.requests[0].first_available] == [
        ("ExactCount", 4),
        ("ExactCount", 1),
    ]


async def test_a_template_gets_the_defaults_and_empty_metadata(raw: Raw, cluster: Cluster) -> None:
    name = unique("gpu-template")
    body = _renamed(capture("14k")["request"]["body"], name, cluster, True)
    resp = await raw.request(
        "POST", f"{GROUP}/namespaces/{cluster.namespace}/resourceclaimtemplates", body=body
    )
    assert resp.status == 201
    assert resp.json()["spec"] == capture("14k")["body"]["spec"]


@pytest.mark.parametrize("case", ["14c", "14d"])
async def test_device_class_selectors_are_compiled_at_admission(
    raw: Raw, cluster: Cluster, case: str
) -> None:
    cap = capture(case)
    name = cluster.name(unique("broken"))
    body = _renamed(cap["request"]["body"], name, cluster, False)
    resp = await raw.request("POST", f"{GROUP}/deviceclasses", body=body)
    assert resp.status == 422
    got = resp.json()
    old = cap["request"]["body"]["metadata"]["name"]
    assert got["message"] == _message(cap["body"], old, name)
    assert got["details"]["causes"] == cap["body"]["details"]["causes"]


async def test_exactly_and_first_available_together_are_refused(raw: Raw, cluster: Cluster) -> None:
    cap = capture("14j")
    name = unique("bad")
    body = _renamed(cap["request"]["body"], name, cluster, True)
    resp = await raw.request("POST", f"{GROUP}/namespaces/{cluster.namespace}/resourceclaims", body=body)
    assert resp.status == 422
    assert resp.json()["message"] == _message(cap["body"], "bad", name)


async def test_slices_by_node_and_driver(api: ApiClient, raw: Raw, cluster: Cluster) -> None:
    name = cluster.name(unique("gpu-node"))
    node = cluster.name(unique("node"))
    body = _renamed(capture("14e")["request"]["body"], name, cluster, False)
    body["spec"]["nodeName"] = node
    resource = client.ResourceV1Api(api)
    created = await resource.create_resource_slice(kube.body(body))
    try:
        assert created.metadata.generation == 1
        by_node = await resource.list_resource_slice(field_selector=f"spec.nodeName={node}")
        assert [s.metadata.name for s in by_node.items] == [name]
        by_driver = await resource.list_resource_slice(
            field_selector="spec.driver=gpu.example.com", label_selector=f"{next(iter(cluster.labels()))}"
        )
        assert name in [s.metadata.name for s in by_driver.items]
    finally:
        await raw_delete(raw, f"{GROUP}/resourceslices/{name}")


async def test_claim_status_allocation_is_immutable_and_needs_the_latest_version(
    raw: Raw, cluster: Cluster
) -> None:
    name = unique("prio")
    path = f"{GROUP}/namespaces/{cluster.namespace}/resourceclaims"
    created = await raw.request(
        "POST", path, body=_renamed(capture("14i")["request"]["body"], name, cluster, True)
    )
    claim = created.json()
    claim["status"] = copy.deepcopy(capture("14p")["request"]["body"]["status"])
    put = await raw.request("PUT", f"{path}/{name}/status", body=claim)
    assert put.status == 200
    assert put.json()["status"] == capture("14p")["body"]["status"]
    stale = await raw.request("PUT", f"{path}/{name}/status", body=claim)
    assert stale.status == 409
    assert stale.json()["message"] == _message(capture("14q")["body"], "prio", name)
    # a running resourceclaim controller drops the reservation for the pod that does not exist: reread
    # (and again when it changed the claim between the read and the write: 409)
    for _ in range(5):
        changed = (await raw.get(f"{path}/{name}")).json()
        changed["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-0"
        refused = await raw.request("PUT", f"{path}/{name}/status", body=changed)
        if refused.status != 409:
            break
    assert refused.status == 422, refused.body
    assert refused.json()["message"] == _message(capture("14r")["body"], "prio", name)


async def test_reserved_for_needs_an_allocation(raw: Raw, cluster: Cluster) -> None:
    name = unique("unallocated")
    path = f"{GROUP}/namespaces/{cluster.namespace}/resourceclaims"
    claim = (
        await raw.request("POST", path, body=_renamed(capture("14h")["request"]["body"], name, cluster, True))
    ).json()
    claim["status"] = {
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "00000000-0000-0000-0000-000000000009"}]
    }
    resp = await raw.request("PUT", f"{path}/{name}/status", body=claim)
    assert resp.status == 422
    assert resp.json()["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified when `allocated` is not set",
            "field": "status.reservedFor",
        }
    ]


async def test_the_controller_creates_a_claim_for_a_pods_template(api: ApiClient, cluster: Cluster) -> None:
    """kube-controller-manager's resourceclaim controller (kubesim emulates it; a real cluster runs it)."""
    template = unique("tpl")
    resource, core = client.ResourceV1Api(api), client.CoreV1Api(api)
    await resource.create_namespaced_resource_claim_template(
        cluster.namespace,
        kube.body(_renamed(capture("14k")["request"]["body"], template, cluster, True)),
    )
    pod_name = unique("from-template")
    pod = copy.deepcopy(capture("14t")["body"])
    pod["metadata"] = {"name": pod_name}
    pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = template
    pod.pop("status")
    created = await core.create_namespaced_pod(cluster.namespace, kube.body(pod))
    for _ in range(250):
        got = await core.read_namespaced_pod(pod_name, cluster.namespace)
        if got.status.resource_claim_statuses:
            break
        await asyncio.sleep(0.02)
    [status] = got.status.resource_claim_statuses
    assert status.name == "gpu"
    assert re.fullmatch(rf"{pod_name}-gpu-[a-z0-9]{{5}}", status.resource_claim_name)
    claim = await resource.read_namespaced_resource_claim(status.resource_claim_name, cluster.namespace)
    [owner] = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        pod_name,
        created.metadata.uid,
        True,
    )
    assert claim.metadata.annotations == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    await core.delete_namespaced_pod(pod_name, cluster.namespace, grace_period_seconds=0)
    for _ in range(250):
        try:
            await resource.read_namespaced_resource_claim(status.resource_claim_name, cluster.namespace)
        except ApiException as exc:
            assert exc.status == 404
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the generated claim outlived its pod")
