"""PodInfo: a pod with what the scheduler derives from it computed once."""

from __future__ import annotations

import msgspec

from ksched.api.core import Pod
from ksched.framework.resources import Resource, non_zero_requests, pod_requests, resource_from_amounts

HostPort = tuple[str, str, int]
"""(host IP with "" as 0.0.0.0, protocol, port) of a container port that binds the host."""

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """Host ports of app containers and of sidecar init containers (they run the whole pod life)."""
    out: list[HostPort] = []
    for c in pod.spec.init_containers:
        if c.restart_policy != "Always":
            continue
        out.extend(
            (p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or "TCP", p.host_port)
            for p in c.ports
            if p.host_port and p.host_port > 0
        )
    for c in pod.spec.containers:
        out.extend(
            (p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or "TCP", p.host_port)
            for p in c.ports
            if p.host_port and p.host_port > 0
        )
    return tuple(out)


def pod_priority(pod: Pod) -> int:
    """``spec.priority``, 0 when unset (upstream ``corev1helpers.PodPriority``)."""
    return pod.spec.priority if pod.spec.priority is not None else 0


class PodInfo:
    """A pod plus derived data. Immutable per pod version; plugins may memoize in ``cache``."""

    __slots__ = (
        "cache",
        "has_affinity",
        "has_required_anti_affinity",
        "host_ports",
        "key",
        "non0_cpu",
        "non0_mem",
        "pod",
        "priority",
        "pvc_keys",
        "requests",
        "requests_map",
    )

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        self.priority = pod_priority(pod)
        amounts = pod_requests(pod)
        self.requests_map = amounts
        self.requests: Resource = resource_from_amounts(amounts)
        self.non0_cpu, self.non0_mem = non_zero_requests(pod, amounts)
        self.host_ports = host_ports(pod)
        aff = pod.spec.affinity
        self.has_affinity = aff is not None and (
            aff.pod_affinity is not None or aff.pod_anti_affinity is not None
        )
        self.has_required_anti_affinity = (
            aff is not None
            and aff.pod_anti_affinity is not None
            and bool(aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution)
        )
        ns = pod.metadata.namespace
        self.pvc_keys = tuple(
            f"{ns}/{v.persistent_volume_claim.claim_name}"
            for v in pod.spec.volumes
            if v.persistent_volume_claim
        )
        self.cache: dict[str, object] = {}

    def placed_on(self, node_name: str) -> PodInfo:
        """This pod with ``spec.nodeName`` set (what an assumed pod looks like). Nothing derived
        depends on the node, so the derived data is shared; the plugins' memo starts empty."""
        spec = msgspec.structs.replace(self.pod.spec, node_name=node_name)
        return self.with_pod(msgspec.structs.replace(self.pod, spec=spec))

    def with_pod(self, pod: Pod) -> PodInfo:
        """A version of this pod whose spec (and namespace and name) are the same: what is derived
        (requests, ports, priority, affinity flags, claims) is shared; the plugins' memo starts empty."""
        other = PodInfo.__new__(PodInfo)
        for slot in PodInfo.__slots__:
            setattr(other, slot, getattr(self, slot))
        other.pod = pod
        other.cache = {}
        return other

    @property
    def uid(self) -> str:
        return self.pod.metadata.uid

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.pod.metadata.labels

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"
