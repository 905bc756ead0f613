"""Synthetic nodes (``--nodes N``) with a documented, uniform shape."""

from __future__ import annotations

from ksched.api.timestamps import rfc3339

from .jsonio import JSON

ZONES = ("zone-a", "zone-b", "zone-c")
REGION = "region-1"
CAPACITY: dict[str, str] = {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "500Gi"}


def node_name(index: int) -> str:
    return f"node-{index:04d}"


def synthetic_node(index: int) -> JSON:
    """Node ``node-NNNN``: 32 cpu, 128Gi memory, 110 pods, Ready, zone ``zone-{a,b,c}`` by index mod 3."""
    name = node_name(index)
    now = rfc3339()
    second, third = divmod(index, 256)
    host = index + 1
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "kubesim.32c128g",
                "topology.kubernetes.io/region": REGION,
                "topology.kubernetes.io/zone": ZONES[index % len(ZONES)],
                "type": "kwok",
            },
        },
        "spec": {"podCIDR": f"10.{64 + second % 128}.{third}.0/24"},
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(CAPACITY),
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                    "reason": r,
                    "message": m,
                }
                for t, s, r, m in conditions
            ],
            "addresses": [
                {
                    "type": "InternalIP",
                    "address": f"172.{16 + (host >> 16) % 16}.{(host >> 8) & 255}.{host & 255}",
                },
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": "6.8.0",
                "osImage": "kubesim",
                "containerRuntimeVersion": "kwok://0.7.0",
                "kubeletVersion": "v1.36.2",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
