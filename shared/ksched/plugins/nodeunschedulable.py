"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) only take pods that tolerate it."""

from __future__ import annotations

from typing import Any

from ksched.api.core import Node, Pod, Taint
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.framework.taints import NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, tolerations_tolerate
from ksched.plugins.hintutil import as_typed

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"

_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def tolerates_unschedulable(pod: Pod) -> bool:
    return tolerations_tolerate(pod.spec.tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    name = NAME

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


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
