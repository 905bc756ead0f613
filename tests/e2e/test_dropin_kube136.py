"""``ksched kube-scheduler`` on the real Kubernetes 1.36.2 API server, as kubeadm runs kube-scheduler:
its exact command line with ``scheduler.kubeconfig`` (the user ``system:kube-scheduler``, bound only to
the bootstrap ClusterRoles ``system:kube-scheduler`` and ``system:volume-scheduler``) for every
kubeconfig flag, nothing granted beyond them.

It becomes ready and holds kube-scheduler's Lease, binds a pod with upstream's Scheduled event, writes
FailedScheduling for a pod that fits nowhere, and no request of any of its services is refused. Its
secure port authenticates and authorizes as kube-scheduler's (403 anonymous, 401 a token the API server
rejects, 403 a ServiceAccount without RBAC, 200 once granted: the denial is cached 10 s), and its
/metrics serves the pipeline's scheduler series under upstream's names, moving as pods are scheduled.

With the gang gates on, an API kube-scheduler's roles do not grant (scheduler-plugins' Coscheduling
CRD, installed for the test) is one warning and an empty list, for the pipeline and for ``ksched
simulate --from-cluster`` alike."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from prometheus_client.parser import text_string_to_metric_families

from ksched.launcher.controlplane import GANG_GATES, ControlPlane
from tests import kube
from tests.e2e.test_dropin import DropIn, lease_holder, probe, start, stop
from tests.e2e.testing import create_namespace, create_nodes, create_pods, eventually, node, pod
from tests.fixtures.kube136 import control_plane
from tests.fixtures.kubesim import api_client_for

pytestmark = pytest.mark.e2e

NS = "dropin-kube136"
NODE = f"{NS}-0"
POOL = {"pool": NS}
FORBIDDEN = re.compile(r"forbidden|HTTP 403", re.IGNORECASE)


@pytest.fixture(scope="module")
def kube136(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own: the drop-in is the cluster's default scheduler, and would
    take the pending pods other tests leave in the session's cluster (and they its)."""
    yield from control_plane(tmp_path_factory)


@pytest.fixture(scope="module")
async def admin(kube136: ControlPlane) -> AsyncIterator[ApiClient]:
    """An admin client, the test's namespace and its one node (4 cpu, labelled ``pool``)."""
    api = await api_client_for(kube136.admin_kubeconfig)
    async with api:
        await create_namespace(api, NS)
        await create_nodes(api, [node(NODE, cpu="4", labels=POOL)])
        yield api


@pytest.fixture(scope="module")
async def dropin(
    kube136: ControlPlane, admin: ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DropIn]:
    """kubeadm's kube-scheduler command line with scheduler.kubeconfig, ready (it leads: the Lease is
    free in this cluster); stopped by SIGTERM at the end, which must exit 0."""
    d = await start(
        tmp_path_factory.mktemp("dropin-kube136"),
        "kube-scheduler",
        str(kube136.scheduler_kubeconfig),
    )
    try:

        async def ready() -> bool:
            assert d.process.returncode is None, d.log.read_text()
            return await probe(d, "/readyz") == 200 and d.runs_pipeline()

        await eventually(ready, timeout=60, interval=0.5)
        yield d
    finally:
        await stop(d)
    assert d.process.returncode == 0, d.log.read_text()


def fits(name: str) -> dict[str, Any]:
    return pod(name, cpu="100m", namespace=NS, nodeSelector=POOL)


def too_big(name: str) -> dict[str, Any]:
    return pod(name, cpu="64", namespace=NS, nodeSelector=POOL)


async def node_of(api: ApiClient, name: str) -> str:
    found = await client.CoreV1Api(api).read_namespaced_pod(name, NS)
    return str(found.spec.node_name or "")


async def events_of(api: ApiClient, name: str, reason: str) -> list[Any]:
    """The events.k8s.io Events about pod ``name`` with ``reason``."""
    listed = await client.EventsV1Api(api).list_namespaced_event(NS)
    return [e for e in listed.items if e.regarding.name == name and e.reason == reason]


async def test_kubeadms_command_line_is_ready_and_holds_the_lease(dropin: DropIn, admin: ApiClient) -> None:
    assert await lease_holder(admin) == dropin.identity() != ""
    assert await probe(dropin, "/livez") == 200
    assert await probe(dropin, "/healthz") == 200


async def test_a_pod_is_bound_with_upstreams_scheduled_event(dropin: DropIn, admin: ApiClient) -> None:
    await create_pods(admin, [fits("bound")])
    assert await eventually(lambda: node_of(admin, "bound"), timeout=30) == NODE
    [event] = await eventually(lambda: events_of(admin, "bound", "Scheduled"), timeout=30)
    assert (event.type, event.action, event.note) == (
        "Normal",
        "Binding",
        f"Successfully assigned {NS}/bound to {NODE}",
    )
    assert event.reporting_controller == "default-scheduler"
    assert event.reporting_instance == f"default-scheduler-{socket.gethostname()}"  # as upstream
    assert event.regarding.kind == "Pod" and event.regarding.namespace == NS


async def test_a_pod_that_fits_nowhere_gets_failed_scheduling(dropin: DropIn, admin: ApiClient) -> None:
    await create_pods(admin, [too_big("unschedulable")])
    [event] = await eventually(lambda: events_of(admin, "unschedulable", "FailedScheduling"), timeout=30)
    assert (event.type, event.action, event.reporting_controller) == (
        "Warning",
        "Scheduling",
        "default-scheduler",
    )
    assert re.match(r"0/\d+ nodes are available: .*1 Insufficient cpu", event.note), event.note

    async def condition() -> Any:
        found = await client.CoreV1Api(admin).read_namespaced_pod("unschedulable", NS)
        return next((c for c in found.status.conditions or () if c.type == "PodScheduled"), None)

    scheduled = await eventually(condition, timeout=30)
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert await node_of(admin, "unschedulable") == ""


# --- the secure port ---------------------------------------------------------------------------------


async def service_account_token(api: ApiClient, name: str) -> str:
    """A ServiceAccount ``name`` of the test's namespace and a token for it (TokenRequest, as admin)."""
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    await client.CoreV1Api(api).create_namespaced_service_account(NS, kube.body(body))
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    issued = await client.CoreV1Api(api).create_namespaced_service_account_token(name, NS, kube.body(request))
    return str(issued.status.token)


async def grant_metrics(api: ApiClient, account: str) -> None:
    """A ClusterRole with ``get`` on the non-resource URL /metrics, bound to ``account``."""
    rbac = client.RbacAuthorizationV1Api(api)
    name = f"{NS}-{account}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NS}],
    }
    await rbac.create_cluster_role(kube.body(role))
    await rbac.create_cluster_role_binding(kube.body(binding))


async def get(d: DropIn, path: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{d.url}{path}", headers=headers, ssl=False, timeout=aiohttp.ClientTimeout(total=10)) as r,
    ):
        return r.status, await r.text()


async def test_the_secure_port_authenticates_and_authorizes_as_kube_schedulers(
    dropin: DropIn, admin: ApiClient
) -> None:
    status, body = await get(dropin, "/metrics")
    assert status == 403 and 'User \\"system:anonymous\\" cannot get path \\"/metrics\\"' in body, body
    assert (await get(dropin, "/metrics", "not-a-token"))[0] == 401
    token = await service_account_token(admin, "reader")
    status, body = await get(dropin, "/metrics", token)
    assert status == 403 and f"system:serviceaccount:{NS}:reader" in body, body
    await grant_metrics(admin, "reader")

    async def allowed() -> bool:
        return (await get(dropin, "/metrics", token))[0] == 200

    await eventually(allowed, timeout=20, interval=1)  # the denial is cached 10 s, as upstream


SCHEDULED = ("scheduler_schedule_attempts_total", (("profile", "default-scheduler"), ("result", "scheduled")))
UNSCHEDULABLE = (
    "scheduler_schedule_attempts_total",
    (("profile", "default-scheduler"), ("result", "unschedulable")),
)
SLI = ("scheduler_pod_scheduling_sli_duration_seconds_count", (("attempts", "1"),))
ATTEMPT_DURATION = (
    "scheduler_scheduling_attempt_duration_seconds_count",
    (("profile", "default-scheduler"), ("result", "scheduled")),
)
MOVING = (SCHEDULED, UNSCHEDULABLE, SLI, ATTEMPT_DURATION)


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition; fails unless each family has one TYPE and HELP."""
    types = Counter(line.split()[2] for line in text.splitlines() if line.startswith("# TYPE "))
    helps = Counter(line.split()[2] for line in text.splitlines() if line.startswith("# HELP "))
    assert types and max(types.values()) == 1 and types == helps, [n for n, c in types.items() if c > 1]
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_metrics_serve_the_pipelines_scheduler_series_and_they_move(
    dropin: DropIn, admin: ApiClient
) -> None:
    token = await service_account_token(admin, "prometheus")
    await grant_metrics(admin, "prometheus")

    async def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        status, text = await get(dropin, "/metrics", token)
        return parse(text) if status == 200 else None

    before = await eventually(scrape, timeout=20, interval=1)
    assert before[("leader_election_master_status", (("name", "kube-scheduler"),))] == 1
    for family in ("scheduler_pending_pods", "scheduler_cache_size"):  # gauges: there from the start
        assert any(name == family for name, _ in before), family
    await create_pods(admin, [fits("counted"), too_big("counted-too-big")])

    async def moved() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        after = await scrape()
        if after is None or any(after.get(key, 0) <= before.get(key, 0) for key in MOVING):
            return None
        return after

    after = await eventually(moved, timeout=30, interval=1)
    assert any(name == "scheduler_schedule_attempts_total" for name, _ in after)  # a series per result
    assert after[("scheduler_pending_pods", (("queue", "unschedulable"),))] >= 1
    assert after[("scheduler_cache_size", (("type", "nodes"),))] >= 1
    assert not [key for key in after if key[0].startswith("python_") and ("replica", "scheduler-0") in key[1]]


async def test_no_request_of_the_pipeline_was_refused(dropin: DropIn) -> None:
    """Every service of the drop-in ran as system:kube-scheduler: nothing was forbidden to it."""
    logs = [dropin.log, *sorted(dropin.workdir.glob("*.log"))]
    assert len(logs) >= 5, logs  # the launcher's, the informer's, the queue's, a scheduler's, a binder's
    refused = [
        f"{path.name}: {line}"
        for path in logs
        for line in path.read_text().splitlines()
        if FORBIDDEN.search(line)
    ]
    assert refused == []


# --- an optional API kube-scheduler may not read ----------------------------------------------------

COSCHEDULING_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {
        "group": "scheduling.x-k8s.io",
        "names": {
            "kind": "PodGroup",
            "plural": "podgroups",
            "singular": "podgroup",
            "listKind": "PodGroupList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


@pytest.fixture
async def coscheduling_crd(admin: ApiClient) -> AsyncIterator[None]:
    """scheduler-plugins' PodGroup CRD, served (established) for the test, then deleted."""
    crds = client.ApiextensionsV1Api(admin)
    await crds.create_custom_resource_definition(kube.body(COSCHEDULING_CRD))
    name = COSCHEDULING_CRD["metadata"]["name"]  # type: ignore[index]
    try:

        async def established() -> bool:
            crd = await crds.read_custom_resource_definition(name)
            conditions = crd.status.conditions or ()
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        await eventually(established, timeout=30)
        yield
    finally:
        with contextlib.suppress(client.ApiException):
            await crds.delete_custom_resource_definition(name)


async def test_with_the_gang_gates_an_ungranted_crd_is_one_warning_not_a_stall(
    kube136: ControlPlane, dropin: DropIn, coscheduling_crd: None, tmp_path: Path
) -> None:
    """kubeadm's command line plus the gang gates (no election: the module's drop-in holds the Lease):
    ready, PodGroups listed (the 1.36 role grants them with GenericWorkload), the Coscheduling CRD
    refused once and said once; ``ksched simulate --from-cluster`` with the same user reads the
    cluster, noting the refusal."""
    kubeconfig = str(kube136.scheduler_kubeconfig)
    d = await start(tmp_path, "gated", kubeconfig, f"--feature-gates={GANG_GATES}", "--leader-elect=false")
    try:

        async def ready() -> bool:
            assert d.process.returncode is None, d.log.read_text()
            return await probe(d, "/readyz") == 200 and d.runs_pipeline()

        await eventually(ready, timeout=50, interval=0.5)
    finally:
        await stop(d)
    informer = (d.workdir / "informer.log").read_text()
    warnings = [line for line in informer.splitlines() if " WARNING " in line and FORBIDDEN.search(line)]
    assert len(warnings) == 1 and "CoschedulingPodGroup" in warnings[0], informer
    assert "/apis/scheduling.x-k8s.io/v1alpha1/podgroups" in warnings[0]

    simulate = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "simulate",
        "--from-cluster",
        f"--kubeconfig={kubeconfig}",
        f"--feature-gates={GANG_GATES}",
        "--output=json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(simulate.communicate(), 60)
    assert simulate.returncode == 0, err.decode()
    assert (
        "CoschedulingPodGroup: list /apis/scheduling.x-k8s.io/v1alpha1/podgroups is forbidden" in err.decode()
    )
    assert f"{NS}/counted-too-big" in out.decode()  # the cluster's pending pods were read and decided
