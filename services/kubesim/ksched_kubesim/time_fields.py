"""The ``metav1.Time`` and ``metav1.MicroTime`` fields of every served kind, decoded as the API server does.

Decoding a request body into its Go type parses each timestamp with Go's ``time.Parse`` (``gotime``):
the first that fails (in document order) aborts the decoding with Go's error. Accepted values are
stored re-encoded: ``metav1.Time`` in UTC whole seconds, ``metav1.MicroTime`` in UTC with six
fractional digits, Go's zero time as ``null``. The tables follow the Go types of k8s.io/api 1.36
(``vendor/k8s.io/api/*/types.go``); each leaf names the Go struct holding the field, which Go's
``encoding/json`` puts in the error for a value that is not a string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from . import gotime


@dataclass(frozen=True, slots=True)
class Leaf:
    """A timestamp field: its layout and the Go struct it belongs to."""

    layout: str
    struct: str


@dataclass(frozen=True, slots=True)
class MapOf:
    """A map whose values are timestamps (``PodDisruptionBudgetStatus.disruptedPods``)."""

    leaf: Leaf


#: field name → a timestamp, a map of timestamps or a nested object (walked item by item in lists)
Schema = dict[str, Union[Leaf, MapOf, "Schema"]]


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """Why a body does not decode: the text of a typed JSON decoding (request bodies, JSON and merge
    patches) and that of the unstructured conversion (strategic-merge and apply patches)."""

    typed: str
    unstructured: str


def _time(struct: str) -> Leaf:
    return Leaf(gotime.RFC3339, struct)


def _micro(struct: str) -> Leaf:
    return Leaf(gotime.RFC3339_MICRO, struct)


def _conditions(struct: str, *fields: str) -> Schema:
    return {"conditions": {name: _time(struct) for name in ("lastTransitionTime", *fields)}}


OBJECT_META: Schema = {
    "creationTimestamp": _time("ObjectMeta"),
    "deletionTimestamp": _time("ObjectMeta"),
    "managedFields": {"time": _time("ManagedFieldsEntry")},
}
_CONTAINER_STATE: Schema = {
    "running": {"startedAt": _time("ContainerStateRunning")},
    "terminated": {name: _time("ContainerStateTerminated") for name in ("startedAt", "finishedAt")},
}
_CONTAINER_STATUS: Schema = {"state": _CONTAINER_STATE, "lastState": _CONTAINER_STATE}
_POD_SPEC: Schema = {"volumes": {"ephemeral": {"volumeClaimTemplate": {"metadata": OBJECT_META}}}}
_POD_TEMPLATE: Schema = {"metadata": OBJECT_META, "spec": _POD_SPEC}
_PVC_STATUS = _conditions("PersistentVolumeClaimCondition", "lastProbeTime")
_VOLUME_ERRORS: Schema = {key: {"time": _time("VolumeError")} for key in ("attachError", "detachError")}
_LEASE_TIME = _micro("LeaseSpec")

_SCHEMAS: dict[str, Schema] = {
    "pods": {
        "spec": _POD_SPEC,
        "status": {
            **_conditions("PodCondition", "lastProbeTime"),
            "startTime": _time("PodStatus"),
            "initContainerStatuses": _CONTAINER_STATUS,
            "containerStatuses": _CONTAINER_STATUS,
            "ephemeralContainerStatuses": _CONTAINER_STATUS,
        },
    },
    "nodes": {
        "spec": {"taints": {"timeAdded": _time("Taint")}},
        "status": _conditions("NodeCondition", "lastHeartbeatTime"),
    },
    "namespaces": {"status": _conditions("NamespaceCondition")},
    "services": {"status": _conditions("Condition")},
    "replicationcontrollers": {
        "spec": {"template": _POD_TEMPLATE},
        "status": _conditions("ReplicationControllerCondition"),
    },
    "persistentvolumes": {"status": {"lastPhaseTransitionTime": _time("PersistentVolumeStatus")}},
    "persistentvolumeclaims": {"status": _PVC_STATUS},
    "events": {
        "firstTimestamp": _time("Event"),
        "lastTimestamp": _time("Event"),
        "eventTime": _micro("Event"),
        "series": {"lastObservedTime": _micro("EventSeries")},
    },
    "events.events.k8s.io": {
        "eventTime": _micro("Event"),
        "series": {"lastObservedTime": _micro("EventSeries")},
        "deprecatedFirstTimestamp": _time("Event"),
        "deprecatedLastTimestamp": _time("Event"),
    },
    "replicasets.apps": {"spec": {"template": _POD_TEMPLATE}, "status": _conditions("ReplicaSetCondition")},
    "deployments.apps": {
        "spec": {"template": _POD_TEMPLATE},
        "status": _conditions("DeploymentCondition", "lastUpdateTime"),
    },
    "jobs.batch": {
        "spec": {"template": _POD_TEMPLATE},
        "status": {
            **_conditions("JobCondition", "lastProbeTime"),
            "startTime": _time("JobStatus"),
            "completionTime": _time("JobStatus"),
        },
    },
    "statefulsets.apps": {
        "spec": {
            "template": _POD_TEMPLATE,
            "volumeClaimTemplates": {"metadata": OBJECT_META, "status": _PVC_STATUS},
        },
        "status": _conditions("StatefulSetCondition"),
    },
    "poddisruptionbudgets.policy": {
        "status": {"disruptedPods": MapOf(_time("PodDisruptionBudgetStatus")), **_conditions("Condition")}
    },
    "volumeattachments.storage.k8s.io": {"status": _VOLUME_ERRORS},
    "leases.coordination.k8s.io": {"spec": {"acquireTime": _LEASE_TIME, "renewTime": _LEASE_TIME}},
    "resourceclaims.resource.k8s.io": {
        "status": {
            "allocation": {"allocationTimestamp": _time("AllocationResult")},
            "devices": _conditions("Condition"),
        }
    },
    "resourceclaimtemplates.resource.k8s.io": {"spec": {"metadata": OBJECT_META}},
    "resourceslices.resource.k8s.io": {"spec": {"devices": {"taints": {"timeAdded": _time("DeviceTaint")}}}},
}


def schema_for(key: str) -> Schema:
    """The timestamp fields of the resource ``key`` (``pods``, ``leases.coordination.k8s.io``...)."""
    return {"metadata": OBJECT_META, **_SCHEMAS.get(key, {})}


class _Failed(Exception):
    def __init__(self, failure: DecodeFailure) -> None:
        super().__init__(failure.typed)
        self.failure = failure


def json_kind(value: Any) -> str:
    """How Go's encoding/json names the JSON type of ``value``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _decode_leaf(leaf: Leaf, value: Any, path: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        # Go's encoding/json names the struct and field path when it decodes a typed object
        kind = json_kind(value)
        typed = f"json: cannot unmarshal {kind} into Go struct field {leaf.struct}.{path} of type string"
        raise _Failed(DecodeFailure(typed, f"json: cannot unmarshal {kind} into Go value of type string"))
    try:
        instant = gotime.parse(leaf.layout, value)
    except gotime.GoTimeError as exc:
        raise _Failed(DecodeFailure(str(exc), str(exc))) from None
    if leaf.layout == gotime.RFC3339_MICRO:
        return None if instant.is_zero() else instant.rfc3339_micro()
    # metav1.Time is stored (protobuf) in whole seconds: a zero second is the zero time
    return None if gotime.Instant(instant.seconds, 0).is_zero() else instant.rfc3339()


_Replacement = tuple[dict[str, Any], str, Any]


def _walk(schema: Schema, obj: dict[str, Any], path: str, out: list[_Replacement]) -> None:
    for key, value in obj.items():
        sub = schema.get(key)
        if sub is None:
            continue
        field = f"{path}.{key}" if path else key
        if isinstance(sub, Leaf):
            out.append((obj, key, _decode_leaf(sub, value, field)))
        elif isinstance(sub, MapOf):
            if isinstance(value, dict):
                out.extend((value, name, _decode_leaf(sub.leaf, item, field)) for name, item in value.items())
        elif isinstance(value, dict):
            _walk(sub, value, field, out)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    _walk(sub, item, field, out)


def decode_times(key: str, obj: dict[str, Any]) -> DecodeFailure | None:
    """Parse every timestamp of ``obj`` (a body of resource ``key``) and store them re-encoded, or
    return the first that does not parse (``obj`` is then left as it was)."""
    replacements: list[_Replacement] = []
    try:
        _walk(schema_for(key), obj, "", replacements)
    except _Failed as exc:
        return exc.failure
    for container, name, value in replacements:
        container[name] = value
    return None
