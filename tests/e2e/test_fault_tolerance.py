"""Replicas and crashes: two schedulers never overcommit a node; kill -9 of any one service while
pods are being scheduled loses no pod and binds none twice."""

from __future__ import annotations

import signal
from collections import Counter

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import (
    UNDER_LOAD,
    all_bound,
    assert_bound_once,
    bound_count,
    create_pods,
    create_pool,
    eventually,
    pod_nodes,
    pool_pods,
    stack_fixture,
)

pytestmark = pytest.mark.e2e


stack = stack_fixture("ha", schedulers=2, binders=2, **UNDER_LOAD)


async def test_two_replicas_never_overcommit(stack: Stack, api: ApiClient) -> None:
    # 6 nodes x 4 cpu = 24 slots of 1 cpu; 40 pods compete for them.
    await create_pool(api, "tight", 6, cpu="4", memory="8Gi")
    await create_pods(api, pool_pods("tight", 40, cpu="1"))

    async def settled() -> dict[str, str] | None:
        placed = await pod_nodes(api, "tight")
        return placed if sum(1 for v in placed.values() if v) == 24 else None

    placed = await eventually(settled, timeout=60)
    per_node = Counter(v for v in placed.values() if v)
    assert all(count <= 4 for count in per_node.values()), per_node
    assert sorted(per_node) == [f"tight-{i}" for i in range(6)]


PODS = 2000  # the figure: kill -9 while 2,000 pods are being scheduled


@pytest.mark.parametrize("victim", ["scheduler-0", "binder-0", "queue", "informer"])
async def test_kill_9_loses_nothing(stack: Stack, api: ApiClient, victim: str) -> None:
    ns = f"kill-{victim}"
    await create_pool(api, ns, 25)
    pods = pool_pods(ns, PODS)
    half = PODS // 2
    await create_pods(api, pods[:half])

    # Kill mid-flight: some pods bound, most still queued, being scheduled or being bound.
    bound_before = await eventually(lambda: bound_count(api, ns), timeout=60)
    await stack.kill(victim, signal.SIGKILL)
    await create_pods(api, pods[half:])
    await stack.restart(victim)
    placed = await eventually(lambda: all_bound(api, ns, PODS), timeout=240, interval=1.0)
    assert set(placed) == {p["metadata"]["name"] for p in pods}
    assert bound_before < PODS
    per_node = Counter(placed.values())
    assert all(count <= 110 for count in per_node.values()), per_node  # the nodes' pod capacity
    await assert_bound_once(api, ns)
