"""End to end, volumes: WaitForFirstConsumer claims through every service process and kubesim's PV
controller -- a local PV decides the node, a provisioner class gets a PV on the chosen node."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import (
    HOSTNAME,
    claim,
    create_nodes,
    create_pods,
    create_wffc_storage,
    eventually,
    node,
    pod,
    pod_nodes,
    stack_fixture,
)

pytestmark = pytest.mark.e2e


stack = stack_fixture("stack", pod_start_delay=0.1, time_scale=0.01)


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return pod(
        name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}], cpu="200m"
    )


async def test_wait_for_first_consumer_claims_decide_and_follow_the_node(
    stack: Stack, api: ApiClient
) -> None:
    core = client.CoreV1Api(api)
    await create_nodes(api, [node("vol-a"), node("vol-b")])
    await create_wffc_storage(api, "local-wffc", "csi-wffc", local_pv="local-on-b", pv_node="vol-b")
    await core.create_namespaced_persistent_volume_claim("default", claim("db-data", "local-wffc", "5Gi"))
    await core.create_namespaced_persistent_volume_claim("default", claim("cache-data", "csi-wffc", "1Gi"))
    await create_pods(api, [with_claim("db", "db-data"), with_claim("cache", "cache-data")])

    async def both_bound() -> dict[str, str] | None:
        placed = await pod_nodes(api)
        return placed if placed.get("db") and placed.get("cache") else None

    placed = await eventually(both_bound, timeout=60)
    assert placed["db"] == "vol-b"  # only there does the local PV fit

    db_claim = await core.read_namespaced_persistent_volume_claim("db-data", "default")
    pv = await core.read_persistent_volume("local-on-b")
    assert db_claim.status.phase == "Bound" and db_claim.spec.volume_name == "local-on-b"
    assert db_claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert pv.status.phase == "Bound" and pv.spec.claim_ref.uid == db_claim.metadata.uid
    assert pv.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"

    cache_claim = await core.read_namespaced_persistent_volume_claim("cache-data", "default")
    assert cache_claim.metadata.annotations["volume.kubernetes.io/selected-node"] == placed["cache"]
    assert cache_claim.status.phase == "Bound"
    provisioned = await core.read_persistent_volume(cache_claim.spec.volume_name)
    assert provisioned.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "csi.example.com"
    [term] = provisioned.spec.node_affinity.required.node_selector_terms
    assert [(e.key, e.values) for e in term.match_expressions] == [(HOSTNAME, [placed["cache"]])]
