"""Priority admission: priorityClassName resolved to spec.priority (with globalDefault), unknown refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests import kube
from tests.contract.testing import create_pod, pod_manifest, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


async def _priority_class(api: ApiClient, cluster: Cluster, base: str, value: int, **extra: object) -> str:
    name = cluster.name(unique(base))
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": cluster.labels()},
        "value": value,
        **extra,
    }
    created = await client.SchedulingV1Api(api).create_priority_class(kube.body(body))
    assert created.preemption_policy == (extra.get("preemptionPolicy") or "PreemptLowerPriority")
    assert created.metadata.generation == 1
    return name


async def test_priority_class_name_sets_priority(api: ApiClient, cluster: Cluster) -> None:
    name = await _priority_class(api, cluster, "high", 1000, description="high prio")
    pod = await create_pod(api, cluster.namespace, unique("prio"), priorityClassName=name)
    assert pod.spec.priority == 1000
    assert pod.spec.priority_class_name == name
    assert pod.spec.preemption_policy == "PreemptLowerPriority"


async def test_class_preemption_policy_is_copied(api: ApiClient, cluster: Cluster) -> None:
    name = await _priority_class(api, cluster, "never", 500, preemptionPolicy="Never")
    pod = await create_pod(api, cluster.namespace, unique("never"), priorityClassName=name)
    assert (pod.spec.priority, pod.spec.preemption_policy) == (500, "Never")


async def test_system_classes_exist(api: ApiClient, cluster: Cluster) -> None:
    pod = await create_pod(
        api, cluster.namespace, unique("critical"), priorityClassName="system-cluster-critical"
    )
    assert pod.spec.priority == 2_000_000_000


async def test_unknown_priority_class_is_forbidden(raw: Raw, cluster: Cluster) -> None:
    name = unique("unknown")
    body = pod_manifest(name, priorityClassName="no-such-class")
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)
    assert resp.status == 403
    status = resp.json()
    assert status["reason"] == "Forbidden"
    assert (
        status["message"] == f'pods "{name}" is forbidden: no PriorityClass with name no-such-class was found'
    )


async def test_explicit_priority_must_match_the_class(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    cls = await _priority_class(api, cluster, "match", 300)
    body = pod_manifest(unique("mismatch"), priorityClassName=cls, priority=7)
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)
    assert resp.status == 403
    assert (
        "the integer value of priority (7) must not be provided in pod spec; priority admission controller "
        "computed 300 from the given PriorityClass name" in resp.json()["message"]
    )


async def test_user_priority_above_one_billion_is_invalid(api: ApiClient, cluster: Cluster) -> None:
    with pytest.raises(ApiException) as info:
        await _priority_class(api, cluster, "toohigh", 2_000_000_000)
    assert info.value.status == 422


@pytest.fixture
async def global_default(api: ApiClient, cluster: Cluster) -> AsyncIterator[str]:
    existing = await client.SchedulingV1Api(api).list_priority_class()
    if any(pc.global_default for pc in existing.items):
        pytest.skip("the cluster already has a globalDefault PriorityClass")
    name = await _priority_class(api, cluster, "default", 42, globalDefault=True)
    try:
        yield name
    finally:
        await client.SchedulingV1Api(api).delete_priority_class(name)


async def test_global_default_applies_to_pods_without_a_class(
    api: ApiClient, cluster: Cluster, global_default: str
) -> None:
    # the real API server's Priority admission reads PriorityClasses from its informer: a class just
    # created applies once that cache has it (kubesim's at once). Until then a pod gets priority 0.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        pod = await create_pod(api, cluster.namespace, unique("defaulted"))
        if pod.spec.priority == 42 or loop.time() > deadline:
            break
        core = client.CoreV1Api(api)
        await core.delete_namespaced_pod(pod.metadata.name, cluster.namespace, grace_period_seconds=0)
        await asyncio.sleep(0.1)
    assert pod.spec.priority == 42
    assert pod.spec.priority_class_name == global_default
    with pytest.raises(ApiException) as info:
        await _priority_class(api, cluster, "second-default", 43, globalDefault=True)
    assert info.value.status == 403
