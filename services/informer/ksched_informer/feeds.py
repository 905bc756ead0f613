"""What the queue must hear about a change: pending-pod events and cluster events."""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec

from ksched.api.core import Node, Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import (
    ClusterEventMsg,
    PendingPod,
    PendingPodAction,
    PendingPodEvent,
    PendingPodGroup,
)
from ksched.framework.changes import node_changes, pod_changes
from ksched.framework.events import ActionType, ClusterEvent, EventResource


class NominationFeed:
    """Which pending-pod events the scheduler replicas' nominations need (they follow only the feed
    batches holding one, ``P.feed.nominated``): a pod nominated to a node, a pod that was (its
    nomination changed or cleared, or it left the pending pods), and a pending pod deleted or moved
    to another scheduler (a replica's own nomination may not have reached the API yet). A pod
    assumed or bound without a nomination the API showed is none of it: a replica drops its own
    nominations of the pods its snapshot shows bound."""

    def __init__(self) -> None:
        self._nominated: set[str] = set()
        """Pods whose last event carried a nomination."""

    def concerns(self, event: PendingPodEvent) -> bool:
        uid = event.pod.uid
        had = uid in self._nominated
        if event.action == PendingPodAction.DELETE:
            self._nominated.discard(uid)
            return had or event.reason not in (PodLifecycle.ASSUMED, PodLifecycle.BOUND)
        if event.pod.nominated_node_name:
            self._nominated.add(uid)
            return True
        self._nominated.discard(uid)
        return had


def pending_pod(pod: Pod, group: PendingPodGroup | None = None, *, with_json: bool = True) -> PendingPod:
    """The queue's view of ``pod`` (``group``: its pod group as the cache sees it); ``with_json=False``
    leaves out the pod's JSON (a DELETE: its readers need the uid, name and scheduler only, and it is
    most of the message)."""
    meta, spec = pod.metadata, pod.spec
    return PendingPod(
        uid=meta.uid,
        namespace=meta.namespace,
        name=meta.name,
        scheduler_name=spec.scheduler_name,
        priority=spec.priority or 0,
        creation_timestamp=meta.creation_timestamp or "",
        scheduling_gates=[g.name for g in spec.scheduling_gates],
        resource_version=meta.resource_version,
        nominated_node_name=pod.status.nominated_node_name or "",
        pod=msgspec.json.encode(pod) if with_json else b"",
        group=group,
    )


def pending_event(
    action: PendingPodAction,
    pod: Pod,
    epoch: str,
    generation: int,
    reason: str = "",
    group: PendingPodGroup | None = None,
) -> PendingPodEvent:
    return PendingPodEvent(
        action=action,
        pod=pending_pod(pod, group, with_json=action != PendingPodAction.DELETE),
        reason=reason,
        epoch=epoch,
        generation=generation,
        ts=time.time(),
    )


def cluster_events(
    events: Sequence[ClusterEvent],
    key: str,
    old: object | None,
    new: object | None,
    epoch: str,
    generation: int,
) -> list[ClusterEventMsg]:
    """One message per event of one change (the objects encoded once for all of them)."""
    old_json = msgspec.json.encode(old) if old is not None else None
    new_json = msgspec.json.encode(new) if new is not None else None
    now = time.time()
    return [
        ClusterEventMsg(
            resource=event.resource,
            action=event.action,
            key=key,
            old=old_json,
            new=new_json,
            epoch=epoch,
            generation=generation,
            ts=now,
        )
        for event in events
    ]


def node_events(old: Node | None, new: Node | None) -> list[ClusterEvent]:
    if old is None:
        return [ClusterEvent(EventResource.NODE, ActionType.ADD)]
    if new is None:
        return [ClusterEvent(EventResource.NODE, ActionType.DELETE)]
    return node_changes(new, old)


def assigned_pod_events(old: Pod | None, new: Pod | None) -> list[ClusterEvent]:
    """Events for a pod placed on a node (bound), as upstream's assigned-pod handlers raise them."""
    if old is None or not old.spec.node_name:
        return [ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD)]
    if new is None:
        return [ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)]
    return pod_changes(new, old)


def object_events(resource: str, old: object | None, new: object | None) -> list[ClusterEvent]:
    if old is None:
        return [ClusterEvent(resource, ActionType.ADD)]
    if new is None:
        return [ClusterEvent(resource, ActionType.DELETE)]
    return [ClusterEvent(resource, ActionType.UPDATE)]
