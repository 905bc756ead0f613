"""Scoring extended resources backed by DRA, ported from upstream ``resource_allocation_test.go``
(TestCalculateResourceAllocatableRequest). The stored test is newer than 1.36.2 and returns the
requested amount including the pod's request; 1.36.2 returns what is allocated on the node, so the
expectations here are upstream's minus the pod's request of 1."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Node
from ksched.api.kinds import convert
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import FakeHandle, make_node, make_pod
from ksched.plugins.args.types import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from ksched.plugins.dynamicresources.cel import CelCache
from ksched.plugins.dynamicresources.extended import DEVICE_CLASS_PREFIX, resolver_for
from ksched.plugins.dynamicresources.testing import device, resource_slice
from ksched.plugins.noderesources import dra_scoring
from ksched.plugins.noderesources.balanced_allocation import BalancedAllocation
from ksched.plugins.noderesources.fit import Fit, FitFeatures, scorer_for
from ksched.plugins.noderesources.testing import scores_both_ways

NODE = "resource-node"
DRIVER = "test-driver"
CLASS = "device-class-name"
EXPLICIT = "extended.resource.dra.io/something"
IMPLICIT = DEVICE_CLASS_PREFIX + CLASS


def dclass(extended: str | None = EXPLICIT, selectors: list[str] = ()) -> DeviceClass:  # type: ignore[assignment]
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if extended:
        spec["extendedResourceName"] = extended
    return convert({"metadata": {"name": CLASS}, "spec": spec}, DeviceClass)


def node_slice(*names: str) -> ResourceSlice:
    return resource_slice("slice", NODE, NODE, DRIVER, *(device(n) for n in names))


def claim(name: str, device_name: str, pool: str = NODE, share: str | None = None) -> ResourceClaim:
    result: dict[str, Any] = {"request": "req-1", "driver": DRIVER, "pool": pool, "device": device_name}
    if share:
        result["shareID"] = share
    return convert(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": CLASS}}]}},
            "status": {"allocation": {"devices": {"results": [result]}}},
        },
        ResourceClaim,
    )


PER_DEVICE_SLICE = convert(
    {
        "metadata": {"name": "per-device-slice"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "per-device-pool", "generation": 1, "resourceSliceCount": 1},
            "perDeviceNodeSelection": True,
            "devices": [
                {
                    "name": "device-1",
                    "nodeName": NODE,
                    "attributes": {"model": {"string": "SOME-XYZ"}},
                    "capacity": {"memory": {"value": "16Gi"}},
                },
                {
                    "name": "device-2",
                    "nodeName": "other-node",
                    "attributes": {"model": {"string": "SOME-ZYX"}},
                    "capacity": {"memory": {"value": "12Gi"}},
                },
                {
                    "name": "device-3",
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["us-east-1a"]}
                                ]
                            }
                        ]
                    },
                    "attributes": {"model": {"string": "SOME-XZY"}},
                    "capacity": {"memory": {"value": "24Gi"}},
                },
            ],
        },
    },
    ResourceSlice,
)
GPU_SELECTOR = (
    'device.driver == "test-driver" && device.capacity["test-driver"].memory.compareTo(quantity("8Gi")) >= 0 '
    '&& device.attributes["test-driver"].model.startsWith("SOME-")'
)

CASES: dict[str, tuple[bool, Node, str, list[Any], tuple[int, int]]] = {
    "device-plugin-resource-feature-disabled": (
        False,
        make_node(NODE, capacity={EXPLICIT: "4"}),
        EXPLICIT,
        [],
        (4, 0),
    ),
    "device-plugin-resource-feature-enabled": (
        True,
        make_node(NODE, capacity={EXPLICIT: "4"}),
        EXPLICIT,
        [],
        (4, 0),
    ),
    "DRA-backed-resource-explicit": (
        True,
        make_node(NODE),
        EXPLICIT,
        [dclass(), node_slice("device-1")],
        (1, 0),
    ),
    "DRA-backed-resource-implicit": (
        True,
        make_node(NODE),
        IMPLICIT,
        [dclass(None), node_slice("device-1")],
        (1, 0),
    ),
    "DRA-backed-resource-no-slices": (True, make_node(NODE), EXPLICIT, [dclass()], (0, 0)),
    "DRA-backed-resource-with-allocated-device": (
        True,
        make_node(NODE),
        EXPLICIT,
        [dclass(), node_slice("device-1", "device-2"), claim("test-claim", "device-1")],
        (2, 1),
    ),
    "DRA-backed-resource-with-shared-device-allocation": (
        True,
        make_node(NODE),
        EXPLICIT,
        [dclass(), node_slice("device-1", "device-2"), claim("test-claim", "device-1", share="share-123")],
        (2, 1),
    ),
    "DRA-backed-resource-multiple-devices-mixed-allocation": (
        True,
        make_node(NODE),
        EXPLICIT,
        [
            dclass(),
            node_slice("device-1", "device-2", "device-3"),
            claim("test-claim-1", "device-1"),
            claim("test-claim-2", "device-2", share="share-456"),
        ],
        (3, 2),
    ),
    "DRA-backed-resource-with-per-device-node-selection": (
        True,
        make_node(NODE, labels={"zone": "us-east-1a"}),
        EXPLICIT,
        [
            dclass(selectors=[GPU_SELECTOR]),
            PER_DEVICE_SLICE,
            claim("test-claim", "device-1", pool="per-device-pool"),
        ],
        (2, 1),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_calculate_resource_allocatable_request(name: str) -> None:
    enabled, node, resource, objects, want = CASES[name]
    snapshot = Snapshot()
    for obj in objects:
        snapshot.objects.put(obj)
    objs = snapshot.objects
    dra = None
    if enabled:
        dra = dra_scoring.prepare(
            [resource],
            resolver_for(objs.device_classes),
            snapshot,
            lambda: objs.resource_claims,
            objs.resource_slices.values(),
            CelCache(),
        )
    strategy = ScoringStrategy(type="LeastAllocated", resources=[ResourceSpec(name=resource, weight=1)])
    scorer = scorer_for(strategy)
    assert scorer._node_amounts(NodeInfo(node), resource, dra) == want


def test_fit_scores_nodes_by_their_free_devices() -> None:
    """LeastAllocated over a DRA-backed resource: the node with more free devices scores higher, per
    node and in the batch."""
    nodes = [make_node(n, allocatable={"cpu": "4", "memory": "4Gi"}) for n in ("a", "b")]
    snapshot = Snapshot.build(nodes, [])
    snapshot.objects.put(dclass())
    snapshot.objects.put(resource_slice("sa", "a", "a", DRIVER, device("d1"), device("d2")))
    snapshot.objects.put(resource_slice("sb", "b", "b", DRIVER, *(device(f"d{i}") for i in range(4))))
    strategy = ScoringStrategy(type="LeastAllocated", resources=[ResourceSpec(name=EXPLICIT, weight=1)])
    plugin = Fit(NodeResourcesFitArgs(scoring_strategy=strategy), FitFeatures(), FakeHandle(snapshot))
    pod = PodInfo(make_pod("p", containers=[{"name": "c", "resources": {"requests": {EXPLICIT: "1"}}}]))
    state = CycleState()
    assert plugin.pre_score(state, pod, snapshot.nodes) is None
    per_node, batch = scores_both_ways(plugin, state, pod, snapshot)
    assert per_node == batch.tolist()
    assert per_node == [50, 75]  # (2 - 1) / 2 and (4 - 1) / 4 free after the pod
    disabled = Fit(
        NodeResourcesFitArgs(scoring_strategy=strategy),
        FitFeatures(dra_extended_resource=False),
        FakeHandle(snapshot),
    )
    state = CycleState()
    disabled.pre_score(state, pod, snapshot.nodes)
    assert scores_both_ways(disabled, state, pod, snapshot)[0] == [0, 0]


def test_balanced_allocation_counts_devices_too() -> None:
    nodes = [make_node(n, allocatable={"cpu": "4", "memory": "4Gi"}) for n in ("a", "b")]
    snapshot = Snapshot.build(nodes, [])
    snapshot.objects.put(dclass())
    snapshot.objects.put(resource_slice("sa", "a", "a", DRIVER, device("d1"), device("d2")))
    args = NodeResourcesBalancedAllocationArgs(
        resources=[ResourceSpec(name="cpu", weight=1), ResourceSpec(name=EXPLICIT, weight=1)]
    )
    plugin = BalancedAllocation(args, handle=FakeHandle(snapshot))
    requests = {"cpu": "1", EXPLICIT: "1"}
    pod = PodInfo(make_pod("p", containers=[{"name": "c", "resources": {"requests": requests}}]))
    state = CycleState()
    assert plugin.pre_score(state, pod, snapshot.nodes) is None
    per_node, batch = scores_both_ways(plugin, state, pod, snapshot)
    assert per_node == batch.tolist()
    # a: cpu 1/4 and devices 1/2 (std 0.125) against an empty node; b offers no devices: cpu alone
    assert per_node == [68, 75]
    without = BalancedAllocation(args, handle=FakeHandle(snapshot), dra_extended_resource=False)
    state = CycleState()
    without.pre_score(state, pod, snapshot.nodes)
    assert scores_both_ways(without, state, pod, snapshot)[0] == [75, 75]
