"""Property: the batch (numpy) Filter and Score paths agree exactly with the per-node paths on
random clusters and pods (scalar resources, init/sidecar containers, pod-level requests,
overhead, pods without requests) for every scoring strategy and for BalancedAllocation."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code
from ksched.framework.testing import container, make_node, make_pod
from ksched.plugins.args.types import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from ksched.plugins.noderesources.balanced_allocation import BalancedAllocation
from ksched.plugins.noderesources.fit import Fit, FitFeatures
from ksched.plugins.noderesources.testing import snapshot_of

SCALARS = ("example.com/gpu", "hugepages-2Mi", "kubernetes.io/widget", "other.io/never-offered")
SCORED = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "pods",
    "example.com/gpu",
    "hugepages-2Mi",
    "other.io/never-offered",
)

amount = st.one_of(st.just(0), st.integers(1, 16), st.integers(1, 1 << 40))


@st.composite
def requests(draw: st.DrawFn) -> dict[str, str]:
    out: dict[str, str] = {}
    if draw(st.booleans()):
        out["cpu"] = f"{draw(st.integers(0, 8000))}m"
    if draw(st.booleans()):
        out["memory"] = str(draw(amount))
    if draw(st.integers(0, 3)) == 0:
        out["ephemeral-storage"] = str(draw(amount))
    for name in SCALARS:
        if draw(st.integers(0, 3)) == 0:
            out[name] = str(draw(st.integers(0, 6)))
    return out


@st.composite
def pods(draw: st.DrawFn, name: str, node: str = "") -> Pod:
    containers = [container(f"c{i}", draw(requests())) for i in range(draw(st.integers(0, 3)))]
    inits = [
        container(f"i{i}", draw(requests()), restart_policy=draw(st.sampled_from([None, "Always"])))
        for i in range(draw(st.integers(0, 2)))
    ]
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 4)) == 0:
        spec["resources"] = {
            "requests": {k: v for k, v in draw(requests()).items() if k in ("cpu", "memory")}
        }
    if draw(st.integers(0, 4)) == 0:
        spec["overhead"] = {
            "cpu": f"{draw(st.integers(0, 500))}m",
            "memory": str(draw(st.integers(0, 1 << 20))),
        }
    return make_pod(name, node_name=node, containers=containers, init_containers=inits or None, spec=spec)


@st.composite
def nodes(draw: st.DrawFn, name: str) -> Node:
    alloc: dict[str, str] = {"pods": str(draw(st.integers(0, 6)))}
    if draw(st.integers(0, 5)):
        alloc["cpu"] = f"{draw(st.integers(0, 64000))}m"
    if draw(st.integers(0, 5)):
        alloc["memory"] = str(draw(amount))
    if draw(st.booleans()):
        alloc["ephemeral-storage"] = str(draw(amount))
    for scalar in SCALARS[:3]:
        if draw(st.booleans()):
            alloc[scalar] = str(draw(st.integers(0, 12)))
    return make_node(name, allocatable=alloc)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod], Pod]:
    node_list = [draw(nodes(f"n{i}")) for i in range(draw(st.integers(1, 6)))]
    existing = [
        draw(pods(f"e{i}", node=draw(st.sampled_from([n.metadata.name for n in node_list]))))
        for i in range(draw(st.integers(0, 10)))
    ]
    return node_list, existing, draw(pods("incoming"))


weights = st.lists(
    st.tuples(st.sampled_from(SCORED), st.integers(1, 100)), min_size=0, max_size=5, unique_by=lambda t: t[0]
)


@st.composite
def fit_args(draw: st.DrawFn) -> NodeResourcesFitArgs:
    kind = draw(st.sampled_from([LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO]))
    ratio = None
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        utilizations = sorted(draw(st.sets(st.integers(0, 100), min_size=1, max_size=4)))
        points = [UtilizationShapePoint(utilization=u, score=draw(st.integers(0, 10))) for u in utilizations]
        ratio = RequestedToCapacityRatioParam(shape=points)
    resources = [ResourceSpec(name=n, weight=w) for n, w in draw(weights)]
    ignored = draw(st.lists(st.sampled_from(["example.com/gpu", "other.io/never-offered"]), max_size=1))
    groups = draw(st.lists(st.sampled_from(["example.com", "other.io"]), max_size=1))
    strategy = ScoringStrategy(type=kind, resources=resources, requested_to_capacity_ratio=ratio)
    return NodeResourcesFitArgs(
        ignored_resources=ignored, ignored_resource_groups=groups, scoring_strategy=strategy
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), args=fit_args(), level=st.booleans())
def test_fit_batch_paths_agree_with_per_node_paths(
    cluster: tuple[list[Node], list[Pod], Pod], args: NodeResourcesFitArgs, level: bool
) -> None:
    node_list, existing, incoming = cluster
    snapshot = snapshot_of(node_list, existing)
    rows = np.arange(len(snapshot.nodes), dtype=np.intp)
    plugin, state, pod = Fit(args, FitFeatures(pod_level_resources=level)), CycleState(), PodInfo(incoming)
    plugin.pre_filter(state, pod, snapshot.nodes)
    statuses = [plugin.filter(state, pod, ni) for ni in snapshot.nodes]
    assert all(
        s is None or s.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE) for s in statuses
    )
    assert plugin.filter_batch(state, pod, snapshot, rows).tolist() == [s is None for s in statuses]
    plugin.pre_score(state, pod, snapshot.nodes)
    per_node = [plugin.score(state, pod, ni) for ni in snapshot.nodes]
    assert plugin.score_batch(state, pod, snapshot, rows).tolist() == per_node
    assert all(0 <= s <= 100 for s in per_node)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), resources=weights)
def test_balanced_allocation_batch_path_agrees_with_per_node_path(
    cluster: tuple[list[Node], list[Pod], Pod], resources: list[tuple[str, int]]
) -> None:
    node_list, existing, incoming = cluster
    snapshot = snapshot_of(node_list, existing)
    rows = np.arange(len(snapshot.nodes), dtype=np.intp)
    args = NodeResourcesBalancedAllocationArgs(
        resources=[ResourceSpec(name=n, weight=1) for n, _ in resources]
    )
    plugin, state, pod = BalancedAllocation(args), CycleState(), PodInfo(incoming)
    plugin.pre_score(state, pod, snapshot.nodes)
    per_node = [plugin.score(state, pod, ni) for ni in snapshot.nodes]
    assert plugin.score_batch(state, pod, snapshot, rows).tolist() == per_node
    assert all(0 <= s <= 100 for s in per_node)


def test_batch_paths_on_a_subset_of_rows() -> None:
    node_list = [
        make_node(f"n{i}", allocatable={"cpu": f"{i + 1}", "memory": "4Gi", "pods": "3"}) for i in range(5)
    ]
    snapshot = snapshot_of(node_list, [make_pod("e", node_name="n2", requests={"cpu": "2", "memory": "1Gi"})])
    rows = np.array([4, 2, 0], dtype=np.intp)
    plugin, state, pod = (
        Fit(),
        CycleState(),
        PodInfo(make_pod("p", requests={"cpu": "1500m", "memory": "1Gi"})),
    )
    plugin.pre_filter(state, pod, snapshot.nodes)
    assert plugin.filter_batch(state, pod, snapshot, rows).tolist() == [True, False, False]
    plugin.pre_score(state, pod, snapshot.nodes)
    want = [plugin.score(state, pod, snapshot.nodes[r]) for r in rows]
    assert plugin.score_batch(state, pod, snapshot, rows).tolist() == want
