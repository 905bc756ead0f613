"""pods/eviction with PodDisruptionBudgets."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.contract.testing import bind, create_pod, eventually, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

READY = {
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
    }
}


async def _ready_pod(api: ApiClient, cluster: Cluster, name: str, app: str) -> None:
    await create_pod(api, cluster.namespace, name, labels={"app": app}, terminationGracePeriodSeconds=600)
    assert (await bind(api, cluster.namespace, name, cluster.name("ghost")))[0] == 201
    await client.CoreV1Api(api).patch_namespaced_pod_status(name, cluster.namespace, READY)


async def _budget_reaches(raw: Raw, path: str, allowed: int, healthy: int, expected: int) -> dict[str, Any]:
    """Wait for the disruption controller; without one (bare API server) set the status by hand."""

    async def settled() -> bool:
        status = (await raw.get(path)).json().get("status", {})
        return status.get("observedGeneration") == 1 and (
            status.get("disruptionsAllowed"),
            status.get("currentHealthy"),
        ) == (allowed, healthy)

    if not await eventually(settled, within=3):
        patch = {
            "status": {
                "observedGeneration": 1,
                "disruptionsAllowed": allowed,
                "currentHealthy": healthy,
                "desiredHealthy": 1,
                "expectedPods": expected,
            }
        }
        resp = await raw.request(
            "PATCH", f"{path}/status", body=patch, content_type="application/merge-patch+json"
        )
        assert resp.status == 200
    pdb: dict[str, Any] = (await raw.get(path)).json()
    return pdb


async def _evict(raw: Raw, cluster: Cluster, name: str) -> Any:
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": cluster.namespace},
    }
    return await raw.request(
        "POST", f"/api/v1/namespaces/{cluster.namespace}/pods/{name}/eviction", body=body
    )


async def test_eviction_respects_the_disruption_budget(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    app = unique("evict")
    pdb_name = unique("pdb")
    pdbs = f"/apis/policy/v1/namespaces/{cluster.namespace}/poddisruptionbudgets"
    created = await raw.request(
        "POST",
        pdbs,
        body={
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": pdb_name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        },
    )
    assert created.status == 201
    assert created.json()["metadata"]["generation"] == 1
    assert set(created.json()["status"]) >= {
        "disruptionsAllowed",
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
    }
    await _ready_pod(api, cluster, f"{app}-1", app)
    await _budget_reaches(raw, f"{pdbs}/{pdb_name}", allowed=0, healthy=1, expected=1)

    refused = await _evict(raw, cluster, f"{app}-1")
    assert refused.status == 429
    status = refused.json()
    assert status["reason"] == "TooManyRequests"
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    [cause] = status["details"]["causes"]
    assert cause == {
        "reason": "DisruptionBudget",
        "message": f"The disruption budget {pdb_name} needs 1 healthy pods and has 1 currently",
    }

    pending = f"{app}-pending"
    await create_pod(api, cluster.namespace, pending, labels={"app": app})
    allowed = await _evict(raw, cluster, pending)
    assert allowed.status == 201
    assert allowed.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    assert (await raw.get(f"/api/v1/namespaces/{cluster.namespace}/pods/{pending}")).status == 404

    missing = await _evict(raw, cluster, f"{app}-missing")
    assert missing.status == 404

    await _ready_pod(api, cluster, f"{app}-2", app)
    await _budget_reaches(raw, f"{pdbs}/{pdb_name}", allowed=1, healthy=2, expected=2)
    evicted = await _evict(raw, cluster, f"{app}-1")
    assert evicted.status == 201
    pod = (await raw.get(f"/api/v1/namespaces/{cluster.namespace}/pods/{app}-1")).json()
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 600
    target = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (
        target
        and target[0]["reason"] == "EvictionByEvictionAPI"
        and target[0]["message"] == "Eviction API: evicting"
    )
    pdb = (await raw.get(f"{pdbs}/{pdb_name}")).json()
    assert pdb["status"]["disruptionsAllowed"] == 0


async def test_what_an_eviction_body_must_be(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    """An Eviction (policy/v1 or v1beta1) naming the pod, its deleteOptions decoding as DeleteOptions."""
    name = unique("evict-body")
    await create_pod(api, cluster.namespace, name)
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}/eviction"
    refused = [
        (
            {"apiVersion": "policy/v1", "kind": "Eviction"},
            "name in URL does not match name in Eviction object",
        ),
        (
            {"apiVersion": "v1", "kind": "Eviction", "metadata": {"name": name}},
            'Eviction in version "v1" cannot be handled as a Eviction: no kind "Eviction" is '
            "registered for version "
            '"v1" in scheme "pkg/runtime/scheme.go:111"',
        ),
        (
            {"kind": "Eviction", "metadata": {"name": name}, "deleteOptions": {"gracePeriodSeconds": "5"}},
            'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
            "string into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of type int64",
        ),
    ]
    for body, message in refused:
        resp = await raw.request("POST", path, body=body)
        assert resp.status == 400, resp.body
        assert resp.json()["message"] == message
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": name},
        "deleteOptions": {"dryRun": ["All"]},
    }
    resp = await raw.request("POST", path, body=body)
    assert resp.status == 201, resp.body
    pod = await client.CoreV1Api(api).read_namespaced_pod(name, cluster.namespace)
    assert pod.metadata.deletion_timestamp is None
