"""Server-side printing (``meta.k8s.io/v1`` Table), which ``kubectl get`` asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsonio import JSON, now, parse_time
from .resources import ResourceType
from .selectors import format_label_selector


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


_CONTAINERS = _column("Containers", "string", "Names of each container in the template.", 1)
_IMAGES = _column("Images", "string", "Images referenced by each container in the template.", 1)
_READY = _column("Ready", "string", "Number of the pod with ready state")
_DEPLOYMENT_COLUMNS = [
    _NAME,
    _READY,
    _column(
        "Up-to-date",
        "string",
        "Total number of non-terminating pods targeted by this deployment that have the desired template "
        "spec.",
    ),
    _column(
        "Available",
        "string",
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by "
        "this deployment.",
    ),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _column(
        "Selector",
        "string",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones "
        "affected by this deployment. It must match the pod template's labels.",
        1,
    ),
]
_REPLICA_SET_COLUMNS = [
    _NAME,
    _column(
        "Desired",
        "integer",
        "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and "
        "unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
    ),
    _column(
        "Current",
        "integer",
        "Replicas is the most recently observed number of non-terminating pods. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
    ),
    _column(
        "Ready",
        "integer",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
    ),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _column(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the replica count. Label keys and values that "
        "must match in order to be controlled by this replica set. It must match the pod template's labels. "
        "More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
]
_STATEFUL_SET_COLUMNS = [_NAME, _READY, _AGE, _CONTAINERS, _IMAGES]
_JOB_COLUMNS = [
    _NAME,
    _column("Status", "string", "Status of the job."),
    _column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given "
        "spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    _column("Duration", "string", "Time required to complete the job."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _column(
        "Selector",
        "string",
        "A label query over pods that should match the pod count. Normally, the system sets this field for "
        "you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
        "#label-selectors",
        1,
    ),
]
_REVISION_COLUMNS = [
    _NAME,
    _column("Controller", "string", "Controller of the object"),
    _column("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    _AGE,
]


def _template_cells(obj: JSON) -> list[Any]:
    """Containers and images of a workload's pod template."""
    containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers if isinstance(c, dict))
    images = ",".join(str(c.get("image", "")) for c in containers if isinstance(c, dict))
    return [names, images]


def _deployment_cells(obj: JSON) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(obj),
        *_template_cells(obj),
        format_label_selector(spec.get("selector")),
    ]


def _replica_set_cells(obj: JSON) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        spec.get("replicas", 0),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(obj),
        *_template_cells(obj),
        format_label_selector(spec.get("selector")),
    ]


def _stateful_set_cells(obj: JSON) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"
    return [obj["metadata"]["name"], ready, _age(obj), *_template_cells(obj)]


def _job_cells(obj: JSON) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    true = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in true:
        state = "Complete"
    elif "Failed" in true:
        state = "Failed"
    elif obj["metadata"].get("deletionTimestamp"):
        state = "Terminating"
    else:
        state = next(
            (t for t in ("Suspended", "FailureTarget", "SuccessCriteriaMet") if t in true), "Running"
        )
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    duration = ""
    if status.get("startTime"):
        end = parse_time(status["completionTime"]) if status.get("completionTime") else now()
        duration = human_duration((end - parse_time(status["startTime"])).total_seconds())
    return [
        obj["metadata"]["name"],
        state,
        completions,
        duration,
        _age(obj),
        *_template_cells(obj),
        format_label_selector(spec.get("selector")),
    ]


def _revision_cells(obj: JSON) -> list[Any]:
    controller = "<none>"
    for ref in obj["metadata"].get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower()
            controller = f"{kind}.{group}/{ref.get('name')}" if group else f"{kind}/{ref.get('name')}"
    return [obj["metadata"]["name"], controller, obj.get("revision", 0), _age(obj)]


_KINDS: dict[str, tuple[list[JSON], Callable[[JSON], list[Any]]]] = {
    "Deployment": (_DEPLOYMENT_COLUMNS, _deployment_cells),
    "ReplicaSet": (_REPLICA_SET_COLUMNS, _replica_set_cells),
    "StatefulSet": (_STATEFUL_SET_COLUMNS, _stateful_set_cells),
    "Job": (_JOB_COLUMNS, _job_cells),
    "ControllerRevision": (_REVISION_COLUMNS, _revision_cells),
}


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
    elif rt.kind in _KINDS:
        columns, cells = _KINDS[rt.kind]
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
