"""The PodTopologySpread plugin: extension points, queueing hints, construction (upstream ``plugin.go``)."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from ksched.api.core import Node, Pod, TopologySpreadConstraint
from ksched.apimachinery.field import aggregate_message
from ksched.apimachinery.labels import SelectorError
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
    BatchFilterPlugin,
    BatchScorePlugin,
    BoolArray,
    EnqueueExtensions,
    FilterPlugin,
    Int64Array,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Status
from ksched.plugins.args.podtopologyspread_validation import validate_pod_topology_spread_args
from ksched.plugins.args.types import SYSTEM_DEFAULTING, PodTopologySpreadArgs
from ksched.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    build_default_constraints,
    filter_constraints,
    node_has_all_keys,
    pod_matches_any,
)
from ksched.plugins.podtopologyspread.filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterState,
    compute_state_direct,
    compute_state_indexed,
    filter_node,
    filter_rows,
    update_with_pod,
)
from ksched.plugins.podtopologyspread.index import SpreadIndex
from ksched.plugins.podtopologyspread.scoring import (
    PRE_SCORE_STATE_KEY,
    PreScoreState,
    compute_pre_score_state,
    normalize,
    score_node,
    score_rows,
)

NAME = "PodTopologySpread"

T = TypeVar("T")


class PodTopologySpread:
    """Spreads pods over topology domains: hard (DoNotSchedule) in Filter, soft (ScheduleAnyway) in Score."""

    name = NAME

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        errors = validate_pod_topology_spread_args(args)
        if errors:
            raise ValueError(aggregate_message(errors))
        self._handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[TopologySpreadConstraint, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else tuple(args.default_constraints)
        )
        self._indexes: weakref.WeakKeyDictionary[Snapshot, SpreadIndex] = weakref.WeakKeyDictionary()

    # --- helpers -----------------------------------------------------------------------------------
    def index_for(self, snapshot: Snapshot) -> SpreadIndex:
        """The incremental index of ``snapshot`` (one per snapshot object, kept across cycles), synced."""
        index = self._indexes.get(snapshot)
        if index is None:
            index = SpreadIndex()
            self._indexes[snapshot] = index
        index.sync(snapshot)
        return index

    def constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's constraints of ``action``, or the default constraints when it has none."""
        if pod.spec.topology_spread_constraints:
            return filter_constraints(pod.spec.topology_spread_constraints, pod.metadata.labels, action)
        if not self.default_constraints:
            return []
        return build_default_constraints(self.default_constraints, pod, self._handle.snapshot.objects, action)

    def _hard_constraints(self, pod: Pod) -> list[Constraint]:
        try:
            return self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            what = "obtaining pod's hard" if pod.spec.topology_spread_constraints else "setting default hard"
            raise SelectorError(f"{what} topology spread constraints: {exc}") from exc

    # --- PreFilter / Filter ------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._hard_constraints(pod.pod)
        except SelectorError as exc:
            return None, Status.as_error(f"get constraints from pod: {exc}")
        if not constraints:
            return None, Status.skip()
        snapshot = self._handle.snapshot
        index = self.index_for(snapshot)
        if _is_snapshot_list(nodes, snapshot):
            s = compute_state_indexed(index, pod, constraints)
        else:
            s = compute_state_direct(index, pod, constraints, nodes)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        s = _read(state, PRE_FILTER_STATE_KEY, PreFilterState)
        if isinstance(s, Status):
            return s
        update_with_pod(s, to_add.pod, pod, node.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = _read(state, PRE_FILTER_STATE_KEY, PreFilterState)
        if isinstance(s, Status):
            return s
        update_with_pod(s, to_remove.pod, pod, node.node, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = _read(state, PRE_FILTER_STATE_KEY, PreFilterState)
        if isinstance(s, Status):
            return s
        if not s.constraints:
            return None
        if node.node is None:
            return Status.as_error("node not found")
        return filter_node(s, node.node)

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        s = _read(state, PRE_FILTER_STATE_KEY, PreFilterState)
        if isinstance(s, Status) or not s.constraints or snapshot is not self._handle.snapshot:
            nodes = snapshot.nodes
            return np.fromiter(
                (self.filter(state, pod, nodes[r]) is None for r in rows.tolist()),
                dtype=np.bool_,
                count=len(rows),
            )
        self.index_for(snapshot)
        return filter_rows(s, rows)

    # --- PreScore / Score ----------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        snapshot = self._handle.snapshot
        if not snapshot.nodes:
            return Status.skip()
        spec_constraints = bool(pod.pod.spec.topology_spread_constraints)
        try:
            constraints = self.constraints(pod.pod, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            what = "obtaining pod's soft" if spec_constraints else "setting default soft"
            return Status.as_error(f"calculating preScoreState: {what} topology spread constraints: {exc}")
        if not constraints:
            return Status.skip()
        require_all = spec_constraints or not self.system_defaulted
        s = compute_pre_score_state(self.index_for(snapshot), pod, constraints, nodes, require_all)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s = _read(state, PRE_SCORE_STATE_KEY, PreScoreState)
        if isinstance(s, Status):
            raise KeyError(s.message)
        return score_node(s, node)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        s = _read(state, PRE_SCORE_STATE_KEY, PreScoreState)
        if isinstance(s, Status):
            raise KeyError(s.message)
        if snapshot is not self._handle.snapshot:
            nodes = snapshot.nodes
            return np.fromiter(
                (score_node(s, nodes[r]) for r in rows.tolist()), dtype=np.int64, count=len(rows)
            )
        return score_rows(s, rows)

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None:
        s = _read(state, PRE_SCORE_STATE_KEY, PreScoreState)
        if isinstance(s, Status):
            return s
        normalize(s, nodes, scores)
        return None

    # --- queueing hints ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, pod_actions), self.hint_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions), self.hint_node_change),
        ]

    def hint_pod_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when an assigned pod in the namespace starts or stops matching a hard constraint."""
        original, modified = as_typed(old, new, Pod)
        if (modified is not None and not _involved(modified, pod)) or (
            original is not None and not _involved(original, pod)
        ):
            return QueueingHint.QUEUE_SKIP
        constraints = self._hard_constraints(pod)
        if modified is not None and original is not None:
            if (
                pod.metadata.uid == modified.metadata.uid
                and modified.spec.tolerations != original.spec.tolerations
                and any(c.honor_node_taints for c in constraints)
            ):
                return QueueingHint.QUEUE
            if modified.metadata.labels == original.metadata.labels:
                return QueueingHint.QUEUE_SKIP
            for c in constraints:
                if c.matches(original.metadata.labels) != c.matches(modified.metadata.labels):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = modified if modified is not None else original
        if changed is not None and pod_matches_any(constraints, changed.metadata.labels):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def hint_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a node gains, loses or changes a topology key of the pod, or its taints change."""
        original, modified = as_typed(old, new, Node)
        constraints = self._hard_constraints(pod)
        was = original is not None and node_has_all_keys(original.metadata.labels, constraints)
        now = modified is not None and node_has_all_keys(modified.metadata.labels, constraints)
        if original is not None and modified is not None:
            if was != now:
                return QueueingHint.QUEUE
            if now and (
                any(
                    original.metadata.labels.get(c.topology_key)
                    != modified.metadata.labels.get(c.topology_key)
                    for c in constraints
                )
                or original.spec.taints != modified.spec.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if modified is not None:
            return QueueingHint.QUEUE if now else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if was else QueueingHint.QUEUE_SKIP


# The extension points PodTopologySpread implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &PodTopologySpread{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = PodTopologySpread
_PRE_FILTER: type[PreFilterPlugin] = PodTopologySpread
_PRE_FILTER_EXTENSIONS: type[PreFilterExtensions] = PodTopologySpread
_FILTER: type[FilterPlugin] = PodTopologySpread
_BATCH_FILTER: type[BatchFilterPlugin] = PodTopologySpread
_PRE_SCORE: type[PreScorePlugin] = PodTopologySpread
_SCORE: type[ScorePlugin] = PodTopologySpread
_BATCH_SCORE: type[BatchScorePlugin] = PodTopologySpread
_SCORE_EXTENSIONS: type[ScoreExtensions] = PodTopologySpread


def _is_snapshot_list(nodes: Sequence[NodeInfo], snapshot: Snapshot) -> bool:
    """Whether ``nodes`` is the snapshot's node list (the runtime passes all of it to PreFilter)."""
    own = snapshot.nodes
    if nodes is own:
        return True
    if len(nodes) != len(own):
        return False
    return not own or (nodes[0] is own[0] and nodes[-1] is own[-1])


def _read(state: CycleState, key: str, kind: type[T]) -> T | Status:
    try:
        value = state.read(key)
    except KeyError:
        return Status.as_error(f'reading "{key}" from cycleState: not found')
    if not isinstance(value, kind):
        return Status.as_error(f"{value!r} convert to podtopologyspread.{kind.__name__} error")
    return value


def _involved(incoming: Pod, spreading: Pod) -> bool:
    """Upstream ``involvedInTopologySpreading``: the pod itself, or an assigned/nominated pod of its ns."""
    if incoming.metadata.uid == spreading.metadata.uid:
        return True
    if not incoming.spec.node_name and not incoming.status.nominated_node_name:
        return False
    return incoming.metadata.namespace == spreading.metadata.namespace


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args if args is not None else PodTopologySpreadArgs(), handle)
