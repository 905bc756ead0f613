"""Property tests: the index-based PreFilter/PreScore equal a naive walk over every pod (shaped
like upstream's loops), the vectorized Filter/Score equal the per-node ones, and the index stays
exact while the snapshot changes under it (pods added/removed, node labels changed, nodes removed)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.core import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.plugins.args.types import InterPodAffinityArgs
from ksched.plugins.interpodaffinity.filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterState,
    TopologyCounts,
    update_pair,
)
from ksched.plugins.interpodaffinity.plugin import InterPodAffinity
from ksched.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY, PreScoreState, TopologyScore
from ksched.plugins.interpodaffinity.terms import parse_pod, pod_matches_all_terms, resolve_namespaces
from ksched.plugins.interpodaffinity.testing import (
    affinity,
    namespace,
    node,
    plugin_for,
    pod,
    snapshot_of,
    term,
)

NAMESPACES = [
    namespace("ns1", {"team": "t1"}),
    namespace("ns2", {"team": "t2"}),
    namespace("ns3", {"team": "t1"}),
]
NODE_NAMES = [f"n{i}" for i in range(6)]

label_sets = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b", "c"]), max_size=2)
node_labels = st.fixed_dictionaries(
    {},
    optional={
        "zone": st.sampled_from(["z1", "z2", "z3"]),
        "region": st.sampled_from(["r1", "r2"]),
        "hostname": st.sampled_from(["h1", "h2", "h3", "h4"]),
    },
)


@st.composite
def terms(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(["zone", "region", "hostname", "missing"]))
    kind = draw(st.sampled_from(["labels", "in", "notin", "exists", "empty"]))
    label = draw(st.sampled_from(["app", "tier"]))
    value = draw(st.sampled_from(["a", "b", "c"]))
    ns = draw(st.sampled_from(["own", "list", "all", "selector", "list+selector"]))
    kw: dict[str, Any] = {}
    if ns in ("list", "list+selector"):
        kw["namespaces"] = draw(st.lists(st.sampled_from(["ns1", "ns2", "ns3"]), min_size=1, max_size=2))
    if ns == "all":
        kw["namespace_selector"] = {}
    if ns in ("selector", "list+selector"):
        kw["namespace_selector"] = {"matchLabels": {"team": draw(st.sampled_from(["t1", "t2"]))}}
    if kind == "labels":
        return term(key, match_labels={label: value}, **kw)
    if kind == "empty":
        return term(key, **kw)
    op = {"in": "In", "notin": "NotIn", "exists": "Exists"}[kind]
    return term(key, expressions=[(label, op, [] if op == "Exists" else [value])], **kw)


weighted = st.tuples(st.integers(1, 100), terms())


@st.composite
def affinities(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.booleans()):
        return None
    return affinity(
        required=draw(st.lists(terms(), max_size=2)),
        anti=draw(st.lists(terms(), max_size=2)),
        preferred=draw(st.lists(weighted, max_size=2)),
        preferred_anti=draw(st.lists(weighted, max_size=2)),
    )


@st.composite
def pods(draw: st.DrawFn, placed: bool = True) -> Pod:
    return pod(
        f"p{draw(st.integers(0, 10**9))}",
        draw(st.sampled_from(["ns1", "ns2", "ns3", "other"])),
        labels=draw(label_sets),
        node=draw(st.sampled_from(NODE_NAMES)) if placed else "",
        aff=draw(affinities()),
    )


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    nodes = [node(name, draw(node_labels)) for name in NODE_NAMES]
    return snapshot_of(nodes, draw(st.lists(pods(), max_size=14)), NAMESPACES)


# --- the oracle: upstream's loops over every pod ----------------------------------------------------
def naive_pre_filter(
    snap: Snapshot, incoming: Pod
) -> tuple[TopologyCounts, TopologyCounts, TopologyCounts] | None:
    parsed = parse_pod(incoming)
    table = {n: ns.metadata.labels for n, ns in snap.objects.namespaces.items()}
    aff = [resolve_namespaces(t, table) for t in parsed.required_affinity]
    anti = [resolve_namespaces(t, table) for t in parsed.required_anti_affinity]
    ns_labels = snap.objects.namespace_labels(incoming.metadata.namespace)
    existing: TopologyCounts = {}
    affinity_counts: TopologyCounts = {}
    anti_counts: TopologyCounts = {}
    for ni in snap.nodes:
        for other in ni.pods_with_required_anti_affinity:
            for t in parse_pod(other.pod).required_anti_affinity:
                if t.matches_pod(incoming, ns_labels):
                    update_pair(existing, ni.labels, t.topology_key, 1)
        for other in ni.pods:
            if pod_matches_all_terms(aff, other.pod):
                for t in aff:
                    update_pair(affinity_counts, ni.labels, t.topology_key, 1)
            for t in anti:
                if t.matches_pod(other.pod, None):
                    update_pair(anti_counts, ni.labels, t.topology_key, 1)
    if not existing and not aff and not anti:
        return None
    return existing, affinity_counts, anti_counts


def naive_pre_score(snap: Snapshot, incoming: Pod, args: InterPodAffinityArgs) -> TopologyScore | None:
    parsed = parse_pod(incoming)
    has_constraints = bool(parsed.preferred_affinity or parsed.preferred_anti_affinity)
    if args.ignore_preferred_terms_of_existing_pods and not has_constraints:
        return None
    table = {n: ns.metadata.labels for n, ns in snap.objects.namespaces.items()}
    weighted = [(resolve_namespaces(wt.term, table), wt.weight) for wt in parsed.preferred_affinity]
    weighted += [(resolve_namespaces(wt.term, table), -wt.weight) for wt in parsed.preferred_anti_affinity]
    ns_labels = snap.objects.namespace_labels(incoming.metadata.namespace)
    scores: TopologyScore = {}

    def add(key: str, labels: dict[str, str], weight: int) -> None:
        value = labels.get(key)
        if value is not None:
            inner = scores.setdefault(key, {})
            inner[value] = inner.get(value, 0) + weight

    for ni in snap.nodes:
        labels = ni.labels
        for other in ni.pods if has_constraints else ni.pods_with_affinity:
            for t, w in weighted:
                if t.matches_pod(other.pod, None):
                    add(t.topology_key, labels, w)
            theirs = parse_pod(other.pod)
            if args.hard_pod_affinity_weight > 0:
                for t in theirs.required_affinity:
                    if t.matches_pod(incoming, ns_labels):
                        add(t.topology_key, labels, args.hard_pod_affinity_weight)
            for wt in theirs.preferred_affinity:
                if wt.term.matches_pod(incoming, ns_labels):
                    add(wt.term.topology_key, labels, wt.weight)
            for wt in theirs.preferred_anti_affinity:
                if wt.term.matches_pod(incoming, ns_labels):
                    add(wt.term.topology_key, labels, -wt.weight)
    return scores or None


# --- checks ------------------------------------------------------------------------------------------
def check_cycle(plugin: InterPodAffinity, snap: Snapshot, incoming: Pod) -> None:
    pi = PodInfo(incoming)
    state = CycleState()
    rows = np.arange(len(snap.nodes), dtype=np.intp)
    _, pre = plugin.pre_filter(state, pi, snap.nodes)
    want = naive_pre_filter(snap, incoming)
    if want is None:
        assert pre is not None
        assert pre.is_rejected() is False
    else:
        assert pre is None
        s = state.read(PRE_FILTER_STATE_KEY)
        assert isinstance(s, PreFilterState)
        assert (s.existing_anti, s.affinity, s.anti) == want
        per_node = [plugin.filter(state, pi, ni) is None for ni in snap.nodes]
        assert plugin.filter_batch(state, pi, snap, rows).tolist() == per_node
        shuffled = rows[::-1].copy()
        assert plugin.filter_batch(state, pi, snap, shuffled).tolist() == per_node[::-1]
    status = plugin.pre_score(state, pi, snap.nodes)
    want_scores = naive_pre_score(snap, incoming, plugin.args)
    if want_scores is None:
        assert status is not None
        assert status.code.label == "Skip"
        return
    assert status is None
    ps = state.read(PRE_SCORE_STATE_KEY)
    assert isinstance(ps, PreScoreState)
    assert ps.topology_score == want_scores
    per_node_scores = [plugin.score(state, pi, ni) for ni in snap.nodes]
    assert plugin.score_batch(state, pi, snap, rows).tolist() == per_node_scores


SETTINGS = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(clusters(), pods(placed=False), st.integers(0, 3), st.booleans())
def test_index_and_batch_agree_with_naive_walk(
    snap: Snapshot, incoming: Pod, hard: int, ignore: bool
) -> None:
    args = InterPodAffinityArgs(hard_pod_affinity_weight=hard, ignore_preferred_terms_of_existing_pods=ignore)
    check_cycle(plugin_for(snap, args), snap, incoming)


mutations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), pods()),
        st.tuples(st.just("remove"), st.integers(0, 100)),
        st.tuples(st.just("relabel"), st.sampled_from(NODE_NAMES), node_labels),
        st.tuples(st.just("drop-node"), st.sampled_from(NODE_NAMES)),
        st.tuples(st.just("ns-labels"), st.sampled_from(["ns1", "ns2"]), st.sampled_from(["t1", "t2"])),
    ),
    max_size=8,
)


@SETTINGS
@given(
    clusters(), st.lists(pods(placed=False), min_size=1, max_size=3), mutations, st.sampled_from([0.0, 0.5])
)
def test_index_stays_exact_while_the_snapshot_changes(
    snap: Snapshot, incoming: list[Pod], steps: list[tuple[Any, ...]], walk_fraction: float
) -> None:
    plugin = plugin_for(snap)
    plugin.walk_fraction = walk_fraction
    check_cycle(plugin, snap, incoming[0])
    for i, step in enumerate(steps):
        op = step[0]
        if op == "add":
            snap.add_pod(step[1])
        elif op == "remove" and snap.pod_locations:
            uids = sorted(snap.pod_locations)
            snap.remove_pod(uids[step[1] % len(uids)])
        elif op == "relabel":
            snap.upsert_node(node(step[1], step[2]))
        elif op == "drop-node":
            snap.remove_node(step[1])
        elif op == "ns-labels":
            snap.objects.namespaces[step[1]] = namespace(step[1], {"team": step[2]})
        check_cycle(plugin, snap, incoming[i % len(incoming)])


@st.composite
def symmetric_clusters(draw: st.DrawFn) -> Snapshot:
    """Existing pods that all carry terms, so an incoming pod without terms meets them (symmetry)."""
    nodes = [node(name, draw(node_labels)) for name in NODE_NAMES]
    placed = []
    for i in range(draw(st.integers(1, 10))):
        aff = affinity(
            required=draw(st.lists(terms(), max_size=1)),
            anti=draw(st.lists(terms(), min_size=1, max_size=2)),
            preferred=draw(st.lists(weighted, max_size=1)),
            preferred_anti=draw(st.lists(weighted, max_size=1)),
        )
        ns = draw(st.sampled_from(["ns1", "ns2"]))
        placed.append(
            pod(f"e{i}", ns, labels=draw(label_sets), node=draw(st.sampled_from(NODE_NAMES)), aff=aff)
        )
    return snapshot_of(nodes, placed, NAMESPACES)


@SETTINGS
@given(
    symmetric_clusters(),
    st.sampled_from(["ns1", "ns2"]),
    st.dictionaries(
        st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2
    ),
    st.sampled_from([0.0, 1.0]),
    st.integers(0, 2),
)
def test_incoming_pod_without_terms_meets_existing_terms(
    snap: Snapshot, ns: str, labels: dict[str, str], walk_fraction: float, hard: int
) -> None:
    plugin = plugin_for(snap, InterPodAffinityArgs(hard_pod_affinity_weight=hard))
    plugin.walk_fraction = walk_fraction
    check_cycle(plugin, snap, pod("incoming", ns, labels=labels))
