"""Pod shapes of ``ksched bench e2e --shape``: scheduler_perf's templates (kubernetes 1.36,
``test/integration/scheduler_perf/templates/``) for SchedulingBasic (``pod-default.yaml``),
TopologySpreading (``pod-with-topology-spreading.yaml``) and SchedulingPreferredPodAntiAffinity
(``pod-with-preferred-pod-anti-affinity.yaml``).

The nodes are kubesim's synthetic ones: three ``topology.kubernetes.io/zone`` values, as the
TopologySpreading workload labels its nodes (``moon-1..3``), and a ``kubernetes.io/hostname``
label as real nodes have; :func:`node` is the same node for a real API server (``ksched bench
compare``). The anti-affinity term names the bench's namespace where the template
names the workload's two.
"""

from __future__ import annotations

from typing import Any

SHAPES = ("plain", "spread", "antiaffinity")

ZONES = ("zone-a", "zone-b", "zone-c")
CAPACITY = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "500Gi"}


def node_name(index: int) -> str:
    return f"node-{index:04d}"


def node(index: int) -> dict[str, Any]:
    """Node ``node-NNNN`` as kubesim's ``--nodes`` makes it (32 cpu, 128Gi, 110 pods, Ready, zone
    ``zone-{a,b,c}`` by index mod 3), to create on an API server that has no kubelets: the API
    server keeps the status of a Node it creates."""
    name = node_name(index)
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet is posting ready status",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/region": "region-1",
                "topology.kubernetes.io/zone": ZONES[index % len(ZONES)],
                "type": "kwok",
            },
        },
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(CAPACITY),
            "conditions": [ready],
            "addresses": [{"type": "Hostname", "address": name}],
        },
    }


def _container() -> dict[str, Any]:
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "image": "registry.k8s.io/pause:3.10",
        "name": "pause",
        "ports": [{"containerPort": 80}],
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }


def _spread() -> dict[str, Any]:
    return {
        "labels": {"color": "blue"},
        "spec": {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 5,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"color": "blue"}},
                }
            ]
        },
    }


def _anti_affinity(namespace: str) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"color": "yellow"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": [namespace],
    }
    return {
        "labels": {"color": "yellow"},
        "spec": {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"podAffinityTerm": term, "weight": 1}
                    ]
                }
            }
        },
    }


def pod(shape: str, name: str, namespace: str) -> dict[str, Any]:
    """The Pod to create for ``shape`` (one of :data:`SHAPES`)."""
    extra: dict[str, Any]
    if shape == "plain":
        extra = {"spec": {}}
    elif shape == "spread":
        extra = _spread()
    elif shape == "antiaffinity":
        extra = _anti_affinity(namespace)
    else:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if "labels" in extra:
        metadata["labels"] = extra["labels"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {**extra["spec"], "containers": [_container()]},
    }
