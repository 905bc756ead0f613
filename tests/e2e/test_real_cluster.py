"""ksched against the real Kubernetes 1.36.2 control plane (``kube136``: kube-apiserver, etcd and
kube-controller-manager, no kubelets, no kube-scheduler): the four services as a second scheduler,
each under its own ServiceAccount with deploy/base's RBAC as shipped (tests/e2e/realcluster.py),
deploy/'s KubeSchedulerConfiguration (profile ``ksched``, Leases in namespace ``ksched``), gates off.

Each test keeps to a namespace and nodes of its own (``rc-<topic>``); a 403 logged by any service
fails the test at once. The real controllers do their part: the resourceclaim controller makes the
claims of ResourceClaimTemplates, the disruption controller computes the PDB's status, the
persistent-volume controller completes a volume binding."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from ksched.aio import cancel_and_wait
from ksched.launcher.controlplane import ControlPlane
from ksched.launcher.stack import Stack
from tests import kube
from tests.deploy.test_manifests import render
from tests.e2e.realcluster import NAMESPACE, PROFILE, SERVICES, real_stack, settle
from tests.e2e.testing import (
    Series,
    create_namespace,
    create_nodes,
    create_pods,
    moved,
    node,
    pod,
    pod_nodes,
    scrape,
)

pytestmark = pytest.mark.e2e

DRIVER = "gpu.example.com"
BINDERS = ("binder-0",)


@pytest.fixture(scope="module")
async def stack(kube136: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async for s in real_stack(
        kube136, tmp_path_factory.mktemp("real-cluster"), render("base"), binder_workers=4
    ):
        yield s


def ours(name: str, ns: str, pool: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    """A pod of ksched's profile that fits only the nodes labelled ``pool=<pool>``."""
    return pod(name, cpu=cpu, namespace=ns, scheduler_name=PROFILE, nodeSelector={"pool": pool}, **spec)


async def pool(api: ApiClient, ns: str, nodes: int, cpu: str = "2") -> list[str]:
    """Namespace ``ns`` and ``nodes`` nodes ``<ns>-<i>`` labelled ``pool=<ns>``."""
    await create_namespace(api, ns)
    names = [f"{ns}-{i}" for i in range(nodes)]
    await create_nodes(api, [node(n, cpu=cpu, labels={"pool": ns}) for n in names])
    return names


async def events(api: ApiClient, ns: str, reason: str) -> list[dict[str, Any]]:
    """events.k8s.io Events of ``ns`` with ``reason``, as JSON (the controllers' core/v1 events carry no
    ``eventTime``, which the generated model refuses)."""
    resp = await kube.undecoded(client.EventsV1Api(api).list_namespaced_event(ns, _preload_content=False))
    try:
        doc = json.loads(await resp.read())
    finally:
        resp.release()
    return [e for e in doc["items"] if e.get("reason") == reason]


# --- 1. a second scheduler under deploy/'s RBAC ----------------------------------------------------


async def test_a_second_scheduler_under_the_service_accounts_of_deploy(stack: Stack, api: ApiClient) -> None:
    """Pods of the ksched profile are bound (Scheduled events, binding by the binder), one that fits
    nowhere gets FailedScheduling and its PodScheduled condition, a pod of default-scheduler is left
    alone; a WaitForFirstConsumer claim of a local PV is bound by the binder's PreBind and the real
    PV controller; the informer and the queue lead through Leases in namespace ksched."""
    ns = "rc-second"
    nodes = await pool(api, ns, 2)
    storage: Any = client.StorageV1Api(api)
    await storage.create_storage_class(
        kube.body(
            {
                "metadata": {"name": ns},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
    )
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [nodes[1]]}]}
    await client.CoreV1Api(api).create_persistent_volume(
        kube.body(
            {
                "metadata": {"name": f"{ns}-local"},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": ns,
                    "local": {"path": "/mnt/disks/ssd1"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
                },
            }
        )
    )
    await client.CoreV1Api(api).create_namespaced_persistent_volume_claim(
        ns,
        kube.body(
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": ns,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ),
    )
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    pods = [ours(f"w-{i}", ns, ns) for i in range(6)]
    pods += [ours("db", ns, ns, volumes=volume), ours("huge", ns, ns, cpu="3")]
    pods.append(pod("theirs", namespace=ns, nodeSelector={"pool": ns}))  # default-scheduler's
    await create_pods(api, pods)

    async def placed() -> dict[str, str] | None:
        got = await pod_nodes(api, ns)
        return got if all(got.get(p["metadata"]["name"]) for p in pods[:7]) else None

    got = await settle(stack, placed, timeout=30)
    assert got["db"] == nodes[1]  # where the local PV is
    assert got["huge"] == "" and got["theirs"] == ""

    async def refused() -> list[Any]:
        return [e for e in await events(api, ns, "FailedScheduling") if e["regarding"]["name"] == "huge"]

    [failed] = await settle(stack, refused)
    assert failed["note"].startswith("0/") and "Insufficient cpu" in failed["note"], failed
    assert failed["reportingController"] == "ksched"
    huge = await client.CoreV1Api(api).read_namespaced_pod("huge", ns)
    [condition] = [c for c in huge.status.conditions if c.type == "PodScheduled"]
    assert (condition.status, condition.reason) == ("False", "Unschedulable")

    scheduled = {e["regarding"]["name"] for e in await events(api, ns, "Scheduled")}
    assert scheduled == {p["metadata"]["name"] for p in pods[:7]}
    theirs = await client.CoreV1Api(api).read_namespaced_pod("theirs", ns)
    assert not theirs.status.conditions  # nobody looked at it

    async def claim_bound() -> bool:
        pvc = await client.CoreV1Api(api).read_namespaced_persistent_volume_claim("data", ns)
        return pvc.status.phase == "Bound" and pvc.spec.volume_name == f"{ns}-local"

    assert await settle(stack, claim_bound)

    leases = client.CoordinationV1Api(api)
    for service in ("informer", "queue"):
        lease = await leases.read_namespaced_lease(f"ksched-{service}", NAMESPACE)
        assert lease.spec.holder_identity.startswith(f"{service}_"), lease.spec.holder_identity
    with pytest.raises(ApiException) as absent:
        await leases.read_namespaced_lease("ksched-informer", "kube-system")
    assert absent.value.status == 404
    for proc in stack.procs.values():  # each under its own ServiceAccount (a token, no certificate)
        kubeconfig = proc.args[proc.args.index("--kubeconfig") + 1]
        assert Path(kubeconfig).name == f"{proc.service}.kubeconfig", proc.args
    assert {proc.service for proc in stack.procs.values()} == set(SERVICES)


# --- 2. DRA: claims from templates by the real resourceclaim controller -----------------------------


async def dra_setup(api: ApiClient, ns: str, nodes: list[str]) -> None:
    """A DeviceClass ``ns``, a ResourceSlice of one GPU per node (as the driver publishes it), and a
    ResourceClaimTemplate ``one-gpu`` in ``ns``."""
    resource: Any = client.ResourceV1Api(api)
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    await resource.create_device_class(
        kube.body({"metadata": {"name": ns}, "spec": {"selectors": [selector]}})
    )
    for n in nodes:
        slice_spec = {
            "driver": DRIVER,
            "nodeName": n,
            "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        }
        await resource.create_resource_slice(
            kube.body({"metadata": {"name": f"{n}-gpu"}, "spec": slice_spec})
        )
    request = {"name": "gpu", "exactly": {"deviceClassName": ns}}
    template = {"metadata": {"name": "one-gpu"}, "spec": {"spec": {"devices": {"requests": [request]}}}}
    await resource.create_namespaced_resource_claim_template(ns, kube.body(template))


def claiming(name: str, ns: str) -> dict[str, Any]:
    body = ours(name, ns, ns, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return body


async def claim_of(api: ApiClient, ns: str, pod_name: str) -> dict[str, Any] | None:
    """The claim the controller made for ``pod_name`` (named in the pod's status), as JSON."""
    p = await client.CoreV1Api(api).read_namespaced_pod(pod_name, ns)
    statuses = p.status.resource_claim_statuses or []
    if not statuses or not statuses[0].resource_claim_name:
        return None
    resource: Any = client.ResourceV1Api(api)
    got: dict[str, Any] = api.sanitize_for_serialization(
        await resource.read_namespaced_resource_claim(statuses[0].resource_claim_name, ns)
    )
    return got


async def test_dra_claims_made_from_templates_by_the_controller_manager(stack: Stack, api: ApiClient) -> None:
    """Three pods, each with a claim of the template ``one-gpu``, on two nodes of one GPU each: the
    resourceclaim controller makes a claim per pod; ksched allocates two and binds their pods, writing
    the claim as upstream does (finalizer, then status.allocation and reservedFor, capture 14m); the
    third is refused (``cannot allocate all claims``) until one of the others is deleted, when the
    controller releases its claim and the third gets the freed GPU."""
    ns = "rc-dra"
    nodes = await pool(api, ns, 2)
    await dra_setup(api, ns, nodes)
    pods = [claiming(f"p-{i}", ns) for i in range(3)]
    await create_pods(api, pods)

    async def two_bound_one_refused() -> dict[str, str] | None:
        got = await pod_nodes(api, ns)
        bound = {n: v for n, v in got.items() if v}
        waiting = set(got) - set(bound)
        refused = {e["regarding"]["name"] for e in await events(api, ns, "FailedScheduling")}
        return bound if len(bound) == 2 and len(waiting) == 1 and waiting <= refused else None

    bound = await settle(stack, two_bound_one_refused, timeout=30)
    assert sorted(bound.values()) == nodes
    core = client.CoreV1Api(api)
    for name, node_name in bound.items():
        claim = await claim_of(api, ns, name)
        assert claim is not None
        the_pod = await core.read_namespaced_pod(name, ns)
        assert [(o["kind"], o["name"]) for o in claim["metadata"]["ownerReferences"]] == [("Pod", name)]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
        allocation = claim["status"]["allocation"]
        assert allocation["devices"]["results"] == [
            {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": "gpu-0"}
        ]
        assert allocation["nodeSelector"] == {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
            ]
        }
        assert allocation["allocationTimestamp"]
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": name, "uid": the_pod.metadata.uid}
        ]
    [waiting] = {p["metadata"]["name"] for p in pods} - set(bound)
    notes = {
        e.get("note") for e in await events(api, ns, "FailedScheduling") if e["regarding"]["name"] == waiting
    }
    assert any("cannot allocate all claims" in (n or "") for n in notes), notes

    # a pod deleted (at once: no kubelet would confirm a graceful deletion): the controller
    # deallocates its claim and deletes it, the GPU is free again. The claim is allocated and
    # deallocated within moments: the replica that reserved it must not keep it in flight, and the
    # pod woken by the deallocation must be tried on a snapshot that has it.
    gone, freed = next(iter(bound.items()))
    await core.delete_namespaced_pod(gone, ns, grace_period_seconds=0)

    async def waiting_bound() -> str:
        return (await pod_nodes(api, ns)).get(waiting, "")

    assert await settle(stack, waiting_bound, timeout=30) == freed
    claim = await claim_of(api, ns, waiting)
    assert claim is not None and claim["status"]["allocation"]["devices"]["results"][0]["pool"] == freed


# --- 4. preemption and a PDB whose status the disruption controller computed -----------------------


async def running(
    api: ApiClient, ns: str, name: str, on: str, priority: str, started: datetime, app: str
) -> None:
    """A pod already on node ``on`` (created bound, 1 CPU), Running and Ready since ``started`` as a
    kubelet would report it (the disruption controller counts Ready pods; preemption orders victims
    of one priority by start time). Deleted at once when preempted (grace period 0: no kubelet)."""
    body = pod(name, cpu="1", namespace=ns, nodeName=on, priorityClassName=priority)
    body["spec"]["terminationGracePeriodSeconds"] = 0
    body["metadata"]["labels"] = {"app": app}
    await create_pods(api, [body])
    stamp = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "status": {
            "phase": "Running",
            "startTime": stamp,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}],
        }
    }
    await client.CoreV1Api(api).patch_namespaced_pod_status(name, ns, kube.body(status))


async def test_preemption_honours_a_pdb_whose_status_the_controller_computed(
    stack: Stack, api: ApiClient
) -> None:
    """One full node of 3 CPUs: ``g1`` and ``g2`` (low priority, started in that order) under a PDB
    ``minAvailable: 1``, whose status the disruption controller computes (``disruptionsAllowed: 1``,
    both Ready), and ``m`` (mid priority). A high-priority pod asks for 1 CPU. Upstream's
    SelectVictimsOnNode: the budget allows one disruption, taken by the more important of g1, g2
    (g1: non-violating), so g2 is the PDB-violating victim and is reprieved first, then m, then g1
    finds no room: g1 alone is the victim. (Without the PDB g2 would go; with disruptionsAllowed 0, m.)
    The preemptor is nominated to the node, then bound there."""
    ns = "rc-preempt"
    [target] = await pool(api, ns, 1, cpu="3")
    scheduling = client.SchedulingV1Api(api)
    for name, value in (("rc-low", 100), ("rc-mid", 500), ("rc-high", 1000)):
        with contextlib.suppress(ApiException):
            await scheduling.create_priority_class(kube.body({"metadata": {"name": name}, "value": value}))
    t0 = datetime.now(UTC) - timedelta(minutes=10)
    await running(api, ns, "g1", target, "rc-low", t0, "guarded")
    await running(api, ns, "g2", target, "rc-low", t0 + timedelta(minutes=1), "guarded")
    await running(api, ns, "m", target, "rc-mid", t0, "other")
    policy = client.PolicyV1Api(api)
    budget = {
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    await policy.create_namespaced_pod_disruption_budget(ns, kube.body(budget))

    async def computed() -> bool:
        pdb = await policy.read_namespaced_pod_disruption_budget("guarded", ns)
        s = pdb.status
        return (
            s is not None
            and s.observed_generation == pdb.metadata.generation
            and s.current_healthy == 2
            and s.disruptions_allowed == 1
        )

    assert await settle(stack, computed)
    await asyncio.sleep(0.5)  # the informer's PDB watch is as quick; ksched must decide on this status

    seen: list[tuple[str, str]] = []  # (nominatedNodeName, nodeName) of each version of the preemptor
    stream = watch.Watch()

    async def follow() -> None:
        async for event in stream.stream(
            client.CoreV1Api(api).list_namespaced_pod, ns, field_selector="metadata.name=vip"
        ):
            obj = event["object"]
            seen.append((obj.status.nominated_node_name or "", obj.spec.node_name or ""))

    follower = asyncio.create_task(follow())
    try:
        await asyncio.sleep(0.2)
        vip = ours("vip", ns, ns, cpu="1", priorityClassName="rc-high")
        await create_pods(api, [vip])

        async def vip_bound() -> str:
            return (await pod_nodes(api, ns)).get("vip", "")

        assert await settle(stack, vip_bound, timeout=30) == target
        await asyncio.sleep(0.2)
    finally:
        stream.stop()
        await cancel_and_wait(follower)
    assert (target, "") in seen, seen  # nominated before it was bound
    remaining = set(await pod_nodes(api, ns))
    assert remaining == {"g2", "m", "vip"}, remaining
    [preempted] = [e for e in await events(api, ns, "Preempted")]
    vip_uid = (await client.CoreV1Api(api).read_namespaced_pod("vip", ns)).metadata.uid
    assert preempted["regarding"]["name"] == "g1"
    assert preempted["note"] == f"Preempted by pod {vip_uid} on node {target}"


# --- 5. a Scheduled event the API server refuses on every delivery ----------------------------------


async def test_a_scheduled_event_refused_on_every_delivery_is_given_up_and_the_pod_stays_bound(
    stack: Stack, api: ApiClient
) -> None:
    """A ValidatingAdmissionPolicy refuses every Scheduled event in the namespace (422): the binder
    binds the pod once, writes its event on each delivery of the placement, and after the fifth
    acknowledges it without one (``ksched_binder_scheduled_events_given_up_total``), so the placement
    does not come back for ever; the pod stays bound, once."""
    ns = "rc-refused"
    await pool(api, ns, 1)
    admission: Any = client.AdmissionregistrationV1Api(api)
    policy = {
        "metadata": {"name": ns},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["events.k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["events"],
                    }
                ]
            },
            "validations": [{"expression": "object.reason != 'Scheduled'", "message": "no Scheduled events"}],
        },
    }
    binding = {
        "metadata": {"name": ns},
        "spec": {
            "policyName": ns,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
        },
    }
    await admission.create_validating_admission_policy(kube.body(policy))
    await admission.create_validating_admission_policy_binding(kube.body(binding))
    try:
        probe = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"generateName": "probe-", "namespace": ns},
            "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": "test",
            "reportingInstance": "test",
            "action": "Binding",
            "reason": "Scheduled",
            "type": "Normal",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "probe", "namespace": ns},
        }

        async def refused() -> bool:  # the policy reaches the API server's admission a moment later
            try:
                await client.EventsV1Api(api).create_namespaced_event(ns, kube.body(probe))
            except ApiException as exc:
                return exc.status == 422 and "no Scheduled events" in str(exc.body)
            return False

        assert await settle(stack, refused, timeout=30)
        async with aiohttp.ClientSession() as session:
            before = await scrape(session, stack, BINDERS)
            await create_pods(api, [ours("quiet", ns, ns)])

            async def given_up() -> dict[Series, float] | None:
                now = await scrape(session, stack, BINDERS)
                return now if moved("ksched_binder_scheduled_events_given_up_total", before, [now]) else None

            await settle(stack, given_up, timeout=60)
        assert (await pod_nodes(api, ns))["quiet"] == f"{ns}-0"
        # (probes written before the policy took hold are there: none is about the pod)
        assert [e for e in await events(api, ns, "Scheduled") if e["regarding"]["name"] == "quiet"] == []
        logs = "".join(stack.procs[b].log_path.read_text(errors="replace") for b in BINDERS)
        assert "giving up the Scheduled event" in logs
    finally:
        await admission.delete_validating_admission_policy_binding(ns)
        await admission.delete_validating_admission_policy(ns)
