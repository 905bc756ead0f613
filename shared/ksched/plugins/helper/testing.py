"""Builders for the volume plugins' tests: PVs, PVCs, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and pods with volumes, API-shaped like upstream's test helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ksched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.framework.objects import ClusterObjects
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import FakeHandle, make_pod, make_snapshot
from ksched.plugins.helper.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
)


def make_pv(
    name: str,
    *,
    storage_class: str = "",
    capacity: str | None = None,
    phase: str | None = "Available",
    node_affinity: Mapping[str, Sequence[str]] | None = None,
    claim: PersistentVolumeClaim | None = None,
    labels: Mapping[str, str] | None = None,
    resource_version: str = "",
    access_modes: Sequence[str] = (),
    volume_mode: str | None = None,
    spec: Mapping[str, Any] | None = None,
) -> PersistentVolume:
    """A PV; ``node_affinity`` is {key: values} ANDed in one term; ``claim`` pre-binds it."""
    spec_d: dict[str, Any] = {"storageClassName": storage_class}
    if capacity is not None:
        spec_d["capacity"] = {"storage": capacity}
    if node_affinity:
        exprs = [{"key": k, "operator": "In", "values": list(v)} for k, v in sorted(node_affinity.items())]
        spec_d["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if access_modes:
        spec_d["accessModes"] = list(access_modes)
    if volume_mode:
        spec_d["volumeMode"] = volume_mode
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if resource_version:
        meta["resourceVersion"] = resource_version
    if claim is not None:
        cm = claim.metadata
        spec_d["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": cm.namespace,
            "name": cm.name,
            "uid": cm.uid,
            "resourceVersion": cm.resource_version,
        }
        meta["annotations"] = {ANN_BOUND_BY_CONTROLLER: "yes"}
    spec_d.update(spec or {})
    raw: dict[str, Any] = {"metadata": meta, "spec": spec_d, "status": {"phase": phase} if phase else {}}
    return msgspec.convert(raw, PersistentVolume)


def make_pvc(
    name: str,
    *,
    namespace: str = "default",
    storage_class: str | None = None,
    request: str | None = None,
    volume_name: str = "",
    bound: bool = False,
    selected_node: str | None = None,
    resource_version: str = "",
    uid: str = "",
    access_modes: Sequence[str] = (),
    phase: str | None = None,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    owner: Pod | None = None,
) -> PersistentVolumeClaim:
    """A PVC; ``bound`` adds the bind-completed annotation (needs ``volume_name``)."""
    spec_d: dict[str, Any] = {}
    if storage_class is not None:
        spec_d["storageClassName"] = storage_class
    if request is not None:
        spec_d["resources"] = {"requests": {"storage": request}}
    if volume_name:
        spec_d["volumeName"] = volume_name
    if access_modes:
        spec_d["accessModes"] = list(access_modes)
    spec_d.update(spec or {})
    ann: dict[str, str] = dict(annotations or {})
    if bound:
        ann[ANN_BIND_COMPLETED] = "yes"
    if selected_node is not None:
        ann[ANN_SELECTED_NODE] = selected_node
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": ann}
    if resource_version:
        meta["resourceVersion"] = resource_version
    if uid:
        meta["uid"] = uid
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner.metadata.name,
                "uid": owner.metadata.uid,
                "controller": True,
            }
        ]
    raw = {"metadata": meta, "spec": spec_d, "status": {"phase": phase} if phase else {}}
    return msgspec.convert(raw, PersistentVolumeClaim)


def make_sc(
    name: str,
    *,
    mode: str | None = "Immediate",
    provisioner: str = "",
    allowed_topologies: Mapping[str, Sequence[str]] | None = None,
) -> StorageClass:
    raw: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        raw["volumeBindingMode"] = mode
    if allowed_topologies:
        exprs = [{"key": k, "values": list(v)} for k, v in sorted(allowed_topologies.items())]
        raw["allowedTopologies"] = [{"matchLabelExpressions": exprs}]
    return msgspec.convert(raw, StorageClass)


def make_csi_node(
    name: str,
    drivers: Mapping[str, int | None] | None = None,
    *,
    migrated_plugins: str | None = None,
) -> CSINode:
    """A CSINode with ``{driver: allocatable count or None}``."""
    meta: dict[str, Any] = {"name": name}
    if migrated_plugins is not None:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated_plugins}
    drivers_d = []
    for driver, count in (drivers or {}).items():
        d: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers_d.append(d)
    return msgspec.convert({"metadata": meta, "spec": {"drivers": drivers_d}}, CSINode)


def make_csi_driver(name: str, storage_capacity: bool | None) -> CSIDriver:
    spec = {} if storage_capacity is None else {"storageCapacity": storage_capacity}
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, CSIDriver)


def make_capacity(
    name: str,
    storage_class: str,
    node_labels: Mapping[str, str] | None,
    capacity: str = "",
    maximum_volume_size: str = "",
) -> CSIStorageCapacity:
    """A CSIStorageCapacity whose nodeTopology matches ``node_labels`` ({} matches every node)."""
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": storage_class,
        "nodeTopology": {"matchLabels": dict(node_labels or {})},
    }
    if capacity:
        raw["capacity"] = capacity
    if maximum_volume_size:
        raw["maximumVolumeSize"] = maximum_volume_size
    return msgspec.convert(raw, CSIStorageCapacity)


def pod_with_claims(
    name: str = "pod",
    claims: Iterable[str] = (),
    *,
    namespace: str = "default",
    node_name: str = "",
    uid: str | None = None,
    volumes: Sequence[Mapping[str, Any]] = (),
) -> Pod:
    """A pod with one PVC volume per claim name plus any extra API-shaped ``volumes``."""
    vols: list[dict[str, Any]] = [
        {"name": f"vol-{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    vols.extend(dict(v) for v in volumes)
    return make_pod(name, namespace, node_name=node_name, uid=uid, spec={"volumes": vols})


def with_objects(snapshot: Snapshot, objects: Iterable[Any]) -> Snapshot:
    for obj in objects:
        if not snapshot.objects.put(obj):
            raise TypeError(f"not a cluster object table kind: {type(obj).__name__}")
    return snapshot


def handle_for(
    nodes: Sequence[Node] = (),
    pods: Sequence[Pod] = (),
    objects: Iterable[Any] = (),
    client: object | None = None,
) -> FakeHandle:
    """A FakeHandle over a snapshot of ``nodes``/``pods`` with ``objects`` in its tables."""
    return FakeHandle(with_objects(make_snapshot(nodes, pods), objects), client=client)


def objects_of(handle: FakeHandle) -> ClusterObjects:
    return handle.snapshot.objects
