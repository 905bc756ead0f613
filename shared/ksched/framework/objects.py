"""Cluster objects other than nodes and pods that plugins consult (upstream's listers)."""

from __future__ import annotations

from ksched.api.core import Namespace, PersistentVolume, PersistentVolumeClaim, ReplicationController, Service
from ksched.api.policy import PodDisruptionBudget, PriorityClass
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
        self.priority_classes: dict[str, PriorityClass] = {}

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self.namespaces.get(namespace)
        return ns.metadata.labels if ns is not None else {}

    def in_namespace(self, table: dict[str, object], namespace: str) -> list[object]:
        prefix = namespace + "/"
        return [obj for key, obj in table.items() if key.startswith(prefix)]
