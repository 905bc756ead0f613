"""The resource types kubesim serves: names, scope, verbs, subresources and storage traits."""

from __future__ import annotations

from dataclasses import dataclass, field

from ksched.features import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")

#: name validation styles (see validation.py)
SUBDOMAIN = "subdomain"
LABEL = "label"
DNS1035 = "dns1035"


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource, e.g. ``pods`` in core/v1."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
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
    prefix: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "prefix",
            b'{"kind":"%s","apiVersion":"%s",' % (self.kind.encode(), self.api_version.encode()),
        )

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def key(self) -> str:
        """Unique id: ``pods`` or ``leases.coordination.k8s.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

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
        "",
        "v1",
        "pods",
        "Pod",
        True,
        "pod",
        ("po",),
        ("all",),
        subresources=("binding", "eviction", "status"),
        has_generation=True,
        storage_version_hash="xPOwRZ+Yhw8=",
        fields=_POD_FIELDS,
    ),
    ResourceType(
        "",
        "v1",
        "nodes",
        "Node",
        False,
        "node",
        ("no",),
        subresources=("status",),
        storage_version_hash="XwShjMxG9Fs=",
        fields=("spec.unschedulable",),
    ),
    ResourceType(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        "namespace",
        ("ns",),
        verbs=NO_COLLECTION_DELETE,
        subresources=("finalize", "status"),
        storage_version_hash="Q3oi5N2YM8M=",
        fields=("status.phase",),
        name_style=LABEL,
    ),
    ResourceType(
        "",
        "v1",
        "services",
        "Service",
        True,
        "service",
        ("svc",),
        ("all",),
        subresources=("status",),
        storage_version_hash="0/CO1lhkEBI=",
        name_style=DNS1035,
    ),
    ResourceType(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        True,
        "replicationcontroller",
        ("rc",),
        ("all",),
        subresources=("status",),
        has_generation=True,
        storage_version_hash="Jond2If31h0=",
        fields=("status.replicas",),
    ),
    ResourceType(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        False,
        "persistentvolume",
        ("pv",),
        subresources=("status",),
        storage_version_hash="HN/zwEC+JgM=",
    ),
    ResourceType(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        "persistentvolumeclaim",
        ("pvc",),
        subresources=("status",),
        storage_version_hash="QWTyNDq0dC4=",
    ),
    ResourceType(
        "",
        "v1",
        "events",
        "Event",
        True,
        "event",
        ("ev",),
        storage_version_hash="r2yiGXH7wu8=",
        fields=_EVENT_FIELDS,
    ),
    # apps/v1
    ResourceType(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        True,
        "controllerrevision",
        storage_version_hash="85nkx63pcBU=",
    ),
    ResourceType(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        "deployment",
        ("deploy",),
        ("all",),
        subresources=("scale", "status"),
        has_generation=True,
        storage_version_hash="8aSe+NMegvE=",
    ),
    ResourceType(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        "replicaset",
        ("rs",),
        ("all",),
        subresources=("scale", "status"),
        has_generation=True,
        storage_version_hash="P1RzHs8/mWQ=",
        fields=("status.replicas",),
    ),
    ResourceType(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        "statefulset",
        ("sts",),
        ("all",),
        subresources=("scale", "status"),
        has_generation=True,
        storage_version_hash="H+vl74LkKdo=",
    ),
    # batch/v1
    ResourceType(
        "batch",
        "v1",
        "jobs",
        "Job",
        True,
        "job",
        (),
        ("all",),
        subresources=("status",),
        has_generation=True,
        storage_version_hash="mudhfqk/qZY=",
    ),
    # events.k8s.io/v1: a second view of the core/v1 events storage
    ResourceType(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        True,
        "event",
        ("ev",),
        storage_version_hash="r2yiGXH7wu8=",
        storage_of="events",
    ),
    # policy/v1
    ResourceType(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        "poddisruptionbudget",
        ("pdb",),
        subresources=("status",),
        has_generation=True,
        storage_version_hash="6BGBu0kpHtk=",
    ),
    # storage.k8s.io/v1
    ResourceType(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        False,
        "storageclass",
        ("sc",),
        storage_version_hash="K+m6uJwbjGY=",
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "CSINode",
        False,
        "csinode",
        storage_version_hash="Pe62DkZtjuo=",
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        False,
        "csidriver",
        storage_version_hash="hL6j/rwBV5w=",
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        True,
        "csistoragecapacity",
        storage_version_hash="xeVl+2Ly1kE=",
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        False,
        "volumeattachment",
        subresources=("status",),
        storage_version_hash="tJx/ezt6UDU=",
    ),
    # scheduling.k8s.io/v1
    ResourceType(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        False,
        "priorityclass",
        ("pc",),
        has_generation=True,
        storage_version_hash="1QwjyaZjj3Y=",
    ),
    # scheduling.k8s.io/v1alpha2 (GenericWorkload; docs/gang.md)
    ResourceType(
        "scheduling.k8s.io",
        "v1alpha2",
        "podgroups",
        "PodGroup",
        True,
        "podgroup",
        subresources=("status",),
        storage_version_hash="YYgX3v5V204=",
        feature_gate=GENERIC_WORKLOAD,
    ),
    ResourceType(
        "scheduling.k8s.io",
        "v1alpha2",
        "workloads",
        "Workload",
        True,
        "workload",
        storage_version_hash="vSX7gJe5Mx8=",
        feature_gate=GENERIC_WORKLOAD,
    ),
    # coordination.k8s.io/v1
    ResourceType(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        True,
        "lease",
        unconditional_update=False,
        storage_version_hash="gqkMMb/YqFM=",
    ),
    # node.k8s.io/v1
    ResourceType(
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "RuntimeClass",
        False,
        "runtimeclass",
        storage_version_hash="WQTu1GL3T2Q=",
    ),
    # resource.k8s.io/v1 (dynamic resource allocation)
    ResourceType(
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        "DeviceClass",
        False,
        "deviceclass",
        has_generation=True,
        storage_version_hash="Yk2PTc1Ybxk=",
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        True,
        "resourceclaim",
        subresources=("status",),
        storage_version_hash="wgAZaHcZxUg=",
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        True,
        "resourceclaimtemplate",
        storage_version_hash="TuzjC49aUfM=",
    ),
    ResourceType(
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        False,
        "resourceslice",
        has_generation=True,
        storage_version_hash="KsC072WgaEY=",
        fields=("spec.nodeName", "spec.driver"),
    ),
    # scheduling.x-k8s.io/v1alpha1: scheduler-plugins' Coscheduling PodGroup CRD, served as if installed
    # (GangScheduling on; ksched's adapter reads it, docs/gang.md)
    ResourceType(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        "PodGroup",
        True,
        "podgroup",
        ("pg", "pgs"),
        subresources=("status",),
        feature_gate=GANG_SCHEDULING,
    ),
)

#: groups served as custom resources (as if their CRD were installed)
CUSTOM_GROUPS = frozenset({"scheduling.x-k8s.io"})

#: the legacy ``bindings`` collection (create-only) is listed in discovery but stores nothing
BINDINGS = ResourceType("", "v1", "bindings", "Binding", True, "binding", verbs=("create",))

#: the body of pods/eviction (the subresource also takes policy/v1beta1's)
EVICTIONS = ResourceType("policy", "v1", "evictions", "Eviction", True, "eviction", verbs=("create",))

#: the review APIs: create-only, nothing stored, answered by access.py
TOKEN_REVIEWS = ResourceType(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, "tokenreview", verbs=("create",)
)
SUBJECT_ACCESS_REVIEWS = ResourceType(
    "authorization.k8s.io",
    "v1",
    "subjectaccessreviews",
    "SubjectAccessReview",
    False,
    "subjectaccessreview",
    verbs=("create",),
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
