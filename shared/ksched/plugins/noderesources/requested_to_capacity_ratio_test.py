"""RequestedToCapacityRatio, ported from upstream ``requested_to_capacity_ratio_test.go``."""

from __future__ import annotations

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.plugins.args.types import (
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from ksched.plugins.noderesources.fit import Fit
from ksched.plugins.noderesources.testing import (
    DEFAULT,
    REQ_1_2,
    REQ_2_3,
    make_resource_node,
    n,
    scores_both_ways,
    snapshot_of,
    st_pod,
)

MIB = 1024 * 1024


def rtcr_args(resources: list[tuple[str, int]], shape: list[tuple[int, int]]) -> NodeResourcesFitArgs:
    points = [UtilizationShapePoint(utilization=u, score=s) for u, s in shape]
    strategy = ScoringStrategy(
        type=REQUESTED_TO_CAPACITY_RATIO,
        resources=[ResourceSpec(name=r, weight=w) for r, w in resources],
        requested_to_capacity_ratio=RequestedToCapacityRatioParam(shape=points),
    )
    return NodeResourcesFitArgs(scoring_strategy=strategy)


def check(
    args: NodeResourcesFitArgs, pod: Pod, nodes: list[Node], existing: list[Pod], want: list[int]
) -> None:
    snapshot = snapshot_of(nodes, existing)
    plugin, state, pi = Fit(args), CycleState(), PodInfo(pod)
    assert plugin.pre_score(state, pi, snapshot.nodes) is None
    per_node, batch = scores_both_ways(plugin, state, pi, snapshot)
    assert per_node == want
    assert batch.tolist() == want


SHAPE = [(0, 10), (100, 0)]
STRATEGY_CASES = [
    (
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        st_pod(),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        [st_pod(name="a", node="node1"), st_pod(name="b", node="node1")],
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)",  # noqa: E501 (upstream case name)
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [st_pod(name="a", node="node1"), st_pod(name="b", node="node1")],
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",  # noqa: E501 (upstream case name)
        st_pod(),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [
            st_pod({"cpu": "3000", "memory": "5000"}, name="a", node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, name="b", node="node2"),
        ],
        [38, 50],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "want"), STRATEGY_CASES, ids=[c[0] for c in STRATEGY_CASES]
)
def test_requested_to_capacity_ratio_scoring_strategy(
    name: str, pod: Pod, nodes: list[Node], existing: list[Pod], want: list[int]
) -> None:
    check(rtcr_args(DEFAULT, SHAPE), pod, nodes, existing, want)


FOO, BAR = "intel.com/foo", "intel.com/bar"
BIN_SHAPE = [(0, 0), (100, 1)]
SINGLE_NODES = [
    make_resource_node("node1", 4000, 10000 * MIB, {FOO: 8}),
    make_resource_node("node2", 4000, 10000 * MIB, {FOO: 4}),
]
SINGLE_CASES = [
    ("nothing scheduled, nothing requested", st_pod(), [], [0, 0]),
    (
        "resources requested, pods scheduled with less resources",
        st_pod({FOO: "2"}),
        [st_pod(name="x")],
        [2, 5],
    ),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        st_pod({FOO: "2"}),
        [st_pod({FOO: "2"}, name="x", node="node2")],
        [2, 10],
    ),
    (
        "resources requested, pods scheduled with more resources",
        st_pod({FOO: "4"}),
        [st_pod(name="x")],
        [5, 10],
    ),
]


@pytest.mark.parametrize(("name", "pod", "existing", "want"), SINGLE_CASES, ids=[c[0] for c in SINGLE_CASES])
def test_resource_bin_packing_single_extended(
    name: str, pod: Pod, existing: list[Pod], want: list[int]
) -> None:
    check(rtcr_args([(FOO, 1)], BIN_SHAPE), pod, SINGLE_NODES, existing, want)


MULTI_NODES = [
    make_resource_node("node1", 4000, 10000 * MIB, {FOO: 8, BAR: 4}),
    make_resource_node("node2", 4000, 10000 * MIB, {FOO: 4, BAR: 8}),
]
MULTI_CASES = [
    ("nothing scheduled, nothing requested", st_pod(), [st_pod(name="x")], [0, 0]),
    (
        "resources requested, pods scheduled with less resources",
        st_pod({FOO: "2", BAR: "2"}),
        [st_pod(name="x")],
        [4, 3],
    ),
    (
        "resources requested, pods scheduled with resources, on node with existing pod running ",
        st_pod({FOO: "2", BAR: "2"}),
        [st_pod({FOO: "4", BAR: "2"}, name="x", node="node2")],
        [4, 7],
    ),
    (
        "resources requested, pods scheduled with more resources",
        st_pod({FOO: "4", BAR: "2"}),
        [st_pod(name="x")],
        [5, 5],
    ),
]


@pytest.mark.parametrize(("name", "pod", "existing", "want"), MULTI_CASES, ids=[c[0] for c in MULTI_CASES])
def test_resource_bin_packing_multiple_extended(
    name: str, pod: Pod, existing: list[Pod], want: list[int]
) -> None:
    check(rtcr_args([(FOO, 3), (BAR, 5)], BIN_SHAPE), pod, MULTI_NODES, existing, want)
