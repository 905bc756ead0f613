"""Server-side printing (``meta.k8s.io/v1`` Table), which ``kubectl get`` asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsonio import JSON, now, parse_time
from .resources import ResourceType


def human_duration(seconds: float) -> str:
    """Rough age like kubectl prints: 42s, 5m3s, 3h, 2d5h, 300d."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    return f"{days}d"


def _age(obj: JSON) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    return human_duration((now() - parse_time(created)).total_seconds())


def _column(name: str, kind: str, description: str, priority: int = 0, fmt: str = "") -> JSON:
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": priority}


_NAME = _column("Name", "string", "Name must be unique within a namespace.", fmt="name")
_AGE = _column(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
)


def _pod_cells(pod: JSON) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if isinstance(c, dict) and c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses if isinstance(c, dict))
    reason = status.get("reason") or status.get("phase") or "Unknown"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    elif reason == "Pending" and spec.get("schedulingGates"):
        reason = "SchedulingGated"
    total = len(spec.get("containers") or [])
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        restarts,
        _age(pod),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


def _node_cells(node: JSON) -> list[Any]:
    status, spec = node.get("status") or {}, node.get("spec") or {}
    ready = "Unknown"
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            ready = "Ready" if c.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        ready += ",SchedulingDisabled"
    labels = (node.get("metadata") or {}).get("labels") or {}
    roles = sorted(
        k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    info = status.get("nodeInfo") or {}
    addresses = {
        a.get("type"): a.get("address") for a in status.get("addresses") or [] if isinstance(a, dict)
    }
    return [
        node["metadata"]["name"],
        ready,
        ",".join(roles) or "<none>",
        _age(node),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP", "<none>"),
        addresses.get("ExternalIP", "<none>"),
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


_POD_COLUMNS = [
    _NAME,
    _column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    _column("Status", "string", "The aggregate status of the containers in this pod."),
    _column("Restarts", "string", "The number of times the containers in this pod have been restarted."),
    _AGE,
    _column("IP", "string", "IP address allocated to the pod.", 1),
    _column("Node", "string", "Name of the node this pod is scheduled on.", 1),
    _column("Nominated Node", "string", "Name of the node this pod is nominated on.", 1),
    _column("Readiness Gates", "string", "Readiness gates of this pod.", 1),
]
_NODE_COLUMNS = [
    _NAME,
    _column("Status", "string", "The status of the node"),
    _column("Roles", "string", "The roles of the node"),
    _AGE,
    _column("Version", "string", "Kubelet Version reported by the node."),
    _column("Internal-IP", "string", "List of internal IPs in the node.", 1),
    _column("External-IP", "string", "List of external IPs in the node.", 1),
    _column("OS-Image", "string", "OS image reported by the node.", 1),
    _column("Kernel-Version", "string", "Kernel version reported by the node.", 1),
    _column("Container-Runtime", "string", "Container runtime reported by the node.", 1),
]


def _generic_cells(obj: JSON) -> list[Any]:
    return [obj["metadata"]["name"], _age(obj)]


def table(rt: ResourceType, objects: list[JSON], resource_version: str, include: str) -> JSON:
    """A Table of ``objects`` with the columns kubectl shows for the kind."""
    columns: list[JSON]
    cells: Callable[[JSON], list[Any]]
    if rt.kind == "Pod":
        columns, cells = _POD_COLUMNS, _pod_cells
    elif rt.kind == "Node":
        columns, cells = _NODE_COLUMNS, _node_cells
    else:
        columns, cells = [_NAME, _AGE], _generic_cells

    rows = []
    for obj in objects:
        row: JSON = {"cells": cells(obj)}
        if include == "Object":
            row["object"] = {"kind": rt.kind, "apiVersion": rt.api_version, **obj}
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata") or {},
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns,
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    return "as=Table" in accept
