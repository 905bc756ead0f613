"""NodeResourcesBalancedAllocation, ported from upstream ``balanced_allocation_test.go`` (1.36
formula: 50 + (50 + balance_with_pod - balance_without_pod) / 2)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code
from ksched.framework.testing import container, make_pod
from ksched.plugins.args.types import NodeResourcesBalancedAllocationArgs, ResourceSpec
from ksched.plugins.noderesources.balanced_allocation import BalancedAllocation, balanced_resource_score
from ksched.plugins.noderesources.testing import (
    assert_scores,
    make_resource_node,
    scores_both_ways,
    snapshot_of,
    st_pod,
)


def spec_pod(containers: list[dict[str, str]], node: str, name: str = "pod") -> Pod:
    return make_pod(
        name, node_name=node, containers=[container(f"c{i}", r) for i, r in enumerate(containers)]
    )


def cpu_only(node: str = "node1", name: str = "cpu-only") -> Pod:
    return spec_pod([{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}], node, name)


def memory_only(node: str = "node1", name: str = "memory-only") -> Pod:
    return spec_pod([{"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"}], node, name)


def cpu_and_memory(node: str = "node2", name: str = "cpu-and-memory") -> Pod:
    return spec_pod([{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}], node, name)


def cpu_memory_gpu(node: str = "node1", name: str = "cpu-memory-gpu") -> Pod:
    gpu = {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"}
    return spec_pod([{"cpu": "1000m", "memory": "2000"}, gpu], node, name)


GPU8 = {"nvidia.com/gpu": 8}
DEFAULT_SET = [("cpu", 1), ("memory", 1)]
WITH_GPU = [("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 1)]


def ba_args(resources: list[tuple[str, int]]) -> NodeResourcesBalancedAllocationArgs:
    return NodeResourcesBalancedAllocationArgs(
        resources=[ResourceSpec(name=r, weight=w) for r, w in resources]
    )


CASES: list[tuple[str, Pod, list[Node], list[Pod], list[int], list[tuple[str, int]], bool]] = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        cpu_and_memory(),
        [make_resource_node("node1", 4000, 10000), make_resource_node("node2", 6000, 10000)],
        [],
        [68, 75],
        DEFAULT_SET,
        True,
    ),
    (
        "resources requested, pods scheduled with resources",
        cpu_and_memory(),
        [make_resource_node("node1", 10000, 20000), make_resource_node("node2", 10000, 20000)],
        [cpu_only(), cpu_and_memory()],
        [73, 74],
        DEFAULT_SET,
        True,
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        cpu_and_memory(),
        [make_resource_node("node1", 10000, 20000), make_resource_node("node2", 10000, 50000)],
        [cpu_only(), cpu_and_memory()],
        [73, 70],
        DEFAULT_SET,
        True,
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        memory_only(),
        [make_resource_node("node1", 3000, 5000), make_resource_node("node2", 3000, 5000)],
        [cpu_only()],
        [100, 50],
        DEFAULT_SET,
        True,
    ),
    (
        "requested resources at node capacity",
        cpu_only(),
        [make_resource_node("node1", 6000, 10000), make_resource_node("node2", 6000, 10000)],
        [cpu_only(), cpu_and_memory()],
        [62, 62],
        DEFAULT_SET,
        True,
    ),
    (
        "include scalar resource on a node for balanced resource allocation",
        st_pod({"memory": "0", "nvidia.com/gpu": "1"}),
        [make_resource_node("node1", 3500, 40000, GPU8), make_resource_node("node2", 3500, 40000, GPU8)],
        [cpu_and_memory(), cpu_memory_gpu()],
        [75, 76],
        WITH_GPU,
        True,
    ),
    (
        "node without the scalar resource should skip the scalar resource",
        cpu_and_memory(),
        [make_resource_node("node1", 3500, 40000, GPU8), make_resource_node("node2", 3500, 40000)],
        [],
        [56, 56],
        WITH_GPU,
        True,
    ),
    (
        "resources requested, pods scheduled with resources if PreScore not called",
        cpu_and_memory(),
        [make_resource_node("node1", 10000, 20000), make_resource_node("node2", 10000, 20000)],
        [cpu_only(), cpu_and_memory()],
        [73, 74],
        DEFAULT_SET,
        False,
    ),
    # "include DRA resource on a node for balanced resource allocation" (with and without
    # PreScore) score a DRA-backed extended resource from ResourceSlices: not modelled by ksched.
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "want", "resources", "run_pre_score"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_node_resources_balanced_allocation(
    name: str,
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    want: list[int],
    resources: list[tuple[str, int]],
    run_pre_score: bool,
) -> None:
    assert_scores(BalancedAllocation(ba_args(resources)), pod, nodes, existing, want, pre_score=run_pre_score)


def test_nothing_scheduled_nothing_requested_skip_in_pre_score() -> None:
    """Upstream "nothing scheduled, nothing requested, skip in PreScore": best-effort pods skip."""
    snapshot = snapshot_of(
        [make_resource_node("node1", 4000, 10000), make_resource_node("node2", 4000, 10000)]
    )
    plugin, state, pi = BalancedAllocation(ba_args(DEFAULT_SET)), CycleState(), PodInfo(st_pod())
    status = plugin.pre_score(state, pi, snapshot.nodes)
    assert status is not None and status.code == Code.SKIP
    # Score without PreScore state returns 0 for a best-effort pod.
    assert scores_both_ways(plugin, state, pi, snapshot)[0] == [0, 0]


def test_pod_level_requests_count_for_balanced_allocation() -> None:
    """1.36 honours pod-level spec.resources in BalancedAllocation (unlike the Fit scorer)."""
    node = make_resource_node("node1", 4000, 10000)
    pod = st_pod({"cpu": "1000m", "memory": "1000"}, pod_level={"cpu": "3000m", "memory": "5000"})
    snapshot = snapshot_of([node])
    plugin, state, pi = BalancedAllocation(), CycleState(), PodInfo(pod)
    plugin.pre_score(state, pi, snapshot.nodes)
    # pod level: 0.75 / 0.5 -> 87, empty node 100 -> 50 + (50 + 87 - 100) / 2 = 68;
    # containers only: 0.25 / 0.1 -> 92 -> 50 + (50 + 92 - 100) / 2 = 71
    assert scores_both_ways(plugin, state, pi, snapshot)[0] == [68]
    disabled = BalancedAllocation(pod_level_resources=False)
    state = CycleState()
    disabled.pre_score(state, pi, snapshot.nodes)
    assert scores_both_ways(disabled, state, pi, snapshot)[0] == [71]


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        ([3000, 5000], [4000, 10000], 87),
        ([0, 0], [4000, 10000], 100),
        ([5000, 5000], [4000, 10000], 75),  # fractions are capped at 1
        ([1, 1, 1], [2, 4, 8], 84),
        ([1], [2], 100),
        ([7, 0], [0, 0], 100),
    ],
)
def test_balanced_resource_score(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_resource_score(requested, allocatable) == want


@pytest.mark.parametrize(
    ("resources", "errors"),
    [
        ([("cpu", 2)], ["resources[0].weight: Invalid value: 2: must be 1"]),
        ([("cpu", 1), ("cpu", 1)], ['resources[1].name: Duplicate value: "cpu"']),
    ],
)
def test_invalid_args(resources: list[tuple[str, int]], errors: list[Any]) -> None:
    with pytest.raises(ValueError) as err:
        BalancedAllocation(ba_args(resources))
    assert str(err.value) == errors[0]
