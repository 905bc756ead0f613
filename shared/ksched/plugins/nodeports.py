"""NodePorts: a pod's host ports must be free on the node (upstream ``nodeports``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksched.api.core import Pod
from ksched.apimachinery.typed import as_typed
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.interfaces import EnqueueExtensions, FilterPlugin, PreFilterPlugin
from ksched.framework.nodeinfo import HostPortInfo, NodeInfo
from ksched.framework.podinfo import HostPort, PodInfo, host_ports
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Status

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


class _PreFilterState:
    """The pod's host ports; not affected by other pods, so clone shares it."""

    __slots__ = ("ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports

    def clone(self) -> _PreFilterState:
        return self


def fits_ports(wanted: Sequence[HostPort], in_use: HostPortInfo) -> bool:
    """Whether none of ``wanted`` conflicts with ports in use (0.0.0.0 conflicts with every IP)."""
    return not any(in_use.conflicts(ip, protocol, port) for ip, protocol, port in wanted)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """Upstream ``nodeports.Fits``: the pod's host ports are all free on ``node``."""
    return fits_ports(pod.host_ports, node.used_ports)


class NodePorts:
    name = NAME

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Container ports are immutable, so only deletions can free ports.
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), self.hint_pod_deleted),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    @staticmethod
    def hint_pod_deleted(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the deleted pod was placed (or nominated) and held a host port this pod wants."""
        deleted, _ = as_typed(old, None, Pod)
        if deleted is None:
            raise TypeError("expected Pod, but got None")
        if not deleted.spec.node_name and not deleted.status.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        freed = host_ports(deleted)
        if not freed:
            return QueueingHint.QUEUE_SKIP
        in_use = HostPortInfo()
        for ip, protocol, port in freed:
            in_use.add(ip, protocol, port)
        if fits_ports(host_ports(pod), in_use):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(pod.host_ports))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        found = state.get(PRE_FILTER_STATE_KEY, _PreFilterState)
        if found is None:
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not fits_ports(found.ports, node.used_ports):
            return Status.unschedulable(ERR_REASON)
        return None


# The extension points NodePorts implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &NodePorts{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = NodePorts
_PRE_FILTER: type[PreFilterPlugin] = NodePorts
_FILTER: type[FilterPlugin] = NodePorts


def new(args: Any, handle: Handle) -> NodePorts:
    return NodePorts()
