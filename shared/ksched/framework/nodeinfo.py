"""NodeInfo: a node with the aggregate state of the pods on it (upstream ``framework.NodeInfo``)."""

from __future__ import annotations

import itertools

from ksched.api.core import Node
from ksched.framework.podinfo import DEFAULT_BIND_ALL_HOST_IP, PodInfo
from ksched.framework.resources import Resource

_generations = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing number stamped on every NodeInfo change."""
    return next(_generations)


class HostPortInfo:
    """Host ports in use on a node: ip -> {(protocol, port)}; 0.0.0.0 conflicts with every ip."""

    __slots__ = ("_by_ip",)

    def __init__(self) -> None:
        self._by_ip: dict[str, set[tuple[str, int]]] = {}

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        self._by_ip.setdefault(ip or DEFAULT_BIND_ALL_HOST_IP, set()).add((protocol or "TCP", port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip = ip or DEFAULT_BIND_ALL_HOST_IP
        entries = self._by_ip.get(ip)
        if entries is not None:
            entries.discard((protocol or "TCP", port))
            if not entries:
                del self._by_ip[ip]

    def conflicts(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip = ip or DEFAULT_BIND_ALL_HOST_IP
        pp = (protocol or "TCP", port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in entries for entries in self._by_ip.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            entries = self._by_ip.get(key)
            if entries is not None and pp in entries:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(e) for e in self._by_ip.values())

    def clone(self) -> HostPortInfo:
        out = HostPortInfo()
        out._by_ip = {ip: set(e) for ip, e in self._by_ip.items()}
        return out


class NodeInfo:
    """Node-level aggregates the plugins read; kept up to date incrementally by the snapshot."""

    __slots__ = (
        "allocatable",
        "generation",
        "image_sizes",
        "index",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None) -> None:
        self.node: Node | None = None
        self.name = ""
        self.index = -1
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_sizes: dict[str, int] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)

    # --- node ------------------------------------------------------------------------------------
    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.metadata.name
        self.allocatable = Resource.from_list(node.status.allocatable)
        sizes: dict[str, int] = {}
        for img in node.status.images:
            for name in img.names:
                sizes.setdefault(name, img.size_bytes)  # a name listed twice: the first image's size
        self.image_sizes = sizes
        self.generation = next_generation()

    @property
    def labels(self) -> dict[str, str]:
        return self.node.metadata.labels if self.node is not None else {}

    # --- pods ------------------------------------------------------------------------------------
    def add_pod(self, pi: PodInfo) -> None:
        self._list(pi)
        self._account(pi, 1)

    def remove_pod(self, uid: str) -> PodInfo | None:
        """Remove the pod with ``uid``; returns it, or None when it is not on this node."""
        pi = self._unlist(uid)
        if pi is not None:
            self._account(pi, -1)
        return pi

    def replace_pod(self, pi: PodInfo) -> PodInfo | None:
        """Put ``pi`` in the place of the version of it on this node whose spec is the same (only
        labels or other metadata changed): the pod lists end as :meth:`remove_pod` then
        :meth:`add_pod` leave them, and what the spec alone decides (requests, ports, claims) is not
        counted again. Returns the version replaced, or None (nothing changed) when it is not here."""
        old = self._unlist(pi.uid)
        if old is None:
            return None
        self._list(pi)
        self.generation = next_generation()
        return old

    def _list(self, pi: PodInfo) -> None:
        self.pods.append(pi)
        if pi.has_affinity:
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pi)

    def _unlist(self, uid: str) -> PodInfo | None:
        for i, pi in enumerate(self.pods):
            if pi.uid == uid:
                last = self.pods.pop()
                if i < len(self.pods):
                    self.pods[i] = last
                break
        else:
            return None
        if pi.has_affinity:
            self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity = [
                p for p in self.pods_with_required_anti_affinity if p.uid != uid
            ]
        return pi

    def _account(self, pi: PodInfo, sign: int) -> None:
        self.requested.add(pi.requests, sign)
        self.non_zero_requested.milli_cpu += sign * pi.non0_cpu
        self.non_zero_requested.memory += sign * pi.non0_mem
        for ip, proto, port in pi.host_ports:
            if sign > 0:
                self.used_ports.add(ip, proto, port)
            else:
                self.used_ports.remove(ip, proto, port)
        for key in pi.pvc_keys:
            n = self.pvc_ref_counts.get(key, 0) + sign
            if n > 0:
                self.pvc_ref_counts[key] = n
            else:
                self.pvc_ref_counts.pop(key, None)
        self.generation = next_generation()

    def clone(self) -> NodeInfo:
        """An independent copy (used to add nominated pods or remove preemption victims)."""
        out = NodeInfo.__new__(NodeInfo)
        out.node = self.node
        out.name = self.name
        out.index = self.index
        out.pods = list(self.pods)
        out.pods_with_affinity = list(self.pods_with_affinity)
        out.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        out.used_ports = self.used_ports.clone()
        out.requested = self.requested.clone()
        out.non_zero_requested = self.non_zero_requested.clone()
        out.allocatable = self.allocatable.clone()
        out.image_sizes = self.image_sizes
        out.pvc_ref_counts = dict(self.pvc_ref_counts)
        out.generation = self.generation
        return out

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
