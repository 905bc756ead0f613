"""A bound member of a committed group sets its PodGroup's PodGroupScheduled condition (True,
Scheduled) from the binder too: the replica that ran the group's cycle writes it after the commit,
and should that replica die in between, the binder's write is what makes the outcome durable. The
write is upstream's: only when it changes, never from True back to False, and a Coscheduling group
(no v1alpha2 PodGroup) is left alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from ksched_kubesim import KubeSim
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient

from ksched.bus.messages import GangRef
from ksched.features import FeatureGates
from ksched.framework.testing import make_pod
from tests.binder.harness import BinderHarness
from tests.fixtures.kubesim import fast_config

GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
NS = "default"


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[tuple[KubeSim, ApiClient]]:
    kube = KubeSim(fast_config(feature_gates=GATES))
    await kube.start()
    api = await config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))
    try:
        yield kube, api
    finally:
        await api.close()
        await kube.stop()


def group_condition(kube: KubeSim, name: str) -> dict[str, Any] | None:
    group = kube.get("PodGroup", name, NS, api_version="scheduling.k8s.io/v1alpha2")
    assert group is not None
    conditions = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodGroupScheduled"), None)


async def bind_member(kube: KubeSim, api: ApiClient, pod_name: str, group: str) -> None:
    created = kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": NS},
            "spec": {
                "containers": [{"name": "c", "image": "pause"}],
                "schedulingGroup": {"podGroupName": group},
            },
        }
    )
    pod = make_pod(pod_name, NS, uid=created["metadata"]["uid"])
    harness = BinderHarness(api)
    try:
        placement = await harness.placement(pod, "node-a")
        gang = GangRef(group=f"{NS}/{group}", commit_id="c1", members=[pod.metadata.uid])
        assert await harness.bind(msgspec.structs.replace(placement, gang=gang)) == "bound"
    finally:
        await harness.close()


async def until_condition(kube: KubeSim, name: str) -> dict[str, Any]:
    for _ in range(100):
        condition = group_condition(kube, name)
        if condition is not None:
            return condition
        await asyncio.sleep(0.05)
    raise AssertionError(f"PodGroup {name} got no PodGroupScheduled condition")


def pod_group(name: str, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
    }
    if conditions:
        group["status"] = {"conditions": conditions}
    return group


async def test_a_bound_member_marks_its_group_scheduled(sim: tuple[KubeSim, ApiClient]) -> None:
    kube, api = sim
    kube.create(pod_group("train"))
    await bind_member(kube, api, "m0", "train")
    condition = await until_condition(kube, "train")
    assert (condition["status"], condition["reason"], condition["message"]) == ("True", "Scheduled", "")


async def test_an_earlier_false_becomes_true(sim: tuple[KubeSim, ApiClient]) -> None:
    kube, api = sim
    earlier = {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "pod group is unschedulable",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    kube.create(pod_group("retried", [earlier]))
    await bind_member(kube, api, "m1", "retried")
    for _ in range(100):
        condition = group_condition(kube, "retried")
        if condition is not None and condition["status"] == "True":
            break
        await asyncio.sleep(0.05)
    assert condition is not None and (condition["status"], condition["reason"]) == ("True", "Scheduled")
    assert condition["lastTransitionTime"] != earlier["lastTransitionTime"]
