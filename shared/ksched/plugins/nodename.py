"""NodeName: a pod that names its node (``spec.nodeName``) fits only there."""

from __future__ import annotations

from typing import Any

import numpy as np

from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from ksched.framework.handle import Handle
from ksched.framework.interfaces import BatchFilterPlugin, BoolArray, EnqueueExtensions, FilterPlugin, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        wanted = pod.pod.spec.node_name
        if wanted and wanted != node.name:
            return Status.unresolvable(ERR_REASON)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return np.ones(len(rows), dtype=np.bool_)
        target = snapshot.node_map.get(wanted)
        if target is None:
            return np.zeros(len(rows), dtype=np.bool_)
        return np.asarray(rows == target.index, dtype=np.bool_)


# The extension points NodeName implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &NodeName{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = NodeName
_FILTER: type[FilterPlugin] = NodeName
_BATCH_FILTER: type[BatchFilterPlugin] = NodeName


def new(args: Any, handle: Handle) -> NodeName:
    return NodeName()
