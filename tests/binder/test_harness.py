"""A binder's binding cycle and the messages it sends, in process against kubesim (tests/binder/
harness.py): a placement bound, a Permit wait allowed or rejected, a bind the API refuses going
back to the queue with backoff (and Unreserve to the deciding replica), a pod deleted meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.api.core import Pod
from ksched.bus.messages import ForgetRequest, RequeueRequest, UnreserveRequest
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.framework.testing import make_pod
from tests import kube
from tests.binder.harness import SCHEDULER, BinderHarness
from tests.deploy.rbac import grants_of
from tests.deploy.test_manifests import render
from tests.e2e.test_rbac import calls_of_client

NS = "binder-harness"


@pytest.fixture
async def harness(k8s_api: ApiClient, k8s_client: Client) -> AsyncIterator[BinderHarness]:
    core = CoreV1Api(k8s_api)
    with contextlib.suppress(ApiException):  # the session kubesim may have it already
        await core.create_namespace(kube.body({"metadata": {"name": NS}}))
    h = BinderHarness(k8s_client)
    try:
        yield h
    finally:
        await h.close()
        # the session's kubesim is shared: leave no pending pod for another test's scheduler
        await core.delete_collection_namespaced_pod(NS, grace_period_seconds=0)


async def pending(api: ApiClient, name: str) -> Pod:
    """A pending pod created in the API, as our object model."""
    name = f"{name}-{uuid.uuid4().hex[:6]}"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause"}]}
    created = await CoreV1Api(api).create_namespaced_pod(
        NS, kube.body({"metadata": {"name": name}, "spec": spec})
    )
    return make_pod(name, NS, uid=created.metadata.uid)


async def node_of(api: ApiClient, pod: Pod) -> str:
    read = await CoreV1Api(api).read_namespaced_pod(pod.metadata.name, NS)
    return str(read.spec.node_name or "")


async def scheduled_condition(api: ApiClient, pod: Pod) -> tuple[str, str] | None:
    """(reason, message) of the pod's PodScheduled=False condition, None without one."""
    read = await CoreV1Api(api).read_namespaced_pod(pod.metadata.name, NS)
    for cond in read.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False":
            return str(cond.reason), str(cond.message)
    return None


async def failed_scheduling(api: ApiClient, pod: Pod) -> list[str]:
    """The messages of the pod's FailedScheduling events."""
    events = await CoreV1Api(api).list_namespaced_event(
        NS, field_selector=f"involvedObject.name={pod.metadata.name},reason=FailedScheduling"
    )
    return [str(e.message) for e in events.items]


async def bind_in_api(api: ApiClient, pod: Pod, node: str) -> None:
    """Bind ``pod`` to ``node`` in the API, as another binding (or an earlier send) did."""
    body = {"metadata": {"name": pod.metadata.name}, "target": {"kind": "Node", "name": node}}
    bound = await kube.undecoded(
        CoreV1Api(api).create_namespaced_pod_binding(
            pod.metadata.name, NS, kube.body(body), _preload_content=False
        )
    )
    assert bound.status == 201


async def test_a_placement_is_bound_and_sends_nothing(harness: BinderHarness, k8s_api: ApiClient) -> None:
    pod = await pending(k8s_api, "p")
    assert await harness.bind(await harness.placement(pod, "node-a")) == "bound"
    assert await node_of(k8s_api, pod) == "node-a"
    assert harness.outbox.sent == []


async def test_a_redelivered_placement_of_a_pod_bound_there_is_a_success(
    harness: BinderHarness, k8s_api: ApiClient
) -> None:
    pod = await pending(k8s_api, "again")
    placement = await harness.placement(pod, "node-a")
    assert await harness.bind(placement) == "bound"
    assert await harness.bind(placement) == "bound"
    assert harness.outbox.sent == []


async def test_a_permit_wait_ends_when_the_plugin_allows(harness: BinderHarness, k8s_api: ApiClient) -> None:
    pod = await pending(k8s_api, "gang")
    placement = await harness.placement(pod, "node-a", permit_wait=10.0)
    binding = asyncio.create_task(harness.bind(placement))
    await asyncio.sleep(0.05)
    assert not binding.done() and await node_of(k8s_api, pod) == ""  # waiting on Permit
    await harness.decide(placement, allow=True, plugin="Gang")
    assert await asyncio.wait_for(binding, 5) == "bound"
    assert await node_of(k8s_api, pod) == "node-a"


async def test_a_permit_rejection_unreserves_and_requeues(harness: BinderHarness, k8s_api: ApiClient) -> None:
    pod = await pending(k8s_api, "rejected")
    placement = await harness.placement(pod, "node-a", permit_wait=10.0)
    binding = asyncio.create_task(harness.bind(placement))
    await asyncio.sleep(0.05)
    await harness.decide(placement, allow=False, plugin="Gang", message="the gang is incomplete")
    assert await asyncio.wait_for(binding, 5) == "failed"
    assert await node_of(k8s_api, pod) == ""
    forget, unreserve, requeue = (m for _, m in harness.outbox.sent)
    assert isinstance(forget, ForgetRequest) and forget.placement_id == placement.placement_id
    assert isinstance(unreserve, UnreserveRequest) and unreserve.placement_id == placement.placement_id
    assert harness.outbox.sent[1][0] == harness.outbox.subjects.unreserve(SCHEDULER)
    assert isinstance(requeue, RequeueRequest)
    assert (requeue.backoff, requeue.unschedulable_plugins, requeue.reason) == (
        True,
        ["Gang"],
        "0/1 nodes are available: 1 the gang is incomplete.",  # upstream's FitError of the node
    )
    # said as upstream's failure handler says it: the PodScheduled condition and the event
    assert await scheduled_condition(k8s_api, pod) == (
        "Unschedulable",
        "0/1 nodes are available: 1 the gang is incomplete.",
    )
    assert await failed_scheduling(k8s_api, pod) == ["0/1 nodes are available: 1 the gang is incomplete."]


async def test_a_permit_wait_that_times_out_fails(harness: BinderHarness, k8s_api: ApiClient) -> None:
    pod = await pending(k8s_api, "late")
    assert await harness.bind(await harness.placement(pod, "node-a", permit_wait=0.1)) == "failed"
    [requeue] = harness.outbox.of(RequeueRequest)
    # upstream's FitError of the one node the pod waited on
    assert requeue.reason.startswith("0/1 nodes are available: 1 rejected due to timeout after waiting")


async def test_a_bind_the_api_refuses_goes_back_to_the_queue_with_backoff(
    harness: BinderHarness, k8s_api: ApiClient
) -> None:
    pod = await pending(k8s_api, "taken")
    placement = await harness.placement(pod, "node-a")
    await bind_in_api(k8s_api, pod, "node-b")
    assert await harness.bind(placement) == "failed"
    assert await node_of(k8s_api, pod) == "node-b"
    [forget] = harness.outbox.of(ForgetRequest)
    [unreserve] = harness.outbox.of(UnreserveRequest)
    [requeue] = harness.outbox.of(RequeueRequest)
    assert forget.node_name == unreserve.node_name == "node-a"
    assert requeue.backoff and requeue.pod_uid == pod.metadata.uid
    assert requeue.reason.startswith('running Bind plugin "DefaultBinder": ')  # upstream's words
    assert 'is already assigned to node "node-b"' in requeue.reason
    assert await scheduled_condition(k8s_api, pod) == ("SchedulerError", requeue.reason)
    assert await failed_scheduling(k8s_api, pod) == [requeue.reason]


async def test_a_pod_deleted_before_binding_is_only_forgotten(
    harness: BinderHarness, k8s_api: ApiClient
) -> None:
    pod = await pending(k8s_api, "deleted")
    await CoreV1Api(k8s_api).delete_namespaced_pod(pod.metadata.name, NS, grace_period_seconds=0)
    assert await harness.bind(await harness.placement(pod, "node-a")) == "gone"
    assert [type(m) for _, m in harness.outbox.sent] == [ForgetRequest]


class FailsOnce:
    """A PreBind plugin whose first call fails (a write the API refused for a moment)."""

    name = "FailsOnce"

    def __init__(self) -> None:
        self.calls = 0

    async def pre_bind(self, state: Any, pod: Any, node_name: str) -> Any:
        from ksched.framework.status import Status

        self.calls += 1
        return Status.as_error("refused for a moment") if self.calls == 1 else None


async def test_a_failed_placement_delivered_again_is_not_bound(
    harness: BinderHarness, k8s_api: ApiClient
) -> None:
    """A batch is nak'ed when a Scheduled event of one of its placements is not written (the API
    restarting), and comes again whole: a placement of it whose binding failed was forgotten (the
    informer made the pod pending again and may have placed it, or others on that node, since), so
    the redelivery must not bind it (``ksched bench chaos``, restart-kubesim: pods bound on one node
    and refused on the other, and hard constraints broken)."""
    pod = await pending(k8s_api, "again")
    placement = await harness.placement(pod, "node-a")
    fails = FailsOnce()
    harness.service.frameworks[placement.profile].plugins.pre_bind.append(fails)
    assert await harness.service._handle_one(placement, in_batch=True) == "failed"
    assert [f.pod_uid for f in harness.outbox.of(ForgetRequest)] == [pod.metadata.uid]
    assert await harness.service._handle_one(placement, in_batch=True) == "failed"  # the redelivery
    assert await node_of(k8s_api, pod) == ""
    assert fails.calls == 1


class RefusesBinding:
    """A Bind plugin ahead of DefaultBinder refusing as a restarted API server does while its RBAC
    loads (403): the Binding sent before the restart was applied, its answer lost."""

    name = "RefusesBinding"

    async def bind(self, state: Any, pod: Any, node_name: str) -> Any:
        from ksched.framework.status import Status

        return Status.as_error('pods "x" is forbidden: User "system:kube-scheduler" cannot create resource')


async def test_a_binding_refused_for_a_pod_bound_there_is_a_success(
    harness: BinderHarness, k8s_api: ApiClient
) -> None:
    pod = await pending(k8s_api, "applied")
    placement = await harness.placement(pod, "node-a")
    await bind_in_api(k8s_api, pod, "node-a")
    harness.service.frameworks[placement.profile].plugins.bind.insert(0, RefusesBinding())
    assert await harness.service._handle_one(placement) == "bound"
    assert harness.outbox.sent == []  # nothing forgotten or requeued


async def test_the_check_of_a_refused_binding_calls_only_what_the_binders_role_grants(
    k8s_api: ApiClient, kubesim_kubeconfig: Any
) -> None:
    """The pod read after a refused Binding is one deploy/base's binder role grants (``get``; a list
    would be refused by the real API server for the binder's ServiceAccount, leaving the placement
    neither failed nor bound)."""
    component = f"ksched-binder-check-{uuid.uuid4().hex[:6]}"
    with contextlib.suppress(ApiException):  # the session kubesim may have it already
        await CoreV1Api(k8s_api).create_namespace(kube.body({"metadata": {"name": NS}}))
    async with await api_client(str(kubesim_kubeconfig), component=component) as api:
        harness = BinderHarness(api)
        try:
            pod = await pending(k8s_api, "refused")
            placement = await harness.placement(pod, "node-a")
            harness.service.frameworks[placement.profile].plugins.bind.insert(0, RefusesBinding())
            assert await harness.service._handle_one(placement) == "failed"  # not bound there: a failure
            calls = await calls_of_client(api, component)
        finally:
            await harness.close()
            await CoreV1Api(k8s_api).delete_collection_namespaced_pod(NS, grace_period_seconds=0)
    assert ("", "pods", "get") in calls  # the check ran
    assert calls - grants_of(render("base"), "ksched-binder") == set()
