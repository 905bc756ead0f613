"""Dynamic Resource Allocation through every service on kubesim, with two scheduler replicas: pods
claim GPUs through ResourceClaimTemplates (kubesim's resourceclaim controller creates the claims),
no device is ever allocated twice, and a binder killed with SIGKILL between Reserve and PreBind
(stopped there by the fault point before-prebind) loses nothing and leaks no
allocation."""

from __future__ import annotations

import signal
from collections import Counter
from typing import Any

import pytest
from ksched_binder.service import BEFORE_PREBIND
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests import kube
from tests.e2e.testing import (
    create_namespace,
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    process_state,
    stack_fixture,
)

pytestmark = pytest.mark.e2e

DRIVER = "gpu.example.com"
KILLED = "dra-kill/victim"


stack = stack_fixture(
    "dra",
    schedulers=2,
    pod_start_delay=3600,
    time_scale=0.01,
    faults={f"{BEFORE_PREBIND}/{KILLED}": "stop"},
)


async def _gpu_nodes(api: ApiClient, ns: str, count: int, gpus: int) -> list[str]:
    """``count`` nodes, each with a ResourceSlice of ``gpus`` devices, a DeviceClass and a template."""
    names = [f"{ns}-{i}" for i in range(count)]
    await create_nodes(api, [node(n, cpu="8", labels={"pool": ns}) for n in names])
    resource: Any = client.ResourceV1Api(api)
    await resource.create_device_class(
        kube.body(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": ns},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            }
        )
    )
    for n in names:
        await resource.create_resource_slice(
            kube.body(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{n}-gpu"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": n,
                        "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{g}"} for g in range(gpus)],
                    },
                }
            )
        )
    await resource.create_namespaced_resource_claim_template(
        ns,
        kube.body(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "one-gpu"},
                "spec": {
                    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": ns}}]}}
                },
            }
        ),
    )
    return names


def _claiming_pod(name: str, ns: str) -> dict[str, Any]:
    body = pod(
        name,
        namespace=ns,
        nodeSelector={"pool": ns},
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
    )
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return body


async def _claims(api: ApiClient, ns: str) -> list[Any]:
    resource: Any = client.ResourceV1Api(api)
    return list((await resource.list_namespaced_resource_claim(ns)).items)


def _devices(claims: list[Any]) -> dict[str, list[str]]:
    """claim name -> its allocated devices ``driver/pool/device``."""
    out: dict[str, list[str]] = {}
    for c in claims:
        allocation = c.status.allocation if c.status else None
        results = allocation.devices.results if allocation else []
        out[c.metadata.name] = [f"{r.driver}/{r.pool}/{r.device}" for r in results]
    return out


async def _check_allocations(api: ApiClient, ns: str, placed: dict[str, str]) -> Counter[str]:
    """Every bound pod's generated claim holds one device of its node, reserved for it; no device is
    allocated to two claims. Returns the allocated devices."""
    claims = {c.metadata.name: c for c in await _claims(api, ns)}
    devices = _devices(list(claims.values()))
    used = Counter(d for ds in devices.values() for d in ds)
    assert all(n == 1 for n in used.values()), [d for d, n in used.items() if n > 1]
    pods = (await client.CoreV1Api(api).list_namespaced_pod(ns)).items
    for p in pods:
        if not placed.get(p.metadata.name):
            continue
        [status] = p.status.resource_claim_statuses
        claim = claims[status.resource_claim_name]
        [device] = devices[status.resource_claim_name]
        assert device.split("/")[1] == placed[p.metadata.name], (p.metadata.name, device)
        assert [r.uid for r in claim.status.reserved_for] == [p.metadata.uid]
    return used


async def _bound_and_refused(api: ApiClient, ns: str, *, bound: int) -> dict[str, str]:
    """Pod -> node once ``bound`` pods are bound and the others (some) each carry a FailedScheduling event."""

    async def settled() -> dict[str, str] | None:
        placed = await pod_nodes(api, ns)
        events = await client.EventsV1Api(api).list_namespaced_event(ns)
        refused = {e.regarding.name for e in events.items if e.reason == "FailedScheduling"}
        unbound = {n for n, v in placed.items() if not v}
        done = sum(1 for v in placed.values() if v) == bound and bool(unbound) and unbound <= refused
        return placed if done else None

    placed: dict[str, str] = await eventually(settled, timeout=120, interval=0.5)
    return placed


async def test_two_replicas_never_allocate_a_device_twice(stack: Stack, api: ApiClient) -> None:
    ns = "dra-race"
    await create_namespace(api, ns)
    await _gpu_nodes(api, ns, count=4, gpus=3)  # 12 GPUs for 18 pods
    pods = [_claiming_pod(f"p-{i:02d}", ns) for i in range(18)]
    await create_pods(api, pods)

    placed = await _bound_and_refused(api, ns, bound=12)
    used = await _check_allocations(api, ns, placed)
    assert len(used) == 12
    events = await client.EventsV1Api(api).list_namespaced_event(ns)
    notes = {e.note for e in events.items if e.reason == "FailedScheduling"}
    assert any("cannot allocate all claims" in (n or "") for n in notes), notes


def _stopped_binder(stack: Stack) -> str | None:
    for name, proc in stack.procs.items():
        if proc.service == "binder" and proc.pid is not None and process_state(proc.pid) == "T":
            return name
    return None


async def _one_by_one(api: ApiClient, ns: str, pods: list[dict[str, Any]]) -> None:
    """Create each pod once the previous one is bound (no two decisions race on one snapshot)."""
    for body in pods:
        await create_pods(api, [body])

        async def bound(name: str = body["metadata"]["name"]) -> str:
            return (await pod_nodes(api, ns)).get(name, "")

        await eventually(bound, timeout=60)


async def test_a_binder_killed_between_reserve_and_prebind_loses_nothing(
    stack: Stack, api: ApiClient
) -> None:
    ns, name = KILLED.split("/")
    await create_namespace(api, ns)
    await _gpu_nodes(api, ns, count=2, gpus=2)
    await create_pods(api, [_claiming_pod(name, ns)])

    async def stopped() -> str | None:
        return _stopped_binder(stack)

    binder = await eventually(stopped, timeout=60)
    # A replica has reserved a device for the victim; nothing was written to its claim yet.
    assert all(not ds for ds in _devices(await _claims(api, ns)).values())
    await stack.kill(binder, signal.SIGKILL)
    await stack.restart(binder)

    # The placement was not acknowledged: the new binder gets it again, runs PreBind and binds.
    async def victim_bound() -> str:
        return (await pod_nodes(api, ns)).get(name, "")

    await eventually(victim_bound, timeout=150, interval=0.5)
    await _one_by_one(api, ns, [_claiming_pod(f"after-{i}", ns) for i in range(3)])
    placed = await pod_nodes(api, ns)
    used = await _check_allocations(api, ns, placed)
    assert len(used) == 4  # the four GPUs, one per pod
    events = await client.EventsV1Api(api).list_namespaced_event(ns)
    scheduled = Counter(e.regarding.name for e in events.items if e.reason == "Scheduled")
    assert scheduled[name] == 1, scheduled

    # Deleting the pods releases every device (claims are deleted with their pods), and no replica
    # keeps the victim's device in flight: four pods get the four GPUs again.
    await client.CoreV1Api(api).delete_collection_namespaced_pod(ns, grace_period_seconds=0)

    async def released() -> bool:
        return not await _claims(api, ns)

    await eventually(released, timeout=30)
    await _one_by_one(api, ns, [_claiming_pod(f"again-{i}", ns) for i in range(4)])
    used = await _check_allocations(api, ns, await pod_nodes(api, ns))
    assert len(used) == 4


async def test_extended_resources_backed_by_dra_get_a_claim_each(stack: Stack, api: ApiClient) -> None:
    """DRAExtendedResource through every service: pods ask for ``example.com/<ns>`` like for a device
    plugin's resource; a DeviceClass backs it, the nodes offer it only through ResourceSlices. Each
    bound pod gets a claim its binder created, named in its status, with its own device; a pod finding
    none left is refused; deleting the pods deletes their claims."""
    ns = "dra-ext"
    await create_namespace(api, ns)
    names = await _gpu_nodes(api, ns, count=2, gpus=1)
    resource: Any = client.ResourceV1Api(api)
    gpu = f"example.com/{ns}"
    await resource.patch_device_class(ns, {"spec": {"extendedResourceName": gpu}})
    pods = []
    for i in range(3):
        body = pod(f"r-{i}", namespace=ns, nodeSelector={"pool": ns})
        body["spec"]["containers"][0]["resources"]["requests"][gpu] = "1"
        body["spec"]["containers"][0]["resources"]["limits"] = {gpu: "1"}
        pods.append(body)
    await create_pods(api, pods)

    placed = await _bound_and_refused(api, ns, bound=2)
    claims = {c.metadata.name: c for c in await _claims(api, ns)}
    assert len(claims) == 2
    devices = _devices(list(claims.values()))
    assert sorted(d for ds in devices.values() for d in ds) == sorted(f"{DRIVER}/{n}/gpu-0" for n in names)
    for p in (await client.CoreV1Api(api).list_namespaced_pod(ns)).items:
        if not placed.get(p.metadata.name):
            continue
        recorded = p.status.extended_resource_claim_status
        claim = claims[recorded.resource_claim_name]
        assert claim.metadata.owner_references[0].uid == p.metadata.uid
        assert [r.uid for r in claim.status.reserved_for] == [p.metadata.uid]
        [device] = devices[claim.metadata.name]
        assert device.split("/")[1] == placed[p.metadata.name]
    await client.CoreV1Api(api).delete_collection_namespaced_pod(ns, grace_period_seconds=0)

    async def released() -> bool:
        return not await _claims(api, ns)

    await eventually(released, timeout=30)
