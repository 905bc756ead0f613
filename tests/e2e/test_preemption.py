"""End to end, preemption: on a full cluster a high-priority pod preempts the right victims (through
every service process: PostFilter in the scheduler, victims deleted off the cycle, the preemptor
retried onto the freed room), and a PodDisruptionBudget steers the choice of victims."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.testing import (
    create_nodes,
    create_pods,
    eventually,
    kube_api,
    node,
    pod,
    pod_nodes,
    running_stack,
)

pytestmark = pytest.mark.e2e

PRIORITIES = {"low": 100, "mid": 500, "high": 1000}


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    options = StackOptions(workdir=tmp_path_factory.mktemp("stack"), pod_start_delay=0.1, time_scale=0.01)
    async with running_stack(options) as s:
        async with kube_api(s.kubeconfig) as api:
            scheduling = client.SchedulingV1Api(api)
            for name, value in PRIORITIES.items():
                body: Any = {"metadata": {"name": name}, "value": value}
                await scheduling.create_priority_class(body)
        yield s


def running(name: str, on: str, priority: str, cpu: str, labels: dict[str, str] | None = None) -> Any:
    """A pod already on node ``on`` (created with nodeName, as if scheduled earlier)."""
    body = pod(name, cpu=cpu, nodeName=on, priorityClassName=priority)
    body["metadata"]["labels"] = labels or {}
    return body


def preemptor(name: str, group: str, cpu: str) -> Any:
    return pod(name, cpu=cpu, priorityClassName="high", nodeSelector={"group": group})


async def gone(api: ApiClient, name: str) -> bool:
    try:
        await client.CoreV1Api(api).read_namespaced_pod(name, "default")
    except ApiException as exc:
        return exc.status == 404
    return False


async def events_about(api: ApiClient, name: str, reason: str) -> list[Any]:
    events = await client.EventsV1Api(api).list_namespaced_event("default")
    return [e for e in events.items if e.regarding.name == name and e.reason == reason]


async def test_high_priority_pod_preempts_the_lowest_priority_victims(stack: Stack, api: ApiClient) -> None:
    await create_nodes(api, [node(n, cpu="2", labels={"group": "prio"}) for n in ("prio-a", "prio-b")])
    await create_pods(
        api,
        [
            running("a-low", "prio-a", "low", "1"),
            running("a-mid", "prio-a", "mid", "1"),
            running("b-low1", "prio-b", "low", "1"),
            running("b-low2", "prio-b", "low", "1"),
        ],
    )
    await create_pods(api, [preemptor("urgent", "prio", "2")])

    async def urgent_bound() -> str:
        return (await pod_nodes(api)).get("urgent", "")

    # prio-b's victims have the lower highest priority (low < mid): both of them go
    assert await eventually(urgent_bound, timeout=60) == "prio-b"
    assert await gone(api, "b-low1") and await gone(api, "b-low2")
    assert not await gone(api, "a-low") and not await gone(api, "a-mid")

    urgent = await client.CoreV1Api(api).read_namespaced_pod("urgent", "default")
    assert urgent.spec.priority == PRIORITIES["high"]
    [preempted] = await eventually(lambda: events_about(api, "b-low1", "Preempted"), timeout=10)
    assert preempted.note == f"Preempted by pod {urgent.metadata.uid} on node prio-b"
    assert preempted.related.name == "urgent"
    failed = await events_about(api, "urgent", "FailedScheduling")
    assert failed and failed[0].note.startswith("0/"), failed


async def test_preemption_avoids_violating_a_pod_disruption_budget(stack: Stack, api: ApiClient) -> None:
    await create_nodes(api, [node(n, cpu="2", labels={"group": "pdb"}) for n in ("pdb-a", "pdb-b")])
    await create_pods(
        api,
        [
            running("guarded", "pdb-a", "low", "2", labels={"app": "guarded"}),
            running("free", "pdb-b", "mid", "2"),
        ],
    )
    budget: Any = {
        "metadata": {"name": "keep-guarded", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    policy = client.PolicyV1Api(api)
    await policy.create_namespaced_pod_disruption_budget("default", budget)

    async def budget_exhausted() -> bool:
        pdb = await policy.read_namespaced_pod_disruption_budget("keep-guarded", "default")
        return (
            pdb.status is not None and pdb.status.current_healthy == 1 and pdb.status.disruptions_allowed == 0
        )

    assert await eventually(budget_exhausted, timeout=30)
    # Without the budget "guarded" (low) would be the victim: it has the lower priority.
    await create_pods(api, [preemptor("vip", "pdb", "2")])

    async def vip_bound() -> str:
        return (await pod_nodes(api)).get("vip", "")

    assert await eventually(vip_bound, timeout=60) == "pdb-b"
    assert await gone(api, "free")
    assert not await gone(api, "guarded")
