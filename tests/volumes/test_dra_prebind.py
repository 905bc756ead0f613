"""DynamicResources' PreBind against kubesim over HTTP with kubernetes_asyncio: the scheduling side runs
PreFilter → Filter → Reserve on a snapshot of the API objects and exports its state; the binder side
imports it and runs PreBind, which writes the allocation and the reservation (and waits for binding
conditions), while a test coroutine plays another writer or the driver through the API."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio.client import ApiClient, ResourceV1Api

from ksched.api.core import Pod
from ksched.api.resource import FINALIZER, DeviceClass, ResourceClaim, ResourceSlice
from ksched.client.rest import Client
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code
from ksched.framework.testing import FakeHandle, make_node, make_snapshot
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.binding import ClaimApi
from tests import kube
from tests.volumes.conftest import KubeNamespace, new_namespace

DRIVER = "gpu.example.com"
NODE = "dra-node"


@dataclass
class World(KubeNamespace):
    resource: ResourceV1Api
    claims: ClaimApi


@pytest.fixture
async def world(k8s_api: ApiClient, k8s_client: Client) -> World:
    ns = await new_namespace(k8s_api, "dra", k8s_client)
    return World(ns.api, ns.core, ns.ns, ns.suffix, ns.client, ResourceV1Api(k8s_api), ClaimApi(k8s_client))


def device_status(w: World, condition: str, reason: str, message: str) -> dict[str, Any]:
    """``status.devices`` with one true condition on the test's device, as its driver writes it."""
    true = {"type": condition, "status": "True", "reason": reason, "message": message}
    device = {"driver": DRIVER, "pool": w.name("pool"), "device": "gpu-0"}
    devices = [device | {"conditions": [true | {"lastTransitionTime": "2026-01-01T00:00:00Z"}]}]
    return {"status": {"devices": devices}}


async def _read(resp: Any, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(await resp.read(), type=kind)
    finally:
        resp.release()


async def setup(
    w: World, binding_conditions: bool = False
) -> tuple[Pod, ResourceClaim, DeviceClass, ResourceSlice]:
    cls_name, slice_name = w.name("gpu"), w.name("slice")
    await w.resource.create_device_class(
        kube.body(
            {
                "metadata": {"name": cls_name},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            }
        )
    )
    device: dict[str, Any] = {"name": "gpu-0"}
    if binding_conditions:
        device |= {"bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]}
    await w.resource.create_resource_slice(
        kube.body(
            {
                "metadata": {"name": slice_name},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": NODE,
                    "pool": {"name": w.name("pool"), "generation": 1, "resourceSliceCount": 1},
                    "devices": [device],
                },
            }
        )
    )
    request = {"name": "gpu", "exactly": {"deviceClassName": cls_name}}
    await w.resource.create_namespaced_resource_claim(
        w.ns, kube.body({"metadata": {"name": "claim"}, "spec": {"devices": {"requests": [request]}}})
    )
    pod_body = {
        "metadata": {"name": "pod", "namespace": w.ns},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "claim"}],
        },
    }
    await w.core.create_namespaced_pod(w.ns, kube.body(pod_body))
    pod = await _read(await w.core.read_namespaced_pod("pod", w.ns, _preload_content=False), Pod)
    claim = await w.claims.get(w.ns, "claim")
    cls = await _read(await w.resource.read_device_class(cls_name, _preload_content=False), DeviceClass)
    slice_ = await _read(
        await w.resource.read_resource_slice(slice_name, _preload_content=False), ResourceSlice
    )
    return pod, claim, cls, slice_


async def schedule(w: World, binding_conditions: bool = False) -> tuple[Pod, bytes]:
    """The scheduling side: the cycle up to Reserve on a snapshot of the API objects; its state."""
    pod, claim, cls, slice_ = await setup(w, binding_conditions)
    snapshot = make_snapshot([make_node(NODE)])
    for obj in (claim, cls, slice_):
        snapshot.objects.put(obj)
    plugin = DynamicResources(FakeHandle(snapshot))
    state, pi = CycleState(), PodInfo(pod)
    assert plugin.pre_filter(state, pi, snapshot.nodes) == (None, None)
    assert plugin.filter(state, pi, snapshot.get(NODE)) is None
    assert plugin.reserve(state, pi, NODE) is None
    return pod, plugin.export_state(state)


async def pre_bind(w: World, pod: Pod, data: bytes, poll: float = 0.05) -> Any:
    binder = DynamicResources(FakeHandle(client=w.client))
    binder.binding_poll_interval = poll
    state = CycleState()
    binder.import_state(state, data)
    return await binder.pre_bind(state, PodInfo(pod), NODE)


async def test_pre_bind_writes_allocation_reservation_and_finalizer(world: World) -> None:
    pod, data = await schedule(world)
    assert await pre_bind(world, pod, data) is None
    claim = await world.claims.get(world.ns, "claim")
    assert claim.status.allocation is not None
    assert [(r.driver, r.device) for r in claim.status.allocation.devices.results] == [(DRIVER, "gpu-0")]
    assert claim.status.allocation.allocation_timestamp  # binding conditions are on in 1.36
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [
        ("pods", "pod", pod.metadata.uid)
    ]
    assert FINALIZER in claim.metadata.finalizers


async def test_a_claim_allocated_elsewhere_in_the_meantime_fails_pre_bind(world: World) -> None:
    pod, data = await schedule(world)
    other = {
        "status": {
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "x", "device": "other"}]}
            }
        }
    }
    await world.resource.patch_namespaced_resource_claim_status("claim", world.ns, other)
    status = await pre_bind(world, pod, data)
    assert status is not None and status.code == Code.ERROR
    assert status.message == f"claim {world.ns}/claim got allocated elsewhere in the meantime"


async def test_pre_bind_waits_for_binding_conditions(world: World) -> None:
    pod, data = await schedule(world, binding_conditions=True)
    task = asyncio.create_task(pre_bind(world, pod, data))
    await asyncio.sleep(0.3)
    assert not task.done()
    await world.resource.patch_namespaced_resource_claim_status(
        "claim", world.ns, device_status(world, "attached", "Ok", "")
    )
    assert await asyncio.wait_for(task, 10) is None


async def test_a_binding_failure_condition_fails_pre_bind(world: World) -> None:
    pod, data = await schedule(world, binding_conditions=True)
    task = asyncio.create_task(pre_bind(world, pod, data))
    await asyncio.sleep(0.2)
    await world.resource.patch_namespaced_resource_claim_status(
        "claim", world.ns, device_status(world, "failed", "Broken", "no")
    )
    status = await asyncio.wait_for(task, 10)
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'device binding failed: claim=claim, reason=Broken, message="no"'


async def test_unreserve_after_pre_bind_removes_only_the_pods_reservation(world: World) -> None:
    """A binding cycle failing after PreBind (e.g. Bind refused): upstream Unreserve's patch takes the
    pod out of ``reservedFor`` by uid; the allocation and the finalizer stay, other consumers too."""
    pod, data = await schedule(world)
    binder = DynamicResources(FakeHandle(client=world.client))
    state = CycleState()
    binder.import_state(state, data)
    assert await binder.pre_bind(state, PodInfo(pod), NODE) is None
    # another consumer that exists (kubesim's resourceclaim controller drops reservations of gone pods)
    other_pod = {"metadata": {"name": "other"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    created = await world.core.create_namespaced_pod(world.ns, kube.body(other_pod))
    other = {"resource": "pods", "name": "other", "uid": created.metadata.uid}
    claim = await world.claims.get(world.ns, "claim")
    reserved = [msgspec.to_builtins(r) for r in claim.status.reserved_for]
    await world.resource.patch_namespaced_resource_claim_status(
        "claim", world.ns, {"status": {"reservedFor": [*reserved, other]}}
    )
    await binder.unreserve_api(state, PodInfo(pod), NODE)
    claim = await world.claims.get(world.ns, "claim")
    assert [r.name for r in claim.status.reserved_for] == ["other"]
    assert claim.status.allocation is not None
    assert FINALIZER in claim.metadata.finalizers


async def test_unreserve_without_pre_bind_writes_nothing(world: World) -> None:
    pod, data = await schedule(world)
    binder = DynamicResources(FakeHandle(client=world.client))
    state = CycleState()
    binder.import_state(state, data)
    before = await world.claims.get(world.ns, "claim")
    await binder.unreserve_api(state, PodInfo(pod), NODE)
    after = await world.claims.get(world.ns, "claim")
    assert after.metadata.resource_version == before.metadata.resource_version
