"""PreScore/Score/NormalizeScore of InterPodAffinity (upstream ``scoring.go``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from ksched.framework.interfaces import MAX_NODE_SCORE, Int64Array, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.plugins.interpodaffinity.index import AffinityIndex, ValueCounts
from ksched.plugins.interpodaffinity.terms import WeightedTerm, label_class_of, parsed_terms

PRE_SCORE_STATE_KEY: Final = "PreScoreInterPodAffinity"

TopologyScore = dict[str, ValueCounts]
"""topology key -> topology value -> summed weight (upstream ``scoreMap``)."""

Contribution = tuple[str, ValueCounts, int]
"""(topology key, topology value -> count, weight): ``weight * count`` for each value of the key."""


def _add_weighted(scores: TopologyScore, key: str, values: ValueCounts, weight: int) -> None:
    inner = scores.setdefault(key, {})
    for value, n in values.items():
        inner[value] = inner.get(value, 0) + weight * n


class PreScoreState:
    """The topology scores of one cycle, kept as the weighted counts they sum: an index's counts,
    read in place (as arrays by value code, kept up to date by the index), so the state holds for
    the cycle that wrote it, whose Score follows its PreScore with no change of the snapshot in
    between. Read-only after PreScore, so ``clone`` shares it."""

    __slots__ = ("_merged", "contributions")

    def __init__(self, contributions: list[Contribution]) -> None:
        self.contributions = contributions
        self._merged: TopologyScore | None = None

    @classmethod
    def of(cls, topology_score: TopologyScore) -> PreScoreState:
        """The state of scores already summed per topology value."""
        return cls([(key, values, 1) for key, values in topology_score.items()])

    def clone(self) -> PreScoreState:
        return self

    @property
    def topology_score(self) -> TopologyScore:
        """topology key -> topology value -> summed weight (upstream ``scoreMap``)."""
        if self._merged is None:
            merged: TopologyScore = {}
            for key, values, weight in self.contributions:
                _add_weighted(merged, key, values, weight)
            self._merged = merged
        return self._merged

    def score(self, labels: Mapping[str, str]) -> int:
        total = 0
        for key, values in self.topology_score.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total

    def score_batch(self, index: AffinityIndex, rows: Rows) -> Int64Array:
        by_key: dict[str, Int64Array] = {}
        for key, values, weight in self.contributions:
            array = index.column(key).lookup(values)
            summed = by_key.get(key)
            by_key[key] = weight * array if summed is None else summed + weight * array
        total = np.zeros(len(rows), dtype=np.int64)
        for key, summed in by_key.items():
            total += summed[index.column(key).codes[rows]]
        return total


def incoming_terms_score(
    scores: list[Contribution],
    preferred_affinity: Sequence[WeightedTerm],
    preferred_anti: Sequence[WeightedTerm],
    index: AffinityIndex,
) -> None:
    """The incoming pod's preferred terms (namespace selectors merged) against every existing pod,
    evaluated once per class of pods."""
    weighted = [(wt.term, wt.weight) for wt in preferred_affinity]
    weighted += [(wt.term, -wt.weight) for wt in preferred_anti]
    if not weighted:
        return
    per_key = [index.class_values(term.topology_key) for term, _ in weighted]
    for cls in index.classes:
        for (term, weight), per_class in zip(weighted, per_key, strict=True):
            values = per_class.get(cls)
            if values and term.matches_class(cls):
                scores.append((term.topology_key, values, weight))


def existing_terms_score_from_index(
    scores: list[Contribution],
    pod: PodInfo,
    namespace_labels: Mapping[str, str],
    hard_pod_affinity_weight: int,
    index: AffinityIndex,
) -> None:
    """Existing pods' required-affinity (at the hard weight) and preferred terms against the
    incoming pod, evaluated once per distinct term."""
    incoming = label_class_of(pod)
    if hard_pod_affinity_weight > 0:
        for term, values in index.affinity.items():
            if term.matches_class(incoming, namespace_labels):
                scores.append((term.topology_key, values, hard_pod_affinity_weight))
    for (term, weight), values in index.preferred.items():
        if term.matches_class(incoming, namespace_labels):
            scores.append((term.topology_key, values, weight))


def existing_terms_score_by_walk(
    scores: TopologyScore,
    nodes: Sequence[NodeInfo],
    pod: PodInfo,
    namespace_labels: Mapping[str, str],
    hard_pod_affinity_weight: int,
) -> None:
    """``existing_terms_score_from_index`` walking ``nodes`` (those with pods with affinity), as
    upstream's ``processExistingPod``; cheaper than syncing the index when they are few."""
    incoming = label_class_of(pod)

    def add(key: str, labels: Mapping[str, str], weight: int) -> None:
        value = labels.get(key)
        if value is not None:
            inner = scores.setdefault(key, {})
            inner[value] = inner.get(value, 0) + weight

    for ni in nodes:
        labels = ni.labels
        for other in ni.pods_with_affinity:
            parsed = parsed_terms(other)
            if hard_pod_affinity_weight > 0:
                for t in parsed.required_affinity:
                    if t.matches_class(incoming, namespace_labels):
                        add(t.topology_key, labels, hard_pod_affinity_weight)
            for wt in parsed.preferred_affinity:
                if wt.term.matches_class(incoming, namespace_labels):
                    add(wt.term.topology_key, labels, wt.weight)
            for wt in parsed.preferred_anti_affinity:
                if wt.term.matches_class(incoming, namespace_labels):
                    add(wt.term.topology_key, labels, -wt.weight)


def normalize(scores: Int64Array) -> None:
    """Upstream NormalizeScore: min-max scaling to 0..100, truncated; all 0 when every score is equal."""
    if not len(scores):
        return
    low = int(scores.min())
    spread = int(scores.max()) - low
    if spread > 0:
        scores[:] = (float(MAX_NODE_SCORE) * ((scores - low) / float(spread))).astype(np.int64)
    else:
        scores[:] = 0
