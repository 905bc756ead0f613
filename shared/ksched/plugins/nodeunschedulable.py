"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) only take pods that tolerate it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ksched.api.core import Node, Pod, Taint
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
from ksched.framework.interfaces import BatchFilterPlugin, BoolArray, EnqueueExtensions, FilterPlugin, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.framework.taints import NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, tolerations_tolerate

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def tolerates_unschedulable(pod: Pod) -> bool:
    return tolerations_tolerate(pod.spec.tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    name = NAME

    def __init__(self) -> None:
        self._cached: tuple[int, int, BoolArray] | None = None

    def _cordoned(self, snapshot: Snapshot) -> BoolArray:
        """Per row: the node is unschedulable (cached until a node changes)."""
        key = (id(snapshot), snapshot.nodes_version)
        cached = self._cached
        if cached is None or cached[:2] != key:
            flags = np.fromiter(
                (ni.node is not None and ni.node.spec.unschedulable for ni in snapshot.nodes),
                dtype=np.bool_,
                count=len(snapshot.nodes),
            )
            cached = (key[0], key[1], flags)
            self._cached = cached
        return cached[2]

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        if tolerates_unschedulable(pod.pod):
            return np.ones(len(rows), dtype=np.bool_)
        return ~self._cordoned(snapshot)[rows]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.hint_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.hint_pod_toleration_change,
            ),
        ]

    @staticmethod
    def hint_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a schedulable node was added or a node became schedulable.

        Objects of the wrong type raise TypeError (upstream returns an error; the queue requeues).
        """
        old_node, new_node = as_typed(old, new, Node)
        if new_node is None:
            raise TypeError("expected Node, but got None")
        became_schedulable = (
            old_node is not None and old_node.spec.unschedulable and not new_node.spec.unschedulable
        )
        if became_schedulable or (old_node is None and not new_node.spec.unschedulable):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_pod_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the rejected pod itself now tolerates the unschedulable taint."""
        _, modified = as_typed(old, new, Pod)
        if modified is None:
            raise TypeError("expected Pod, but got None")
        if modified.metadata.uid == pod.metadata.uid and tolerates_unschedulable(modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is None or not node.node.spec.unschedulable:
            return None
        if tolerates_unschedulable(pod.pod):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)


# The extension points NodeUnschedulable implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &NodeUnschedulable{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = NodeUnschedulable
_FILTER: type[FilterPlugin] = NodeUnschedulable
_BATCH_FILTER: type[BatchFilterPlugin] = NodeUnschedulable


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
