"""Cluster objects other than nodes and pods that plugins consult (upstream's listers).

Only kinds a plugin reads: a PriorityClass (the pod carries its priority) or a ResourceClaimTemplate
(kube-controller-manager makes the claims) in a cluster file is decoded and left out, as the
informer, which does not list them (kube-scheduler's role grants neither), never has them."""

from __future__ import annotations

from typing import Any

from ksched.api.base import K8s
from ksched.api.core import Namespace, PersistentVolume, PersistentVolumeClaim, ReplicationController, Service
from ksched.api.kinds import lookup
from ksched.api.policy import PodDisruptionBudget
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.api.scheduling import PodGroup, Workload
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.api.workloads import ReplicaSet, StatefulSet


class ClusterObjects:
    """Objects keyed as the API keys them: ``name`` (cluster-scoped) or ``namespace/name``."""

    def __init__(self) -> None:
        self.namespaces: dict[str, Namespace] = {}
        self.services: dict[str, Service] = {}
        self.replica_sets: dict[str, ReplicaSet] = {}
        self.stateful_sets: dict[str, StatefulSet] = {}
        self.replication_controllers: dict[str, ReplicationController] = {}
        self.persistent_volumes: dict[str, PersistentVolume] = {}
        self.persistent_volume_claims: dict[str, PersistentVolumeClaim] = {}
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.csi_storage_capacities: dict[str, CSIStorageCapacity] = {}
        self.pod_disruption_budgets: dict[str, PodDisruptionBudget] = {}
        self.device_classes: dict[str, DeviceClass] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        self.resource_claims: dict[str, ResourceClaim] = {}
        self.pod_groups: dict[str, PodGroup] = {}
        self.workloads: dict[str, Workload] = {}

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self.namespaces.get(namespace)
        return ns.metadata.labels if ns is not None else {}

    def table(self, kind: str) -> dict[str, Any]:
        """The table holding objects of ``kind`` (KeyError for kinds not kept here)."""
        return getattr(self, TABLES[kind][0])  # type: ignore[no-any-return]

    def put(self, obj: Any) -> bool:
        """File ``obj`` under its kind; False for kinds not kept here (nodes, pods, others)."""
        entry = TABLES.get(getattr(obj, "kind", ""))
        if entry is None or not isinstance(obj, entry[1]):
            return False
        getattr(self, entry[0])[object_key(obj)] = obj
        return True


def object_key(obj: Any) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else str(meta.name)


#: kind -> the ClusterObjects attribute holding its objects (the kind's group and Struct: the registry)
_ATTRIBUTES: tuple[tuple[str, str, str], ...] = (
    ("", "Namespace", "namespaces"),
    ("", "Service", "services"),
    ("apps", "ReplicaSet", "replica_sets"),
    ("apps", "StatefulSet", "stateful_sets"),
    ("", "ReplicationController", "replication_controllers"),
    ("", "PersistentVolume", "persistent_volumes"),
    ("", "PersistentVolumeClaim", "persistent_volume_claims"),
    ("storage.k8s.io", "StorageClass", "storage_classes"),
    ("storage.k8s.io", "CSINode", "csi_nodes"),
    ("storage.k8s.io", "CSIDriver", "csi_drivers"),
    ("storage.k8s.io", "CSIStorageCapacity", "csi_storage_capacities"),
    ("policy", "PodDisruptionBudget", "pod_disruption_budgets"),
    ("resource.k8s.io", "DeviceClass", "device_classes"),
    ("resource.k8s.io", "ResourceSlice", "resource_slices"),
    ("resource.k8s.io", "ResourceClaim", "resource_claims"),
    ("scheduling.k8s.io", "PodGroup", "pod_groups"),
    ("scheduling.k8s.io", "Workload", "workloads"),
)


def _struct(group: str, kind: str) -> type[K8s]:
    struct = lookup(group, kind).struct
    assert struct is not None, f"{group}/{kind} has no Struct"
    return struct


#: kind -> (ClusterObjects attribute, Struct type)
TABLES: dict[str, tuple[str, type[Any]]] = {
    kind: (attribute, _struct(group, kind)) for group, kind, attribute in _ATTRIBUTES
}
