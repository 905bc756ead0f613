"""Which cluster events an object change amounts to (upstream ``framework/events.go``)."""

from __future__ import annotations

from ksched.api.core import Node, Pod
from ksched.framework.events import ActionType, ClusterEvent, EventResource
from ksched.framework.resources import pod_requests

EVENT_ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD)


def _scaled_down(new: Pod, old: Pod) -> bool:
    new_req, old_req = pod_requests(new), pod_requests(old)
    return any(name not in new_req or amount > new_req[name] for name, amount in old_req.items())


def pod_changes(new: Pod, old: Pod) -> list[ClusterEvent]:
    """Events for a pod update; a plain Update when nothing scheduling-relevant changed."""
    resource = EventResource.ASSIGNED_POD if new.spec.node_name else EventResource.UNSCHEDULED_POD
    actions: list[ActionType] = []
    if new.metadata.labels != old.metadata.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not new.spec.scheduling_gates and old.spec.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.spec.tolerations) != len(old.spec.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if (
        new.status.resource_claim_statuses != old.status.resource_claim_statuses
        or new.status.extended_resource_claim_status != old.status.extended_resource_claim_status
    ):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [ClusterEvent(resource, int(a)) for a in actions]


def _conditions(node: Node) -> dict[str, str]:
    return {c.type: c.status for c in node.status.conditions}


def node_changes(new: Node, old: Node) -> list[ClusterEvent]:
    """Events for a node update; empty when nothing the scheduler reads changed."""
    actions: list[ActionType] = []
    if new.spec.unschedulable != old.spec.unschedulable and not new.spec.unschedulable:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if new.status.allocatable != old.status.allocatable:
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if new.metadata.labels != old.metadata.labels:
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if new.spec.taints != old.spec.taints:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if _conditions(new) != _conditions(old):
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    if new.metadata.annotations != old.metadata.annotations:
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    if new.status.declared_features != old.status.declared_features:  # kept sorted by the kubelet
        actions.append(ActionType.UPDATE_NODE_DECLARED_FEATURE)
    return [ClusterEvent(EventResource.NODE, int(a)) for a in actions]
