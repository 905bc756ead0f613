"""Scaling replicas the way KEDA does (deploy/components/keda): binders and scheduler replicas go
to zero and back under load, replicas come and go by SIGTERM, and every pod is bound exactly once
on a node with room."""

from __future__ import annotations

from collections import Counter

import nats
import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.bus.subjects import Subjects
from ksched.launcher.stack import Stack
from tests.e2e.testing import (
    UNDER_LOAD,
    all_bound,
    assert_bound_once,
    bound_count,
    create_pods,
    create_pool,
    eventually,
    pool_pods,
    stack_fixture,
)

pytestmark = pytest.mark.e2e

PODS = 900


stack = stack_fixture("scaling", **UNDER_LOAD)


async def test_scaling_to_zero_and_back_under_load_loses_nothing(stack: Stack, api: ApiClient) -> None:
    ns = "scaling"
    await create_pool(api, ns, 12, cpu="16", memory="8Gi")
    pods = pool_pods(ns, PODS, cpu="200m")
    third = PODS // 3

    await create_pods(api, pods[:third])
    await eventually(lambda: bound_count(api, ns), timeout=60)

    # No binder: placements wait in the work queue, nothing is bound meanwhile.
    await stack.scale("binder", 0)
    assert stack.replicas("binder") == []
    before = await bound_count(api, ns)
    await create_pods(api, pods[third : 2 * third])
    await eventually(lambda: _placements_waiting(stack), timeout=60)
    assert await bound_count(api, ns) == before

    # Lag: three scheduler replicas, two binders (fresh names, as new pods of a Deployment).
    await stack.scale("scheduler", 3)
    await stack.scale("binder", 2)
    assert stack.replicas("scheduler") == ["scheduler-0", "scheduler-1", "scheduler-2"]
    assert stack.replicas("binder") == ["binder-1", "binder-2"]

    # Queue drained: no scheduler at all while the last third arrives, then one again.
    await stack.scale("scheduler", 0)
    await create_pods(api, pods[2 * third :])
    await stack.scale("scheduler", 1)

    placed = await eventually(lambda: all_bound(api, ns, PODS), timeout=240, interval=1.0)
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
