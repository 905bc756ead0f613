"""The API effects of a preemption (``ksched.plugins.defaultpreemption.effects``) against kubesim,
through kubernetes_asyncio over HTTP: nomination, DisruptionTarget + delete of the victims,
clearing lower-priority nominations, and the executor's in-flight mark."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import msgspec
import pytest
from ksched_kubesim import KubeSim
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.api.core import Pod
from ksched.client.rest import Client
from ksched.plugins.defaultpreemption import effects
from ksched.plugins.defaultpreemption.effects import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
    PreemptionExecutor,
    PreemptionPlan,
    PreemptionReport,
    execute_preemption,
)

NODE = "preempt-node"


def manifest(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """A pod (priority plays no part in the effects; kubesim's Priority admission sets it)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 600,
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "500m"}}}],
            **spec,
        },
    }


def as_pod(obj: dict[str, Any]) -> Pod:
    return msgspec.convert(obj, Pod)


@pytest.fixture
def namespace(kubesim: KubeSim) -> str:
    name = f"preempt-{uuid.uuid4().hex[:6]}"
    kubesim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def setup(kubesim: KubeSim, ns: str) -> tuple[Pod, list[Pod], Pod]:
    """A pending preemptor, two victims bound to NODE, and a lower-priority pod nominated there."""
    preemptor = as_pod(kubesim.create(manifest("preemptor", ns)))
    victims = []
    for name in ("victim-a", "victim-b"):
        kubesim.create(manifest(name, ns))
        victims.append(as_pod(kubesim.bind(ns, name, NODE)))
    waiting = kubesim.create(manifest("waiting", ns))
    waiting["status"]["nominatedNodeName"] = NODE
    nominated = as_pod(kubesim.load(waiting))
    return preemptor, victims, nominated


async def test_execute_preemption_performs_every_effect(
    kubesim: KubeSim, k8s_client: Client, k8s_api: ApiClient, namespace: str
) -> None:
    preemptor, victims, nominated = setup(kubesim, namespace)
    plan = PreemptionPlan(preemptor, NODE, tuple(victims), (nominated,))
    report = await execute_preemption(k8s_client, plan)
    assert report.ok, report.errors
    assert report.nominated
    assert sorted(report.deleted) == [f"{namespace}/victim-a", f"{namespace}/victim-b"]
    assert report.cleared == [f"{namespace}/waiting"]
    core = client.CoreV1Api(k8s_api)
    got = await core.read_namespaced_pod("preemptor", namespace)
    assert got.status.nominated_node_name == NODE
    assert (await core.read_namespaced_pod("waiting", namespace)).status.nominated_node_name is None
    for name in ("victim-a", "victim-b"):
        victim = await core.read_namespaced_pod(name, namespace)
        assert victim.metadata.deletion_timestamp is not None  # graceful deletion of a bound pod
        types = [c.type for c in victim.status.conditions]
        assert "PodScheduled" in types  # the strategic merge kept the other conditions
        (cond,) = [c for c in victim.status.conditions if c.type == DISRUPTION_TARGET]
        assert cond.status == "True"
        assert cond.reason == REASON_PREEMPTION_BY_SCHEDULER
        assert cond.message == "default-scheduler: preempting to accommodate a higher priority pod"


async def test_victims_gone_or_terminating_are_not_errors(
    kubesim: KubeSim, k8s_client: Client, namespace: str
) -> None:
    preemptor, victims, _ = setup(kubesim, namespace)
    kubesim.delete("Pod", "victim-a", namespace, grace_period=0)  # already gone
    terminating = as_pod(kubesim.get("Pod", "victim-b", namespace) or {})
    kubesim.delete("Pod", "victim-b", namespace)  # graceful: deletionTimestamp set
    terminating = as_pod(kubesim.get("Pod", "victim-b", namespace) or {})
    assert terminating.metadata.deletion_timestamp is not None
    plan = PreemptionPlan(preemptor, NODE, (victims[0], terminating))
    assert plan.last_victim is victims[0]  # what the queue waits for (DoneRequest.preemption_last_victim)
    assert PreemptionPlan(preemptor, NODE, (terminating,)).last_victim is None
    report = await execute_preemption(k8s_client, plan, nominate=False)
    assert report.ok, report.errors
    assert report.already_gone == [f"{namespace}/victim-a"]
    assert report.skipped_terminating == [f"{namespace}/victim-b"]
    assert report.deleted == []
    assert not report.nominated


async def test_victims_all_being_deleted_leave_the_lower_nominations(
    kubesim: KubeSim, k8s_client: Client, k8s_api: ApiClient, namespace: str
) -> None:
    """With no victim left to delete, upstream's async executor returns before its goroutine, which
    would have cleared the lower-priority nominations: they stay (seed 9510, case 1225)."""
    preemptor, victims, nominated = setup(kubesim, namespace)
    for victim in victims:
        kubesim.delete("Pod", victim.metadata.name, namespace)  # graceful: deletionTimestamp set
    terminating = tuple(as_pod(kubesim.get("Pod", v.metadata.name, namespace) or {}) for v in victims)
    plan = PreemptionPlan(preemptor, NODE, terminating, (nominated,))
    report = await execute_preemption(k8s_client, plan, nominate=False)
    assert report.ok, report.errors
    assert report.cleared == [] and report.deleted == []
    assert sorted(report.skipped_terminating) == [f"{namespace}/victim-a", f"{namespace}/victim-b"]
    core = client.CoreV1Api(k8s_api)
    assert (await core.read_namespaced_pod("waiting", namespace)).status.nominated_node_name == NODE


async def test_executor_marks_the_preemptor_until_the_effects_are_done(
    kubesim: KubeSim, k8s_client: Client, namespace: str
) -> None:
    preemptor, victims, _ = setup(kubesim, namespace)
    executor = PreemptionExecutor()
    reports: list[PreemptionReport] = []
    task = executor.submit(
        k8s_client, PreemptionPlan(preemptor, NODE, tuple(victims)), on_done=reports.append
    )
    assert executor.is_running(preemptor.metadata.uid)  # marked before the task runs
    report = await asyncio.wait_for(task, 10)
    assert report.ok and reports == [report]
    assert not executor.is_running(preemptor.metadata.uid)


async def test_executor_deletes_nothing_before_what_it_runs_after(
    kubesim: KubeSim, k8s_client: Client, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduler's preemption runs after the preemptor's status write (``after``): the victims are
    untouched until it is done, then deleted; a write that never ends holds them back only for
    ``AFTER_TIMEOUT`` s."""
    preemptor, victims, _ = setup(kubesim, namespace)
    executor = PreemptionExecutor()
    written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    task = executor.submit(k8s_client, PreemptionPlan(preemptor, NODE, tuple(victims)), after=written)
    assert executor.is_running(preemptor.metadata.uid)  # marked at once
    await asyncio.sleep(0.3)
    assert all(
        as_pod(kubesim.get("Pod", v.metadata.name, namespace) or {}).metadata.deletion_timestamp is None
        for v in victims
    )
    written.set_result(None)
    report = await asyncio.wait_for(task, 10)
    assert report.ok and sorted(report.deleted) == sorted(f"{namespace}/{v.metadata.name}" for v in victims)
    monkeypatch.setattr(effects, "AFTER_TIMEOUT", 0.2)
    others = []
    for name in ("late-a", "late-b"):
        kubesim.create(manifest(name, namespace))
        others.append(as_pod(kubesim.bind(namespace, name, NODE)))
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    plan = PreemptionPlan(preemptor, NODE, tuple(others))
    late = await asyncio.wait_for(executor.submit(k8s_client, plan, after=never), 10)
    assert late.ok and sorted(late.deleted) == [f"{namespace}/late-a", f"{namespace}/late-b"]
    # cancelled while it waits (a service stopping): the mark ends, nothing is deleted
    monkeypatch.setattr(effects, "AFTER_TIMEOUT", 30.0)
    kubesim.create(manifest("spared", namespace))
    spared = as_pod(kubesim.bind(namespace, "spared", NODE))
    waiting = executor.submit(k8s_client, PreemptionPlan(preemptor, NODE, (spared,)), after=never)
    await asyncio.sleep(0.1)
    waiting.cancel()
    await asyncio.wait({waiting}, timeout=5)
    assert waiting.cancelled() and not executor.is_running(preemptor.metadata.uid)
    assert as_pod(kubesim.get("Pod", "spared", namespace) or {}).metadata.deletion_timestamp is None


async def test_executor_reports_transport_failures_and_clears_the_mark(kubesim: KubeSim) -> None:
    configuration = client.Configuration(host="http://127.0.0.1:9")  # nothing listens on the discard port
    preemptor = as_pod(manifest("p", "default") | {"metadata": {"name": "p", "uid": "p-uid"}})
    victim = as_pod(manifest("v", "default") | {"metadata": {"name": "v", "namespace": "default"}})
    executor = PreemptionExecutor()
    async with Client(configuration) as api:
        report = await asyncio.wait_for(executor.submit(api, PreemptionPlan(preemptor, NODE, (victim,))), 10)
    assert not report.ok
    assert "preemption of" in report.errors[0]
    assert not executor.is_running("p-uid")
