"""NodeAffinity: ``spec.nodeSelector`` and required node affinity filter nodes; preferred node
affinity terms score them; the plugin args may add affinity for every pod (upstream ``nodeaffinity``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ksched.api.core import Node, Pod
from ksched.apimachinery.field import aggregate_message
from ksched.apimachinery.nodeselector import (
    OBJECT_NAME_FIELD,
    NodeSelector,
    NodeSelectorError,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)
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
from ksched.plugins.args.nodeaffinity_validation import validate_node_affinity_args
from ksched.plugins.args.types import NodeAffinityArgs
from ksched.plugins.helper.nodeindex import node_index
from ksched.plugins.helper.nodeselection import preferred_rows, required_affinity_rows, selector_rows
from ksched.plugins.helper.normalize import default_normalize_score

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REQUIRED_CACHE = NAME + "/required"
_PREFERRED_CACHE = NAME + "/preferred"


class _PreFilterState:
    __slots__ = ("required",)

    def __init__(self, required: RequiredNodeAffinity) -> None:
        self.required = required

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    __slots__ = ("preferred",)

    def __init__(self, preferred: PreferredSchedulingTerms | None) -> None:
        self.preferred = preferred

    def clone(self) -> _PreScoreState:
        return self


def required_node_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """The pod's compiled required affinity, memoized in ``pod.cache``."""
    cached = pod.cache.get(_REQUIRED_CACHE)
    if isinstance(cached, RequiredNodeAffinity):
        return cached
    required = RequiredNodeAffinity(pod.pod)
    pod.cache[_REQUIRED_CACHE] = required
    return required


def preferred_node_affinity(pod: PodInfo) -> PreferredSchedulingTerms | None:
    """The pod's compiled preferred terms (None without any); raises NodeSelectorError if broken."""
    cached = pod.cache.get(_PREFERRED_CACHE, _PREFERRED_CACHE)
    if cached is _PREFERRED_CACHE:
        aff = pod.pod.spec.affinity
        terms = (
            aff.node_affinity.preferred_during_scheduling_ignored_during_execution
            if aff is not None and aff.node_affinity is not None
            else []
        )
        try:
            cached = PreferredSchedulingTerms(terms) if terms else None
        except NodeSelectorError as exc:
            cached = exc
        pod.cache[_PREFERRED_CACHE] = cached
    if isinstance(cached, NodeSelectorError):
        raise cached
    return cached if isinstance(cached, PreferredSchedulingTerms) else None


def _node_names_of_required_terms(pod: Pod) -> frozenset[str] | None:
    """Node names the required terms pin through ``matchFields metadata.name In``; None when a term
    does not pin names (terms are ORed, so every node is then eligible)."""
    aff = pod.spec.affinity
    assert aff is not None and aff.node_affinity is not None
    required = aff.node_affinity.required_during_scheduling_ignored_during_execution
    assert required is not None
    names: set[str] = set()
    for term in required.node_selector_terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == OBJECT_NAME_FIELD and req.operator == "In":
                values = set(req.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


class NodeAffinity:
    name = NAME

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        errors = validate_node_affinity_args(args)
        if errors:
            raise ValueError(aggregate_message(errors))
        self.added_required: NodeSelector | None = None
        self.added_preferred: PreferredSchedulingTerms | None = None
        added = args.added_affinity if args is not None else None
        if added is not None:
            if added.required_during_scheduling_ignored_during_execution is not None:
                self.added_required = NodeSelector(added.required_during_scheduling_ignored_during_execution)
            if added.preferred_during_scheduling_ignored_during_execution:
                self.added_preferred = PreferredSchedulingTerms(
                    added.preferred_during_scheduling_ignored_during_execution
                )

    # --- events ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.hint_node_change,
            )
        ]

    def hint_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when a node was added that matches, or a node changed from not matching to matching."""
        old_node, new_node = as_typed(old, new, Node)
        if new_node is None:
            raise TypeError("expected Node, but got None")
        if self.added_required is not None and not self.added_required.matches_node(new_node):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        if not required.match(new_node):
            return QueueingHint.QUEUE_SKIP
        if old_node is None:
            return QueueingHint.QUEUE
        if required.match(old_node):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # --- PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        spec = pod.pod.spec
        na = spec.affinity.node_affinity if spec.affinity is not None else None
        required = na.required_during_scheduling_ignored_during_execution if na is not None else None
        if required is None and self.added_required is None and not spec.node_selector:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required_node_affinity(pod)))
        if required is None or not required.node_selector_terms:
            return None, None
        names = _node_names_of_required_terms(pod.pod)
        if names is None:
            return None, None
        if not names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names), None

    def _required(self, state: CycleState, pod: PodInfo) -> RequiredNodeAffinity:
        found = state.get(PRE_FILTER_STATE_KEY, _PreFilterState)
        # Without PreFilter state (PreFilter disabled) compute it here, as upstream does.
        return found.required if found is not None else required_node_affinity(pod)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        n = node.node
        labels = n.metadata.labels if n is not None else {}
        if self.added_required is not None and not self.added_required.matches(labels, node.name):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        if not self._required(state, pod).matches(labels, node.name):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        index = node_index(snapshot)
        out = required_affinity_rows(self._required(state, pod), index, rows)
        if self.added_required is not None:
            out &= selector_rows(self.added_required, index, rows)
        return out

    # --- Score -----------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        try:
            preferred = preferred_node_affinity(pod)
        except NodeSelectorError as exc:
            return Status.as_error(exc)
        if preferred is None and self.added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return None

    def _preferred(self, state: CycleState, pod: PodInfo) -> PreferredSchedulingTerms | None:
        found = state.get(PRE_SCORE_STATE_KEY, _PreScoreState)
        # Without PreScore state compute it here (raises on parse errors), as upstream does.
        return found.preferred if found is not None else preferred_node_affinity(pod)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        n = node.node
        labels = n.metadata.labels if n is not None else {}
        total = 0
        if self.added_preferred is not None:
            total += self.added_preferred.score(labels, node.name)
        preferred = self._preferred(state, pod)
        if preferred is not None:
            total += preferred.score(labels, node.name)
        return total

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        index = node_index(snapshot)
        out = np.zeros(len(rows), dtype=np.int64)
        if self.added_preferred is not None:
            out += preferred_rows(self.added_preferred, index, rows)
        preferred = self._preferred(state, pod)
        if preferred is not None:
            out += preferred_rows(preferred, index, rows)
        return out

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None


# The extension points NodeAffinity implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &NodeAffinity{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = NodeAffinity
_PRE_FILTER: type[PreFilterPlugin] = NodeAffinity
_FILTER: type[FilterPlugin] = NodeAffinity
_BATCH_FILTER: type[BatchFilterPlugin] = NodeAffinity
_PRE_SCORE: type[PreScorePlugin] = NodeAffinity
_SCORE: type[ScorePlugin] = NodeAffinity
_BATCH_SCORE: type[BatchScorePlugin] = NodeAffinity
_SCORE_EXTENSIONS: type[ScoreExtensions] = NodeAffinity


def new(args: Any, handle: Handle) -> NodeAffinity:
    if args is not None and not isinstance(args, NodeAffinityArgs):
        raise TypeError(f"args are not of type NodeAffinityArgs, got {type(args).__name__}")
    return NodeAffinity(args)
