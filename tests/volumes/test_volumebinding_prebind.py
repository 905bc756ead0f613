"""VolumeBinding's PreBind against kubesim over HTTP with kubernetes_asyncio, after upstream
``TestBindPodVolumes`` / ``TestCheckBindings``: the scheduling side runs PreFilter → Reserve on a
snapshot of the API objects, exports its state; the binder side imports it and runs PreBind, while a
test coroutine plays the PV controller / external provisioner through the API."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio.client import ApiClient, StorageV1Api

from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from ksched.client.rest import Client
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.plugins.args.types import VolumeBindingArgs
from ksched.plugins.helper.storage import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from ksched.plugins.helper.testing import handle_for
from ksched.plugins.volumebinding import VolumeBinding
from ksched.plugins.volumebinding.prebind import VolumeApi
from tests import kube
from tests.volumes.conftest import KubeNamespace, new_namespace

NODE_KEY = "nodeKey"
POLL = 0.05


@dataclass
class World(KubeNamespace):
    volumes: VolumeApi


@pytest.fixture
async def world(k8s_api: ApiClient, k8s_client: Client) -> World:
    ns = await new_namespace(k8s_api, "vb", k8s_client)
    return World(ns.api, ns.core, ns.ns, ns.suffix, ns.client, VolumeApi(k8s_client))


async def create_node(w: World, base: str) -> Node:
    name = w.name(base)
    await w.core.create_node(kube.body({"metadata": {"name": name, "labels": {NODE_KEY: name}}}))
    return await w.volumes.get_node(name)


async def create_pod(w: World, claims: list[str]) -> Pod:
    body = {
        "metadata": {"name": "test-pod", "namespace": w.ns},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
            ],
        },
    }
    await w.core.create_namespaced_pod(w.ns, kube.body(body))
    resp = await kube.undecoded(w.core.read_namespaced_pod("test-pod", w.ns, _preload_content=False))
    try:
        return msgspec.json.decode(await resp.read(), type=Pod)
    finally:
        resp.release()


async def create_pv(
    w: World, base: str, node: Node, capacity: str = "5G", cls: str = "waitClass"
) -> PersistentVolume:
    name = w.name(base)
    body = {
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "hostPath": {"path": "/tmp"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": NODE_KEY, "operator": "In", "values": [node.metadata.name]}
                            ]
                        }
                    ]
                }
            },
        },
    }
    await w.core.create_persistent_volume(kube.body(body))
    # the PV controller marks new PVs Available (kubesim has none yet)
    await w.core.patch_persistent_volume_status(name, {"status": {"phase": "Available"}})
    return await w.volumes.get_pv(name)


async def create_pvc(w: World, name: str, cls: str, size: str = "1G") -> PersistentVolumeClaim:
    body = {
        "metadata": {"name": name, "namespace": w.ns},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": cls,
        },
    }
    await w.core.create_namespaced_persistent_volume_claim(w.ns, kube.body(body))
    return await w.volumes.get_pvc(w.ns, name)


async def create_classes(w: World) -> tuple[str, str]:
    """A no-provisioner WaitForFirstConsumer class and one with a provisioner."""
    storage = StorageV1Api(w.api)
    static, dynamic = w.name("wait"), w.name("wait-prov")
    await storage.create_storage_class(
        kube.body(
            {
                "metadata": {"name": static},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
    )
    await storage.create_storage_class(
        kube.body(
            {
                "metadata": {"name": dynamic},
                "provisioner": "test-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
    )
    return static, dynamic


async def read_class(w: World, name: str) -> Any:
    from ksched.api.storage import StorageClass

    resp = await kube.undecoded(StorageV1Api(w.api).read_storage_class(name, _preload_content=False))
    try:
        return msgspec.json.decode(await resp.read(), type=StorageClass)
    finally:
        resp.release()


async def schedule(
    w: World, pod: Pod, nodes: list[Node], objects: list[Any], node: str, timeout: int = 10
) -> tuple[VolumeBinding, CycleState, PodInfo]:
    """The scheduling cycle (PreFilter..Reserve) on a snapshot, then the hand-over to a binder-side
    plugin with the API client, as the binder process gets it."""
    scheduler = VolumeBinding(handle_for(nodes, objects=objects))
    state, pi = CycleState(), PodInfo(pod)
    infos = [NodeInfo(n) for n in nodes]
    assert scheduler.pre_filter(state, pi, infos)[1] is None
    chosen = next(ni for ni in infos if ni.name == node)
    assert scheduler.filter(state, pi, chosen) is None
    assert scheduler.reserve(state, pi, node) is None
    data = scheduler.export_state(state)
    binder = VolumeBinding(
        handle_for(client=w.client), VolumeBindingArgs(bind_timeout_seconds=timeout), poll_interval=POLL
    )
    binder_state = CycleState()
    binder.import_state(binder_state, data)
    return binder, binder_state, pi


async def pre_bind_with(
    binder: VolumeBinding,
    state: CycleState,
    pi: PodInfo,
    node: str,
    controller: Callable[[], Awaitable[None]] | None,
) -> Status | None:
    task = asyncio.create_task(binder.pre_bind(state, pi, node))
    if controller is not None:
        await controller()
    return await asyncio.wait_for(task, 20)


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(POLL)


async def mark_bound(w: World, claim: str, pv_name: str) -> None:
    """What the PV controller does once the PV is pre-bound: volumeName + bind-completed."""
    patch = {"metadata": {"annotations": {ANN_BIND_COMPLETED: "yes"}}, "spec": {"volumeName": pv_name}}
    await w.core.patch_namespaced_persistent_volume_claim(claim, w.ns, patch)


def error_text(status: Status | None) -> str:
    assert status is not None and status.code == Code.ERROR, status
    return status.message


async def static_setup(w: World) -> tuple[VolumeBinding, CycleState, PodInfo, Node, PersistentVolume, str]:
    static, _ = await create_classes(w)
    node = await create_node(w, "node1")
    pv = await create_pv(w, "pv-node1a", node, cls=static)
    pvc = await create_pvc(w, "unbound-pvc", static)
    pod = await create_pod(w, ["unbound-pvc"])
    objects = [await read_class(w, static), pv, pvc]
    binder, state, pi = await schedule(w, pod, [node], objects, node.metadata.name, timeout=3)
    return binder, state, pi, node, pv, static


async def test_binding_static_pv_succeeds_after_time(world: World) -> None:
    w = world
    binder, state, pi, node, pv, _ = await static_setup(w)

    async def pv_controller() -> None:
        async def pre_bound() -> bool:
            got = await w.volumes.get_pv(pv.metadata.name)
            return got.spec.claim_ref is not None and got.spec.claim_ref.name == "unbound-pvc"

        await wait_for(pre_bound)
        await mark_bound(w, "unbound-pvc", pv.metadata.name)

    assert await pre_bind_with(binder, state, pi, node.metadata.name, pv_controller) is None
    api_pv = await w.volumes.get_pv(pv.metadata.name)
    ref = api_pv.spec.claim_ref
    pvc = await w.volumes.get_pvc(w.ns, "unbound-pvc")
    assert ref is not None and (ref.namespace, ref.uid) == (w.ns, pvc.metadata.uid)
    assert api_pv.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert (
        api_pv.spec.capacity == {"storage": "5G"} and api_pv.spec.host_path is not None
    )  # patch kept the rest


async def test_binding_dynamic_pv_succeeds_after_time(world: World) -> None:
    w = world
    _, dynamic = await create_classes(w)
    node = await create_node(w, "node1")
    pvc = await create_pvc(w, "provisioned-pvc", dynamic, "1Gi")
    pod = await create_pod(w, ["provisioned-pvc"])
    binder, state, pi = await schedule(
        w, pod, [node], [await read_class(w, dynamic), pvc], node.metadata.name
    )

    async def provisioner() -> None:
        async def selected() -> bool:
            got = await w.volumes.get_pvc(w.ns, "provisioned-pvc")
            return got.metadata.annotations.get(ANN_SELECTED_NODE) == node.metadata.name

        await wait_for(selected)
        pv = await create_pv(w, "dynamic-pv", node, "1Gi", cls=dynamic)
        await mark_bound(w, "provisioned-pvc", pv.metadata.name)

    assert await pre_bind_with(binder, state, pi, node.metadata.name, provisioner) is None


async def test_bound_by_pv_controller_before_bind_conflicts(world: World) -> None:
    w = world
    binder, state, pi, node, pv, _ = await static_setup(w)
    await w.core.patch_persistent_volume(pv.metadata.name, {"metadata": {"labels": {"touched": "yes"}}})
    message = error_text(await pre_bind_with(binder, state, pi, node.metadata.name, None))
    assert "the object has been modified" in message


async def test_pod_deleted_after_time(world: World) -> None:
    w = world
    binder, state, pi, node, _, _ = await static_setup(w)

    async def delete_pod() -> None:
        await asyncio.sleep(0.2)
        await w.core.delete_namespaced_pod("test-pod", w.ns, grace_period_seconds=0)

    message = error_text(await pre_bind_with(binder, state, pi, node.metadata.name, delete_pod))
    assert message.startswith("binding volumes: pod does not exist any more")


async def test_binding_times_out(world: World) -> None:
    w = world
    binder, state, pi, node, _, _ = await static_setup(w)
    binder.args = VolumeBindingArgs(bind_timeout_seconds=1)
    assert error_text(await pre_bind_with(binder, state, pi, node.metadata.name, None)) == (
        "binding volumes: context deadline exceeded"
    )


async def test_check_fails_when_the_claim_is_deleted(world: World) -> None:
    w = world
    binder, state, pi, node, _, _ = await static_setup(w)

    async def delete_claim() -> None:
        await asyncio.sleep(0.2)
        await w.core.delete_namespaced_persistent_volume_claim("unbound-pvc", w.ns)

    message = error_text(await pre_bind_with(binder, state, pi, node.metadata.name, delete_claim))
    assert message.startswith("binding volumes: failed to check binding:")


async def test_claim_ref_reset_fails(world: World) -> None:
    w = world
    binder, state, pi, node, pv, _ = await static_setup(w)

    async def unbind() -> None:
        async def pre_bound() -> bool:
            return (await w.volumes.get_pv(pv.metadata.name)).spec.claim_ref is not None

        await wait_for(pre_bound)
        await w.core.patch_persistent_volume(pv.metadata.name, {"spec": {"claimRef": {"uid": None}}})

    message = error_text(await pre_bind_with(binder, state, pi, node.metadata.name, unbind))
    assert message == f'binding volumes: ClaimRef got reset for pv "{pv.metadata.name}"'


async def test_node_affinity_fails_dynamic_provisioning(world: World) -> None:
    w = world
    _, dynamic = await create_classes(w)
    node1, node2 = await create_node(w, "node1"), await create_node(w, "node2")
    pvc = await create_pvc(w, "provisioned-pvc", dynamic, "1Gi")
    pod = await create_pod(w, ["provisioned-pvc"])
    objects = [await read_class(w, dynamic), pvc]
    binder, state, pi = await schedule(w, pod, [node1, node2], objects, node1.metadata.name)

    async def provisioner_on_the_wrong_node() -> None:
        async def selected() -> bool:
            got = await w.volumes.get_pvc(w.ns, "provisioned-pvc")
            return ANN_SELECTED_NODE in got.metadata.annotations

        await wait_for(selected)
        pv = await create_pv(w, "pv-node2", node2, "1Gi", cls=dynamic)
        await mark_bound(w, "provisioned-pvc", pv.metadata.name)

    status = await pre_bind_with(binder, state, pi, node1.metadata.name, provisioner_on_the_wrong_node)
    assert "node affinity doesn't match node" in error_text(status)


async def test_provisioning_failure_drops_selected_node(world: World) -> None:
    w = world
    _, dynamic = await create_classes(w)
    node = await create_node(w, "node1")
    pvc = await create_pvc(w, "provisioned-pvc", dynamic, "1Gi")
    pod = await create_pod(w, ["provisioned-pvc"])
    binder, state, pi = await schedule(
        w, pod, [node], [await read_class(w, dynamic), pvc], node.metadata.name
    )

    async def failing_provisioner() -> None:
        async def selected() -> bool:
            got = await w.volumes.get_pvc(w.ns, "provisioned-pvc")
            return ANN_SELECTED_NODE in got.metadata.annotations

        await wait_for(selected)
        patch = {"metadata": {"annotations": {ANN_SELECTED_NODE: "other-node"}}}
        await w.core.patch_namespaced_persistent_volume_claim("provisioned-pvc", w.ns, patch)

    status = await pre_bind_with(binder, state, pi, node.metadata.name, failing_provisioner)
    assert error_text(status) == 'binding volumes: provisioning failed for PVC "provisioned-pvc"'
