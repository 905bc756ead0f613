"""KWOK-style lifecycle: pods start, graceful deletions finish, nodes become Ready, namespaces and PDBs."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings

from tests.polling import until


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    config = KubeSimConfig(nodes=2, lifecycle=LifecycleSettings(pod_start_delay=0.05, time_scale=0.01))
    async with KubeSim(config) as running:
        yield running


def _pod(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "x:1"}], **spec},
    }


def _phase(sim: KubeSim, name: str, namespace: str = "default") -> str | None:
    pod = sim.get("Pod", name, namespace)
    return None if pod is None else pod["status"].get("phase")


async def test_bound_pod_turns_running(sim: KubeSim) -> None:
    sim.create(_pod("runner"))
    sim.bind("default", "runner", "node-0001")
    await until(lambda: _phase(sim, "runner") == "Running")
    pod = sim.get("Pod", "runner", "default")
    assert pod is not None
    status = pod["status"]
    node = sim.get("Node", "node-0001")
    assert node is not None
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(node["spec"]["podCIDR"])
    assert status["hostIP"] == node["status"]["addresses"][0]["address"]
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert all(c["status"] == "True" for c in status["conditions"])
    [container] = status["containerStatuses"]
    assert container["ready"] is True and "running" in container["state"]
    assert status["startTime"]


async def test_pod_created_on_a_node_turns_running(sim: KubeSim) -> None:
    sim.create(_pod("direct", nodeName="node-0000"))
    await until(lambda: _phase(sim, "direct") == "Running")


async def test_pod_bound_to_a_missing_node_stays_pending(sim: KubeSim) -> None:
    """A pod bound later to a real node starts after the same delay: once it runs, the first one
    would have started too."""
    sim.create(_pod("nowhere"))
    sim.bind("default", "nowhere", "no-such-node")
    sim.create(_pod("witness"))
    sim.bind("default", "witness", "node-0001")
    await until(lambda: _phase(sim, "witness") == "Running")
    assert _phase(sim, "nowhere") == "Pending"


async def test_graceful_deletion_finishes_after_the_scaled_grace_period(sim: KubeSim) -> None:
    sim.create(_pod("graceful", terminationGracePeriodSeconds=20))
    sim.bind("default", "graceful", "node-0001")
    assert sim.delete("Pod", "graceful", "default") is False
    assert sim.get("Pod", "graceful", "default") is not None
    await asyncio.sleep(0.05)
    assert sim.get("Pod", "graceful", "default") is not None, "20 s x 0.01 = 0.2 s have not passed"
    await until(lambda: sim.get("Pod", "graceful", "default") is None)


async def test_node_without_conditions_becomes_ready(sim: KubeSim) -> None:
    sim.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}})

    def ready() -> bool:
        node = sim.get("Node", "bare")
        return node is not None and any(
            c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])
        )

    await until(ready)


async def test_namespace_deletion_removes_its_content(sim: KubeSim) -> None:
    sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
    sim.create(_pod("inside", "doomed"))
    sim.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc", "namespace": "doomed"},
            "spec": {"ports": [{"port": 80}]},
        }
    )
    sim.delete("Namespace", "doomed")
    namespace = sim.get("Namespace", "doomed")
    assert namespace is not None and namespace["status"]["phase"] == "Terminating"
    await until(lambda: sim.get("Namespace", "doomed") is None)
    assert sim.get("Pod", "inside", "doomed") is None
    assert sim.get("Service", "svc", "doomed") is None


async def test_disruption_controller_counts_healthy_pods(sim: KubeSim) -> None:
    sim.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "budget", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
        }
    )
    for name in ("p1", "p2"):
        sim.create(_pod(name))
        sim.bind("default", name, "node-0000")

    def status() -> dict[str, Any] | None:
        pdb = sim.get("PodDisruptionBudget", "budget", "default", "policy/v1")
        assert pdb is not None
        st: dict[str, Any] = pdb["status"]
        return st if st.get("currentHealthy") == 2 else None

    st = await until(status)
    assert (st["observedGeneration"], st["expectedPods"], st["desiredHealthy"], st["disruptionsAllowed"]) == (
        1,
        2,
        1,
        1,
    )
    assert st["conditions"][0]["type"] == "DisruptionAllowed" and st["conditions"][0]["status"] == "True"


async def test_pvc_protection_finalizer_is_released_on_deletion(sim: KubeSim) -> None:
    pvc = sim.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        }
    )
    assert pvc["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    sim.delete("PersistentVolumeClaim", "claim", "default")
    await until(lambda: sim.get("PersistentVolumeClaim", "claim", "default") is None)


async def test_lifecycle_can_be_disabled() -> None:
    """Disabled, the lifecycle never listens to the store, so nothing can react later."""
    config = KubeSimConfig(nodes=1, lifecycle=LifecycleSettings(enabled=False, pod_start_delay=0.0))
    async with KubeSim(config) as quiet:
        assert not quiet.lifecycle.running
        assert not quiet.registry.store.listeners
        quiet.create(_pod("idle"))
        quiet.bind("default", "idle", "node-0000")
        assert _phase(quiet, "idle") == "Pending"


async def test_a_shortened_grace_period_is_written_in_utc() -> None:
    """A deletionTimestamp stored with an offset (a loaded object): deleting again with a shorter grace
    period moves it to the same request instant plus the new grace, written in UTC."""
    config = KubeSimConfig(nodes=1, lifecycle=LifecycleSettings(enabled=False))
    async with KubeSim(config) as sim:
        pod = _pod("offset", nodeName="node-0000")
        pod["metadata"].update(deletionTimestamp="2026-01-01T02:00:30+02:00", deletionGracePeriodSeconds=30)
        sim.load(pod)
        assert sim.delete("Pod", "offset", "default", grace_period=10) is False
        stored = sim.get("Pod", "offset", "default")
        assert stored is not None
        assert stored["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:10Z"
