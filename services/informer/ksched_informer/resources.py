"""The resources the informer list-watches, with the Struct each decodes into."""

from __future__ import annotations

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
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.api.workloads import ReplicaSet, StatefulSet
from ksched_informer.reflector import Resource

#: Pods that finished are invisible to the scheduler (upstream's informer field selector).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

NODES = Resource("Node", "/api/v1/nodes", Node)
PODS = Resource("Pod", "/api/v1/pods", Pod, field_selector=POD_FIELD_SELECTOR)

OBJECTS: tuple[Resource, ...] = (
    Resource("Namespace", "/api/v1/namespaces", Namespace),
    Resource("Service", "/api/v1/services", Service),
    Resource("ReplicationController", "/api/v1/replicationcontrollers", ReplicationController),
    Resource("PersistentVolume", "/api/v1/persistentvolumes", PersistentVolume),
    Resource("PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", PersistentVolumeClaim),
    Resource("ReplicaSet", "/apis/apps/v1/replicasets", ReplicaSet),
    Resource("StatefulSet", "/apis/apps/v1/statefulsets", StatefulSet),
    Resource("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", PodDisruptionBudget),
    Resource("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClass),
    Resource("StorageClass", "/apis/storage.k8s.io/v1/storageclasses", StorageClass),
    Resource("CSINode", "/apis/storage.k8s.io/v1/csinodes", CSINode),
    Resource("CSIDriver", "/apis/storage.k8s.io/v1/csidrivers", CSIDriver),
    Resource("CSIStorageCapacity", "/apis/storage.k8s.io/v1/csistoragecapacities", CSIStorageCapacity),
    Resource("DeviceClass", "/apis/resource.k8s.io/v1/deviceclasses", DeviceClass),
    Resource("ResourceSlice", "/apis/resource.k8s.io/v1/resourceslices", ResourceSlice),
    Resource("ResourceClaim", "/apis/resource.k8s.io/v1/resourceclaims", ResourceClaim),
    Resource(
        "ResourceClaimTemplate", "/apis/resource.k8s.io/v1/resourceclaimtemplates", ResourceClaimTemplate
    ),
)

#: Which cluster-event resource name a kind's changes are reported under (queueing hints).
EVENT_RESOURCE = {
    "PersistentVolume": "PersistentVolume",
    "PersistentVolumeClaim": "PersistentVolumeClaim",
    "StorageClass": "storage.k8s.io/StorageClass",
    "CSINode": "storage.k8s.io/CSINode",
    "CSIDriver": "storage.k8s.io/CSIDriver",
    "CSIStorageCapacity": "storage.k8s.io/CSIStorageCapacity",
    "DeviceClass": "resource.k8s.io/DeviceClass",
    "ResourceSlice": "resource.k8s.io/ResourceSlice",
    "ResourceClaim": "resource.k8s.io/ResourceClaim",
}
