"""What a newcomer does first: start the stack, wait until it is ready, create one ordinary pod, and
nothing else changes in the cluster. The pod is bound; so is one created right after a restart of the
queue, of a scheduler replica, and after the leading informer is killed and its standby takes over
(short Lease timings). Each case has a stack of its own, so each pod is created while nothing else
happens in the cluster. Last, a pod that needs a node added while the scheduler replicas' delta
stream is gone (its JetStream consumers deleted): the replicas notice the stall and bootstrap again
instead of finding the pod unschedulable on their old snapshots."""

from __future__ import annotations

import signal
from typing import Any

import aiohttp
import nats
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.bus.subjects import Subjects
from ksched.launcher.stack import Stack
from tests import kube
from tests.e2e.testing import create_nodes, eventually, holder, node, pod, ready, stack_fixture

pytestmark = pytest.mark.e2e

ELECTION = {
    "KSCHED_LEADER_ELECT_LEASE_DURATION": "3s",
    "KSCHED_LEADER_ELECT_RENEW_DEADLINE": "2s",
    "KSCHED_LEADER_ELECT_RETRY_PERIOD": "1s",
}


stack = stack_fixture("quiet", scope="function", nodes=5, informers=2, schedulers=2, extra_env=ELECTION)


async def _bound(api: ApiClient, name: str, timeout: float = 30.0, **spec: Any) -> str:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_pod("default", kube.body(pod(name, **spec)))

    async def node_of() -> str:
        return str((await v1.read_namespaced_pod(name, "default")).spec.node_name or "")

    return str(await eventually(node_of, timeout=timeout))


async def test_a_pod_created_in_a_quiet_cluster_is_bound(api: ApiClient) -> None:
    assert await _bound(api, "first")


async def _debug(stack: Stack, name: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{stack.http_url(name)}/debug") as r:
        state: dict[str, Any] = await r.json()
        return state


async def test_a_pod_created_right_after_a_queue_restart_is_bound(stack: Stack, api: ApiClient) -> None:
    await stack.kill("queue", signal.SIGKILL)
    await stack.restart("queue")  # ready as a standby; it leads once the killed one's Lease expires

    async def bootstrapped() -> bool:
        return bool((await _debug(stack, "queue"))["bootstrapped"])

    await eventually(bootstrapped, timeout=30)
    assert await _bound(api, "after-queue-restart")


async def test_a_pod_created_right_after_a_scheduler_restart_is_bound(stack: Stack, api: ApiClient) -> None:
    for name in ("scheduler-0", "scheduler-1"):
        await stack.kill(name, signal.SIGKILL)
    await stack.restart("scheduler-0")
    assert await _bound(api, "after-scheduler-restart")
    await stack.restart("scheduler-1")


async def test_a_pod_created_right_after_an_informer_failover_is_bound(stack: Stack, api: ApiClient) -> None:
    leader = await holder(api, "ksched-informer")
    standby = next(n for n in ("informer-0", "informer-1") if n != leader)
    await stack.kill(leader, signal.SIGKILL)

    async def queue_follows_the_standby() -> bool:
        if await holder(api, "ksched-informer") != standby or not await ready(stack.http_url(standby)):
            return False
        epoch = (await _debug(stack, standby))["epoch"]
        return bool((await _debug(stack, "queue"))["feed"]["epoch"] == epoch)

    await eventually(queue_follows_the_standby, timeout=30)
    assert await _bound(api, "after-informer-failover")
    await stack.restart(leader)


async def test_a_pod_for_a_node_added_while_the_delta_stream_is_lost_is_bound(
    stack: Stack, api: ApiClient
) -> None:
    stream = Subjects(stack.options.prefix).snapshot_stream
    nc = await nats.connect(stack.nats.url)
    try:
        js = nc.jetstream()
        consumers = await js.consumers_info(stream)
        assert consumers, f"no consumer on {stream}: the replicas follow it"
        for info in consumers:
            await js.delete_consumer(stream, info.name)
    finally:
        await nc.close()
    await create_nodes(api, [node("late")])
    # On a snapshot without node "late" the pod is unschedulable, and no later event would move it
    # for 5 minutes: bound in time only if the replica noticed its stream stalled.
    placed = await _bound(api, "needs-late", timeout=20, nodeSelector={"kubernetes.io/hostname": "late"})
    assert placed == "late"
