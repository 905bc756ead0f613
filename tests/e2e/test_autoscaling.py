"""Scaling replicas the way KEDA does (deploy/components/keda): binders and scheduler replicas go
to zero and back under load, replicas come and go by SIGTERM, and every pod is bound exactly once
on a node with room."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import nats
import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.bus.subjects import Subjects
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

PODS = 900


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with running_stack(
        StackOptions(
            workdir=tmp_path_factory.mktemp("scaling"),
            schedulers=1,
            binders=1,
            binder_workers=8,
            pod_start_delay=3600,
            time_scale=0.01,
        )
    ) as s:
        yield s


async def test_scaling_to_zero_and_back_under_load_loses_nothing(stack: Stack, api: ApiClient) -> None:
    ns = "scaling"
    await create_namespace(api, ns)
    await create_nodes(api, [node(f"{ns}-{i}", cpu="16", labels={"pool": ns}) for i in range(12)])
    pods = [pod(f"w-{i:04d}", cpu="200m", namespace=ns, nodeSelector={"pool": ns}) for i in range(PODS)]
    third = PODS // 3

    async def bound() -> int:
        return sum(1 for v in (await pod_nodes(api, ns)).values() if v)

    await create_pods(api, pods[:third])
    await eventually(bound, timeout=60)

    # No binder: placements wait in the work queue, nothing is bound meanwhile.
    await stack.scale("binder", 0)
    assert stack.replicas("binder") == []
    before = await bound()
    await create_pods(api, pods[third : 2 * third])
    await eventually(lambda: _placements_waiting(stack), timeout=60)
    assert await bound() == before

    # Lag: three scheduler replicas, two binders (fresh names, as new pods of a Deployment).
    await stack.scale("scheduler", 3)
    await stack.scale("binder", 2)
    assert stack.replicas("scheduler") == ["scheduler-0", "scheduler-1", "scheduler-2"]
    assert stack.replicas("binder") == ["binder-1", "binder-2"]

    # Queue drained: no scheduler at all while the last third arrives, then one again.
    await stack.scale("scheduler", 0)
    await create_pods(api, pods[2 * third :])
    await stack.scale("scheduler", 1)

    async def all_bound() -> dict[str, str] | None:
        placed = await pod_nodes(api, ns)
        return placed if len(placed) == PODS and all(placed.values()) else None

    placed = await eventually(all_bound, timeout=240, interval=1.0)
    per_node = Counter(placed.values())
    assert all(count * 200 <= 16_000 for count in per_node.values()), per_node  # 16 cpu each
    await assert_bound_once(api, ns)


async def _placements_waiting(stack: Stack) -> bool:
    """The placement work queue holds messages no binder has taken (JetStream's stream info)."""
    nc = await nats.connect(stack.nats.url)
    try:
        info = await nc.jetstream().stream_info(Subjects(stack.options.prefix).placement_stream)
        return info.state.messages > 0
    finally:
        await nc.close()
