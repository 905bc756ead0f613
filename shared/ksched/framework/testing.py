"""Builders for tests and examples: pods and nodes from short keyword arguments.

Mirrors upstream's ``st.MakePod()`` / ``st.MakeNode()`` wrappers. Anything not covered by a
keyword can be given API-shaped through ``spec=`` / ``status=`` dicts (camelCase, as in YAML).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.group_handle import PodGroupHandle
from ksched.framework.podgroups import PodGroupStates
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.framework.waiting import WaitingPods

_uids = itertools.count(1)


def _merge(base: dict[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    if extra:
        base.update(extra)
    return base


def container(
    name: str = "c",
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    image: str | None = None,
    host_ports: Sequence[tuple[int, str, str]] = (),
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """An API-shaped container; ``host_ports`` items are (hostPort, protocol, hostIP)."""
    c: dict[str, Any] = {"name": name}
    if image:
        c["image"] = image
    if requests or limits:
        c["resources"] = {"requests": dict(requests or {}), "limits": dict(limits or {})}
    if host_ports:
        c["ports"] = [
            {
                "containerPort": port,
                "hostPort": port,
                "protocol": proto or "TCP",
                **({"hostIP": ip} if ip else {}),
            }
            for port, proto, ip in host_ports
        ]
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def make_pod(
    name: str = "pod",
    namespace: str = "default",
    *,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    node_name: str = "",
    scheduler_name: str = "default-scheduler",
    priority: int | None = None,
    requests: Mapping[str, str] | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    creation_timestamp: str | None = None,
) -> Pod:
    """A Pod; ``requests`` is shorthand for one container with those requests."""
    if containers is None:
        containers = [container(requests=requests)] if requests else [container()]
    spec_d: dict[str, Any] = {"containers": list(containers), "schedulerName": scheduler_name}
    if init_containers:
        spec_d["initContainers"] = list(init_containers)
    if node_name:
        spec_d["nodeName"] = node_name
    if priority is not None:
        spec_d["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}-{next(_uids)}"}
    if labels:
        meta["labels"] = dict(labels)
    if creation_timestamp:
        meta["creationTimestamp"] = creation_timestamp
    raw = {"metadata": meta, "spec": _merge(spec_d, spec), "status": dict(status or {})}
    return msgspec.convert(raw, Pod)


def make_node(
    name: str = "node",
    *,
    labels: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    images: Sequence[tuple[Sequence[str], int]] = (),
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> Node:
    """A Node; allocatable defaults to capacity (and capacity to allocatable)."""
    alloc = dict(allocatable or capacity or {})
    cap = dict(capacity or alloc)
    spec_d: dict[str, Any] = {}
    if taints:
        spec_d["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec_d["unschedulable"] = True
    status_d: dict[str, Any] = {"allocatable": alloc, "capacity": cap}
    if images:
        status_d["images"] = [{"names": list(names), "sizeBytes": size} for names, size in images]
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name, **dict(labels or {})}}
    raw = {"metadata": meta, "spec": _merge(spec_d, spec), "status": _merge(status_d, status)}
    return msgspec.convert(raw, Node)


def make_snapshot(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> Snapshot:
    return Snapshot.build(list(nodes), list(pods))


class FakeNominator:
    def __init__(self) -> None:
        self.by_node: dict[str, list[Any]] = {}

    def nominated_pods_for_node(self, node_name: str) -> list[Any]:
        return self.by_node.get(node_name, [])


class FakeHandle(PodGroupHandle):
    """A Handle over a fixed snapshot, for unit-testing one plugin at a time."""

    def __init__(self, snapshot: Snapshot | None = None, client: object | None = None) -> None:
        self._snapshot = snapshot if snapshot is not None else Snapshot()
        self._nominator = FakeNominator()
        self._client = client
        self._extenders: list[Any] = []
        #: pod group states the plugin reads as the process's (default: the snapshot's placed pods)
        self.pod_group_manager: PodGroupStates | None = None
        self.waiting_pods = WaitingPods()
        #: what plugins asked to activate, in order
        self.activated: list[Any] = []

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def nominator(self) -> FakeNominator:
        return self._nominator

    @property
    def profile_name(self) -> str:
        return "default-scheduler"

    @property
    def parallelism(self) -> int:
        return 16

    @property
    def client(self) -> object | None:
        return self._client

    @property
    def extenders(self) -> list[Any]:
        return self._extenders

    def activate(self, pods: dict[str, Any]) -> None:
        self.activated.extend(pods.values())

    def run_filter_plugins(self, *args: Any) -> Any:
        raise NotImplementedError("FakeHandle runs no other plugins")

    run_filter_plugins_with_nominated_pods = run_filter_plugins
    run_pre_filter_extension_add_pod = run_filter_plugins
    run_pre_filter_extension_remove_pod = run_filter_plugins


class RefusesNode:
    """A Reserve plugin that rejects every pod on one node (``node is being drained``)."""

    name = "RefusesNode"

    def __init__(self, node: str) -> None:
        self.node = node

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.unschedulable("node is being drained") if node_name == self.node else None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass
