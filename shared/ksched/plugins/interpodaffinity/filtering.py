"""PreFilter/Filter of InterPodAffinity (upstream ``filtering.go``): topology-pair counts computed
once per cycle, then per-node (or vectorized) lookups."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from ksched.framework.interfaces import BoolArray, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.plugins.interpodaffinity.index import AffinityIndex, ValueCounts
from ksched.plugins.interpodaffinity.terms import (
    AffinityTerm,
    class_matches_all_terms,
    label_class_of,
    parsed_terms,
    pod_matches_all_terms,
)

PRE_FILTER_STATE_KEY: Final = "PreFilterInterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

TopologyCounts = dict[str, ValueCounts]
"""topology key -> topology value -> count (upstream ``topologyToMatchedTermCount``)."""

_AFFINITY, _ANTI, _EXISTING = 0, 1, 2


def add_counts(counts: TopologyCounts, key: str, values: ValueCounts) -> None:
    inner = counts.get(key)
    if inner is None:
        counts[key] = dict(values)
        return
    for value, n in values.items():
        inner[value] = inner.get(value, 0) + n


def update_pair(counts: TopologyCounts, labels: Mapping[str, str], key: str, delta: int) -> None:
    """Upstream ``topologyToMatchedTermCount.update``: adjust the node's pair, dropping zeros."""
    value = labels.get(key)
    if value is None:
        return
    inner = counts.setdefault(key, {})
    n = inner.get(value, 0) + delta
    if n:
        inner[value] = n
    else:
        inner.pop(value, None)
        if not inner:
            del counts[key]


def pair_count(counts: TopologyCounts, key: str, value: str) -> int:
    inner = counts.get(key)
    return inner.get(value, 0) if inner is not None else 0


class PreFilterState:
    """Counts computed at PreFilter; AddPod/RemovePod adjust them, so ``clone`` copies them."""

    __slots__ = (
        "_lookups",
        "affinity",
        "affinity_terms",
        "anti",
        "anti_terms",
        "existing_anti",
        "namespace_labels",
        "pod",
        "self_match",
    )

    def __init__(
        self,
        pod: PodInfo,
        affinity_terms: Sequence[AffinityTerm],
        anti_terms: Sequence[AffinityTerm],
        namespace_labels: Mapping[str, str],
    ) -> None:
        self.pod = pod
        #: the incoming pod's required terms, namespace selectors merged into namespaces
        self.affinity_terms = tuple(affinity_terms)
        self.anti_terms = tuple(anti_terms)
        self.namespace_labels = namespace_labels
        #: existing pods whose required anti-affinity terms match the incoming pod
        self.existing_anti: TopologyCounts = {}
        #: existing pods that match all the incoming pod's required affinity terms
        self.affinity: TopologyCounts = {}
        #: existing pods matching the incoming pod's required anti-affinity terms
        self.anti: TopologyCounts = {}
        #: the first-pod-of-a-group rule: the pod matches all its own affinity terms
        self.self_match = pod_matches_all_terms(self.affinity_terms, pod.pod)
        self._lookups: dict[tuple[int, str, int], npt.NDArray[np.int64]] = {}

    def clone(self) -> PreFilterState:
        out = PreFilterState.__new__(PreFilterState)
        out.pod = self.pod
        out.affinity_terms = self.affinity_terms
        out.anti_terms = self.anti_terms
        out.namespace_labels = self.namespace_labels
        out.self_match = self.self_match
        out.existing_anti = {k: dict(v) for k, v in self.existing_anti.items()}
        out.affinity = {k: dict(v) for k, v in self.affinity.items()}
        out.anti = {k: dict(v) for k, v in self.anti.items()}
        out._lookups = {}
        return out

    def update_with_pod(self, other: PodInfo, node_labels: Mapping[str, str], sign: int) -> None:
        """Upstream ``updateWithPod``: account ``other`` added (+1) to / removed (-1) from a node."""
        incoming = self.pod.pod
        for t in parsed_terms(other).required_anti_affinity:
            if t.matches_pod(incoming, self.namespace_labels):
                update_pair(self.existing_anti, node_labels, t.topology_key, sign)
        if pod_matches_all_terms(self.affinity_terms, other.pod):
            for t in self.affinity_terms:
                update_pair(self.affinity, node_labels, t.topology_key, sign)
        for t in self.anti_terms:
            if t.matches_pod(other.pod, None):
                update_pair(self.anti, node_labels, t.topology_key, sign)
        self._lookups.clear()

    # --- Filter ----------------------------------------------------------------------------------
    def satisfies_pod_affinity(self, labels: Mapping[str, str]) -> bool:
        pods_exist = True
        for t in self.affinity_terms:
            value = labels.get(t.topology_key)
            if value is None:
                return False
            if pair_count(self.affinity, t.topology_key, value) <= 0:
                pods_exist = False
        return pods_exist or (not self.affinity and self.self_match)

    def satisfies_pod_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        if self.anti:
            for t in self.anti_terms:
                value = labels.get(t.topology_key)
                if value is not None and pair_count(self.anti, t.topology_key, value) > 0:
                    return False
        return True

    def satisfies_existing_pods_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        for key, values in self.existing_anti.items():
            value = labels.get(key)
            if value is not None and values.get(value, 0) > 0:
                return False
        return True

    def filter(self, labels: Mapping[str, str]) -> Status | None:
        if not self.satisfies_pod_affinity(labels):
            return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not self.satisfies_pod_anti_affinity(labels):
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not self.satisfies_existing_pods_anti_affinity(labels):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    # --- vectorized Filter -----------------------------------------------------------------------
    def _counts_at(
        self, which: int, index: AffinityIndex, key: str, rows: Rows
    ) -> tuple[BoolArray, npt.NDArray[np.int64]]:
        """For ``rows``: whether the node has ``key``, and the count of its pair in table ``which``."""
        column = index.column(key)
        codes = column.codes[rows]
        cache_key = (which, key, len(column.code_of))
        lookup = self._lookups.get(cache_key)
        if lookup is None:
            table = (self.affinity, self.anti, self.existing_anti)[which]
            lookup = self._lookups[cache_key] = column.lookup(table.get(key))
        return codes >= 0, lookup[codes]

    def filter_batch(self, index: AffinityIndex, rows: Rows) -> BoolArray:
        ok = np.ones(len(rows), dtype=np.bool_)
        if self.affinity_terms:
            has_all = np.ones(len(rows), dtype=np.bool_)
            exist = np.ones(len(rows), dtype=np.bool_)
            for t in self.affinity_terms:
                has, counts = self._counts_at(_AFFINITY, index, t.topology_key, rows)
                has_all &= has
                exist &= counts > 0
            if not self.affinity and self.self_match:
                ok &= has_all
            else:
                ok &= has_all & exist
        if self.anti:
            for t in self.anti_terms:
                _, counts = self._counts_at(_ANTI, index, t.topology_key, rows)
                ok &= counts <= 0
        for key in self.existing_anti:
            _, counts = self._counts_at(_EXISTING, index, key, rows)
            ok &= counts <= 0
        return ok


def existing_anti_from_index(
    index: AffinityIndex, pod: PodInfo, namespace_labels: Mapping[str, str]
) -> TopologyCounts:
    """Upstream ``getExistingAntiAffinityCounts`` from the index: each distinct term evaluated once."""
    counts: TopologyCounts = {}
    incoming = label_class_of(pod)
    for term, values in index.anti.items():
        if term.matches_class(incoming, namespace_labels):
            add_counts(counts, term.topology_key, values)
    return counts


def existing_anti_by_walk(
    nodes: Sequence[NodeInfo], pod: PodInfo, namespace_labels: Mapping[str, str]
) -> TopologyCounts:
    """Upstream ``getExistingAntiAffinityCounts`` walking ``nodes`` (those with such pods); cheaper
    than syncing the index when they are few."""
    counts: TopologyCounts = {}
    incoming = label_class_of(pod)
    for ni in nodes:
        labels = ni.labels
        for other in ni.pods_with_required_anti_affinity:
            for t in parsed_terms(other).required_anti_affinity:
                if t.matches_class(incoming, namespace_labels):
                    update_pair(counts, labels, t.topology_key, 1)
    return counts


def build_pre_filter_state(
    pod: PodInfo,
    affinity_terms: Sequence[AffinityTerm],
    anti_terms: Sequence[AffinityTerm],
    namespace_labels: Mapping[str, str],
    existing_anti: TopologyCounts,
    index: AffinityIndex | None,
) -> PreFilterState:
    """The PreFilter state; the incoming pod's counts (upstream
    ``getIncomingAffinityAntiAffinityCounts``) come from the index, each class of pods evaluated once."""
    state = PreFilterState(pod, affinity_terms, anti_terms, namespace_labels)
    state.existing_anti = existing_anti
    terms = state.affinity_terms
    anti = state.anti_terms
    if terms or anti:
        if index is None:
            raise ValueError("the incoming pod has required terms: its counts need the index")
        aff_values = [index.class_values(t.topology_key) for t in terms]
        anti_values = [index.class_values(t.topology_key) for t in anti]
        for cls in index.classes:
            if terms and class_matches_all_terms(terms, cls):
                for t, per_class in zip(terms, aff_values, strict=True):
                    found = per_class.get(cls)
                    if found:
                        add_counts(state.affinity, t.topology_key, found)
            for t, per_class in zip(anti, anti_values, strict=True):
                if t.matches_class(cls):
                    found = per_class.get(cls)
                    if found:
                        add_counts(state.anti, t.topology_key, found)
    return state
