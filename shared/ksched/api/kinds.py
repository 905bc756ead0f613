"""The registry of Kubernetes kinds, and typed decoding by kind with clear errors.

:data:`KINDS` is the one table of the kinds ksched knows: each kind's group, version, plural resource,
scope, the Struct it decodes into and the cluster-event resource its changes are reported under.
Every other table is derived from it: the decoding here, the collections the informer and ``ksched
simulate --from-cluster`` list (:mod:`ksched.api.collections`), the snapshot's object tables
(``ksched.framework.objects``), the cluster-event resource names (``ksched.framework.events``), and
what kubesim serves (``ksched_kubesim.resources`` adds only how it serves and stores each kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

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


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind as the API server serves it (upstream's ``metav1.APIResource``), and what ksched
    does with it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    struct: type[K8s] | None = None
    """The Struct its objects decode into; None for a kind ksched does not read (kubesim serves it)."""
    event_resource: str = ""
    """The resource of the cluster events its changes raise (upstream's ``fwk.EventResource``:
    ``storage.k8s.io/CSINode``); empty for a kind no queueing hint watches."""

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``apps/v1`` for the others."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def key(self) -> str:
        """The resource's unique name: ``pods``, ``leases.coordination.k8s.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "") -> str:
        """The collection's path: ``/api/v1/pods``, ``/apis/apps/v1/namespaces/ns/replicasets``."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return (
            f"{root}/namespaces/{_segment(namespace)}/{self.plural}" if namespace else f"{root}/{self.plural}"
        )

    def object_path(self, namespace: str, name: str, subresource: str = "") -> str:
        """One object's path, or its subresource's: ``/api/v1/namespaces/ns/pods/p/binding``
        (``namespace`` empty for a cluster-scoped kind). Namespace and name are quoted as path
        segments, so a name the API would refuse cannot reach another path."""
        path = f"{self.path(namespace)}/{_segment(name)}"
        return f"{path}/{subresource}" if subresource else path


def _segment(value: str) -> str:
    """``value`` as one URL path segment (``/`` and ``%`` quoted)."""
    return quote(value, safe="")


#: Every kind ksched reads or kubesim serves. The first kind of a name with a Struct is the one an
#: object of that kind in an unknown group decodes into (the native PodGroup, not Coscheduling's).
KINDS: tuple[Kind, ...] = (
    # core/v1
    Kind("", "v1", "Pod", "pods", True, Pod, "Pod"),
    Kind("", "v1", "Node", "nodes", False, Node, "Node"),
    Kind("", "v1", "Namespace", "namespaces", False, Namespace),
    Kind("", "v1", "Service", "services", True, Service),
    Kind("", "v1", "ReplicationController", "replicationcontrollers", True, ReplicationController),
    Kind("", "v1", "PersistentVolume", "persistentvolumes", False, PersistentVolume, "PersistentVolume"),
    Kind(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        True,
        PersistentVolumeClaim,
        "PersistentVolumeClaim",
    ),
    Kind("", "v1", "Event", "events", True, Event),
    Kind("", "v1", "Binding", "bindings", True),
    # apps/v1
    Kind("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    Kind("apps", "v1", "Deployment", "deployments", True),
    Kind("apps", "v1", "ReplicaSet", "replicasets", True, ReplicaSet),
    Kind("apps", "v1", "StatefulSet", "statefulsets", True, StatefulSet),
    # batch/v1
    Kind("batch", "v1", "Job", "jobs", True),
    # events.k8s.io/v1 (a second view of core/v1 events)
    Kind("events.k8s.io", "v1", "Event", "events", True),
    # policy/v1
    Kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, PodDisruptionBudget),
    Kind("policy", "v1", "Eviction", "evictions", True),
    # storage.k8s.io/v1
    Kind(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        False,
        StorageClass,
        "storage.k8s.io/StorageClass",
    ),
    Kind("storage.k8s.io", "v1", "CSINode", "csinodes", False, CSINode, "storage.k8s.io/CSINode"),
    Kind("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False, CSIDriver, "storage.k8s.io/CSIDriver"),
    Kind(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        True,
        CSIStorageCapacity,
        "storage.k8s.io/CSIStorageCapacity",
    ),
    Kind(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        False,
        None,
        "storage.k8s.io/VolumeAttachment",
    ),
    # scheduling.k8s.io
    Kind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, PriorityClass),
    Kind(
        "scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups", True, PodGroup, "scheduling.k8s.io/PodGroup"
    ),
    Kind("scheduling.k8s.io", "v1alpha2", "Workload", "workloads", True, Workload),
    # coordination.k8s.io/v1
    Kind("coordination.k8s.io", "v1", "Lease", "leases", True, Lease),
    # node.k8s.io/v1
    Kind("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, RuntimeClass),
    # resource.k8s.io/v1 (dynamic resource allocation)
    Kind(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "deviceclasses",
        False,
        DeviceClass,
        "resource.k8s.io/DeviceClass",
    ),
    Kind(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        True,
        ResourceClaim,
        "resource.k8s.io/ResourceClaim",
    ),
    Kind(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        True,
        ResourceClaimTemplate,
    ),
    Kind(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "resourceslices",
        False,
        ResourceSlice,
        "resource.k8s.io/ResourceSlice",
    ),
    # scheduling.x-k8s.io/v1alpha1: scheduler-plugins' Coscheduling PodGroup (a CRD; docs/gang.md)
    Kind("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", True, CoschedulingPodGroup),
    # the review APIs (create-only)
    Kind("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False),
    Kind("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False),
)

_BY_GROUP_KIND: dict[tuple[str, str], Kind] = {(k.group, k.kind): k for k in KINDS}
#: kind name -> what an object of that kind decodes as when its group has no such kind: the first
#: registered kind of that name with a Struct (built reversed so that the first one wins)
BY_NAME: dict[str, Kind] = {k.kind: k for k in reversed(KINDS) if k.struct is not None}


def lookup(group: str, kind: str) -> Kind:
    """The registered kind ``kind`` of API group ``group`` (``""``: core); KeyError if none."""
    return _BY_GROUP_KIND[(group, kind)]


#: The kinds whose single objects ksched's components read or write by path (:meth:`Kind.object_path`).
POD = lookup("", "Pod")
NODE = lookup("", "Node")
PERSISTENT_VOLUME = lookup("", "PersistentVolume")
PERSISTENT_VOLUME_CLAIM = lookup("", "PersistentVolumeClaim")
CSI_NODE = lookup("storage.k8s.io", "CSINode")
RESOURCE_CLAIM = lookup("resource.k8s.io", "ResourceClaim")
EVENT = lookup("events.k8s.io", "Event")
POD_GROUP = lookup("scheduling.k8s.io", "PodGroup")


def decoding(api_version: object, kind: str) -> Kind | None:
    """The kind an object of ``apiVersion``/``kind`` decodes as: its group's, else the first of
    that name with a Struct (decoding reads the kind, not the version); None for kinds not read."""
    found = _BY_GROUP_KIND.get((api_group(api_version), kind))
    return found if found is not None and found.struct is not None else BY_NAME.get(kind)


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
    entry = decoding(raw.get("apiVersion"), kind) if isinstance(kind, str) else None
    if entry is None or entry.struct is None:
        known = ", ".join(sorted(BY_NAME))
        raise UnsupportedKind(f"{where}: {describe(raw)}: unsupported kind {kind!r} (supported: {known})")
    return convert(raw, entry.struct, where)


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
