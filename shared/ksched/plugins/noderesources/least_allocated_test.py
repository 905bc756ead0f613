"""LeastAllocated scoring strategy, ported from upstream ``least_allocated_test.go``."""

from __future__ import annotations

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.plugins.args.types import LEAST_ALLOCATED
from ksched.plugins.noderesources.fit import Fit
from ksched.plugins.noderesources.resource_allocation import ScoreError
from ksched.plugins.noderesources.testing import (
    DEFAULT,
    EXTENDED_RES,
    EXTENDED_SET,
    REQ_1_2,
    REQ_2_3,
    args_for,
    assert_scores,
    n,
    scores_both_ways,
    snapshot_of,
    st_node,
    st_pod,
)

CASES: list[tuple[str, Pod, list[Node], list[Pod], list[int], list[tuple[str, int]] | None]] = [
    (
        "nothing scheduled, nothing requested",
        st_pod(),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        [],
        [100, 100],
        DEFAULT,
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [],
        [37, 50],
        DEFAULT,
    ),
    (
        "no resources requested, pods scheduled",
        st_pod(),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        [
            st_pod(name="a", node="node1"),
            st_pod(name="b", node="node1"),
            st_pod(name="c", node="node2"),
            st_pod(name="d", node="node2"),
        ],
        [100, 100],
        DEFAULT,
    ),
    (
        "no resources requested, pods scheduled with resources",
        st_pod(),
        [n("node1", "10000", "20000"), n("node2", "10000", "20000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, name="a", node="node1"),
            st_pod({"cpu": "3000", "memory": "0"}, name="b", node="node1"),
            st_pod({"cpu": "3000", "memory": "0"}, name="c", node="node2"),
            st_pod({"cpu": "3000", "memory": "5000"}, name="d", node="node2"),
        ],
        [70, 57],
        DEFAULT,
    ),
    (
        "resources requested, pods scheduled with resources",
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "10000", "20000"), n("node2", "10000", "20000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, name="a", node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, name="b", node="node2"),
        ],
        [57, 45],
        DEFAULT,
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "10000", "20000"), n("node2", "10000", "50000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, name="a", node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, name="b", node="node2"),
        ],
        [57, 60],
        DEFAULT,
    ),
    (
        "requested resources exceed node capacity",
        st_pod({"cpu": "3000", "memory": "0"}),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, name="a", node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, name="b", node="node2"),
        ],
        [50, 25],
        DEFAULT,
    ),
    (
        "zero node resources, pods scheduled with resources",
        st_pod(),
        [st_node("node1"), st_node("node2")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, name="a", node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, name="b", node="node2"),
        ],
        [0, 0],
        DEFAULT,
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",  # noqa: E501 (upstream case name)
        st_pod(REQ_1_2, REQ_2_3, node="node1"),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [],
        [41, 50],
        [("memory", 2), ("cpu", 1)],
    ),
    (
        "bypass extended resource if the pod does not request",
        st_pod(REQ_1_2, REQ_2_3, node="node1"),
        [n("node1", "6000", "10000"), n("node2", "6000", "10000", ext="4")],
        [],
        [50, 50],
        EXTENDED_SET,
    ),
    (
        "honor extended resource if the pod requests",
        st_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}, node="node1"),
        [n("node1", "6000", "10000", ext="4"), n("node2", "6000", "10000", ext="10")],
        [],
        [50, 60],
        EXTENDED_SET,
    ),
    (
        "if the node doesn't have a resource",
        st_pod({"cpu": "3000", "memory": "4000"}, node="node1"),
        [n("node1", "6000", "10000"), n("node2", "6000", "10000", ext="4")],
        [],
        [55, 55],
        [(EXTENDED_RES, 2), ("cpu", 1), ("memory", 1)],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "want", "resources"), CASES, ids=[c[0] for c in CASES]
)
def test_least_allocated_scoring_strategy(
    name: str,
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    want: list[int],
    resources: list[tuple[str, int]],
) -> None:
    assert_scores(Fit(args_for(resources, LEAST_ALLOCATED)), pod, nodes, existing, want)


def test_resources_not_set_pods_scheduled_with_error() -> None:
    """Upstream "Resources not set, pods scheduled with error": Score fails with an Error."""
    snapshot = snapshot_of([n("node1", "4000", "10000"), n("node2", "6000", "10000")])
    plugin, state, pi = Fit(args_for(None, LEAST_ALLOCATED)), CycleState(), PodInfo(st_pod(REQ_1_2, REQ_2_3))
    plugin.pre_score(state, pi, snapshot.nodes)
    for ni in snapshot.nodes:
        with pytest.raises(ScoreError, match="resources not found"):
            plugin.score(state, pi, ni)
    with pytest.raises(ScoreError, match="resources not found"):
        scores_both_ways(plugin, state, pi, snapshot)


@pytest.mark.parametrize(
    ("name", "resources", "field"),
    [
        (
            "resource with negative weight",
            [("memory", -1), ("cpu", 1)],
            "scoringStrategy.resources[0].weight",
        ),
        ("resource with zero weight", [("memory", 1), ("cpu", 0)], "scoringStrategy.resources[1].weight"),
        (
            "resource weight larger than MaxNodeScore",
            [("memory", 1), ("cpu", 101)],
            "scoringStrategy.resources[1].weight",
        ),
    ],
    ids=[
        "resource with negative weight",
        "resource with zero weight",
        "resource weight larger than MaxNodeScore",
    ],
)
def test_invalid_weights(name: str, resources: list[tuple[str, int]], field: str) -> None:
    with pytest.raises(ValueError) as err:
        Fit(args_for(resources, LEAST_ALLOCATED))
    assert str(err.value).startswith(f"{field}: Invalid value")
