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


def _add_weighted(scores: TopologyScore, key: str, values: ValueCounts, weight: int) -> None:
    inner = scores.setdefault(key, {})
    for value, n in values.items():
        inner[value] = inner.get(value, 0) + weight * n


class PreScoreState:
    """The topology scores of one cycle; read-only after PreScore, so ``clone`` shares it."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: TopologyScore) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self

    def score(self, labels: Mapping[str, str]) -> int:
        total = 0
        for key, values in self.topology_score.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total

    def score_batch(self, index: AffinityIndex, rows: Rows) -> Int64Array:
        total = np.zeros(len(rows), dtype=np.int64)
        for key, values in self.topology_score.items():
            column = index.column(key)
            total += column.lookup(values)[column.codes[rows]]
        return total


def incoming_terms_score(
    scores: TopologyScore,
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
                _add_weighted(scores, term.topology_key, values, weight)


def existing_terms_score_from_index(
    scores: TopologyScore,
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
                _add_weighted(scores, term.topology_key, values, hard_pod_affinity_weight)
    for (term, weight), values in index.preferred.items():
        if term.matches_class(incoming, namespace_labels):
            _add_weighted(scores, term.topology_key, values, weight)


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
