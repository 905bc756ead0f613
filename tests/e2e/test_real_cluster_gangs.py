"""Gang scheduling on the real Kubernetes 1.36.2 control plane (``kube136``, started with the alpha
gates GenericWorkload and GangScheduling and scheduling.k8s.io/v1alpha2 served): ksched with the same
gates as a second scheduler, each service under its own ServiceAccount with the RBAC of deploy/base
plus components/gang-scheduling (what an installation with gangs applies; tests/e2e/realcluster.py).

A Workload with a PodGroup template, two PodGroups made from it as a controller would (docs/gang.md):
one fits and binds whole, ``PodGroupScheduled=True/Scheduled``; one has room for two of its three
members and stays pending, holding nothing, ``PodGroupScheduled=False/Unschedulable`` with upstream's
message, each member ``PodScheduled=False/Unschedulable`` (captures 15g-15j of ../shared/apiserver-1.36).
A separate module from test_real_cluster.py: both stacks are the profile ``ksched``, never at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.controlplane import GANG_GATES, ControlPlane
from ksched.launcher.stack import Stack
from tests.deploy.test_manifests import render_with_gangs
from tests.e2e.realcluster import PROFILE, real_stack, settle
from tests.e2e.test_gangs import GROUP_API, condition, pod_conditions
from tests.e2e.testing import create_namespace, create_nodes, create_pods, node, pod, pod_nodes

pytestmark = pytest.mark.e2e

WAITING = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more "
    "plugins asked to wait and no plugin rejected pod"
)
"""The message of a member that fit while its group did not (capture 15i)."""


@pytest.fixture(scope="module")
async def stack(kube136: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    workdir = tmp_path_factory.mktemp("real-cluster-gangs")
    kustomization = workdir / "kustomization"
    kustomization.mkdir()
    resources = render_with_gangs(kustomization)
    async for s in real_stack(kube136, workdir, resources, feature_gates=GANG_GATES, binder_workers=4):
        yield s


async def create_group(api: ApiClient, ns: str, name: str, size: int, cpu: str = "1") -> None:
    """PodGroup ``name`` made from the Workload ``training``'s template ``workers`` (minCount 3, as
    the template says), and ``size`` members of ksched's profile on the nodes of pool ``name``."""
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "training", "podGroupTemplateName": "workers"}
            },
            "schedulingPolicy": {"gang": {"minCount": 3}},
        },
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(*GROUP_API, ns, "podgroups", body)
    members = [
        pod(
            f"{name}-{i}",
            cpu=cpu,
            namespace=ns,
            scheduler_name=PROFILE,
            nodeSelector={"pool": f"{ns}-{name}"},
            schedulingGroup={"podGroupName": name},
        )
        for i in range(size)
    ]
    await create_pods(api, members)


async def test_a_gang_that_fits_binds_whole_one_that_cannot_stays_pending(
    stack: Stack, api: ApiClient
) -> None:
    ns = "rc-gangs"
    await create_namespace(api, ns)
    await create_nodes(
        api, [node(f"{ns}-fits-{i}", cpu="2", labels={"pool": f"{ns}-fits"}) for i in range(2)]
    )
    await create_nodes(api, [node(f"{ns}-too-big-0", cpu="2", labels={"pool": f"{ns}-too-big"})])
    workload: Any = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "training", "namespace": ns},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}]},
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(*GROUP_API, ns, "workloads", workload)
    await asyncio.gather(create_group(api, ns, "fits", 3), create_group(api, ns, "too-big", 3))

    async def fits_bound() -> dict[str, str] | None:
        placed = await pod_nodes(api, ns)
        fits = {n: v for n, v in placed.items() if n.startswith("fits-")}
        return fits if len(fits) == 3 and all(fits.values()) else None

    placed = await settle(stack, fits_bound, timeout=30)
    assert {v.rsplit("-", 1)[0] for v in placed.values()} == {f"{ns}-fits"}

    async def outcome(name: str) -> dict[str, Any] | None:
        return await condition(api, ns, name)

    got = await settle(stack, lambda: outcome("fits"))
    assert (got["status"], got["reason"], got["message"]) == ("True", "Scheduled", "")
    got = await settle(stack, lambda: outcome("too-big"))
    assert (got["status"], got["reason"], got["message"]) == (
        "False",
        "Unschedulable",
        "pod group is unschedulable",
    )

    async def members_refused() -> dict[str, dict[str, Any]] | None:
        conditions = await pod_conditions(api, ns)
        members = {n: c for n, c in conditions.items() if n.startswith("too-big-")}
        return members if all(c.get("reason") == "Unschedulable" for c in members.values()) else None

    members = await settle(stack, members_refused)
    for name, c in members.items():
        assert c["status"] == "False"
        message = c["message"]
        assert message == WAITING or (message.startswith("0/") and "Insufficient cpu" in message), (name, c)
    for _ in range(4):  # it stays pending and holds nothing: no member is bound
        assert not any(v for n, v in (await pod_nodes(api, ns)).items() if n.startswith("too-big-"))
        await asyncio.sleep(0.5)
    got = await outcome("too-big")
    assert got is not None and got["status"] == "False"
