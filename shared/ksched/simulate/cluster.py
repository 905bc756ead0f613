"""Turning a file of Kubernetes objects into a snapshot and the queue of pending pods."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ksched.api.base import K8s
from ksched.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ReplicationController,
    Service,
)
from ksched.api.policy import PodDisruptionBudget, PriorityClass
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.api.workloads import ReplicaSet, StatefulSet
from ksched.framework.objects import ClusterObjects
from ksched.framework.snapshot import Snapshot

TERMINAL_PHASES = ("Succeeded", "Failed")


def _key(obj: K8s) -> str:
    meta = obj.metadata  # type: ignore[attr-defined]
    return f"{meta.namespace}/{meta.name}" if meta.namespace else str(meta.name)


_TABLES: dict[type[K8s], str] = {
    Namespace: "namespaces",
    Service: "services",
    ReplicaSet: "replica_sets",
    StatefulSet: "stateful_sets",
    ReplicationController: "replication_controllers",
    PersistentVolume: "persistent_volumes",
    PersistentVolumeClaim: "persistent_volume_claims",
    StorageClass: "storage_classes",
    CSINode: "csi_nodes",
    CSIDriver: "csi_drivers",
    CSIStorageCapacity: "csi_storage_capacities",
    PodDisruptionBudget: "pod_disruption_budgets",
    PriorityClass: "priority_classes",
}


def store_object(objects: ClusterObjects, obj: K8s) -> bool:
    """File ``obj`` in the table of its kind; False when it has no table (nodes, pods, others)."""
    table = _TABLES.get(type(obj))
    if table is None:
        return False
    getattr(objects, table)[_key(obj)] = obj
    return True


@dataclass
class Cluster:
    """A snapshot of nodes and placed pods, plus the pods waiting to be scheduled, in file order."""

    snapshot: Snapshot
    pending: list[Pod] = field(default_factory=list)


def is_visible(pod: Pod) -> bool:
    """The scheduler's informer drops pods that finished (phase Succeeded or Failed)."""
    return pod.status.phase not in TERMINAL_PHASES


def build_cluster(objects: Iterable[K8s], scheduler_names: Sequence[str]) -> Cluster:
    snapshot = Snapshot()
    pending: list[Pod] = []
    placed: list[Pod] = []
    for obj in objects:
        if isinstance(obj, Node):
            snapshot.upsert_node(obj)
        elif isinstance(obj, Pod):
            if not is_visible(obj):
                continue
            if obj.spec.node_name:
                placed.append(obj)
            elif obj.spec.scheduler_name in scheduler_names:
                pending.append(obj)
        else:
            store_object(snapshot.objects, obj)
    for pod in placed:
        snapshot.add_pod(pod)
    return Cluster(snapshot, pending)
