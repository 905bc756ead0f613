"""MostAllocated scoring strategy, ported from upstream ``most_allocated_test.go``."""

from __future__ import annotations

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.testing import container, make_pod
from ksched.plugins.args.types import MOST_ALLOCATED
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
    snapshot_of,
    st_node,
    st_pod,
)


def bare_container_pod(name: str = "pod", node: str = "") -> Pod:
    """``st.MakePod().Container("container")``: one container without requests."""
    return make_pod(name, node_name=node, containers=[container(name="container")])


CASES: list[tuple[str, Pod, list[Node], list[Pod], list[int], list[tuple[str, int]]]] = [
    (
        "nothing scheduled, nothing requested",
        st_pod(),
        [n("node1", "4000", "10000"), n("node2", "4000", "10000")],
        [],
        [0, 0],
        DEFAULT,
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [],
        [62, 50],
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
        [30, 42],
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
        [42, 55],
        DEFAULT,
    ),
    (
        "resources requested equal node capacity",
        st_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [n("node1", "5000", "10000"), n("node2", "10000", "9000")],
        [],
        [95, 75],
        DEFAULT,
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes (weighted)",
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "4000", "10000"), n("node2", "6000", "10000")],
        [],
        [58, 50],
        [("memory", 2), ("cpu", 1)],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        bare_container_pod(),
        [
            st_node("node1", {"cpu": "250m", "memory": "1000Mi"}),
            st_node("node2", {"cpu": "250m", "memory": "1000Mi"}),
        ],
        [bare_container_pod("a", "node1"), bare_container_pod("b", "node1")],
        [80, 30],
        DEFAULT,
    ),
    (
        "bypass extended resource if the pod does not request",
        st_pod(REQ_1_2, REQ_2_3),
        [n("node1", "6000", "10000"), n("node2", "6000", "10000", ext="4")],
        [],
        [50, 50],
        EXTENDED_SET,
    ),
    (
        "honor extended resource if the pod request",
        st_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}, node="node1"),
        [n("node1", "6000", "10000", ext="4"), n("node2", "6000", "10000", ext="10")],
        [],
        [50, 40],
        EXTENDED_SET,
    ),
    (
        "if the node doesn't have a resource",
        st_pod({"cpu": "3000", "memory": "4000"}, node="node1"),
        [n("node1", "6000", "10000"), n("node2", "6000", "10000", ext="4")],
        [],
        [45, 45],
        [(EXTENDED_RES, 2), ("cpu", 1), ("memory", 1)],
    ),
]
# Upstream names two cases "nothing scheduled, resources requested, differently sized nodes";
# the second (memory weight 2) carries a "(weighted)" suffix here so pytest ids stay unique.


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "want", "resources"), CASES, ids=[c[0] for c in CASES]
)
def test_most_allocated_scoring_strategy(
    name: str,
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    want: list[int],
    resources: list[tuple[str, int]],
) -> None:
    assert_scores(Fit(args_for(resources, MOST_ALLOCATED)), pod, nodes, existing, want)


def test_resources_not_set_pods_scheduled_with_error() -> None:
    snapshot = snapshot_of([n("node1", "4000", "10000"), n("node2", "6000", "10000")])
    plugin, state, pi = Fit(args_for(None, MOST_ALLOCATED)), CycleState(), PodInfo(st_pod(REQ_1_2, REQ_2_3))
    plugin.pre_score(state, pi, snapshot.nodes)
    with pytest.raises(ScoreError, match="resources not found"):
        plugin.score(state, pi, snapshot.nodes[0])


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ([("memory", -1), ("cpu", 1)], "scoringStrategy.resources[0].weight"),
        ([("memory", 1), ("cpu", 0)], "scoringStrategy.resources[1].weight"),
        ([("memory", 101)], "scoringStrategy.resources[0].weight"),
    ],
    ids=[
        "resource with negative weight",
        "resource with zero weight",
        "resource weight larger than MaxNodeScore",
    ],
)
def test_invalid_weights(resources: list[tuple[str, int]], field: str) -> None:
    with pytest.raises(ValueError) as err:
        Fit(args_for(resources, MOST_ALLOCATED))
    assert str(err.value).startswith(f"{field}: Invalid value")
