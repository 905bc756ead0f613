"""kubesim's PodGroup protection controller, as kube-controller-manager's ``podgroupprotection``: a
deleted PodGroup stays (deletionTimestamp set, finalizer kept) while an unfinished pod of its
namespace names it, and goes once none does. Over HTTP with kubernetes-asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ksched_kubesim import KubeSim
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.api.scheduling import POD_GROUP_PROTECTION_FINALIZER
from ksched.features import FeatureGates
from tests import kube
from tests.fixtures.kubesim import api_client_for, fast_config

GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
GROUPS = ("scheduling.k8s.io", "v1alpha2")


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiClient]:
    async with KubeSim(fast_config(feature_gates=GATES)) as sim:
        api = await api_client_for(sim.write_kubeconfig(tmp_path / "kubeconfig"))
        async with api:
            yield api


async def create_group(api: ApiClient, namespace: str, name: str) -> None:
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(*GROUPS, namespace, "podgroups", body)


async def create_member(api: ApiClient, namespace: str, name: str, group: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulingGroup": {"podGroupName": group}, "containers": [{"name": "c", "image": "w:1"}]},
    }
    await client.CoreV1Api(api).create_namespaced_pod(namespace, kube.body(pod))


async def group(api: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        got: dict[str, Any] = await client.CustomObjectsApi(api).get_namespaced_custom_object(
            *GROUPS, namespace, "podgroups", name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return got


async def delete_group(api: ApiClient, namespace: str, name: str) -> None:
    await client.CustomObjectsApi(api).delete_namespaced_custom_object(*GROUPS, namespace, "podgroups", name)


async def gone(api: ApiClient, namespace: str, name: str, within: float = 3.0) -> bool:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        if await group(api, namespace, name) is None:
            return True
        await asyncio.sleep(0.02)
    return False


async def kept(api: ApiClient, namespace: str, name: str) -> bool:
    """Still there after the controller had time to act, being deleted, with the finalizer."""
    await asyncio.sleep(0.3)
    got = await group(api, namespace, name)
    return (
        got is not None
        and bool(got["metadata"].get("deletionTimestamp"))
        and got["metadata"].get("finalizers") == [POD_GROUP_PROTECTION_FINALIZER]
    )


async def test_a_deleted_pod_group_goes_once_no_unfinished_pod_names_it(api: ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    await create_group(api, "default", "train")
    await create_member(api, "default", "a", "train")
    await create_member(api, "default", "b", "train")
    await delete_group(api, "default", "train")
    assert await kept(api, "default", "train")
    await v1.patch_namespaced_pod_status("a", "default", kube.body({"status": {"phase": "Succeeded"}}))
    assert await kept(api, "default", "train")  # b still names it
    await v1.delete_namespaced_pod("b", "default", grace_period_seconds=0)
    assert await gone(api, "default", "train")


async def test_only_unfinished_pods_of_its_namespace_that_name_it_keep_it(api: ApiClient) -> None:
    await client.CoreV1Api(api).create_namespace(kube.body({"metadata": {"name": "other"}}))
    await create_group(api, "default", "idle")
    await create_member(api, "other", "x", "idle")  # the same name in another namespace
    await create_member(api, "default", "y", "another-group")
    await delete_group(api, "default", "idle")
    assert await gone(api, "default", "idle")
