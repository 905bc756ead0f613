"""Property tests: the vectorized paths agree with the node-by-node ones, and the incrementally
synced index agrees with a fresh one after arbitrary snapshot changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.plugins.args.types import LIST_DEFAULTING, SYSTEM_DEFAULTING
from ksched.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    count_matching,
    matches_inclusion_policies,
    node_has_all_keys,
)
from ksched.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY, PreFilterState
from ksched.plugins.podtopologyspread.index import required_affinity
from ksched.plugins.podtopologyspread.plugin import PodTopologySpread
from ksched.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, PreScoreState
from ksched.plugins.podtopologyspread.testing import counts_by_value, exists, make_plugin, node, pod, spread

KEYS = ["zone", "node", LABEL_HOSTNAME, "rack"]
SELECTORS: list[dict[str, Any] | None] = [
    exists("foo"),
    exists("bar"),
    {"matchLabels": {"app": "a"}},
    None,
    {},
]
POD_LABELS = [{}, {"foo": ""}, {"bar": ""}, {"foo": "", "app": "a"}, {"app": "a"}, {"app": "b", "bar": ""}]


@st.composite
def nodes_st(draw: st.DrawFn, prefix: str = "n") -> list[Node]:
    count = draw(st.integers(1, 10))
    out = []
    for i in range(count):
        name = f"{prefix}{i}"
        labels: dict[str, str] = {}
        zone = draw(st.sampled_from(["z1", "z2", "z3", "", None]))
        if zone is not None:
            labels["zone"] = zone
        if draw(st.booleans()):
            labels["node"] = name
        if draw(st.integers(0, 4)):
            labels[LABEL_HOSTNAME] = name
        if draw(st.booleans()):
            labels["foo"] = ""
        out.append(node(name, labels, tainted=draw(st.integers(0, 3)) == 0))
    return out


@st.composite
def existing_st(draw: st.DrawFn, node_names: list[str]) -> list[Pod]:
    count = draw(st.integers(0, 25))
    return [
        pod(
            f"e{i}",
            draw(st.sampled_from(["default", "default", "other"])),
            labels=draw(st.sampled_from(POD_LABELS)),
            node=draw(st.sampled_from(node_names)),
            terminating=draw(st.integers(0, 6)) == 0,
        )
        for i in range(count)
    ]


@st.composite
def incoming_st(draw: st.DrawFn) -> Pod:
    constraints = [
        spread(
            draw(st.integers(1, 3)),
            draw(st.sampled_from(KEYS)),
            draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
            draw(st.sampled_from(SELECTORS)),
            draw(st.sampled_from([None, 1, 2, 4])),
            draw(st.sampled_from([None, "Honor", "Ignore"])),
            draw(st.sampled_from([None, "Honor", "Ignore"])),
            draw(st.sampled_from([None, ["app"]])),
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    return pod(
        "incoming",
        labels=draw(st.sampled_from(POD_LABELS)),
        constraints=constraints,
        node_selector=draw(st.sampled_from([None, {"foo": ""}])),
        affinity_not_in=draw(st.sampled_from([None, ("zone", ["z3"])])),
        tolerations=draw(st.sampled_from([[], ["node.kubernetes.io/unschedulable"]])),
    )


def _pre_filter(plugin: PodTopologySpread, snap: Snapshot, pi: PodInfo, indexed: bool) -> tuple[Any, Any]:
    cs = CycleState()
    nodes = snap.nodes if indexed else list(snap.nodes)[::-1]
    _, status = plugin.pre_filter(cs, pi, nodes)
    if status is not None:
        return cs, status.code
    return cs, None


def _summary(state: PreFilterState) -> list[tuple[dict[str, int], int, int]]:
    return [(d.as_dict(), d.paths.first_num, d.paths.second_num) for d in state.domains]


def _check_filter(plugin: PodTopologySpread, snap: Snapshot, pi: PodInfo) -> Any:
    cs_idx, code_idx = _pre_filter(plugin, snap, pi, indexed=True)
    cs_dir, code_dir = _pre_filter(plugin, snap, pi, indexed=False)
    assert code_idx == code_dir
    if code_idx is not None:
        assert code_idx in (Code.SKIP, Code.ERROR)
        return None
    s_idx = cs_idx.read(PRE_FILTER_STATE_KEY)
    s_dir = cs_dir.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s_idx, PreFilterState) and isinstance(s_dir, PreFilterState)
    assert _summary(s_idx) == _summary(s_dir)
    per_node = [plugin.filter(cs_idx, pi, ni) is None for ni in snap.nodes]
    rows = np.arange(len(snap.nodes), dtype=np.intp)
    assert plugin.filter_batch(cs_idx, pi, snap, rows).tolist() == per_node
    return _summary(s_idx), per_node


def _reference_counts(
    plugin: PodTopologySpread,
    snap: Snapshot,
    pi: PodInfo,
    state: PreScoreState,
    filtered: list[Any],
    require_all: bool,
) -> list[dict[str, int]]:
    """Upstream PreScore's counting, written node by node."""
    out: list[dict[str, int]] = []
    affinity = required_affinity(pi)
    kept = [ni for ni in filtered if not require_all or node_has_all_keys(ni.labels, state.constraints)]
    for c in state.constraints:
        if c.topology_key == LABEL_HOSTNAME:
            out.append({})
            continue
        counts = {ni.labels.get(c.topology_key, ""): 0 for ni in kept}
        for ni in snap.nodes:
            assert ni.node is not None
            if require_all and not node_has_all_keys(ni.labels, state.constraints):
                continue
            if not matches_inclusion_policies(c, pi.pod, ni.node, affinity):
                continue
            value = ni.labels.get(c.topology_key, "")
            if value in counts:
                counts[value] += count_matching(ni.pods, c, pi.namespace)
        out.append(counts)
    return out


def _check_score(plugin: PodTopologySpread, snap: Snapshot, pi: PodInfo, mask: list[bool]) -> Any:
    filtered = [ni for ni, keep in zip(snap.nodes, mask, strict=False) if keep] or list(snap.nodes)
    cs = CycleState()
    status = plugin.pre_score(cs, pi, filtered)
    if status is not None:
        assert status.code == Code.SKIP
        return None
    state = cs.read(PRE_SCORE_STATE_KEY)
    assert isinstance(state, PreScoreState)
    require_all = bool(pi.pod.spec.topology_spread_constraints) or not plugin.system_defaulted
    expected = _reference_counts(plugin, snap, pi, state, filtered, require_all)
    assert [counts_by_value(state, i) for i in range(len(state.constraints))] == expected
    per_node = [plugin.score(cs, pi, ni) for ni in filtered]
    rows = np.array([ni.index for ni in filtered], dtype=np.intp)
    assert plugin.score_batch(cs, pi, snap, rows).tolist() == per_node
    scores = np.array(per_node, dtype=np.int64)
    assert plugin.normalize_score(cs, pi, filtered, scores) is None
    assert all(0 <= s <= 100 for s in scores.tolist())
    return per_node, scores.tolist()


@dataclass
class Cluster:
    nodes: list[Node]
    pods: list[Pod]


@st.composite
def cluster_st(draw: st.DrawFn) -> Cluster:
    nodes = draw(nodes_st())
    return Cluster(nodes, draw(existing_st([n.metadata.name for n in nodes])))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    cluster_st(),
    incoming_st(),
    st.lists(st.booleans(), min_size=10, max_size=10),
    st.sampled_from([LIST_DEFAULTING, SYSTEM_DEFAULTING]),
)
def test_batch_and_node_by_node_paths_agree(
    cluster: Cluster, incoming: Pod, mask: list[bool], defaulting: str
) -> None:
    snap = Snapshot.build(cluster.nodes, cluster.pods)
    plugin = make_plugin(snap, defaulting_type=defaulting)
    pi = PodInfo(incoming)
    _check_filter(plugin, snap, pi)
    _check_score(plugin, snap, pi, mask)


@st.composite
def mutations_st(draw: st.DrawFn, cluster: Cluster) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    names = [n.metadata.name for n in cluster.nodes]
    extra = draw(nodes_st("m"))
    for i in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["add_pod", "remove_pod", "relabel_node", "remove_node", "add_node"]))
        if kind == "add_pod":
            ops.append((kind, draw(existing_st(names + [n.metadata.name for n in extra]))[:2]))
        elif kind == "remove_pod" and cluster.pods:
            ops.append((kind, draw(st.sampled_from(cluster.pods)).metadata.uid))
        elif kind == "relabel_node":
            replacement = draw(nodes_st("x"))[0]
            ops.append((kind, node(draw(st.sampled_from(names)), replacement.metadata.labels)))
        elif kind == "remove_node":
            ops.append((kind, draw(st.sampled_from(names))))
        elif kind == "add_node":
            ops.append((kind, extra[i % len(extra)]))
    return ops


def _apply(snap: Snapshot, op: tuple[str, Any]) -> None:
    kind, arg = op
    if kind == "add_pod":
        for p in arg:
            snap.add_pod(p)
    elif kind == "remove_pod":
        snap.remove_pod(arg)
    elif kind in ("relabel_node", "add_node"):
        snap.upsert_node(arg)
    elif kind == "remove_node":
        snap.remove_node(arg)


@SETTINGS
@given(st.data(), cluster_st(), incoming_st(), st.lists(st.booleans(), min_size=10, max_size=10))
def test_incremental_index_matches_a_fresh_one(
    data: st.DataObject, cluster: Cluster, incoming: Pod, mask: list[bool]
) -> None:
    snap = Snapshot.build(cluster.nodes, cluster.pods)
    warm = make_plugin(snap)
    pi = PodInfo(incoming)
    _check_filter(warm, snap, pi)  # builds the index and its views before the changes
    _check_score(warm, snap, pi, mask)
    for op in data.draw(mutations_st(cluster)):
        _apply(snap, op)
        if not snap.nodes:
            return
        fresh = make_plugin(snap)
        assert _check_filter(warm, snap, pi) == _check_filter(fresh, snap, pi)
        assert _check_score(warm, snap, pi, mask) == _check_score(fresh, snap, pi, mask)
