"""GangScheduling (gate GangScheduling): all-or-nothing placement of the pods of a PodGroup with the
gang policy (upstream ``plugins/gangscheduling``).

- PreEnqueue holds a member until its PodGroup exists and the scheduler knows ``minCount`` of its pods.
- Permit makes each member wait (5 minutes at most) until ``minCount`` members are scheduled (assumed
  or bound), then allows every waiting member. In a pod group cycle the group's state comes from the
  snapshot, as upstream's; ksched resolves those waits within the cycle (docs/gang.md).
- Queueing hints: a new pod of the same group, or the creation of the group's PodGroup.
"""

from __future__ import annotations

from typing import Any

from ksched.api.core import Pod
from ksched.api.scheduling import PodGroup
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
from ksched.framework.interfaces import EnqueueExtensions, PermitPlugin, PreEnqueuePlugin
from ksched.framework.podgroups import group_key, matching_scheduling_group, not_found
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status

NAME = "GangScheduling"
PERMIT_TIMEOUT = 5 * 60.0
"""Seconds a gang member waits at Permit for the quorum before it is rejected (upstream 5 minutes)."""

WAITING_FOR_POD_GROUP = 'waiting for pods\'s pod group "{}" to appear in scheduling queue'
WAITING_FOR_PODS = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"


class GangScheduling:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    # --- EnqueueExtensions -----------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A new pod may complete a gang (the group reference is immutable: no Pod/Update).
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.ADD), self.is_schedulable_after_pod_added
            ),
            # The PodGroup's creation may release a waiting gang (PodGroups are immutable: no Update).
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD),
                self.is_schedulable_after_pod_group_added,
            ),
        ]

    @staticmethod
    def is_schedulable_after_pod_added(pod: Pod, old: object, new: object) -> QueueingHint:
        _, added = as_typed(old, new, Pod)
        if added is None or not matching_scheduling_group(pod, added):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def is_schedulable_after_pod_group_added(pod: Pod, old: object, new: object) -> QueueingHint:
        _, added = as_typed(old, new, PodGroup)
        key = group_key(pod)
        if added is None or key is None or key != (added.metadata.namespace, added.metadata.name):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # --- PreEnqueue ------------------------------------------------------------------------------------
    def pre_enqueue(self, pod: Pod) -> Status | None:
        key = group_key(pod)
        if key is None:
            return None
        namespace, name = key
        group = self.handle.snapshot.objects.pod_groups.get(f"{namespace}/{name}")
        if group is None:
            return Status.unresolvable(WAITING_FOR_POD_GROUP.format(name))
        min_count = group.min_count
        if min_count is None:
            return None  # not a gang
        state = self.handle.pod_group_states.get(namespace, name)
        if state is None:
            return Status.as_error(not_found(namespace, name))
        if state.all_pods_count() < min_count:
            return Status.unresolvable(WAITING_FOR_PODS)
        return None

    # --- Permit ----------------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        key = group_key(pod.pod)
        if key is None:
            return None, 0.0
        namespace, name = key
        group = self.handle.snapshot.objects.pod_groups.get(f"{namespace}/{name}")
        if group is None:
            return Status.as_error(
                f'failed to get podGroup {namespace}/{name}: podgroup.scheduling.k8s.io "{name}" not found'
            ), 0.0
        min_count = group.min_count
        if min_count is None:
            return None, 0.0
        lister = (
            self.handle.snapshot_pod_group_states if state.pod_group_cycle else self.handle.pod_group_states
        )
        group_state = lister.get(namespace, name)
        if group_state is None:
            return Status.as_error(not_found(namespace, name)), 0.0
        if group_state.scheduled_pods_count() < min_count:
            # Members still queued are retried at once: this one may be what they waited for.
            self.handle.activate(group_state.unscheduled_pods())
            return Status(Code.WAIT, WAITING_FOR_QUORUM), PERMIT_TIMEOUT
        # The quorum is met: this member goes, and so does every member waiting for it.
        for uid in group_state.assumed_pods():
            waiting = self.handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0


_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = GangScheduling
_PRE_ENQUEUE: type[PreEnqueuePlugin] = GangScheduling
_PERMIT: type[PermitPlugin] = GangScheduling


def new(args: Any, handle: Handle) -> GangScheduling:
    return GangScheduling(handle)
