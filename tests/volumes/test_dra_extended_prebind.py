"""DynamicResources' PreBind for extended resources backed by DRA (DRAExtendedResource) against kubesim
over HTTP: the scheduling side runs PreFilter → Filter → Reserve on a snapshot of the API objects and
exports its state; the binder side imports it and runs PreBind, which creates the pod's claim
(``generateName``), writes its allocation and reservation and records it in the pod's
``status.extendedResourceClaimStatus`` (upstream ``extended-resource-name-*`` TestPlugin cases)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio.client import ApiClient, ResourceV1Api

from ksched.api.core import Node, Pod
from ksched.api.resource import FINALIZER, DeviceClass, ResourceClaim, ResourceSlice
from ksched.client.rest import Client
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code
from ksched.framework.testing import FakeHandle, make_node, make_snapshot
from ksched.plugins.dynamicresources import DynamicResources
from ksched.plugins.dynamicresources.binding import ClaimApi
from ksched.plugins.dynamicresources.extended import EXTENDED_RESOURCE_CLAIM_ANNOTATION
from tests import kube
from tests.volumes.conftest import KubeNamespace, new_namespace

DRIVER = "gpu.example.com"
NODE = "dra-node"


@dataclass
class World(KubeNamespace):
    resource: ResourceV1Api
    claims: ClaimApi

    @property
    def gpu(self) -> str:
        """The extended resource the test's DeviceClass backs (unique: classes are cluster-wide)."""
        return f"example.com/gpu-{self.suffix}"


@pytest.fixture
async def world(k8s_api: ApiClient, k8s_client: Client) -> World:
    ns = await new_namespace(k8s_api, "dra-ext", k8s_client)
    return World(ns.api, ns.core, ns.ns, ns.suffix, ns.client, ResourceV1Api(k8s_api), ClaimApi(k8s_client))


async def _read(resp: Any, kind: type[Any]) -> Any:
    try:
        return msgspec.json.decode(await resp.read(), type=kind)
    finally:
        resp.release()


async def read_pod(w: World) -> Pod:
    return await _read(await w.core.read_namespaced_pod("pod", w.ns, _preload_content=False), Pod)  # type: ignore[no-any-return]


async def schedule(w: World, node: Node | None = None) -> tuple[Pod, bytes]:
    """The scheduling side: a DeviceClass backing the test's extended resource, one GPU on the node,
    a pod requesting one; the cycle up to Reserve on a snapshot of the API objects; its state."""
    cls_name, slice_name = w.name("gpu"), w.name("slice")
    await w.resource.create_device_class(
        kube.body({"metadata": {"name": cls_name}, "spec": {"extendedResourceName": w.gpu}})
    )
    await w.resource.create_resource_slice(
        kube.body(
            {
                "metadata": {"name": slice_name},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": NODE,
                    "pool": {"name": w.name("pool"), "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}],
                },
            }
        )
    )
    requests = {w.gpu: "1"}
    container = {"name": "c", "image": "busybox", "resources": {"requests": requests, "limits": requests}}
    await w.core.create_namespaced_pod(
        w.ns, kube.body({"metadata": {"name": "pod", "namespace": w.ns}, "spec": {"containers": [container]}})
    )
    pod = await read_pod(w)
    cls = await _read(await w.resource.read_device_class(cls_name, _preload_content=False), DeviceClass)
    slice_ = await _read(
        await w.resource.read_resource_slice(slice_name, _preload_content=False), ResourceSlice
    )
    snapshot = make_snapshot([node or make_node(NODE)])
    for obj in (cls, slice_):
        snapshot.objects.put(obj)
    plugin = DynamicResources(FakeHandle(snapshot))
    state, pi = CycleState(), PodInfo(pod)
    assert plugin.pre_filter(state, pi, snapshot.nodes) == (None, None)
    assert plugin.filter(state, pi, snapshot.get(NODE)) is None
    assert plugin.reserve(state, pi, NODE) is None
    return pod, plugin.export_state(state)


def binder(w: World, data: bytes) -> tuple[DynamicResources, CycleState]:
    plugin = DynamicResources(FakeHandle(client=w.client))
    state = CycleState()
    plugin.import_state(state, data)
    return plugin, state


async def claims(w: World) -> list[ResourceClaim]:
    return await w.claims.list(w.ns)


async def test_pre_bind_creates_the_claim_and_records_it_in_the_pod(world: World) -> None:
    pod, data = await schedule(world)
    plugin, state = binder(world, data)
    assert await plugin.pre_bind(state, PodInfo(pod), NODE) is None
    [claim] = await claims(world)
    meta = claim.metadata
    assert (
        meta.name.startswith("pod-extended-resources-")
        and len(meta.name) == len("pod-extended-resources-") + 5
    )
    assert meta.annotations == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    assert [(r.kind, r.name, r.uid, r.controller) for r in meta.owner_references] == [
        ("Pod", "pod", pod.metadata.uid, True)
    ]
    assert FINALIZER in meta.finalizers
    [request] = claim.spec.devices.requests
    assert request.name == "container-0-request-0" and request.exactly is not None
    assert (request.exactly.device_class_name, request.exactly.count) == (world.name("gpu"), 1)
    assert claim.status.allocation is not None
    assert [(r.request, r.driver, r.device) for r in claim.status.allocation.devices.results] == [
        ("container-0-request-0", DRIVER, "gpu-0")
    ]
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [
        ("pods", "pod", pod.metadata.uid)
    ]
    recorded = (await read_pod(world)).status.extended_resource_claim_status
    assert recorded is not None and recorded.resource_claim_name == meta.name
    assert [(m.container_name, m.resource_name, m.request_name) for m in recorded.request_mappings] == [
        ("c", world.gpu, "container-0-request-0")
    ]


async def test_unreserve_after_a_failed_binding_deletes_the_created_claim(world: World) -> None:
    """upstream ``extended-resource-name-bind-failure``."""
    pod, data = await schedule(world)
    plugin, state = binder(world, data)
    assert await plugin.pre_bind(state, PodInfo(pod), NODE) is None
    assert len(await claims(world)) == 1
    await plugin.unreserve_api(state, PodInfo(pod), NODE)
    assert await claims(world) == []


async def test_a_failed_pod_status_write_fails_pre_bind_and_unreserve_cleans_up(world: World) -> None:
    """upstream ``extended-resource-name-with-resources-fail-patch``: the claim is created, recording
    it in the pod fails (here: the pod is gone), and Unreserve deletes the claim again."""
    pod, data = await schedule(world)
    await world.core.delete_namespaced_pod("pod", world.ns, grace_period_seconds=0)
    plugin, state = binder(world, data)
    status = await plugin.pre_bind(state, PodInfo(pod), NODE)
    assert status is not None and status.code == Code.ERROR
    assert status.message.startswith(f"update pod {world.ns}/pod ExtendedResourceClaimStatus: ")
    assert len(await claims(world)) == 1
    await plugin.unreserve_api(state, PodInfo(pod), NODE)
    assert await claims(world) == []


async def test_a_redelivered_placement_takes_over_the_claim_it_created(world: World) -> None:
    """The binder died after creating the claim; the placement is delivered again: PreBind finds the
    claim (owned by the pod, annotated) and finishes with it instead of creating a second one."""
    pod, data = await schedule(world)
    plugin, state = binder(world, data)
    assert await plugin.pre_bind(state, PodInfo(pod), NODE) is None
    [first] = await claims(world)
    again, state2 = binder(world, data)
    assert await again.pre_bind(state2, PodInfo(pod), NODE) is None
    [claim] = await claims(world)
    assert claim.metadata.name == first.metadata.name
    assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]


async def test_nothing_is_created_where_a_device_plugin_serves_the_resource(world: World) -> None:
    """upstream ``extended-resource-name-with-node-resource``."""
    node = make_node(NODE, allocatable={f"example.com/gpu-{world.suffix}": "1"})
    pod, data = await schedule(world, node)
    plugin, state = binder(world, data)
    assert await plugin.pre_bind(state, PodInfo(pod), NODE) is None
    assert await claims(world) == []
    assert (await read_pod(world)).status.extended_resource_claim_status is None
