"""The extender wire format: upstream's ``k8s.io/kube-scheduler/extender/v1`` types as JSON.

Those Go structs have no json tags, so the keys are the Go field names (``Pod``, ``NodeNames``,
``FailedAndUnresolvableNodes``, ``NumPDBViolations``...) and nil pointers and maps are sent as
``null``. Replies are read as Go's ``encoding/json`` reads them: keys match field names without
regard to case (an extender answering ``nodeNames`` works), a missing or ``null`` field is empty,
and a value of the wrong type is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import Node, Pod
from ksched.framework.extender import ExtenderError, Victims

_encoder = msgspec.json.Encoder()


class WireError(ExtenderError):
    """A reply that does not decode into the expected type."""


# --- requests ---------------------------------------------------------------------------------------
def extender_args(pod: Pod, node_names: Sequence[str] | None, nodes: Iterable[Node] | None) -> bytes:
    """``ExtenderArgs``: the pod and either the node names (nodeCacheCapable) or the Node objects."""
    node_list = None if nodes is None else {"metadata": {}, "items": list(nodes)}
    names = None if node_names is None else list(node_names)
    return _encoder.encode({"Pod": pod, "Nodes": node_list, "NodeNames": names})


def binding_args(pod: Pod, node_name: str) -> bytes:
    """``ExtenderBindingArgs``."""
    meta = pod.metadata
    return _encoder.encode(
        {"PodName": meta.name, "PodNamespace": meta.namespace, "PodUID": meta.uid, "Node": node_name}
    )


def preemption_args(pod: Pod, victims: Mapping[str, Victims], meta_only: bool) -> bytes:
    """``ExtenderPreemptionArgs``: victims as pod UIDs (``NodeNameToMetaVictims``, nodeCacheCapable)
    or as whole pods (``NodeNameToVictims``). Node names are sorted, as Go encodes maps."""
    by_node: dict[str, Any] = {}
    for name in sorted(victims):
        v = victims[name]
        pods: list[Any] = [{"UID": pi.uid} for pi in v.pods] if meta_only else [pi.pod for pi in v.pods]
        by_node[name] = {"Pods": pods, "NumPDBViolations": v.num_pdb_violations}
    return _encoder.encode(
        {
            "Pod": pod,
            "NodeNameToVictims": None if meta_only else by_node,
            "NodeNameToMetaVictims": by_node if meta_only else None,
        }
    )


# --- replies ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class FilterReply:
    """``ExtenderFilterResult``; ``nodes`` holds the names of the returned Node objects."""

    node_names: list[str] | None = None
    nodes: list[str] | None = None
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


@dataclass(slots=True)
class MetaVictims:
    """``MetaVictims``: the UIDs of the pods to evict on a node."""

    uids: list[str]
    num_pdb_violations: int = 0


def _decode(body: bytes, what: str) -> Any:
    try:
        return msgspec.json.decode(body)
    except DECODE_ERRORS as exc:
        raise WireError(f"decoding {what}: {exc}") from exc


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """The value of Go field ``name``: keys match case-insensitively, the last match wins."""
    found = obj.get(name)
    if found is not None:
        return found
    wanted = name.lower()
    for key, value in obj.items():
        if key.lower() == wanted:
            found = value
    return found


def _object(value: Any, what: str) -> dict[str, Any]:
    """A JSON object, or empty for null (Go leaves the zero value)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WireError(f"decoding {what}: expected an object, got {type(value).__name__}")
    return value


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise WireError(f"decoding {what}: expected a string, got {type(value).__name__}")
    return value


def _int(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"decoding {what}: expected an integer, got {value!r}")
    return value


def _list(value: Any, what: str) -> list[Any] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise WireError(f"decoding {what}: expected an array, got {type(value).__name__}")
    return value


def _messages(value: Any, what: str) -> dict[str, str]:
    return {node: _string(msg, f"{what}[{node}]") for node, msg in _object(value, what).items()}


def decode_filter_result(body: bytes) -> FilterReply:
    obj = _object(_decode(body, "ExtenderFilterResult"), "ExtenderFilterResult")
    reply = FilterReply(
        failed=_messages(_field(obj, "FailedNodes"), "FailedNodes"),
        failed_and_unresolvable=_messages(
            _field(obj, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"
        ),
        error=_string(_field(obj, "Error"), "Error"),
    )
    names = _list(_field(obj, "NodeNames"), "NodeNames")
    if names is not None:
        reply.node_names = [_string(n, "NodeNames[]") for n in names]
    node_list = _field(obj, "Nodes")
    if node_list is not None:
        items = _list(_field(_object(node_list, "Nodes"), "items"), "Nodes.items") or []
        reply.nodes = [
            _string(_field(_object(_field(_object(item, "Node"), "metadata"), "metadata"), "name"), "name")
            for item in items
        ]
    return reply


def decode_host_priorities(body: bytes) -> list[tuple[str, int]]:
    """``HostPriorityList``: (host, score) pairs."""
    items = _list(_decode(body, "HostPriorityList"), "HostPriorityList") or []
    out: list[tuple[str, int]] = []
    for item in items:
        entry = _object(item, "HostPriority")
        out.append((_string(_field(entry, "Host"), "Host"), _int(_field(entry, "Score"), "Score")))
    return out


def decode_binding_result(body: bytes) -> str:
    """``ExtenderBindingResult``: the error the extender reports, if any."""
    obj = _object(_decode(body, "ExtenderBindingResult"), "ExtenderBindingResult")
    return _string(_field(obj, "Error"), "Error")


def decode_preemption_result(body: bytes) -> dict[str, MetaVictims | None]:
    """``ExtenderPreemptionResult.NodeNameToMetaVictims`` (a node mapped to null has no victims)."""
    obj = _object(_decode(body, "ExtenderPreemptionResult"), "ExtenderPreemptionResult")
    by_node = _object(_field(obj, "NodeNameToMetaVictims"), "NodeNameToMetaVictims")
    out: dict[str, MetaVictims | None] = {}
    for node, value in by_node.items():
        if value is None:
            out[node] = None
            continue
        entry = _object(value, f"NodeNameToMetaVictims[{node}]")
        pods = _list(_field(entry, "Pods"), "Pods") or []
        uids = [_string(_field(_object(p, "MetaPod"), "UID"), "UID") for p in pods]
        out[node] = MetaVictims(uids, _int(_field(entry, "NumPDBViolations"), "NumPDBViolations"))
    return out
