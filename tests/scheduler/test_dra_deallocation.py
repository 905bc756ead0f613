"""The scheduler service sends DynamicResources' PostFilter deallocations to the API (kubesim over
HTTP), in the background, and never writes them into its replica's snapshot."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from ksched_scheduler.dra import claims_writer
from kubernetes_asyncio.client import ApiClient, CoreV1Api, ResourceV1Api

from ksched.client.rest import Client
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.testing import make_snapshot
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.binding import ClaimApi
from ksched.plugins.dynamicresources.testing import allocation, claim, request
from tests import kube

DRIVER = "gpu.example.com"


def _dra(api: Client | None, spawned: list[Any]) -> DynamicResources:
    fw = build_frameworks(default_config(), make_snapshot([]))["default-scheduler"]
    claims_writer(fw, api, spawned.append)
    plugin = fw.plugin("DynamicResources")
    assert isinstance(plugin, DynamicResources)
    return plugin


async def test_a_deallocation_is_written_to_the_api(k8s_api: ApiClient, k8s_client: Client) -> None:
    ns = f"dealloc-{uuid.uuid4().hex[:6]}"
    await CoreV1Api(k8s_api).create_namespace(kube.body({"metadata": {"name": ns}}))
    resource = ResourceV1Api(k8s_api)
    body = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [request("gpu", "gpu")]}}}
    await resource.create_namespaced_resource_claim(ns, kube.body(body))
    status = {"status": {"allocation": allocation("n1", ("gpu", DRIVER, "n1", "gpu-0"))}}
    await resource.patch_namespaced_resource_claim_status("c", ns, status)
    allocated = await ClaimApi(k8s_client).get(ns, "c")
    assert allocated.status.allocation is not None
    spawned: list[Any] = []
    _dra(k8s_client, spawned).deallocator(allocated)
    assert len(spawned) == 1
    await asyncio.gather(*spawned)
    assert (await ClaimApi(k8s_client).get(ns, "c")).status.allocation is None


async def test_without_an_api_nothing_is_written_anywhere() -> None:
    spawned: list[Any] = []
    plugin = _dra(None, spawned)
    allocated = claim(
        "c", request("gpu", "gpu"), namespace="default", status={"allocation": allocation("n1")}
    )
    plugin._handle.snapshot.objects.put(allocated)  # type: ignore[union-attr]
    plugin.deallocator(allocated)
    assert spawned == []
    assert plugin._handle.snapshot.objects.resource_claims["default/c"] is allocated  # type: ignore[union-attr]


async def test_a_left_over_extended_resource_claim_is_deleted_through_the_api(
    k8s_api: ApiClient, k8s_client: Client
) -> None:
    """PostFilter's deletion of an extended-resource claim from an earlier cycle: the finalizer goes,
    then the claim (upstream ``deleteClaim``)."""
    ns = f"dealloc-{uuid.uuid4().hex[:6]}"
    await CoreV1Api(k8s_api).create_namespace(kube.body({"metadata": {"name": ns}}))
    resource = ResourceV1Api(k8s_api)
    body = {
        "metadata": {
            "name": "p-extended-resources-abcde",
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
        },
        "spec": {"devices": {"requests": [request("container-0-request-0", "gpu")]}},
    }
    await resource.create_namespaced_resource_claim(ns, kube.body(body))
    left_over = await ClaimApi(k8s_client).get(ns, "p-extended-resources-abcde")
    spawned: list[Any] = []
    _dra(k8s_client, spawned).claim_deleter(left_over)
    assert len(spawned) == 1
    await asyncio.gather(*spawned)
    listed = await resource.list_namespaced_resource_claim(ns)
    assert listed.items == []
