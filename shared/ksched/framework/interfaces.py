"""One Protocol per extension point (upstream ``framework/interface.go``). No runtime code.

A plugin is any object with a ``name`` and the methods of the extension points it implements.
Plugins receive a :class:`PodInfo` (the pod is ``pod_info.pod``) and :class:`NodeInfo` objects.
Returning ``None`` from a method that returns ``Status | None`` means Success. An exception
raised by a plugin is turned into an Error status naming the plugin.

Batch variants (``filter_batch``, ``score_batch``) work on rows of the snapshot's columns
and must agree exactly with the per-node method; the runtime prefers them when present.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ksched.api.core import Pod
    from ksched.framework.cycle_state import CycleState
    from ksched.framework.events import ClusterEventWithHint
    from ksched.framework.nodeinfo import NodeInfo
    from ksched.framework.podgroups import GroupKey, PlacementScore, PodGroupAssignments
    from ksched.framework.podinfo import PodInfo
    from ksched.framework.results import NodeToStatus, PostFilterResult, PreFilterResult, QueuedPodInfo
    from ksched.framework.snapshot import Snapshot
    from ksched.framework.status import Status

Rows = npt.NDArray[np.intp]
"""Row numbers of nodes in the snapshot's columns (``snapshot.nodes[row]``)."""
BoolArray = npt.NDArray[np.bool_]
Int64Array = npt.NDArray[np.int64]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class QueueSortKey(Protocol):
    """Optional for a QueueSort plugin whose order is a key's: ``less(a, b)`` exactly when
    ``sort_key(a) < sort_key(b)``. The queue then orders activeQ by comparing keys (in C) instead of
    calling ``less`` for each comparison. A plugin without it is ordered by ``less``."""

    def sort_key(self, info: QueuedPodInfo) -> tuple[float, ...]: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """AddPod/RemovePod: adjust PreFilter state for a pod added to / removed from ``node``."""

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """``filter_batch`` returns, for each row, whether ``filter`` would return Success."""

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class AsyncPostFilterPlugin(PostFilterPlugin, Protocol):
    """A PostFilter plugin that also has an async form, used when extenders are configured."""

    async def post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """``score`` returns the node's raw score; raise to fail the cycle with an Error."""

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array: ...


@runtime_checkable
class ScoreExtensions(Plugin, Protocol):
    """NormalizeScore: rewrite ``scores`` (aligned with ``nodes``) in place into 0..100."""

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Allow (None), reject, or Wait with a timeout in seconds."""

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]: ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    """Scores candidate placements of a pod group (TopologyAwareWorkloadScheduling, alpha): the
    score of one placement, then every placement's scores normalized in place into 0..100."""

    def score_placement(
        self, state: CycleState, group: GroupKey, placement: PodGroupAssignments
    ) -> tuple[int, Status | None]: ...

    def normalize_placement_score(
        self, state: CycleState, group: GroupKey, scores: list[PlacementScore]
    ) -> Status | None: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Return a Skip status to let the next bind plugin handle the pod."""

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PlacementStatePlugin(Plugin, Protocol):
    """A plugin whose exported state (``Placement.plugin_state``, docs/plugin-state-handover.md)
    takes something no other placement may take (DynamicResources: devices). The informer's assume
    check asks it whether a placement decided on an older snapshot still may take it (``''``: yes,
    else why not), holds what an accepted placement takes until the cluster shows it, and releases it
    when the placement is bound (``dropped`` False) or will not be (``dropped`` True)."""

    def placement_conflict(self, data: bytes, node: NodeInfo) -> str: ...

    def hold_placement(self, pod_uid: str, data: bytes) -> None: ...

    def release_placement(self, pod_uid: str, dropped: bool) -> None: ...
