"""Replicas and crashes: two schedulers never overcommit a node; kill -9 of any one service while
pods are being scheduled loses no pod and binds none twice."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.helpers import api_for, create_nodes, create_pods, eventually, node, pod, pod_nodes

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    s = Stack(
        StackOptions(
            workdir=tmp_path_factory.mktemp("ha"),
            schedulers=2,
            binders=2,
            binder_workers=8,
            pod_start_delay=3600,
            time_scale=0.01,
        )
    )
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


@pytest.fixture
async def api(stack: Stack) -> AsyncIterator[ApiClient]:
    a = await api_for(stack.kubeconfig)
    try:
        yield a
    finally:
        await a.close()


async def _namespace(api: ApiClient, name: str) -> None:
    await client.CoreV1Api(api).create_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )


async def test_two_replicas_never_overcommit(stack: Stack, api: ApiClient) -> None:
    await _namespace(api, "tight")
    # 6 nodes x 4 cpu = 24 slots of 1 cpu; 40 pods compete for them.
    await create_nodes(api, [node(f"tight-{i}", cpu="4", labels={"pool": "tight"}) for i in range(6)])
    await create_pods(
        api,
        [pod(f"p-{i:02d}", cpu="1", namespace="tight", nodeSelector={"pool": "tight"}) for i in range(40)],
    )

    async def settled() -> dict[str, str] | None:
        placed = await pod_nodes(api, "tight")
        return placed if sum(1 for v in placed.values() if v) == 24 else None

    placed = await eventually(settled, timeout=60)
    per_node = Counter(v for v in placed.values() if v)
    assert all(count <= 4 for count in per_node.values()), per_node
    assert sorted(per_node) == [f"tight-{i}" for i in range(6)]


@pytest.mark.parametrize("victim", ["scheduler-0", "binder-0", "queue", "informer"])
async def test_kill_9_loses_nothing(stack: Stack, api: ApiClient, victim: str) -> None:
    ns = f"kill-{victim}"
    await _namespace(api, ns)
    await create_nodes(
        api, [node(f"{ns}-{i}", cpu="64", memory="256Gi", labels={"pool": ns}) for i in range(5)]
    )
    pods = [pod(f"w-{i:03d}", cpu="100m", namespace=ns, nodeSelector={"pool": ns}) for i in range(300)]
    await create_pods(api, pods[:150])
    await stack.kill(victim, signal.SIGKILL)
    await create_pods(api, pods[150:])
    await stack.restart(victim)

    async def all_bound() -> dict[str, str] | None:
        placed = await pod_nodes(api, ns)
        return placed if len(placed) == 300 and all(placed.values()) else None

    placed = await eventually(all_bound, timeout=120)
    assert set(placed) == {p["metadata"]["name"] for p in pods}
    # No pod was bound twice: kubesim refuses a second binding with 409, so a double decision would show
    # up as a FailedScheduling "Binding rejected" event for a pod that nevertheless ended bound once.
    events = await client.EventsV1Api(api).list_namespaced_event(ns)
    scheduled = Counter(e.regarding.name for e in events.items if e.reason == "Scheduled")
    assert all(n == 1 for n in scheduled.values()), [k for k, n in scheduled.items() if n > 1]
    rejected = [
        e.note
        for e in events.items
        if e.reason == "FailedScheduling" and "already assigned" in (e.note or "")
    ]
    assert not rejected, rejected
