"""JSON types of the fields kubesim reads, checked as decoding a body into its Go type checks them.

The API server decodes a request body (and a patched object) into the Go type of its resource; a
value of the wrong JSON type fails with Go's ``encoding/json`` error, which names the innermost
Go struct, the field path (no list indexes) and the Go type, and the request gets 400 (422 for a
patch). kubesim stores untyped JSON, so the fields it reads are declared here, following the Go
types of k8s.io/api 1.36; the first mismatch in document order is reported. ``null`` is accepted
anywhere (Go's zero value). Found by the kubesim fuzzer (tests/fuzz/test_kubesim_http.py): without
these checks such bodies reached code expecting the right types and were answered with 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ksched.apimachinery.quantity import FORMAT_ERROR as QUANTITY_ERROR

from .time_fields import DecodeFailure, json_kind


@dataclass(frozen=True, slots=True)
class Scalar:
    """A string, bool or integer field: its Go type name."""

    go: str


@dataclass(frozen=True, slots=True)
class Quantity:
    """``resource.Quantity``: a string or a number."""


@dataclass(frozen=True, slots=True)
class IntOrString:
    """``intstr.IntOrString``: a string, or a JSON number decoded as an int32."""


@dataclass(frozen=True, slots=True)
class Struct:
    """A Go struct (``go`` as Go prints its type, e.g. ``v1.PodSpec``) and the fields declared."""

    go: str
    fields: dict[str, Shape]

    @property
    def name(self) -> str:
        return self.go.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Shape


@dataclass(frozen=True, slots=True)
class MapOf:
    """A map from strings to ``value``; ``go`` is its Go type (``map[string]string``, ``v1.ResourceList``)."""

    value: Shape
    go: str


Shape = Scalar | Quantity | IntOrString | Struct | ListOf | MapOf

STRING, BOOL, INT32, INT64 = Scalar("string"), Scalar("bool"), Scalar("int32"), Scalar("int64")
STRINGS = ListOf(STRING)
STRING_MAP = MapOf(STRING, "map[string]string")
RESOURCES = MapOf(Quantity(), "v1.ResourceList")


def _struct(go: str, **fields: Shape) -> Struct:
    return Struct(go, fields)


RESOURCE_REQUIREMENTS = _struct("v1.ResourceRequirements", limits=RESOURCES, requests=RESOURCES)
OBJECT_META = _struct(
    "v1.ObjectMeta",
    name=STRING,
    generateName=STRING,
    namespace=STRING,
    uid=STRING,
    resourceVersion=STRING,
    generation=INT64,
    deletionGracePeriodSeconds=INT64,
    labels=STRING_MAP,
    annotations=STRING_MAP,
    finalizers=STRINGS,
    ownerReferences=ListOf(
        _struct("v1.OwnerReference", apiVersion=STRING, kind=STRING, name=STRING, uid=STRING, controller=BOOL)
    ),
)
LABEL_SELECTOR = _struct(
    "v1.LabelSelector",
    matchLabels=STRING_MAP,
    matchExpressions=ListOf(
        _struct("v1.LabelSelectorRequirement", key=STRING, operator=STRING, values=STRINGS)
    ),
)
_NODE_SELECTOR_TERM = _struct(
    "v1.NodeSelectorTerm",
    matchExpressions=ListOf(
        _struct("v1.NodeSelectorRequirement", key=STRING, operator=STRING, values=STRINGS)
    ),
    matchFields=ListOf(_struct("v1.NodeSelectorRequirement", key=STRING, operator=STRING, values=STRINGS)),
)
_POD_AFFINITY_TERM = _struct(
    "v1.PodAffinityTerm",
    labelSelector=LABEL_SELECTOR,
    namespaceSelector=LABEL_SELECTOR,
    namespaces=STRINGS,
    topologyKey=STRING,
    matchLabelKeys=STRINGS,
    mismatchLabelKeys=STRINGS,
)
_WEIGHTED_POD_AFFINITY_TERM = _struct(
    "v1.WeightedPodAffinityTerm", weight=INT32, podAffinityTerm=_POD_AFFINITY_TERM
)
_POD_AFFINITY_FIELDS: dict[str, Shape] = {
    "requiredDuringSchedulingIgnoredDuringExecution": ListOf(_POD_AFFINITY_TERM),
    "preferredDuringSchedulingIgnoredDuringExecution": ListOf(_WEIGHTED_POD_AFFINITY_TERM),
}
AFFINITY = _struct(
    "v1.Affinity",
    nodeAffinity=_struct(
        "v1.NodeAffinity",
        requiredDuringSchedulingIgnoredDuringExecution=_struct(
            "v1.NodeSelector", nodeSelectorTerms=ListOf(_NODE_SELECTOR_TERM)
        ),
        preferredDuringSchedulingIgnoredDuringExecution=ListOf(
            _struct("v1.PreferredSchedulingTerm", weight=INT32, preference=_NODE_SELECTOR_TERM)
        ),
    ),
    podAffinity=Struct("v1.PodAffinity", _POD_AFFINITY_FIELDS),
    podAntiAffinity=Struct("v1.PodAntiAffinity", _POD_AFFINITY_FIELDS),
)
_CONTAINER = _struct(
    "v1.Container",
    name=STRING,
    image=STRING,
    imagePullPolicy=STRING,
    restartPolicy=STRING,
    terminationMessagePolicy=STRING,
    ports=ListOf(
        _struct(
            "v1.ContainerPort",
            name=STRING,
            hostPort=INT32,
            containerPort=INT32,
            protocol=STRING,
            hostIP=STRING,
        )
    ),
    resources=RESOURCE_REQUIREMENTS,
)
POD_SPEC = _struct(
    "v1.PodSpec",
    containers=ListOf(_CONTAINER),
    initContainers=ListOf(_CONTAINER),
    nodeName=STRING,
    nodeSelector=STRING_MAP,
    schedulerName=STRING,
    priorityClassName=STRING,
    priority=INT32,
    preemptionPolicy=STRING,
    restartPolicy=STRING,
    terminationGracePeriodSeconds=INT64,
    activeDeadlineSeconds=INT64,
    hostNetwork=BOOL,
    overhead=RESOURCES,
    resources=RESOURCE_REQUIREMENTS,
    affinity=AFFINITY,
    tolerations=ListOf(
        _struct(
            "v1.Toleration", key=STRING, operator=STRING, value=STRING, effect=STRING, tolerationSeconds=INT64
        )
    ),
    schedulingGates=ListOf(_struct("v1.PodSchedulingGate", name=STRING)),
    topologySpreadConstraints=ListOf(
        _struct(
            "v1.TopologySpreadConstraint",
            maxSkew=INT32,
            topologyKey=STRING,
            whenUnsatisfiable=STRING,
            labelSelector=LABEL_SELECTOR,
            minDomains=INT32,
            nodeAffinityPolicy=STRING,
            nodeTaintsPolicy=STRING,
            matchLabelKeys=STRINGS,
        )
    ),
)
_CONDITIONS = ListOf(_struct("v1.Condition", type=STRING, status=STRING, reason=STRING, message=STRING))


def _conditions(go: str) -> ListOf:
    return ListOf(_struct(go, type=STRING, status=STRING, reason=STRING, message=STRING))


_POD_TEMPLATE = _struct("v1.PodTemplateSpec", metadata=OBJECT_META, spec=POD_SPEC)


def _workload(go: str, **fields: Shape) -> Struct:
    """apps/v1 and batch/v1 kinds: the spec fields the workload controllers read."""
    spec = _struct(f"{go}Spec", selector=LABEL_SELECTOR, template=_POD_TEMPLATE, **fields)
    return _struct(go, spec=spec)


_USER_INFO = _struct("v1.UserInfo", username=STRING, uid=STRING, groups=STRINGS)

_SCHEMAS: dict[str, Struct] = {
    "deployments.apps": _workload(
        "v1.Deployment",
        replicas=INT32,
        minReadySeconds=INT32,
        revisionHistoryLimit=INT32,
        paused=BOOL,
        progressDeadlineSeconds=INT32,
        strategy=_struct(
            "v1.DeploymentStrategy",
            type=STRING,
            rollingUpdate=_struct(
                "v1.RollingUpdateDeployment", maxUnavailable=IntOrString(), maxSurge=IntOrString()
            ),
        ),
    ),
    "replicasets.apps": _workload("v1.ReplicaSet", replicas=INT32, minReadySeconds=INT32),
    "statefulsets.apps": _workload(
        "v1.StatefulSet",
        replicas=INT32,
        serviceName=STRING,
        podManagementPolicy=STRING,
        revisionHistoryLimit=INT32,
        minReadySeconds=INT32,
        updateStrategy=_struct(
            "v1.StatefulSetUpdateStrategy",
            type=STRING,
            rollingUpdate=_struct(
                "v1.RollingUpdateStatefulSetStrategy", partition=INT32, maxUnavailable=IntOrString()
            ),
        ),
        ordinals=_struct("v1.StatefulSetOrdinals", start=INT32),
    ),
    "jobs.batch": _workload(
        "v1.Job",
        parallelism=INT32,
        completions=INT32,
        activeDeadlineSeconds=INT64,
        backoffLimit=INT32,
        manualSelector=BOOL,
        completionMode=STRING,
        suspend=BOOL,
        podReplacementPolicy=STRING,
    ),
    "bindings": _struct(
        "v1.Binding",
        target=_struct(
            "v1.ObjectReference",
            kind=STRING,
            namespace=STRING,
            name=STRING,
            uid=STRING,
            apiVersion=STRING,
            resourceVersion=STRING,
            fieldPath=STRING,
        ),
    ),
    "evictions.policy": _struct(
        "v1.Eviction",
        deleteOptions=_struct(
            "v1.DeleteOptions",
            gracePeriodSeconds=INT64,
            preconditions=_struct("v1.Preconditions", uid=STRING, resourceVersion=STRING),
            orphanDependents=BOOL,
            propagationPolicy=STRING,
            dryRun=STRINGS,
            ignoreStoreReadErrorWithClusterBreakingPotential=BOOL,
        ),
    ),
    "tokenreviews.authentication.k8s.io": _struct(
        "v1.TokenReview",
        spec=_struct("v1.TokenReviewSpec", token=STRING, audiences=STRINGS),
        status=_struct(
            "v1.TokenReviewStatus", authenticated=BOOL, user=_USER_INFO, audiences=STRINGS, error=STRING
        ),
    ),
    "subjectaccessreviews.authorization.k8s.io": _struct(
        "v1.SubjectAccessReview",
        spec=_struct(
            "v1.SubjectAccessReviewSpec",
            resourceAttributes=_struct(
                "v1.ResourceAttributes",
                namespace=STRING,
                verb=STRING,
                group=STRING,
                version=STRING,
                resource=STRING,
                subresource=STRING,
                name=STRING,
            ),
            nonResourceAttributes=_struct("v1.NonResourceAttributes", path=STRING, verb=STRING),
            user=STRING,
            groups=STRINGS,
            uid=STRING,
        ),
        status=_struct(
            "v1.SubjectAccessReviewStatus", allowed=BOOL, denied=BOOL, reason=STRING, evaluationError=STRING
        ),
    ),
    "pods": _struct(
        "v1.Pod",
        spec=POD_SPEC,
        status=_struct(
            "v1.PodStatus",
            phase=STRING,
            nominatedNodeName=STRING,
            qosClass=STRING,
            conditions=_conditions("v1.PodCondition"),
        ),
    ),
    "nodes": _struct(
        "v1.Node",
        spec=_struct(
            "v1.NodeSpec",
            podCIDR=STRING,
            unschedulable=BOOL,
            taints=ListOf(_struct("v1.Taint", key=STRING, value=STRING, effect=STRING)),
        ),
        status=_struct(
            "v1.NodeStatus",
            capacity=RESOURCES,
            allocatable=RESOURCES,
            conditions=_conditions("v1.NodeCondition"),
            images=ListOf(_struct("v1.ContainerImage", names=STRINGS, sizeBytes=INT64)),
        ),
    ),
    "persistentvolumeclaims": _struct(
        "v1.PersistentVolumeClaim",
        spec=_struct(
            "v1.PersistentVolumeClaimSpec",
            accessModes=STRINGS,
            storageClassName=STRING,
            volumeName=STRING,
            resources=_struct("v1.VolumeResourceRequirements", limits=RESOURCES, requests=RESOURCES),
        ),
        status=_struct("v1.PersistentVolumeClaimStatus", phase=STRING, capacity=RESOURCES),
    ),
    "poddisruptionbudgets.policy": _struct(
        "v1.PodDisruptionBudget",
        spec=_struct(
            "v1.PodDisruptionBudgetSpec",
            minAvailable=IntOrString(),
            maxUnavailable=IntOrString(),
            selector=LABEL_SELECTOR,
            unhealthyPodEvictionPolicy=STRING,
        ),
        status=_struct(
            "v1.PodDisruptionBudgetStatus",
            observedGeneration=INT64,
            disruptionsAllowed=INT32,
            currentHealthy=INT32,
            desiredHealthy=INT32,
            expectedPods=INT32,
            conditions=_CONDITIONS,
        ),
    ),
    "priorityclasses.scheduling.k8s.io": _struct(
        "v1.PriorityClass", value=INT32, globalDefault=BOOL, description=STRING, preemptionPolicy=STRING
    ),
    "leases.coordination.k8s.io": _struct(
        "v1.Lease",
        spec=_struct(
            "v1.LeaseSpec",
            holderIdentity=STRING,
            leaseDurationSeconds=INT32,
            leaseTransitions=INT32,
            strategy=STRING,
            preferredHolder=STRING,
        ),
    ),
    "events.events.k8s.io": _struct(
        "v1.Event",
        action=STRING,
        reason=STRING,
        note=STRING,
        type=STRING,
        reportingController=STRING,
        reportingInstance=STRING,
        regarding=_struct("v1.ObjectReference", kind=STRING, namespace=STRING, name=STRING, uid=STRING),
    ),
    "events": _struct(
        "v1.Event",
        reason=STRING,
        message=STRING,
        type=STRING,
        count=INT32,
        involvedObject=_struct("v1.ObjectReference", kind=STRING, namespace=STRING, name=STRING, uid=STRING),
    ),
}


def schema_for(key: str, kind: str) -> Struct:
    """The declared fields of resource ``key`` (``pods``, ``leases.coordination.k8s.io``...); every
    kind has at least its metadata."""
    schema = _SCHEMAS.get(key)
    fields = {"metadata": OBJECT_META, **(schema.fields if schema else {})}
    return Struct(schema.go if schema else f"v1.{kind}", fields)


class _Mismatch(Exception):
    def __init__(self, failure: DecodeFailure) -> None:
        super().__init__(failure.typed)
        self.failure = failure


def _go_type(shape: Shape) -> str:
    if isinstance(shape, Scalar):
        return shape.go
    if isinstance(shape, Struct | MapOf):
        return shape.go
    if isinstance(shape, ListOf):
        return f"[]{_go_type(shape.item)}"
    return "int32" if isinstance(shape, IntOrString) else "resource.Quantity"


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _scalar_ok(shape: Scalar, value: Any) -> tuple[bool, str]:
    """Whether ``value`` decodes as ``shape``, and how Go names the JSON value if not."""
    kind = json_kind(value)
    if shape.go == "string":
        return isinstance(value, str), kind
    if shape.go == "bool":
        return isinstance(value, bool), kind
    if kind != "number":
        return False, kind
    low, high = _INT_RANGES[shape.go]
    # Go parses the literal as an integer: 1.0 and 1e3 do not decode into an int32 either
    return isinstance(value, int) and low <= value <= high, f"number {value}"


def _fail(value_kind: str, struct: str, path: str, go: str) -> _Mismatch:
    typed = f"json: cannot unmarshal {value_kind} into Go struct field {struct}.{path} of type {go}"
    return _Mismatch(DecodeFailure(typed, f"json: cannot unmarshal {value_kind} into Go value of type {go}"))


def _check(shape: Shape, value: Any, struct: str, path: str) -> None:
    if value is None:
        return
    if isinstance(shape, Quantity):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise _Mismatch(DecodeFailure(QUANTITY_ERROR, QUANTITY_ERROR))
        return
    if isinstance(shape, IntOrString):
        if isinstance(value, str):
            return
        ok, kind = _scalar_ok(INT32, value)
        if not ok:
            # IntOrString's UnmarshalJSON decodes a non-string into its int32; encoding/json adds the
            # field's context to that error, the unstructured converter (patches) does not
            typed = f"json: cannot unmarshal {kind} into Go struct field {struct}.{path} of type int32"
            raise _Mismatch(
                DecodeFailure(typed, f"json: cannot unmarshal {kind} into Go value of type int32")
            )
        return
    if isinstance(shape, Scalar):
        ok, kind = _scalar_ok(shape, value)
        if not ok:
            raise _fail(kind, struct, path, shape.go)
        return
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            raise _fail(json_kind(value), struct, path, _go_type(shape))
        for item in value:
            _check(shape.item, item, struct, path)
        return
    if not isinstance(value, dict):
        raise _fail(json_kind(value), struct, path, _go_type(shape))
    if isinstance(shape, MapOf):
        for item in value.values():
            _check(shape.value, item, struct, path)
        return
    _check_struct(shape, value, path)


def _check_struct(shape: Struct, obj: dict[str, Any], path: str) -> None:
    for key, value in obj.items():
        field = shape.fields.get(key)
        if field is not None:
            _check(field, value, shape.name, f"{path}.{key}" if path else key)


def decode_shapes(key: str, kind: str, obj: dict[str, Any]) -> DecodeFailure | None:
    """The first declared field of ``obj`` (a body of resource ``key``) whose JSON type does not
    decode into its Go type, as Go reports it; None if every declared field decodes."""
    try:
        _check_struct(schema_for(key, kind), obj, "")
    except _Mismatch as exc:
        return exc.failure
    return None
