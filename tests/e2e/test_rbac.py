"""RBAC against what the services really call: every service process runs against kubesim, which
counts requests per client (each service names itself in its User-Agent, ``ksched-binder/...``);
a scenario drives each API-facing path (leader election, informers, FailedScheduling, preemption,
binding, VolumeBinding's PreBind with a local PV and a provisioned one), and every (group, resource,
verb) a service used must be granted to its ServiceAccount by deploy/base's Roles and ClusterRoles.
tests/deploy/test_manifests.py checks the grants against the table of intended rights; this test
checks that table against the running code.

The same scenario through the pipeline as ``ksched kube-scheduler`` runs it (informer and queue without
their own elections) checks that every call is one upstream's bootstrap ClusterRoles
``system:kube-scheduler`` and ``system:volume-scheduler`` grant, so kubeadm's ``scheduler.conf`` is
enough for the drop-in (tests/e2e/test_dropin_kube136.py runs it against the real API server)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.client.rest import Client
from ksched.launcher.stack import Stack
from tests.deploy.rbac import Grant, grants_of
from tests.deploy.test_manifests import UPSTREAM, render
from tests.e2e.testing import (
    claim,
    create_nodes,
    create_pods,
    create_wffc_storage,
    eventually,
    kube_api,
    node,
    pod,
    pod_nodes,
    stack_fixture,
)

pytestmark = pytest.mark.e2e

SERVICES = ("informer", "queue", "scheduler", "binder")
_SAMPLE = re.compile(r"^kubesim_client_requests_total\{(?P<labels>[^}]*)\} (?P<count>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
#: calls the scenario must show (so the check below cannot pass by seeing nothing)
EXERCISED: dict[str, set[Grant]] = {
    "informer": {("", "pods", "list"), ("", "pods", "watch"), ("coordination.k8s.io", "leases", "create")},
    "queue": {("coordination.k8s.io", "leases", "create")},
    "scheduler": {
        ("", "pods/status", "patch"),
        ("", "pods", "delete"),
        ("events.k8s.io", "events", "create"),
    },
    "binder": {
        ("", "pods/binding", "create"),
        ("", "persistentvolumeclaims", "patch"),
        ("events.k8s.io", "events", "create"),
    },
}


stack = stack_fixture("stack", scope="function", pod_start_delay=0.1, time_scale=0.01)
dropin_stack = stack_fixture(
    "dropin", scope="function", pod_start_delay=0.1, time_scale=0.01, singleton_election=False
)


async def calls_by_client(metrics: Client) -> dict[str, set[Grant]]:
    """(group, resource[/subresource], verb) per client (its User-Agent's component), from
    kubesim's /metrics read through ``metrics``."""
    status, data = await metrics.request("GET", "/metrics")
    assert status == 200, data[:200]
    calls: dict[str, set[Grant]] = {}
    for line in data.decode().splitlines():
        sample = _SAMPLE.match(line)
        if not sample:
            continue
        labels = dict(_LABEL.findall(sample["labels"]))
        resource = labels["resource"] + (f"/{labels['subresource']}" if labels["subresource"] else "")
        calls.setdefault(labels["client"], set()).add((labels["group"], resource, labels["verb"]))
    return calls


async def calls_of_client(metrics: Client, component: str) -> set[Grant]:
    """What the client naming ``component`` called, as :func:`calls_by_client` reads it."""
    return (await calls_by_client(metrics)).get(component, set())


async def calls_by_service(api: ApiClient) -> dict[str, set[Grant]]:
    """(group, resource[/subresource], verb) per ksched service, from kubesim's /metrics."""
    async with Client(api.configuration) as metrics:
        by_client = await calls_by_client(metrics)
    return {service: by_client.get(f"ksched-{service}", set()) for service in SERVICES}


async def _priority_classes(api: ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api)
    for name, value in (("rbac-low", 100), ("rbac-high", 1000)):
        body: Any = {"metadata": {"name": name}, "value": value}
        await scheduling.create_priority_class(body)


async def _volumes(api: ApiClient) -> None:
    """A WaitForFirstConsumer class with a local PV on rbac-b, one with a provisioner, a claim of each."""
    await create_wffc_storage(api, "rbac-local", "rbac-csi", local_pv="rbac-local-b", pv_node="rbac-b")
    for claim_name, class_name in (("rbac-db", "rbac-local"), ("rbac-cache", "rbac-csi")):
        await client.CoreV1Api(api).create_namespaced_persistent_volume_claim(
            "default", claim(claim_name, class_name, "1Gi")
        )


def _with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])


async def test_every_call_a_service_makes_is_granted_to_its_service_account(stack: Stack) -> None:
    calls = await _scenario(stack)
    resources = render("base")
    for service in SERVICES:
        granted = grants_of(resources, f"ksched-{service}")
        assert calls[service] - granted == set(), f"ksched-{service} calls what its ServiceAccount may not"
        assert EXERCISED[service] <= calls[service], f"the scenario did not exercise ksched-{service}"


async def test_the_drop_in_pipeline_calls_only_what_kube_schedulers_roles_grant(dropin_stack: Stack) -> None:
    calls = await _scenario(dropin_stack)
    for service in SERVICES:
        assert calls[service] - UPSTREAM == set(), (
            f"ksched-{service} calls what system:kube-scheduler may not"
        )
    assert not calls["queue"], "the queue of the drop-in calls the API server"
    assert ("coordination.k8s.io", "leases", "create") not in calls["informer"]  # the process is elected
    for service in ("scheduler", "binder"):
        assert EXERCISED[service] <= calls[service], f"the scenario did not exercise ksched-{service}"


async def _scenario(stack: Stack) -> dict[str, set[Grant]]:
    """Priority preemption, FailedScheduling, binding and volume binding (a local PV, a provisioned
    one); the calls each service made."""
    async with kube_api(stack.kubeconfig) as api:
        await _priority_classes(api)
        await _volumes(api)
        await create_nodes(api, [node(n, cpu="4", labels={"group": "rbac"}) for n in ("rbac-a", "rbac-b")])
        victims = [
            pod(f"victim-{n}", cpu="3", nodeName=n, priorityClassName="rbac-low")
            for n in ("rbac-a", "rbac-b")
        ]
        await create_pods(api, victims)
        # fits nowhere: FailedScheduling, then preemption of a victim, then binding
        urgent = pod("urgent", cpu="2", priorityClassName="rbac-high", nodeSelector={"group": "rbac"})
        await create_pods(api, [urgent])

        async def urgent_bound() -> str:
            return (await pod_nodes(api)).get("urgent", "")

        await eventually(urgent_bound, timeout=60)
        await create_pods(api, [_with_claim("db", "rbac-db"), _with_claim("cache", "rbac-cache")])

        async def volumes_bound() -> bool:
            placed = await pod_nodes(api)
            return bool(placed.get("db") and placed.get("cache"))

        await eventually(volumes_bound, timeout=60)
        return await calls_by_service(api)
