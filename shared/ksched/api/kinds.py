"""Which Struct decodes which ``apiVersion``/``kind``, and typed decoding with clear errors."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ksched.api.base import K8s
from ksched.api.coordination import Lease
from ksched.api.core import (
    Event,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ReplicationController,
    Service,
)
from ksched.api.coscheduling import CoschedulingPodGroup
from ksched.api.policy import PodDisruptionBudget, PriorityClass, RuntimeClass
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from ksched.api.scheduling import PodGroup, Workload
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.api.workloads import ReplicaSet, StatefulSet

T = TypeVar("T", bound=K8s)

#: kind -> (apiVersion, Struct type, namespaced)
KINDS: dict[str, tuple[str, type[K8s], bool]] = {
    "Pod": ("v1", Pod, True),
    "Node": ("v1", Node, False),
    "Namespace": ("v1", Namespace, False),
    "Service": ("v1", Service, True),
    "ReplicationController": ("v1", ReplicationController, True),
    "PersistentVolume": ("v1", PersistentVolume, False),
    "PersistentVolumeClaim": ("v1", PersistentVolumeClaim, True),
    "Event": ("v1", Event, True),
    "ReplicaSet": ("apps/v1", ReplicaSet, True),
    "StatefulSet": ("apps/v1", StatefulSet, True),
    "PodDisruptionBudget": ("policy/v1", PodDisruptionBudget, True),
    "PriorityClass": ("scheduling.k8s.io/v1", PriorityClass, False),
    "RuntimeClass": ("node.k8s.io/v1", RuntimeClass, False),
    "StorageClass": ("storage.k8s.io/v1", StorageClass, False),
    "CSINode": ("storage.k8s.io/v1", CSINode, False),
    "CSIDriver": ("storage.k8s.io/v1", CSIDriver, False),
    "CSIStorageCapacity": ("storage.k8s.io/v1", CSIStorageCapacity, True),
    "Lease": ("coordination.k8s.io/v1", Lease, True),
    "DeviceClass": ("resource.k8s.io/v1", DeviceClass, False),
    "ResourceSlice": ("resource.k8s.io/v1", ResourceSlice, False),
    "ResourceClaim": ("resource.k8s.io/v1", ResourceClaim, True),
    "ResourceClaimTemplate": ("resource.k8s.io/v1", ResourceClaimTemplate, True),
    "Workload": ("scheduling.k8s.io/v1alpha2", Workload, True),
    "PodGroup": ("scheduling.k8s.io/v1alpha2", PodGroup, True),
}

#: (API group, kind) -> entry, for kinds whose name another group also uses (checked first)
GROUP_KINDS: dict[tuple[str, str], tuple[str, type[K8s], bool]] = {
    ("scheduling.x-k8s.io", "PodGroup"): ("scheduling.x-k8s.io/v1alpha1", CoschedulingPodGroup, True),
}


def api_group(api_version: object) -> str:
    """The group of an ``apiVersion`` (``""`` for the core group ``v1``)."""
    text = api_version if isinstance(api_version, str) else ""
    return text.rpartition("/")[0]


class ObjectError(ValueError):
    """A Kubernetes object that cannot be decoded; the message names the object and the field."""


class UnsupportedKind(ObjectError):
    """An object of a kind the scheduler does not read (a ConfigMap, a Deployment...)."""


def describe(raw: Any) -> str:
    """``Pod default/web-1`` for error messages, as far as the raw object allows."""
    if not isinstance(raw, dict):
        return f"item of type {type(raw).__name__}"
    kind = raw.get("kind") or "object"
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = meta.get("name") or "<unnamed>"
    namespace = meta.get("namespace")
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _field_path(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    return text.replace(" - at `$.", " - at `").replace("`$`", "the object")


def convert(raw: Any, kind_type: type[T], where: str = "") -> T:
    """Convert a decoded JSON/YAML mapping into ``kind_type``, naming object and field on error."""
    try:
        return msgspec.convert(drop_nulls(raw), kind_type)
    except msgspec.ValidationError as exc:
        prefix = f"{where}: " if where else ""
        raise ObjectError(f"{prefix}{describe(raw)}: {_field_path(exc)}") from None


def decode_object(raw: Any, where: str = "") -> K8s:
    """Decode one object by its ``kind``; unknown kinds raise :class:`ObjectError`."""
    if not isinstance(raw, dict):
        raise ObjectError(f"{where}: expected a mapping with apiVersion/kind, got {type(raw).__name__}")
    kind = raw.get("kind")
    entry = GROUP_KINDS.get((api_group(raw.get("apiVersion")), kind)) if isinstance(kind, str) else None
    entry = entry or (KINDS.get(kind) if isinstance(kind, str) else None)
    if entry is None:
        known = ", ".join(sorted(KINDS))
        raise UnsupportedKind(f"{where}: {describe(raw)}: unsupported kind {kind!r} (supported: {known})")
    return convert(raw, entry[1], where)


def drop_nulls(value: Any) -> Any:
    """Remove ``key: null`` entries, as Go's JSON decoding leaves such fields at their zero value.

    YAML and some clients write ``field: null``; Kubernetes (and its configuration) treats that as
    absent. The one implementation: objects here, the scheduler configuration in ``ksched.config``.
    """
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def decode_lenient(data: bytes, type_: type[Any]) -> Any:
    """``data`` (JSON from the API server) decoded as ``type_``, ``null`` fields taken as absent.

    The API server writes ``null`` for a list without ``omitempty`` that is empty when stored (protobuf
    keeps no empty list): a CSINode without drivers has ``"drivers": null``, a driver without topology
    keys ``"topologyKeys": null``, a ResourceClaim without requests ``"requests": null``, a node image
    without names ``"names": null``. Go decodes those to the zero value; msgspec refuses ``null`` for a
    list. The strict decoder stays the fast path: only a document it refuses is decoded again with its
    nulls dropped (raises ``msgspec.ValidationError`` / ``DecodeError`` if that fails too)."""
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError:
        return msgspec.convert(drop_nulls(msgspec.json.decode(data)), type=type_)
