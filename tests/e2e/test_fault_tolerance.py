"""Replicas and crashes: two schedulers never overcommit a node; kill -9 of any one service while
pods are being scheduled loses no pod and binds none twice."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.testing import (
    assert_bound_once,
    create_namespace,
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    running_stack,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with running_stack(
        StackOptions(
            workdir=tmp_path_factory.mktemp("ha"),
            schedulers=2,
            binders=2,
            binder_workers=8,
            pod_start_delay=3600,
            time_scale=0.01,
        )
    ) as s:
        yield s


async def test_two_replicas_never_overcommit(stack: Stack, api: ApiClient) -> None:
    await create_namespace(api, "tight")
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


PODS = 2000  # the figure: kill -9 while 2,000 pods are being scheduled


@pytest.mark.parametrize("victim", ["scheduler-0", "binder-0", "queue", "informer"])
async def test_kill_9_loses_nothing(stack: Stack, api: ApiClient, victim: str) -> None:
    ns = f"kill-{victim}"
    await create_namespace(api, ns)
    await create_nodes(
        api, [node(f"{ns}-{i}", cpu="64", memory="256Gi", labels={"pool": ns}) for i in range(25)]
    )
    pods = [pod(f"w-{i:04d}", cpu="100m", namespace=ns, nodeSelector={"pool": ns}) for i in range(PODS)]
    half = PODS // 2
    await create_pods(api, pods[:half])

    async def some_bound() -> int:
        return sum(1 for v in (await pod_nodes(api, ns)).values() if v)

    # Kill mid-flight: some pods bound, most still queued, being scheduled or being bound.
    bound_before = await eventually(some_bound, timeout=60)
    await stack.kill(victim, signal.SIGKILL)
    await create_pods(api, pods[half:])
    await stack.restart(victim)

    async def all_bound() -> dict[str, str] | None:
        placed = await pod_nodes(api, ns)
        return placed if len(placed) == PODS and all(placed.values()) else None

    placed = await eventually(all_bound, timeout=240, interval=1.0)
    assert set(placed) == {p["metadata"]["name"] for p in pods}
    assert bound_before < PODS
    per_node = Counter(placed.values())
    assert all(count <= 110 for count in per_node.values()), per_node  # the nodes' pod capacity
    await assert_bound_once(api, ns)
