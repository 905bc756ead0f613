"""storage.k8s.io/v1 StorageClass, CSINode, CSIDriver."""

from __future__ import annotations

import msgspec

from ksched.api.base import K8s
from ksched.api.meta import ObjectMeta


class TopologySelectorLabelRequirement(K8s):
    key: str
    values: list[str] = []


class TopologySelectorTerm(K8s):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(K8s):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "StorageClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    parameters: dict[str, str] = {}
    reclaim_policy: str | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = []
    allow_volume_expansion: bool | None = None


class VolumeNodeResources(K8s):
    count: int | None = None


class CSINodeDriver(K8s):
    name: str
    node_id: str = msgspec.field(default="", name="nodeID")
    topology_keys: list[str] = []
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(K8s):
    drivers: list[CSINodeDriver] = []


class CSINode(K8s):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSINode"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSIDriverSpec(K8s):
    attach_required: bool | None = None
    pod_info_on_mount: bool | None = None
    storage_capacity: bool | None = None
    volume_lifecycle_modes: list[str] = []


class CSIDriver(K8s):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIDriver"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(K8s):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    storage_class_name: str = ""
    node_topology: dict[str, object] | None = None
    capacity: str | None = None
    maximum_volume_size: str | None = None
