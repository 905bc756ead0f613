"""InterPodAffinity: required/preferred pod affinity and anti-affinity (upstream ``interpodaffinity``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from ksched.api.core import Node, Pod
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
from ksched.plugins.args.interpodaffinity_validation import validate_inter_pod_affinity_args
from ksched.plugins.args.types import InterPodAffinityArgs
from ksched.plugins.interpodaffinity.filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterState,
    build_pre_filter_state,
    existing_anti_by_walk,
    existing_anti_from_index,
)
from ksched.plugins.interpodaffinity.index import AffinityIndex
from ksched.plugins.interpodaffinity.scoring import (
    PRE_SCORE_STATE_KEY,
    Contribution,
    PreScoreState,
    TopologyScore,
    existing_terms_score_by_walk,
    existing_terms_score_from_index,
    incoming_terms_score,
    normalize,
)
from ksched.plugins.interpodaffinity.terms import (
    AffinityTerm,
    WeightedTerm,
    parsed_for_hint,
    parsed_terms,
    pod_matches_all_terms,
    resolve_namespaces,
)

NAME: Final = "InterPodAffinity"


def _namespace_table(snapshot: Snapshot) -> dict[str, Mapping[str, str]]:
    return {name: ns.metadata.labels for name, ns in snapshot.objects.namespaces.items()}


def resolve_terms(snapshot: Snapshot, terms: Sequence[AffinityTerm]) -> list[AffinityTerm]:
    """The incoming pod's required ``terms`` with namespace selectors merged into their namespaces,
    as PreFilter matches them (:func:`resolve_namespaces` over the snapshot's namespaces)."""
    if not any(t.uses_namespace_labels for t in terms):
        return list(terms)
    table = _namespace_table(snapshot)
    return [resolve_namespaces(t, table) for t in terms]


def _is_unassigned(pod: Pod) -> bool:
    return not pod.spec.node_name and not pod.status.nominated_node_name


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.index = AffinityIndex()
        #: walk the snapshot's short lists of nodes with affinity pods instead of syncing the index
        #: when they hold at most this fraction of the nodes
        self.walk_fraction = 0.1

    # --- helpers ---------------------------------------------------------------------------------
    def _resolve_weighted(self, snapshot: Snapshot, terms: Sequence[WeightedTerm]) -> list[WeightedTerm]:
        if not any(wt.term.uses_namespace_labels for wt in terms):
            return list(terms)
        table = _namespace_table(snapshot)
        return [WeightedTerm(resolve_namespaces(wt.term, table), wt.weight) for wt in terms]

    def _synced_index(self, snapshot: Snapshot) -> AffinityIndex:
        self.index.sync(snapshot)
        return self.index

    def _nodes_to_walk(
        self, snapshot: Snapshot, listing: Callable[[], list[NodeInfo]]
    ) -> list[NodeInfo] | None:
        """For counts that only existing pods with affinity contribute: the nodes to walk (as
        upstream does), or None to read the synced index instead.

        Syncing scans every node's generation, so while the index is stale and the snapshot's
        cached list of nodes holding such pods is short (or empty), walking it is cheaper.
        """
        if self.index.synced_with(snapshot):
            return None
        nodes = listing()
        if len(nodes) <= self.walk_fraction * len(snapshot.nodes):
            return nodes
        return None

    # --- PreFilter / Filter ----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Counts over the whole snapshot (upstream reads the same nodes: all of them)."""
        parsed = parsed_terms(pod)
        if parsed.error is not None:
            return None, Status.unresolvable(f"parsing pod: {parsed.error}")
        snapshot = self.handle.snapshot
        ns_labels = snapshot.objects.namespace_labels(pod.namespace)
        has_terms = bool(parsed.required_affinity or parsed.required_anti_affinity)
        walk = (
            None
            if has_terms
            else self._nodes_to_walk(snapshot, snapshot.have_pods_with_required_anti_affinity)
        )
        if walk is not None:
            existing = existing_anti_by_walk(walk, pod, ns_labels)
            index = None
        else:
            index = self._synced_index(snapshot)
            existing = existing_anti_from_index(index, pod, ns_labels)
        if not existing and not has_terms:
            return None, Status.skip()
        affinity_terms = resolve_terms(snapshot, parsed.required_affinity)
        anti_terms = resolve_terms(snapshot, parsed.required_anti_affinity)
        s = build_pre_filter_state(pod, affinity_terms, anti_terms, ns_labels, existing, index)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    @staticmethod
    def _pre_filter_state(state: CycleState) -> PreFilterState:
        s = state.get(PRE_FILTER_STATE_KEY, PreFilterState)
        if s is None:
            raise LookupError(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return s

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            s = self._pre_filter_state(state)
        except LookupError as exc:
            return Status.as_error(exc)
        return s.filter(node.labels)

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        s = self._pre_filter_state(state)
        return s.filter_batch(self._synced_index(snapshot), rows)

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        try:
            s = self._pre_filter_state(state)
        except LookupError as exc:
            return Status.as_error(exc)
        s.update_with_pod(to_add, node.labels, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        try:
            s = self._pre_filter_state(state)
        except LookupError as exc:
            return Status.as_error(exc)
        s.update_with_pod(to_remove, node.labels, -1)
        return None

    # --- PreScore / Score ------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        aff = pod.pod.spec.affinity
        has_constraints = aff is not None and (
            (
                aff.pod_affinity is not None
                and bool(aff.pod_affinity.preferred_during_scheduling_ignored_during_execution)
            )
            or (
                aff.pod_anti_affinity is not None
                and bool(aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution)
            )
        )
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        parsed = parsed_terms(pod)
        if parsed.error is not None:
            return Status.as_error(f"failed to parse pod: {parsed.error}")
        snapshot = self.handle.snapshot
        ns_labels = snapshot.objects.namespace_labels(pod.namespace)
        hard_weight = self.args.hard_pod_affinity_weight
        walk = None if has_constraints else self._nodes_to_walk(snapshot, snapshot.have_pods_with_affinity)
        if walk is not None:
            topology_score: TopologyScore = {}
            existing_terms_score_by_walk(topology_score, walk, pod, ns_labels, hard_weight)
            scores = PreScoreState.of(topology_score)
        else:
            index = self._synced_index(snapshot)
            preferred = self._resolve_weighted(snapshot, parsed.preferred_affinity)
            preferred_anti = self._resolve_weighted(snapshot, parsed.preferred_anti_affinity)
            contributions: list[Contribution] = []
            incoming_terms_score(contributions, preferred, preferred_anti, index)
            existing_terms_score_from_index(contributions, pod, ns_labels, hard_weight, index)
            scores = PreScoreState(contributions)
        if not scores.contributions:  # upstream: no topology score at all
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, scores)
        return None

    @staticmethod
    def _pre_score_state(state: CycleState) -> PreScoreState:
        s = state.get(PRE_SCORE_STATE_KEY, PreScoreState)
        if s is None:
            raise LookupError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self._pre_score_state(state).score(node.labels)

    def score_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> Int64Array:
        return self._pre_score_state(state).score_batch(self._synced_index(snapshot), rows)

    def normalize_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], scores: Int64Array
    ) -> Status | None:
        try:
            s = self._pre_score_state(state)
        except LookupError as exc:
            return Status.as_error(exc)
        if s.contributions:
            normalize(scores)
        return None

    # --- queueing hints --------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints on (1.36 default) the node events are Add and UpdateNodeLabel only.
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
                ),
                self.hint_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.hint_node_change,
            ),
        ]

    @staticmethod
    def hint_pod_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodChange``."""
        original = old if isinstance(old, Pod) else None
        modified = new if isinstance(new, Pod) else None
        if original is None and modified is None:
            return QueueingHint.QUEUE
        if modified is not None and original is not None and pod.metadata.uid == modified.metadata.uid:
            return QueueingHint.QUEUE  # the rejected pod's own labels changed
        if (modified is not None and _is_unassigned(modified)) or (
            original is not None and _is_unassigned(original)
        ):
            return QueueingHint.QUEUE_SKIP
        parsed = parsed_for_hint(pod)
        if parsed.error is not None:
            return QueueingHint.QUEUE
        terms, anti = parsed.required_affinity, parsed.required_anti_affinity
        if modified is not None and original is not None:
            if not pod_matches_all_terms(terms, original) and pod_matches_all_terms(terms, modified):
                return QueueingHint.QUEUE
            if pod_matches_all_terms(anti, original) and not pod_matches_all_terms(anti, modified):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if modified is not None:
            return QueueingHint.QUEUE if pod_matches_all_terms(terms, modified) else QueueingHint.QUEUE_SKIP
        assert original is not None
        if pod_matches_all_terms(anti, original):
            return QueueingHint.QUEUE
        original_parsed = parsed_for_hint(original)
        if original_parsed.error is not None:
            return QueueingHint.QUEUE
        if pod_matches_all_terms(original_parsed.required_anti_affinity, pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def hint_node_change(pod: Pod, old: object, new: object) -> QueueingHint:
        """Upstream ``isSchedulableAfterNodeChange``."""
        original = old if isinstance(old, Node) else None
        modified = new if isinstance(new, Node) else None
        if modified is None:
            return QueueingHint.QUEUE
        parsed = parsed_for_hint(pod)
        if parsed.error is not None:
            return QueueingHint.QUEUE
        new_labels = modified.metadata.labels
        for t in parsed.required_affinity:
            if original is None:
                if t.topology_key in new_labels:
                    return QueueingHint.QUEUE
                continue
            old_labels = original.metadata.labels
            if t.topology_key not in old_labels and t.topology_key in new_labels:
                return QueueingHint.QUEUE
            if (
                t.topology_key in old_labels
                and t.topology_key in new_labels
                and old_labels[t.topology_key] != new_labels[t.topology_key]
            ):
                return QueueingHint.QUEUE
        for t in parsed.required_anti_affinity:
            if original is None:
                return QueueingHint.QUEUE
            old_labels = original.metadata.labels
            if t.topology_key in old_labels and t.topology_key not in new_labels:
                return QueueingHint.QUEUE
            if (
                t.topology_key in old_labels
                and t.topology_key in new_labels
                and old_labels[t.topology_key] != new_labels[t.topology_key]
            ):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


# The extension points InterPodAffinity implements, checked by mypy against ksched.framework.interfaces
# (upstream's ``var _ fwk.<Point>Plugin = &InterPodAffinity{}`` lines).
_ENQUEUE_EXTENSIONS: type[EnqueueExtensions] = InterPodAffinity
_PRE_FILTER: type[PreFilterPlugin] = InterPodAffinity
_PRE_FILTER_EXTENSIONS: type[PreFilterExtensions] = InterPodAffinity
_FILTER: type[FilterPlugin] = InterPodAffinity
_BATCH_FILTER: type[BatchFilterPlugin] = InterPodAffinity
_PRE_SCORE: type[PreScorePlugin] = InterPodAffinity
_SCORE: type[ScorePlugin] = InterPodAffinity
_BATCH_SCORE: type[BatchScorePlugin] = InterPodAffinity
_SCORE_EXTENSIONS: type[ScoreExtensions] = InterPodAffinity


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    args = args if args is not None else InterPodAffinityArgs()
    errors = validate_inter_pod_affinity_args(args, "")
    if errors:
        raise ValueError("; ".join(errors))
    return InterPodAffinity(args, handle)
