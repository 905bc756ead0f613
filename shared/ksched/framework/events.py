"""Cluster events and queueing hints (upstream ``fwk.ClusterEvent`` / ``QueueingHintFn``)."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum, IntFlag

import msgspec

from ksched.api.core import Pod
from ksched.api.kinds import lookup


class ActionType(IntFlag):
    """What happened to an object; Update is split into the fine-grained changes upstream tracks."""

    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_POD_LABEL = 1 << 8
    UPDATE_POD_SCALE_DOWN = 1 << 9
    UPDATE_POD_TOLERATION = 1 << 10
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = (1 << 13) - 1


_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}


def action_label(action: ActionType) -> str:
    """Upstream's ``ActionType.String()``: names joined by ``|`` for combinations."""
    if action in _ACTION_LABELS:
        return _ACTION_LABELS[action]
    parts = [label for flag, label in _ACTION_LABELS.items() if flag.bit_count() == 1 and flag & action]
    return "|".join(parts)


def _of(group: str, kind: str) -> str:
    return lookup(group, kind).event_resource


class EventResource:
    """Resource names as upstream spells them in event labels (a kind's from the registry of kinds)."""

    POD = _of("", "Pod")
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    """Upstream's internal resource of pending-pod events (``UnschedulablePodAdd`` ...)."""
    NODE = _of("", "Node")
    PERSISTENT_VOLUME = _of("", "PersistentVolume")
    PERSISTENT_VOLUME_CLAIM = _of("", "PersistentVolumeClaim")
    CSI_NODE = _of("storage.k8s.io", "CSINode")
    CSI_DRIVER = _of("storage.k8s.io", "CSIDriver")
    VOLUME_ATTACHMENT = _of("storage.k8s.io", "VolumeAttachment")
    CSI_STORAGE_CAPACITY = _of("storage.k8s.io", "CSIStorageCapacity")
    STORAGE_CLASS = _of("storage.k8s.io", "StorageClass")
    RESOURCE_CLAIM = _of("resource.k8s.io", "ResourceClaim")
    RESOURCE_SLICE = _of("resource.k8s.io", "ResourceSlice")
    DEVICE_CLASS = _of("resource.k8s.io", "DeviceClass")
    POD_GROUP = _of("scheduling.k8s.io", "PodGroup")
    WILDCARD = "*"


class ClusterEvent(msgspec.Struct, frozen=True):
    """A change in the cluster that may make rejected pods schedulable."""

    resource: str
    action: int
    custom_label: str = ""

    @property
    def label(self) -> str:
        """``NodeAdd``, ``PodUpdatePodLabel``... as upstream's ``ClusterEvent.Label()``."""
        return self.custom_label or f"{self.resource}{action_label(ActionType(self.action))}"

    @property
    def is_wildcard(self) -> bool:
        """Every resource, every action (upstream ``ClusterEventIsWildCard``)."""
        return self.resource == EventResource.WILDCARD and self.action == ActionType.ALL

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether this registered event covers ``incoming`` (upstream ``MatchClusterEvents``).

        ``incoming`` must be the same or more specific: a registered wildcard resource takes any
        resource (an incoming wildcard only a registered wildcard), Pod takes assigned and unscheduled
        pods, and the incoming action must share a bit with the registered one without being broader
        (a plain Pod/Update does not wake a plugin that registered only Pod/UpdatePodLabel)."""
        if self.is_wildcard:
            return True
        if self.resource == EventResource.WILDCARD:
            resource_ok = True
        elif self.resource == EventResource.POD:
            resource_ok = incoming.resource in _POD_KINDS
        else:
            resource_ok = self.resource == incoming.resource
        return resource_ok and bool(self.action & incoming.action) and incoming.action <= self.action


_POD_KINDS = frozenset({EventResource.POD, EventResource.ASSIGNED_POD, EventResource.UNSCHEDULED_POD})


class QueueingHint(IntEnum):
    QUEUE_SKIP = 0
    QUEUE = 1


QueueingHintFn = Callable[[Pod, object, object], QueueingHint]
"""(rejected pod, old object or None, new object or None) -> hint. An exception means Queue."""


class ClusterEventWithHint(msgspec.Struct, frozen=True):
    event: ClusterEvent
    hint: QueueingHintFn | None = None


# Events the queue itself raises (upstream's framework.EventUnschedulableTimeout etc.)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
