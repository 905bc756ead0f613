"""TaintToleration: a pod fits a node only if it tolerates every NoSchedule/NoExecute taint; nodes
with fewer untolerated PreferNoSchedule taints score higher (upstream ``tainttoleration``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ksched.api.core import Node, Pod, Taint, Toleration
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
from ksched.framework.interfaces import (
    MAX_NODE_SCORE,
    BatchFilterPlugin,
    BatchScorePlugin,
    BoolArray,
    EnqueueExtensions,
    FilterPlugin,
    Int64Array,
    PreScorePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.framework.taints import (
    COMPARISON_OPERATORS_ENABLED,
    PREFER_NO_SCHEDULE,
    is_schedule_effect,
    tolerates,
)
from ksched.plugins.helper.nodeindex import NodeIndex, node_index
from ksched.plugins.helper.normalize import default_normalize_score

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
#: upstream's exported ErrReasonNotMatch (not what Filter reports)
#: the per-node Filter reason in 1.36 (the taint itself is only logged)
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

_CACHE_KEY = NAME


class _PreScoreState:
    """Tolerations that can tolerate PreferNoSchedule taints (effect PreferNoSchedule or empty)."""

    __slots__ = ("tolerations",)

    def __init__(self, tolerations: tuple[Toleration, ...]) -> None:
        self.tolerations = tolerations

    def clone(self) -> _PreScoreState:
        return self


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


class _ClassVerdicts:
    """A pod's answers per taint class of one index version (memoized in ``pod.cache``)."""

    __slots__ = ("fits", "index", "prefer_counts", "version")

    def __init__(self, index: NodeIndex) -> None:
        self.index = index
        self.version = index.version
        self.fits: BoolArray | None = None
        self.prefer_counts: Int64Array | None = None


class TaintToleration:
    name = NAME

    def __init__(self, comparison_operators: bool = COMPARISON_OPERATORS_ENABLED) -> None:
        #: upstream feature gate TaintTolerationComparisonOperators (alpha, off by default in 1.36)
        self.comparison_operators = comparison_operators

    # --- taint checks ----------------------------------------------------------------------------
    def _tolerated(self, tolerations: Sequence[Toleration], taint: Taint) -> bool:
        return any(tolerates(t, taint, self.comparison_operators) for t in tolerations)

    def first_untolerated(self, taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
        """The first NoSchedule/NoExecute taint no toleration tolerates (``FindMatchingUntoleratedTaint``)."""
        for taint in taints:
            if is_schedule_effect(taint) and not self._tolerated(tolerations, taint):
                return taint
        return None

    def count_untolerated_prefer_no_schedule(
        self, taints: Sequence[Taint], tolerations: Sequence[Toleration]
    ) -> int:
        return sum(
            1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not self._tolerated(tolerations, t)
        )

    # --- events ----------------------------------------------------------------------------------
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

    def hint_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the node went from having an untolerated taint (or not existing) to none."""
        old_node, new_node = as_typed(old, new, Node)
        if new_node is None:
            raise TypeError("expected Node, but got None")
        tolerations = pod.spec.tolerations
        was_untolerated = (
            old_node is None or self.first_untolerated(old_node.spec.taints, tolerations) is not None
        )
        is_untolerated = self.first_untolerated(new_node.spec.taints, tolerations) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_pod_toleration_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the rejected pod itself got new tolerations."""
        _, modified = as_typed(old, new, Pod)
        if modified is None:
            raise TypeError("expected Pod, but got None")
        if modified.metadata.uid == pod.metadata.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- Filter ----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        taints = node.node.spec.taints if node.node is not None else []
        if taints and self.first_untolerated(taints, pod.pod.spec.tolerations) is not None:
            return Status.unresolvable(ERR_REASON_UNTOLERATED)
        return None

    def _verdicts(self, pod: PodInfo, snapshot: Snapshot) -> tuple[_ClassVerdicts, NodeIndex]:
        index = node_index(snapshot)
        cached = pod.cache.get(_CACHE_KEY)
        if isinstance(cached, _ClassVerdicts) and cached.index is index and cached.version == index.version:
            return cached, index
        verdicts = _ClassVerdicts(index)
        pod.cache[_CACHE_KEY] = verdicts
        return verdicts, index

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        verdicts, index = self._verdicts(pod, snapshot)
        classes = index.taint_classes()
        if len(classes.taints) == 1:
            return np.ones(len(rows), dtype=np.bool_)
        if verdicts.fits is None:
            tolerations = pod.pod.spec.tolerations
            verdicts.fits = np.fromiter(
                (self.first_untolerated(taints, tolerations) is None for taints in classes.taints),
                dtype=np.bool_,
                count=len(classes.taints),
            )
        return verdicts.fits[classes.class_of_row[rows]]

    # --- Score -----------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(
            PRE_SCORE_STATE_KEY, _PreScoreState(prefer_no_schedule_tolerations(pod.pod.spec.tolerations))
        )
        return None

    @staticmethod
    def _pre_score_state(state: CycleState) -> _PreScoreState:
        found = state.get(PRE_SCORE_STATE_KEY, _PreScoreState)
        if found is None:
            raise RuntimeError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return found

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        tolerations = self._pre_score_state(state).tolerations
        taints = node.node.spec.taints if node.node is not None else []
        return self.count_untolerated_prefer_no_schedule(taints, tolerations)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        tolerations = self._pre_score_state(state).tolerations
        verdicts, index = self._verdicts(pod, snapshot)
        classes = index.taint_classes()
        if len(classes.taints) == 1:
            return np.zeros(len(rows), dtype=np.int64)
        if verdicts.prefer_counts is None:
            verdicts.prefer_counts = np.fromiter(
                (self.count_untolerated_prefer_no_schedule(taints, tolerations) for taints in classes.taints),
                dtype=np.int64,
                count=len(classes.taints),
            )
        return verdicts.prefer_counts[classes.class_of_row[rows]]

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None


# The extension points TaintToleration implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &TaintToleration{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = TaintToleration
_FILTER: type[FilterPlugin] = TaintToleration
_BATCH_FILTER: type[BatchFilterPlugin] = TaintToleration
_PRE_SCORE: type[PreScorePlugin] = TaintToleration
_SCORE: type[ScorePlugin] = TaintToleration
_BATCH_SCORE: type[BatchScorePlugin] = TaintToleration
_SCORE_EXTENSIONS: type[ScoreExtensions] = TaintToleration


def new(args: Any, handle: Handle) -> TaintToleration:
    return TaintToleration()
