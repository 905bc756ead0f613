"""PreScore / Score / NormalizeScore of PodTopologySpread (upstream ``scoring.go``).

A node's raw score sums, over the ScheduleAnyway constraints whose key it has,
``count * log(domains + 2) + (maxSkew - 1)`` where ``count`` is the number of matching pods in
its domain (on the node itself for ``kubernetes.io/hostname``) and ``domains`` the number of
topology values among the filtered nodes. NormalizeScore flips it: fewer pods, higher score.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ksched.apimachinery.gomath import round_half_away
from ksched.framework.interfaces import MAX_NODE_SCORE
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.plugins.podtopologyspread.common import LABEL_HOSTNAME, Constraint, count_matching
from ksched.plugins.podtopologyspread.index import SpreadIndex, Topology

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]

PRE_SCORE_STATE_KEY = "PreScorePodTopologySpread"
_INDEX = operator.attrgetter("index")


def topology_normalizing_weight(size: int) -> float:
    """Upstream ``topologyNormalizingWeight``: ``ln(size + 2)``."""
    return math.log(size + 2)


class PreScoreState:
    """Constraints, ignored nodes, per-constraint weights and domain counts (upstream ``preScoreState``)."""

    __slots__ = (
        "constraints",
        "domain_counts",
        "host_counts",
        "ignored_names",
        "ignored_rows",
        "namespace",
        "topologies",
        "weights",
    )

    def __init__(
        self,
        constraints: list[Constraint],
        namespace: str,
        ignored_names: frozenset[str],
        ignored_rows: BoolArray,
        topologies: list[Topology],
        weights: list[float],
        domain_counts: list[Int64Array | None],
        host_counts: list[Int64Array | None],
    ) -> None:
        self.constraints = constraints
        self.namespace = namespace
        self.ignored_names = ignored_names
        self.ignored_rows = ignored_rows
        self.topologies = topologies
        self.weights = weights
        self.domain_counts = domain_counts
        self.host_counts = host_counts

    def clone(self) -> PreScoreState:
        return self  # never modified after PreScore, as upstream


def compute_pre_score_state(
    index: SpreadIndex,
    pod: PodInfo,
    constraints: list[Constraint],
    filtered: Sequence[NodeInfo],
    require_all_topologies: bool,
) -> PreScoreState:
    """Upstream ``initPreScoreState`` plus PreScore's counting over all nodes, vectorized by row.

    ``index`` must be synced to the snapshot ``filtered`` belongs to."""
    n = index.size
    rows = np.fromiter(map(_INDEX, filtered), dtype=np.intp, count=len(filtered))
    has_all = index.has_keys([c.topology_key for c in constraints])
    ignored_rows = np.zeros(n, dtype=np.bool_)
    ignored_names: frozenset[str] = frozenset()
    if require_all_topologies:
        lacking = ~has_all[rows]
        if lacking.any():
            ignored_rows[rows[lacking]] = True
            ignored_names = frozenset(filtered[i].name for i in np.flatnonzero(lacking).tolist())
            rows = rows[~lacking]
        counted = has_all
    else:
        counted = np.ones(n, dtype=np.bool_)
    ns = pod.namespace
    aff = index.affinity_mask(pod) if any(c.honor_node_affinity for c in constraints) else None
    taints = index.taints_mask(pod.pod) if any(c.honor_node_taints for c in constraints) else None
    topologies: list[Topology] = []
    weights: list[float] = []
    domain_counts: list[Int64Array | None] = []
    host_counts: list[Int64Array | None] = []
    for c in constraints:
        topo = index.topology(c.topology_key)
        topologies.append(topo)
        if c.topology_key == LABEL_HOSTNAME:
            weights.append(topology_normalizing_weight(len(rows)))
            domain_counts.append(None)
            host_counts.append(index.counts(ns, c).copy())
            continue
        ids = topo.ids[:n]
        if not require_all_topologies:
            # A node without the key counts under the empty value, as upstream's map lookup does.
            ids = np.where(ids >= 0, ids, topo.intern(""))
        size = len(topo.values)
        present = np.zeros(size, dtype=np.bool_)
        present[ids[rows]] = True
        weights.append(topology_normalizing_weight(int(present.sum())))
        eligible = counted
        if c.honor_node_affinity and aff is not None:
            eligible = eligible & aff
        if c.honor_node_taints and taints is not None:
            eligible = eligible & taints
        erows = np.flatnonzero(eligible)
        counts = np.bincount(ids[erows], weights=index.counts(ns, c)[erows], minlength=size).astype(np.int64)
        counts[~present] = -1  # -1 marks values no filtered node has (absent from upstream's map)
        domain_counts.append(counts)
        host_counts.append(None)
    return PreScoreState(
        constraints, ns, ignored_names, ignored_rows, topologies, weights, domain_counts, host_counts
    )


def score_node(state: PreScoreState, node: NodeInfo) -> int:
    """Upstream Score for one node: the weighted matching counts of its domains, rounded."""
    if node.name in state.ignored_names or node.node is None:
        return 0
    labels = node.node.metadata.labels
    score = 0.0
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        counts = state.domain_counts[i]
        if counts is None:
            cnt = count_matching(node.pods, c, state.namespace)
        else:
            vid = state.topologies[i].value_ids.get(value)
            cnt = int(counts[vid]) if vid is not None and vid < len(counts) else 0
            cnt = max(cnt, 0)
        score += cnt * state.weights[i] + float(c.max_skew - 1)
    return round_half_away(score)


def score_rows(state: PreScoreState, rows: Rows) -> Int64Array:
    """:func:`score_node` for snapshot rows at once."""
    total = np.zeros(len(rows), dtype=np.float64)
    for i, c in enumerate(state.constraints):
        ids = state.topologies[i].ids[rows]
        has = ids >= 0
        host = state.host_counts[i]
        if host is not None:
            cnt = host[rows]
        else:
            counts = state.domain_counts[i]
            assert counts is not None
            size = len(counts)
            if size == 0:
                cnt = np.zeros(len(rows), dtype=np.int64)
            else:
                known = has & (ids < size)
                cnt = np.where(known, np.maximum(counts[np.clip(ids, 0, size - 1)], 0), 0)
        total += np.where(has, cnt * state.weights[i] + float(c.max_skew - 1), 0.0)
    floor = np.floor(total)
    out = (floor + ((total - floor) >= 0.5)).astype(np.int64)
    out[state.ignored_rows[rows]] = 0
    return out


def normalize(state: PreScoreState, nodes: Sequence[NodeInfo], scores: Int64Array) -> None:
    """Upstream NormalizeScore: ``100 * (max + min - s) / max`` over scored nodes; ignored nodes get 0."""
    if state.ignored_names:
        ignored = np.fromiter(
            (ni.name in state.ignored_names for ni in nodes), dtype=np.bool_, count=len(nodes)
        )
    else:
        ignored = np.zeros(len(nodes), dtype=np.bool_)
    valid = ~ignored
    if valid.any():
        kept = scores[valid]
        low = int(kept.min())
        high = max(int(kept.max()), 0)
        if high == 0:
            scores[valid] = MAX_NODE_SCORE
        else:
            scores[valid] = MAX_NODE_SCORE * (high + low - kept) // high
    scores[ignored] = 0
