"""Behaviour only kubesim has (skipped on a real cluster): the KWOK-style lifecycle."""

from __future__ import annotations

import pytest
from ksched_kubesim import KubeSim
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests import kube
from tests.contract.testing import bind, create_pod, eventually, node_manifest, unique
from tests.fixtures.kubesim import Cluster

pytestmark = pytest.mark.contract


async def test_bound_pod_runs_and_graceful_deletion_completes(
    api: ApiClient, cluster: Cluster, kubesim_only: KubeSim
) -> None:
    core = client.CoreV1Api(api)
    node = node_manifest(cluster, unique("kwok"))
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "10.9.9.9"}]
    await core.create_node(kube.body(node))
    name = unique("kwok-pod")
    await create_pod(api, cluster.namespace, name, terminationGracePeriodSeconds=10)
    assert (await bind(api, cluster.namespace, name, node["metadata"]["name"]))[0] == 201

    async def running() -> bool:
        pod = await core.read_namespaced_pod(name, cluster.namespace)
        return bool(pod.status.phase == "Running" and pod.status.host_ip == "10.9.9.9" and pod.status.pod_ip)

    assert await eventually(running)
    await core.delete_namespaced_pod(name, cluster.namespace)

    async def gone() -> bool:
        pods = await core.list_namespaced_pod(cluster.namespace, field_selector=f"metadata.name={name}")
        return not pods.items

    assert await eventually(gone), "10 s of grace at the fixtures' time scale 0.01 take 0.1 s"
