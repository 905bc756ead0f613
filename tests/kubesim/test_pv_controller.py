"""kubesim's PV controller and external provisioner: what upstream's persistentvolume-binder writes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings

from tests.polling import until

DELAY = 0.05


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    settings = LifecycleSettings(
        pod_start_delay=0.05, time_scale=0.01, pv_controller=True, pv_bind_delay=DELAY
    )
    async with KubeSim(KubeSimConfig(nodes=2, lifecycle=settings)) as running:
        yield running


def pv(
    name: str,
    size: str = "5Gi",
    cls: str = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    node: str | None = None,
    labels: dict[str, str] | None = None,
    claim_ref: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": cls,
        "local": {"path": f"/mnt/{name}"},
    }
    if node is not None:
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def pvc(
    name: str,
    size: str = "1Gi",
    cls: str | None = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec}
    if cls is not None:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def storage_class(
    name: str, provisioner: str = "kubernetes.io/no-provisioner", mode: str = "Immediate", **extra: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, **extra.pop("metadata", {})},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def get_pv(sim: KubeSim, name: str) -> dict[str, Any]:
    obj = sim.get("PersistentVolume", name)
    assert obj is not None, name
    return obj


def get_pvc(sim: KubeSim, name: str) -> dict[str, Any]:
    obj = sim.get("PersistentVolumeClaim", name, "default")
    assert obj is not None, name
    return obj


def claim_bound(sim: KubeSim, name: str) -> bool:
    return bool(get_pvc(sim, name)["status"].get("phase") == "Bound")


def pre_bind(sim: KubeSim, volume: str, claim: str) -> None:
    """What VolumeBinding's PreBind writes for a static binding: claimRef with uid + annotation."""
    c = get_pvc(sim, claim)
    body = get_pv(sim, volume)
    body["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"
    body["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": claim,
        "uid": c["metadata"]["uid"],
        "apiVersion": "v1",
        "resourceVersion": c["metadata"]["resourceVersion"],
    }
    sim.registry.update(sim.resource(body), "", volume, body)


def annotate_claim(sim: KubeSim, claim: str, annotations: dict[str, str]) -> None:
    body = get_pvc(sim, claim)
    body["metadata"]["annotations"] = {**(body["metadata"].get("annotations") or {}), **annotations}
    rt = sim.resource({"apiVersion": "v1", "kind": "PersistentVolumeClaim"})
    sim.registry.update(rt, "default", claim, body)


async def test_new_volume_becomes_available(sim: KubeSim) -> None:
    created = sim.create(pv("pv-a"))
    assert created["status"]["phase"] == "Pending"
    await until(lambda: get_pv(sim, "pv-a")["status"]["phase"] == "Available")
    assert get_pv(sim, "pv-a")["status"]["lastPhaseTransitionTime"]


async def test_immediate_claim_binds_to_the_smallest_fitting_volume(sim: KubeSim) -> None:
    sim.create(storage_class("local"))
    sim.create(pv("pv-big", "10Gi"))
    sim.create(pv("pv-small", "2Gi"))
    sim.create(pv("pv-tiny", "500Mi"))
    sim.create(pv("pv-other-class", "2Gi", cls="other"))
    sim.create(pv("pv-rox", "2Gi", modes=("ReadOnlyMany",)))
    await until(lambda: get_pv(sim, "pv-small")["status"]["phase"] == "Available")
    claim = sim.create(pvc("data", "1Gi"))
    await until(lambda: claim_bound(sim, "data"))
    bound = get_pvc(sim, "data")
    assert bound["spec"]["volumeName"] == "pv-small"
    assert bound["metadata"]["annotations"] == {
        "pv.kubernetes.io/bind-completed": "yes",
        "pv.kubernetes.io/bound-by-controller": "yes",
    }
    assert bound["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "2Gi"},
    }
    volume = get_pv(sim, "pv-small")
    assert volume["status"]["phase"] == "Bound"
    assert volume["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    ref = volume["spec"]["claimRef"]
    assert (ref["kind"], ref["namespace"], ref["name"], ref["uid"]) == (
        "PersistentVolumeClaim",
        "default",
        "data",
        claim["metadata"]["uid"],
    )
    for untouched in ("pv-big", "pv-tiny", "pv-other-class", "pv-rox"):
        assert get_pv(sim, untouched)["status"]["phase"] == "Available"
        assert "claimRef" not in get_pv(sim, untouched)["spec"]


async def test_selector_restricts_the_candidates(sim: KubeSim) -> None:
    sim.create(pv("pv-plain", "1Gi"))
    sim.create(pv("pv-fast", "4Gi", labels={"speed": "fast"}))
    await until(lambda: get_pv(sim, "pv-fast")["status"]["phase"] == "Available")
    sim.create(pvc("fast", selector={"matchLabels": {"speed": "fast"}}))
    await until(lambda: claim_bound(sim, "fast"))
    assert get_pvc(sim, "fast")["spec"]["volumeName"] == "pv-fast"


async def test_wait_for_first_consumer_claim_waits_for_the_scheduler(sim: KubeSim) -> None:
    sim.create(storage_class("local", mode="WaitForFirstConsumer"))
    sim.create(pv("pv-local", node="node-0001"))
    sim.create(pvc("wffc"))
    await asyncio.sleep(DELAY * 4)
    assert get_pvc(sim, "wffc")["status"] == {"phase": "Pending"}
    assert "claimRef" not in get_pv(sim, "pv-local")["spec"]
    pre_bind(sim, "pv-local", "wffc")
    assert get_pvc(sim, "wffc")["status"]["phase"] == "Pending"  # only after the delay
    await until(lambda: claim_bound(sim, "wffc"))
    claim, volume = get_pvc(sim, "wffc"), get_pv(sim, "pv-local")
    assert claim["spec"]["volumeName"] == "pv-local"
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert volume["status"]["phase"] == "Bound"
    assert volume["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}


async def test_user_pre_bound_volume_is_bound_without_the_controller_annotation(sim: KubeSim) -> None:
    sim.create(pv("pv-mine", claim_ref={"namespace": "default", "name": "mine"}))
    await until(lambda: get_pv(sim, "pv-mine")["status"]["phase"] == "Available")
    sim.create(pvc("mine"))
    await until(lambda: claim_bound(sim, "mine"))
    volume = get_pv(sim, "pv-mine")
    assert "annotations" not in volume["metadata"]
    assert volume["spec"]["claimRef"]["uid"] == get_pvc(sim, "mine")["metadata"]["uid"]


async def test_dynamic_provisioning_on_the_selected_node(sim: KubeSim) -> None:
    sim.create(
        storage_class(
            "csi", "csi.example.com", "WaitForFirstConsumer", parameters={"csi.storage.k8s.io/fstype": "xfs"}
        )
    )
    claim = sim.create(pvc("dyn", "3Gi", cls="csi"))
    await asyncio.sleep(DELAY * 4)
    assert not sim.list_objects("PersistentVolume")
    annotate_claim(sim, "dyn", {"volume.kubernetes.io/selected-node": "node-0001"})
    await until(lambda: claim_bound(sim, "dyn"))
    name = f"pvc-{claim['metadata']['uid']}"
    volume = get_pv(sim, name)
    assert volume["metadata"]["annotations"] == {"pv.kubernetes.io/provisioned-by": "csi.example.com"}
    spec = volume["spec"]
    assert spec["capacity"] == {"storage": "3Gi"} and spec["storageClassName"] == "csi"
    assert spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["csi"] == {"driver": "csi.example.com", "volumeHandle": name, "fsType": "xfs"}
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-0001"]}]}
    ]
    assert volume["status"]["phase"] == "Bound"
    annotations = get_pvc(sim, "dyn")["metadata"]["annotations"]
    assert annotations["volume.kubernetes.io/storage-provisioner"] == "csi.example.com"
    assert annotations["volume.beta.kubernetes.io/storage-provisioner"] == "csi.example.com"
    assert annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert get_pvc(sim, "dyn")["spec"]["volumeName"] == name


async def test_provisioning_uses_the_drivers_topology_keys(sim: KubeSim) -> None:
    sim.create(storage_class("csi", "csi.example.com", "WaitForFirstConsumer"))
    sim.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "node-0000"},
            "spec": {
                "drivers": [
                    {
                        "name": "csi.example.com",
                        "nodeID": "n0",
                        "topologyKeys": ["topology.kubernetes.io/zone"],
                    }
                ]
            },
        }
    )
    claim = sim.create(pvc("zonal", cls="csi"))
    annotate_claim(sim, "zonal", {"volume.kubernetes.io/selected-node": "node-0000"})
    await until(lambda: claim_bound(sim, "zonal"))
    volume = get_pv(sim, f"pvc-{claim['metadata']['uid']}")
    zone = get_node_label(sim, "node-0000", "topology.kubernetes.io/zone")
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}
    ]


def get_node_label(sim: KubeSim, node: str, key: str) -> str:
    obj = sim.get("Node", node)
    assert obj is not None
    value: str = obj["metadata"]["labels"][key]
    return value


async def test_provisioning_for_a_missing_node_drops_the_selected_node(sim: KubeSim) -> None:
    sim.create(storage_class("csi", "csi.example.com", "WaitForFirstConsumer"))
    sim.create(pvc("lost-node", cls="csi"))
    annotate_claim(sim, "lost-node", {"volume.kubernetes.io/selected-node": "no-such-node"})
    await until(
        lambda: (
            "volume.kubernetes.io/selected-node"
            not in (get_pvc(sim, "lost-node")["metadata"].get("annotations") or {})
        )
    )
    assert not sim.list_objects("PersistentVolume")


async def test_no_provisioner_class_leaves_the_claim_pending(sim: KubeSim) -> None:
    sim.create(storage_class("local", mode="WaitForFirstConsumer"))
    sim.create(pvc("static-only"))
    annotate_claim(sim, "static-only", {"volume.kubernetes.io/selected-node": "node-0000"})
    await asyncio.sleep(DELAY * 4)
    assert get_pvc(sim, "static-only")["status"] == {"phase": "Pending"}
    assert not sim.list_objects("PersistentVolume")


async def test_default_class_is_assigned_to_a_claim_without_one(sim: KubeSim) -> None:
    sim.create(
        storage_class(
            "standard",
            "csi.example.com",
            metadata={"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        )
    )
    sim.create(pvc("classless", cls=None))
    await until(lambda: claim_bound(sim, "classless"))
    claim = get_pvc(sim, "classless")
    assert claim["spec"]["storageClassName"] == "standard"
    assert get_pv(sim, claim["spec"]["volumeName"])["spec"]["storageClassName"] == "standard"


async def test_deleted_claim_releases_or_deletes_its_volume(sim: KubeSim) -> None:
    sim.create(storage_class("csi", "csi.example.com"))
    sim.create(pv("pv-kept", "1Gi"))
    await until(lambda: get_pv(sim, "pv-kept")["status"]["phase"] == "Available")
    sim.create(pvc("keeps"))
    sim.create(pvc("provisioned", cls="csi"))
    await until(lambda: claim_bound(sim, "keeps") and claim_bound(sim, "provisioned"))
    provisioned = get_pvc(sim, "provisioned")["spec"]["volumeName"]
    sim.delete("PersistentVolumeClaim", "keeps", "default")
    sim.delete("PersistentVolumeClaim", "provisioned", "default")
    await until(lambda: get_pv(sim, "pv-kept")["status"]["phase"] == "Released")
    await until(lambda: sim.get("PersistentVolume", provisioned) is None)


async def test_claim_whose_volume_is_deleted_is_lost(sim: KubeSim) -> None:
    sim.create(pv("pv-doomed", "1Gi"))
    await until(lambda: get_pv(sim, "pv-doomed")["status"]["phase"] == "Available")
    sim.create(pvc("orphan"))
    await until(lambda: claim_bound(sim, "orphan"))
    sim.delete("PersistentVolume", "pv-doomed")
    await until(lambda: get_pvc(sim, "orphan")["status"]["phase"] == "Lost")
    assert get_pvc(sim, "orphan")["status"] == {"phase": "Lost"}


@pytest.mark.parametrize("enabled", [False, True])
async def test_the_controller_is_off_unless_enabled(enabled: bool) -> None:
    """Without the controller a new PV stays Pending. The positive signal that the lifecycle has
    reacted to everything since (its own zero-delay timers included) is a namespace deleted after
    the PV being finalized; with the controller on, the PV is Available by then."""
    settings = LifecycleSettings(pv_controller=enabled, pv_bind_delay=0.0)
    async with KubeSim(KubeSimConfig(nodes=0, lifecycle=settings)) as sim:
        sim.create(pv("pv-idle"))
        sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "signal"}})
        sim.delete("Namespace", "signal")
        await until(lambda: sim.get("Namespace", "signal") is None)
        assert get_pv(sim, "pv-idle")["status"]["phase"] == ("Available" if enabled else "Pending")
