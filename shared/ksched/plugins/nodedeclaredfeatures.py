"""NodeDeclaredFeatures: a pod that needs a node feature fits only on nodes that declare it
(upstream ``nodedeclaredfeatures``, beta and on by default in 1.36).

Nodes list what they support in ``status.declaredFeatures``; which features a pod needs is
inferred from its spec by the registry of upstream's ``component-helpers/nodedeclaredfeatures``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ksched.api.core import Node, Pod, PodSpec
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
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.status import Status

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match Pod's required features"
#: the scheduler's own version: features whose max version is older are no longer required
SCHEDULER_VERSION = (1, 36, 2)

Version = tuple[int, int, int]


@dataclass(frozen=True)
class Feature:
    """A node feature: its name and whether a pod's spec needs it to be scheduled."""

    name: str
    needed_by: Callable[[PodSpec], bool]
    max_version: Version | None = None


def _restarts_all_containers(spec: PodSpec) -> bool:
    return any(
        rule.action == "RestartAllContainers"
        for container in (*spec.containers, *spec.init_containers)
        for rule in container.restart_policy_rules
    )


def _host_network_in_user_namespace(spec: PodSpec) -> bool:
    return spec.host_network and spec.host_users is False


def _never(spec: PodSpec) -> bool:
    return False


#: upstream's registry (1.36); the resize features matter only for pod updates, not scheduling
DEFAULT_FEATURES: tuple[Feature, ...] = (
    Feature("ExtendWebSocketsToKubelet", _never),
    Feature("InPlacePodLevelResourcesVerticalScaling", _never),
    Feature("InPlacePodVerticalScalingInitContainers", _never),
    Feature("RestartAllContainersOnContainerExits", _restarts_all_containers),
    Feature("UserNamespacesHostNetworkSupport", _host_network_in_user_namespace),
)


class _PreFilterState:
    """The features the pod needs; independent of other pods, so clone shares it."""

    __slots__ = ("required",)

    def __init__(self, required: frozenset[str]) -> None:
        self.required = required

    def clone(self) -> _PreFilterState:
        return self


class NodeDeclaredFeatures:
    name = NAME

    def __init__(
        self, features: Sequence[Feature] = DEFAULT_FEATURES, version: Version | None = SCHEDULER_VERSION
    ) -> None:
        self.features = tuple(sorted(features, key=lambda f: f.name))
        self.version = version

    def required_features(self, spec: PodSpec) -> frozenset[str]:
        """The features ``spec`` needs on its node (upstream ``InferForPodScheduling``)."""
        if self.version is None:
            raise ValueError("target version cannot be nil")
        return frozenset(
            f.name
            for f in self.features
            if (f.max_version is None or self.version <= f.max_version) and f.needed_by(spec)
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                self.hint_node_changed,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.UPDATE), self.hint_pod_updated),
        ]

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = self.required_features(pod.pod.spec)
        if not required:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        found = state.get(PRE_FILTER_STATE_KEY, _PreFilterState)
        if found is None:
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found')
        declared = node.node.status.declared_features if node.node is not None else ()
        if not found.required.issubset(declared):
            return Status.unresolvable(ERR_REASON)
        return None

    @staticmethod
    def hint_node_changed(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a node is added or its declared features changed."""
        before, after = as_typed(old, new, Node)
        if after is None:
            raise TypeError("expected Node, but got None")
        if before is not None and before.status.declared_features == after.status.declared_features:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def hint_pod_updated(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the pod's own update changed the features it needs."""
        before, after = as_typed(old, new, Pod)
        if after is None or before is None:
            raise TypeError("expected Pod, but got None")
        if after.metadata.uid != pod.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        if self.required_features(before.spec) == self.required_features(after.spec):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


# The extension points NodeDeclaredFeatures implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &NodeDeclaredFeatures{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = NodeDeclaredFeatures
_PRE_FILTER: type[PreFilterPlugin] = NodeDeclaredFeatures
_FILTER: type[FilterPlugin] = NodeDeclaredFeatures


def new(args: Any, handle: Handle) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures()
