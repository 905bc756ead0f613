"""The informer's view of the collections it list-watches (the table is :mod:`ksched.api.collections`)."""

from __future__ import annotations

from ksched.api.collections import NODES, OBJECTS, PODS

__all__ = ["EVENT_RESOURCE", "NODES", "OBJECTS", "PODS"]

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
    "PodGroup": "scheduling.k8s.io/PodGroup",
}
