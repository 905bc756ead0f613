"""The resource types kubesim serves: which registered kinds (``ksched.api.kinds``: names, group,
version, scope), and per kind its verbs, subresources and storage traits."""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.api.kinds import Kind, lookup
from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")

#: name validation styles (see validation.py)
SUBDOMAIN = "subdomain"
LABEL = "label"
DNS1035 = "dns1035"


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource, e.g. ``pods`` in core/v1: a registered kind (``ksched.api.kinds``: its
    group, version, plural, kind and scope) and how kubesim serves and stores it."""

    api: Kind
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    has_generation: bool = False
    unconditional_update: bool = True
    storage_version_hash: str = ""
    fields: tuple[str, ...] = ()
    name_style: str = SUBDOMAIN
    #: for a view of another resource's storage (events.k8s.io/v1 events over core/v1 events)
    storage_of: str | None = None
    #: served only with this feature gate on (alpha APIs; upstream also needs --runtime-config)
    feature_gate: str = ""
    # the kind's facts, copied from ``api`` (read on every request: attributes, not properties)
    group: str = field(init=False, repr=False, compare=False)
    version: str = field(init=False, repr=False, compare=False)
    plural: str = field(init=False, repr=False, compare=False)
    kind: str = field(init=False, repr=False, compare=False)
    namespaced: bool = field(init=False, repr=False, compare=False)
    singular: str = field(init=False, repr=False, compare=False)
    api_version: str = field(init=False, repr=False, compare=False)
    list_kind: str = field(init=False, repr=False, compare=False)
    key: str = field(init=False, repr=False, compare=False)
    """Unique id: ``pods`` or ``leases.coordination.k8s.io``."""
    prefix: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        api = self.api
        facts = {
            "group": api.group,
            "version": api.version,
            "plural": api.plural,
            "kind": api.kind,
            "namespaced": api.namespaced,
            "singular": api.singular,
            "api_version": api.api_version,
            "list_kind": api.list_kind,
            "key": api.key,
            "prefix": b'{"kind":"%s","apiVersion":"%s",' % (api.kind.encode(), api.api_version.encode()),
        }
        for name, value in facts.items():
            object.__setattr__(self, name, value)

    @property
    def storage_key(self) -> str:
        return self.storage_of or self.key

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def served(self, gates: FeatureGates) -> bool:
        """Whether the API server serves this resource under ``gates``."""
        return not self.feature_gate or gates.enabled(self.feature_gate)

    def selectable_fields(self) -> tuple[str, ...]:
        base = ("metadata.name", "metadata.namespace") if self.namespaced else ("metadata.name",)
        return base + self.fields


_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

RESOURCES: tuple[ResourceType, ...] = (
    # core/v1
    ResourceType(
        lookup("", "Pod"),
        ("po",),
        ("all",),
        subresources=("binding", "eviction", "status"),
        has_generation=True,
        storage_version_hash="xPOwRZ+Yhw8=",
        fields=_POD_FIELDS,
    ),
    ResourceType(
        lookup("", "Node"),
        ("no",),
        subresources=("status",),
        storage_version_hash="XwShjMxG9Fs=",
        fields=("spec.unschedulable",),
    ),
    ResourceType(
        lookup("", "Namespace"),
        ("ns",),
        verbs=NO_COLLECTION_DELETE,
        subresources=("finalize", "status"),
        storage_version_hash="Q3oi5N2YM8M=",
        fields=("status.phase",),
        name_style=LABEL,
    ),
    ResourceType(
        lookup("", "Service"),
        ("svc",),
        ("all",),
        subresources=("status",),
        storage_version_hash="0/CO1lhkEBI=",
        name_style=DNS1035,
    ),
    ResourceType(
        lookup("", "ReplicationController"),
        ("rc",),
        ("all",),
        subresources=("status",),
        has_generation=True,
        storage_version_hash="Jond2If31h0=",
        fields=("status.replicas",),
    ),
    ResourceType(
        lookup("", "PersistentVolume"),
        ("pv",),
        subresources=("status",),
        storage_version_hash="HN/zwEC+JgM=",
    ),
    ResourceType(
        lookup("", "PersistentVolumeClaim"),
        ("pvc",),
        subresources=("status",),
        storage_version_hash="QWTyNDq0dC4=",
    ),
    ResourceType(
        lookup("", "Event"),
        ("ev",),
        storage_version_hash="r2yiGXH7wu8=",
        fields=_EVENT_FIELDS,
    ),
    # apps/v1
    ResourceType(
        lookup("apps", "ControllerRevision"),
        storage_version_hash="85nkx63pcBU=",
    ),
    ResourceType(
        lookup("apps", "Deployment"),
        ("deploy",),
        ("all",),
        subresources=("scale", "status"),
        has_generation=True,
        storage_version_hash="8aSe+NMegvE=",
    ),
    ResourceType(
        lookup("apps", "ReplicaSet"),
        ("rs",),
        ("all",),
        subresources=("scale", "status"),
        has_generation=True,
        storage_version_hash="P1RzHs8/mWQ=",
        fields=("status.replicas",),
    ),
    ResourceType(
        lookup("apps", "StatefulSet"),
        ("sts",),
        ("all",),
        subresources=("scale", "status"),
        has_generation=True,
        storage_version_hash="H+vl74LkKdo=",
    ),
    # batch/v1
    ResourceType(
        lookup("batch", "Job"),
        (),
        ("all",),
        subresources=("status",),
        has_generation=True,
        storage_version_hash="mudhfqk/qZY=",
    ),
    # events.k8s.io/v1: a second view of the core/v1 events storage
    ResourceType(
        lookup("events.k8s.io", "Event"),
        ("ev",),
        storage_version_hash="r2yiGXH7wu8=",
        storage_of="events",
    ),
    # policy/v1
    ResourceType(
        lookup("policy", "PodDisruptionBudget"),
        ("pdb",),
        subresources=("status",),
        has_generation=True,
        storage_version_hash="6BGBu0kpHtk=",
    ),
    # storage.k8s.io/v1
    ResourceType(
        lookup("storage.k8s.io", "StorageClass"),
        ("sc",),
        storage_version_hash="K+m6uJwbjGY=",
    ),
    ResourceType(
        lookup("storage.k8s.io", "CSINode"),
        storage_version_hash="Pe62DkZtjuo=",
    ),
    ResourceType(
        lookup("storage.k8s.io", "CSIDriver"),
        storage_version_hash="hL6j/rwBV5w=",
    ),
    ResourceType(
        lookup("storage.k8s.io", "CSIStorageCapacity"),
        storage_version_hash="xeVl+2Ly1kE=",
    ),
    ResourceType(
        lookup("storage.k8s.io", "VolumeAttachment"),
        subresources=("status",),
        storage_version_hash="tJx/ezt6UDU=",
    ),
    # scheduling.k8s.io/v1
    ResourceType(
        lookup("scheduling.k8s.io", "PriorityClass"),
        ("pc",),
        has_generation=True,
        storage_version_hash="1QwjyaZjj3Y=",
    ),
    # scheduling.k8s.io/v1alpha2 (GenericWorkload; docs/gang.md)
    ResourceType(
        lookup("scheduling.k8s.io", "PodGroup"),
        subresources=("status",),
        storage_version_hash="YYgX3v5V204=",
        feature_gate=GENERIC_WORKLOAD,
    ),
    ResourceType(
        lookup("scheduling.k8s.io", "Workload"),
        storage_version_hash="vSX7gJe5Mx8=",
        feature_gate=GENERIC_WORKLOAD,
    ),
    # coordination.k8s.io/v1
    ResourceType(
        lookup("coordination.k8s.io", "Lease"),
        unconditional_update=False,
        storage_version_hash="gqkMMb/YqFM=",
    ),
    # node.k8s.io/v1
    ResourceType(
        lookup("node.k8s.io", "RuntimeClass"),
        storage_version_hash="WQTu1GL3T2Q=",
    ),
    # resource.k8s.io/v1 (dynamic resource allocation)
    ResourceType(
        lookup("resource.k8s.io", "DeviceClass"),
        has_generation=True,
        storage_version_hash="Yk2PTc1Ybxk=",
    ),
    ResourceType(
        lookup("resource.k8s.io", "ResourceClaim"),
        subresources=("status",),
        storage_version_hash="wgAZaHcZxUg=",
    ),
    ResourceType(
        lookup("resource.k8s.io", "ResourceClaimTemplate"),
        storage_version_hash="TuzjC49aUfM=",
    ),
    ResourceType(
        lookup("resource.k8s.io", "ResourceSlice"),
        has_generation=True,
        storage_version_hash="KsC072WgaEY=",
        fields=("spec.nodeName", "spec.driver"),
    ),
    # scheduling.x-k8s.io/v1alpha1: scheduler-plugins' Coscheduling PodGroup CRD, served as if installed
    # (GangScheduling on; ksched's adapter reads it, docs/gang.md)
    ResourceType(
        lookup("scheduling.x-k8s.io", "PodGroup"),
        ("pg", "pgs"),
        subresources=("status",),
        feature_gate=GANG_SCHEDULING,
    ),
)

#: groups served as custom resources (as if their CRD were installed)
CUSTOM_GROUPS = frozenset({"scheduling.x-k8s.io"})

#: the legacy ``bindings`` collection (create-only) is listed in discovery but stores nothing
BINDINGS = ResourceType(lookup("", "Binding"), verbs=("create",))

#: the body of pods/eviction (the subresource also takes policy/v1beta1's)
EVICTIONS = ResourceType(lookup("policy", "Eviction"), verbs=("create",))

#: the review APIs: create-only, nothing stored, answered by access.py
TOKEN_REVIEWS = ResourceType(lookup("authentication.k8s.io", "TokenReview"), verbs=("create",))
SUBJECT_ACCESS_REVIEWS = ResourceType(
    lookup("authorization.k8s.io", "SubjectAccessReview"), verbs=("create",)
)

#: group order of the real ``/apis`` (restricted to the groups kubesim serves)
GROUP_ORDER = (
    "apps",
    "events.k8s.io",
    "batch",
    "policy",
    "storage.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "resource.k8s.io",
    "scheduling.x-k8s.io",
)

BY_PATH: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KEY: dict[str, ResourceType] = {r.key: r for r in RESOURCES}


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The served resource for an object's ``apiVersion``/``kind`` (the named version of its group if
    served, else any version of the group)."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    version = api_version.rpartition("/")[2]
    found = [r for r in RESOURCES if r.kind == kind and r.group == group]
    return next((r for r in found if r.version == version), found[0] if found else None)


def group_versions(group: str, gates: FeatureGates) -> list[str]:
    """The versions of ``group`` served under ``gates``, preferred (GA) first."""
    versions = {r.version for r in RESOURCES if r.group == group and r.served(gates)}
    return sorted(versions, key=lambda v: (v != "v1", v))
