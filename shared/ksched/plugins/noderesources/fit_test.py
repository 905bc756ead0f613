"""NodeResourcesFit, ported from upstream ``fit_test.go`` (1.36) case by case."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import msgspec
import numpy as np
import pytest

from ksched.api.core import Node, Pod
from ksched.api.kinds import convert
from ksched.api.resource import DeviceClass
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.testing import FakeHandle, make_node, make_pod
from ksched.plugins.args.types import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from ksched.plugins.dynamicresources.extended import NO_CLASSES, DeviceClassResolver
from ksched.plugins.noderesources.fit import (
    ERR_SIDECARS_DISABLED,
    Fit,
    FitFeatures,
    is_fit,
    requested_resources_increased,
)
from ksched.plugins.noderesources.fits import FitRequest, InsufficientResource, fits_request, pod_fit_request
from ksched.plugins.noderesources.testing import (
    EXTENDED_A,
    EXTENDED_B,
    EXTENDED_DRA,
    HUGEPAGES_A,
    KUBERNETES_IO_A,
    KUBERNETES_IO_B,
    assert_scores,
    node_info,
    resource_pod,
    scores_both_ways,
    snapshot_of,
    st_node,
    st_pod,
    usage,
    with_init,
)

NODE_ALLOCATABLE = {
    "cpu": "10m",
    "memory": "20",
    "pods": "32",
    EXTENDED_A: "5",
    "ephemeral-storage": "20",
    HUGEPAGES_A: "5",
}


def _reason(resource: str) -> str:
    return f"Insufficient {resource}"


def _insufficient(name: str, requested: int, used: int, capacity: int, unresolvable: bool = False) -> Any:
    return InsufficientResource(name, _reason(name), requested, used, capacity, unresolvable)


def _status(code: Code, *resources: str) -> Status:
    return Status(code, *(_reason(r) for r in resources))


def _batch_agrees(plugin: Fit, state: CycleState, pod: PodInfo, node: Node, node_pods: list[Pod]) -> bool:
    """filter_batch over a one-node snapshot equals ``filter(...) is None`` on the same node."""
    placed = [
        msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=node.metadata.name))
        for p in node_pods
    ]
    snap = snapshot_of([node], placed)
    ni = snap.get(node.metadata.name)
    per_node = plugin.filter(state, pod, ni) is None
    batch = plugin.filter_batch(state, pod, snap, np.array([ni.index], dtype=np.intp))
    return bool(batch[0]) == per_node


@dataclass
class EnoughCase:
    name: str
    pod: Pod
    node_pods: list[Pod]
    want_status: Status | None = None
    want_insufficient: list[InsufficientResource] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    ignored_groups: list[str] = field(default_factory=list)
    pod_level: bool = False
    dra: bool = True


U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

ENOUGH_CASES = [
    EnoughCase("no resources requested always fits", resource_pod(), [resource_pod(usage(10, 20))]),
    EnoughCase(
        "too many resources fails",
        resource_pod(usage(1, 1)),
        [resource_pod(usage(10, 20))],
        _status(U, "cpu", "memory"),
        [_insufficient("cpu", 1, 10, 10), _insufficient("memory", 1, 20, 20)],
    ),
    EnoughCase(
        "too many resources fails due to init container cpu",
        with_init([usage(1, 1)], [usage(3, 1)]),
        [resource_pod(usage(8, 19))],
        _status(U, "cpu"),
        [_insufficient("cpu", 3, 8, 10)],
    ),
    EnoughCase(
        "too many resources fails due to highest init container cpu",
        with_init([usage(1, 1)], [usage(3, 1), usage(2, 1)]),
        [resource_pod(usage(8, 19))],
        _status(U, "cpu"),
        [_insufficient("cpu", 3, 8, 10)],
    ),
    EnoughCase(
        "too many resources fails due to init container memory",
        with_init([usage(1, 1)], [usage(1, 3)]),
        [resource_pod(usage(9, 19))],
        _status(U, "memory"),
        [_insufficient("memory", 3, 19, 20)],
    ),
    EnoughCase(
        "too many resources fails due to highest init container memory",
        with_init([usage(1, 1)], [usage(1, 3), usage(1, 2)]),
        [resource_pod(usage(9, 19))],
        _status(U, "memory"),
        [_insufficient("memory", 3, 19, 20)],
    ),
    EnoughCase(
        "init container fits because it's the max, not sum, of containers and init containers",
        with_init([usage(1, 1)], [usage(1, 1)]),
        [resource_pod(usage(9, 19))],
    ),
    EnoughCase(
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        with_init([usage(1, 1)], [usage(1, 1), usage(1, 1)]),
        [resource_pod(usage(9, 19))],
    ),
    EnoughCase("both resources fit", resource_pod(usage(1, 1)), [resource_pod(usage(5, 5))]),
    EnoughCase(
        "one resource memory fits",
        resource_pod(usage(2, 1)),
        [resource_pod(usage(9, 5))],
        _status(U, "cpu"),
        [_insufficient("cpu", 2, 9, 10)],
    ),
    EnoughCase(
        "one resource cpu fits",
        resource_pod(usage(1, 2)),
        [resource_pod(usage(5, 19))],
        _status(U, "memory"),
        [_insufficient("memory", 2, 19, 20)],
    ),
    EnoughCase("equal edge case", resource_pod(usage(5, 1)), [resource_pod(usage(5, 19))]),
    EnoughCase(
        "equal edge case for init container",
        with_init([usage(4, 1)], [usage(5, 1)]),
        [resource_pod(usage(5, 19))],
    ),
    EnoughCase(
        "extended resource fits", resource_pod(usage(scalars={EXTENDED_A: 1})), [resource_pod(usage())]
    ),
    EnoughCase(
        "extended resource fits for init container",
        with_init([usage()], [usage(scalars={EXTENDED_A: 1})]),
        [resource_pod(usage())],
    ),
    EnoughCase(
        "extended resource capacity enforced",
        resource_pod(usage(1, 1, scalars={EXTENDED_A: 10})),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 0}))],
        _status(UU, EXTENDED_A),
        [_insufficient(EXTENDED_A, 10, 0, 5, True)],
    ),
    EnoughCase(
        "extended resource capacity enforced for init container",
        with_init([usage()], [usage(1, 1, scalars={EXTENDED_A: 10})]),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 0}))],
        _status(UU, EXTENDED_A),
        [_insufficient(EXTENDED_A, 10, 0, 5, True)],
    ),
    EnoughCase(
        "extended resource allocatable enforced",
        resource_pod(usage(1, 1, scalars={EXTENDED_A: 1})),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 5}))],
        _status(U, EXTENDED_A),
        [_insufficient(EXTENDED_A, 1, 5, 5)],
    ),
    EnoughCase(
        "extended resource allocatable enforced for init container",
        with_init([usage()], [usage(1, 1, scalars={EXTENDED_A: 1})]),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 5}))],
        _status(U, EXTENDED_A),
        [_insufficient(EXTENDED_A, 1, 5, 5)],
    ),
    EnoughCase(
        "extended resource allocatable enforced for multiple containers",
        resource_pod(usage(1, 1, scalars={EXTENDED_A: 3}), usage(1, 1, scalars={EXTENDED_A: 3})),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 2}))],
        _status(UU, EXTENDED_A),
        [_insufficient(EXTENDED_A, 6, 2, 5, True)],
    ),
    EnoughCase(
        "extended resource allocatable admits multiple init containers",
        with_init([usage()], [usage(1, 1, scalars={EXTENDED_A: 3}), usage(1, 1, scalars={EXTENDED_A: 3})]),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 2}))],
    ),
    EnoughCase(
        "extended resource allocatable enforced for multiple init containers",
        with_init([usage()], [usage(1, 1, scalars={EXTENDED_A: 6}), usage(1, 1, scalars={EXTENDED_A: 3})]),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 2}))],
        _status(UU, EXTENDED_A),
        [_insufficient(EXTENDED_A, 6, 2, 5, True)],
    ),
    EnoughCase(
        "extended resource allocatable enforced for unknown resource",
        resource_pod(usage(1, 1, scalars={EXTENDED_B: 1})),
        [resource_pod(usage(0, 0))],
        _status(UU, EXTENDED_B),
        [_insufficient(EXTENDED_B, 1, 0, 0, True)],
    ),
    EnoughCase(
        "extended resource allocatable enforced for unknown resource for init container",
        with_init([usage()], [usage(1, 1, scalars={EXTENDED_B: 1})]),
        [resource_pod(usage(0, 0))],
        _status(UU, EXTENDED_B),
        [_insufficient(EXTENDED_B, 1, 0, 0, True)],
    ),
    EnoughCase(
        "kubernetes.io resource capacity enforced",
        resource_pod(usage(1, 1, scalars={KUBERNETES_IO_A: 10})),
        [resource_pod(usage(0, 0))],
        _status(UU, KUBERNETES_IO_A),
        [_insufficient(KUBERNETES_IO_A, 10, 0, 0, True)],
    ),
    EnoughCase(
        "kubernetes.io resource capacity enforced for init container",
        with_init([usage()], [usage(1, 1, scalars={KUBERNETES_IO_B: 10})]),
        [resource_pod(usage(0, 0))],
        _status(UU, KUBERNETES_IO_B),
        [_insufficient(KUBERNETES_IO_B, 10, 0, 0, True)],
    ),
    EnoughCase(
        "hugepages resource capacity enforced",
        resource_pod(usage(1, 1, scalars={HUGEPAGES_A: 10})),
        [resource_pod(usage(0, 0, scalars={HUGEPAGES_A: 0}))],
        _status(UU, HUGEPAGES_A),
        [_insufficient(HUGEPAGES_A, 10, 0, 5, True)],
    ),
    EnoughCase(
        "hugepages resource capacity enforced for init container",
        with_init([usage()], [usage(1, 1, scalars={HUGEPAGES_A: 10})]),
        [resource_pod(usage(0, 0, scalars={HUGEPAGES_A: 0}))],
        _status(UU, HUGEPAGES_A),
        [_insufficient(HUGEPAGES_A, 10, 0, 5, True)],
    ),
    EnoughCase(
        "hugepages resource allocatable enforced for multiple containers",
        resource_pod(usage(1, 1, scalars={HUGEPAGES_A: 3}), usage(1, 1, scalars={HUGEPAGES_A: 3})),
        [resource_pod(usage(0, 0, scalars={HUGEPAGES_A: 2}))],
        _status(UU, HUGEPAGES_A),
        [_insufficient(HUGEPAGES_A, 6, 2, 5, True)],
    ),
    EnoughCase(
        "skip checking ignored extended resource",
        resource_pod(usage(1, 1, scalars={EXTENDED_B: 1})),
        [resource_pod(usage(0, 0))],
        ignored=["example.com/bbb"],
    ),
    EnoughCase(
        "resources + pod overhead fits",
        resource_pod(usage(1, 1), spec={"overhead": {"cpu": "3m", "memory": "13"}}),
        [resource_pod(usage(5, 5))],
    ),
    EnoughCase(
        "requests + overhead does not fit for memory",
        resource_pod(usage(1, 1), spec={"overhead": {"cpu": "1m", "memory": "15"}}),
        [resource_pod(usage(5, 5))],
        _status(U, "memory"),
        [_insufficient("memory", 16, 5, 20)],
    ),
    EnoughCase(
        "skip checking ignored extended resource via resource groups",
        resource_pod(usage(1, 1, scalars={EXTENDED_B: 1, KUBERNETES_IO_A: 1})),
        [resource_pod(usage(0, 0))],
        _status(UU, KUBERNETES_IO_A),
        [_insufficient(KUBERNETES_IO_A, 1, 0, 0, True)],
        ignored_groups=["example.com"],
    ),
    EnoughCase(
        "skip checking extended resource request with quantity zero via resource groups",
        resource_pod(usage(1, 1, scalars={EXTENDED_A: 0})),
        [resource_pod(usage(0, 0, scalars={EXTENDED_A: 6}))],
    ),
    EnoughCase(
        "skip checking resource request with quantity zero",
        resource_pod(usage(scalars={EXTENDED_A: 1})),
        [resource_pod(usage(20, 30, scalars={EXTENDED_A: 1}))],
        pod_level=True,
    ),
    EnoughCase(
        "both pod-level and container-level resources fit",
        resource_pod(usage(1, 1), spec={"resources": {"requests": {"cpu": "1m", "memory": "2"}}}),
        [resource_pod(usage(5, 5))],
        pod_level=True,
    ),
    EnoughCase(
        "pod-level cpu resource not fit",
        resource_pod(usage(1, 1), spec={"resources": {"requests": {"cpu": "7m", "memory": "2"}}}),
        [resource_pod(usage(5, 5))],
        _status(U, "cpu"),
        [_insufficient("cpu", 7, 5, 10)],
        pod_level=True,
    ),
    EnoughCase(
        "pod-level memory resource not fit",
        resource_pod(usage(1, 1), spec={"resources": {"requests": {"cpu": "3m", "memory": "2"}}}),
        [resource_pod(usage(5, 19))],
        _status(U, "memory"),
        [_insufficient("memory", 2, 19, 20)],
        pod_level=True,
    ),
    EnoughCase(
        "pod-level hugepages resource fit",
        resource_pod(spec={"resources": {"requests": {"cpu": "3m", "memory": "2", HUGEPAGES_A: "5"}}}),
        [],
        pod_level=True,
    ),
    EnoughCase(
        "both pod-level and container-level hugepages resource fit",
        resource_pod(
            usage(1, 1, scalars={HUGEPAGES_A: 3}),
            spec={"resources": {"requests": {"cpu": "3m", "memory": "2", HUGEPAGES_A: "5"}}},
        ),
        [],
        pod_level=True,
    ),
    EnoughCase(
        "pod-level hugepages resource not fit",
        resource_pod(spec={"resources": {"requests": {"cpu": "3m", "memory": "2", HUGEPAGES_A: "10"}}}),
        [],
        _status(UU, HUGEPAGES_A),
        [_insufficient(HUGEPAGES_A, 10, 0, 5, True)],
        pod_level=True,
    ),
    EnoughCase(
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        with_init(
            [usage(1, 1)], [usage(1, 1)], spec={"resources": {"requests": {"cpu": "3m", "memory": "2"}}}
        ),
        [resource_pod(usage(5, 19))],
        _status(U, "memory"),
        [_insufficient("memory", 2, 19, 20)],
        pod_level=True,
    ),
    EnoughCase(
        "extended resource backed by device plugin",
        resource_pod(usage(scalars={EXTENDED_A: 1})),
        [resource_pod(usage())],
    ),
    EnoughCase(
        "extended resource backed by DRA",
        resource_pod(usage(1, 1, scalars={EXTENDED_DRA: 1})),
        [resource_pod(usage(0, 0))],
    ),
    EnoughCase(
        "extended resource backed by DRA, nil draManager",
        resource_pod(usage(1, 1, scalars={EXTENDED_A: 1})),
        [resource_pod(usage(0, 0))],
    ),
    EnoughCase(
        "extended resource backed by DRA not enabled",
        resource_pod(usage(1, 1, scalars={EXTENDED_DRA: 1})),
        [resource_pod(usage(0, 0))],
        _status(UU, EXTENDED_DRA),
        [_insufficient(EXTENDED_DRA, 1, 0, 0, True)],
        dra=False,
    ),
    EnoughCase(
        "extended resource NOT backed by DRA",
        resource_pod(usage(1, 1, scalars={EXTENDED_B: 1})),
        [resource_pod(usage(0, 0))],
        _status(UU, EXTENDED_B),
        [_insufficient(EXTENDED_B, 1, 0, 0, True)],
    ),
    EnoughCase(
        "extended resource was backed by Device Plugin (Allocatable: 0)",
        resource_pod(usage(scalars={EXTENDED_DRA: 1})),
        [resource_pod(usage(scalars={EXTENDED_DRA: 0}))],
    ),
    EnoughCase(
        "extended resource was backed by Device Plugin (Allocatable: 0), global cache",
        resource_pod(usage(scalars={EXTENDED_A: 1})),
        [resource_pod(usage(scalars={EXTENDED_A: 0}))],
    ),
]


def _fit(
    args: NodeResourcesFitArgs | None = None, *, handle: FakeHandle | None = None, **features: bool
) -> Fit:
    return Fit(args, FitFeatures(**features), handle)


#: upstream's ``deviceClassWithExtendResourceName``: the class backing EXTENDED_DRA
DRA_CLASS = convert(
    {"metadata": {"name": "device-class-name"}, "spec": {"extendedResourceName": EXTENDED_DRA}}, DeviceClass
)


def _with_dra_class() -> FakeHandle:
    snapshot = Snapshot()
    snapshot.objects.put(DRA_CLASS)
    return FakeHandle(snapshot)


@pytest.mark.parametrize("case", ENOUGH_CASES, ids=[c.name for c in ENOUGH_CASES])
def test_enough_requests(case: EnoughCase) -> None:
    node = make_node("node", allocatable=NODE_ALLOCATABLE)
    ni = node_info(node, *case.node_pods)
    plugin = _fit(
        NodeResourcesFitArgs(ignored_resources=case.ignored, ignored_resource_groups=case.ignored_groups),
        handle=_with_dra_class(),
        pod_level_resources=case.pod_level,
        dra_extended_resource=case.dra,
    )
    state, pod = CycleState(), PodInfo(case.pod)
    assert plugin.pre_filter(state, pod, []) == (None, None)
    assert plugin.filter(state, pod, ni) == case.want_status
    request = state.read_as("PreFilterNodeResourcesFit", FitRequest)
    assert request.scalars == pod_fit_request(pod, pod_level_resources=case.pod_level).scalars
    assert fits_request(request, ni, plugin.ignored) == case.want_insufficient
    assert _batch_agrees(plugin, state, pod, node, case.node_pods)


def test_pre_filter_disabled() -> None:
    ni = node_info(make_node("node"))
    status = _fit().filter(CycleState(), PodInfo(make_pod(containers=[])), ni)
    assert status is not None and status.code == Code.ERROR
    assert "PreFilterNodeResourcesFit" in status.message and "not found" in status.message


NOT_ENOUGH_PODS_CASES = [
    (
        "even without specified resources, predicate fails when there's no space for additional pod",
        resource_pod(),
        resource_pod(usage(10, 20)),
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        resource_pod(usage(1, 1)),
        resource_pod(usage(5, 5)),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        resource_pod(usage(5, 1)),
        resource_pod(usage(5, 19)),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to init container",  # noqa: E501 (upstream case name)
        with_init([usage(5, 1)], [usage(5, 1)]),
        resource_pod(usage(5, 19)),
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "existing"), NOT_ENOUGH_PODS_CASES, ids=[c[0] for c in NOT_ENOUGH_PODS_CASES]
)
def test_not_enough_requests(name: str, pod: Pod, existing: Pod) -> None:
    node = make_node("node", allocatable={"cpu": "10m", "memory": "20", "pods": "1", EXTENDED_A: "0",
                                         "ephemeral-storage": "0", HUGEPAGES_A: "0"})  # fmt: skip
    plugin, state, pi = _fit(), CycleState(), PodInfo(pod)
    plugin.pre_filter(state, pi, [])
    assert plugin.filter(state, pi, node_info(node, existing)) == Status(U, "Too many pods")
    assert _batch_agrees(plugin, state, pi, node, [existing])


STORAGE_CASES = [
    ("empty storage requested, and pod fits", resource_pod(usage(1, 1)), resource_pod(usage(2, 10)), None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        resource_pod(usage(ephemeral=25)),
        resource_pod(usage(2, 2)),
        _status(UU, "ephemeral-storage"),
    ),
    (
        "ephemeral local storage is sufficient",
        resource_pod(usage(ephemeral=5)),
        resource_pod(usage(2, 2, ephemeral=10)),
        None,
    ),
    ("pod fits", resource_pod(usage(ephemeral=10)), resource_pod(usage(2, 2)), None),
]


@pytest.mark.parametrize(
    ("name", "pod", "existing", "want"), STORAGE_CASES, ids=[c[0] for c in STORAGE_CASES]
)
def test_storage_requests(name: str, pod: Pod, existing: Pod, want: Status | None) -> None:
    node = make_node("node", allocatable=NODE_ALLOCATABLE)
    plugin, state, pi = _fit(), CycleState(), PodInfo(pod)
    plugin.pre_filter(state, pi, [])
    assert plugin.filter(state, pi, node_info(node, existing)) == want
    assert _batch_agrees(plugin, state, pi, node, [existing])


def _sidecar_pod(request: dict[str, str] | None, sidecar: dict[str, str] | None, plain: bool = False) -> Pod:
    from ksched.framework.testing import container

    regular = container(name="regular", requests=request)
    if plain:
        return make_pod(containers=[regular])
    init = container(name="restartable-init", requests=sidecar, restart_policy="Always")
    return make_pod(containers=[regular], init_containers=[init])


RESTARTABLE_CASES = [
    (
        "allow pod without restartable init containers if sidecar containers is disabled",
        _sidecar_pod(None, None, plain=True),
        False,
        None,
        None,
    ),
    (
        "not allow pod with restartable init containers if sidecar containers is disabled",
        _sidecar_pod(None, None),
        False,
        Status(UU, ERR_SIDECARS_DISABLED),
        None,
    ),
    (
        "allow pod without restartable init containers if sidecar containers is enabled",
        _sidecar_pod(None, None, plain=True),
        True,
        None,
        None,
    ),
    (
        "allow pod with restartable init containers if sidecar containers is enabled",
        _sidecar_pod(None, None),
        True,
        None,
        None,
    ),
    (
        "allow pod if the total requested resources do not exceed the node's allocatable resources",
        _sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}),
        True,
        None,
        None,
    ),
    (
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
        _sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}),
        True,
        None,
        _status(UU, "cpu"),
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "sidecars", "want_pre_filter", "want_filter"),
    RESTARTABLE_CASES,
    ids=[c[0] for c in RESTARTABLE_CASES],
)
def test_restartable_init_containers(
    name: str, pod: Pod, sidecars: bool, want_pre_filter: Status | None, want_filter: Status | None
) -> None:
    node = make_node("node", allocatable={"cpu": "2m", "memory": "0", "pods": "1", EXTENDED_A: "0",
                                         "ephemeral-storage": "0", HUGEPAGES_A: "0"})  # fmt: skip
    plugin, state, pi = _fit(sidecar_containers=sidecars), CycleState(), PodInfo(pod)
    _, status = plugin.pre_filter(state, pi, [])
    assert status == want_pre_filter
    if status is None:
        assert plugin.filter(state, pi, node_info(node)) == want_filter


# --- scoring -------------------------------------------------------------------------------------

DEFAULT_RESOURCES = [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


def _strategy(kind: str, shape: list[tuple[int, int]] | None = None) -> NodeResourcesFitArgs:
    ratio = None
    if shape is not None:
        points = [UtilizationShapePoint(utilization=u, score=s) for u, s in shape]
        ratio = RequestedToCapacityRatioParam(shape=points)
    strategy = ScoringStrategy(
        type=kind, resources=list(DEFAULT_RESOURCES), requested_to_capacity_ratio=ratio
    )
    return NodeResourcesFitArgs(scoring_strategy=strategy)


TWO_NODES = [
    st_node("node1", {"cpu": "4000", "memory": "10000"}),
    st_node("node2", {"cpu": "6000", "memory": "10000"}),
]
TWO_EQUAL_NODES = [
    st_node("node1", {"cpu": "4000", "memory": "10000"}),
    st_node("node2", {"cpu": "4000", "memory": "10000"}),
]
EXISTING = [
    st_pod({"cpu": "2000", "memory": "4000"}, name="e1", node="node1"),
    st_pod({"cpu": "1000", "memory": "2000"}, name="e2", node="node2"),
]
EXISTING_SIDECAR = [
    st_pod(
        {"cpu": "1000", "memory": "2000"}, name="e1", node="node1", sidecar={"cpu": "1000", "memory": "2000"}
    ),
    st_pod({"cpu": "1000", "memory": "2000"}, name="e2", node="node2"),
]
SHAPE_DOWN = [(0, 10), (100, 0)]
SHAPE_UP = [(0, 0), (100, 10)]
POD_3_5 = st_pod({"cpu": "3000", "memory": "5000"})
POD_1_2 = st_pod({"cpu": "1000", "memory": "2000"})

FIT_SCORE_CASES = [
    (
        "test case for ScoringStrategy RequestedToCapacityRatio case1",
        POD_3_5,
        TWO_NODES,
        EXISTING,
        [10, 32],
        _strategy(REQUESTED_TO_CAPACITY_RATIO, SHAPE_DOWN),
        True,
    ),
    (
        "test case for ScoringStrategy RequestedToCapacityRatio case2",
        POD_3_5,
        TWO_NODES,
        EXISTING,
        [95, 68],
        _strategy(REQUESTED_TO_CAPACITY_RATIO, SHAPE_UP),
        True,
    ),
    (
        "test case for ScoringStrategy MostAllocated",
        POD_1_2,
        TWO_NODES,
        EXISTING,
        [67, 36],
        _strategy(MOST_ALLOCATED),
        True,
    ),
    (
        "test case for ScoringStrategy LeastAllocated",
        POD_1_2,
        TWO_NODES,
        EXISTING,
        [32, 63],
        _strategy(LEAST_ALLOCATED),
        True,
    ),
    (
        "test case for ScoringStrategy RequestedToCapacityRatio case1 if PreScore is not called",
        POD_3_5,
        TWO_NODES,
        EXISTING,
        [10, 32],
        _strategy(REQUESTED_TO_CAPACITY_RATIO, SHAPE_DOWN),
        False,
    ),
    (
        "test case for ScoringStrategy MostAllocated if PreScore is not called",
        POD_1_2,
        TWO_NODES,
        EXISTING,
        [67, 36],
        _strategy(MOST_ALLOCATED),
        False,
    ),
    (
        "test case for ScoringStrategy LeastAllocated if PreScore is not called",
        POD_1_2,
        TWO_NODES,
        EXISTING,
        [32, 63],
        _strategy(LEAST_ALLOCATED),
        False,
    ),
    (
        "test case for ScoringStrategy MostAllocated with sidecar container",
        POD_1_2,
        TWO_EQUAL_NODES,
        EXISTING_SIDECAR,
        [67, 45],
        _strategy(MOST_ALLOCATED),
        True,
    ),
    (
        "test case for ScoringStrategy LeastAllocated with sidecar container",
        POD_1_2,
        TWO_EQUAL_NODES,
        EXISTING_SIDECAR,
        [32, 55],
        _strategy(LEAST_ALLOCATED),
        True,
    ),
    # The two "... with Extended resources" cases score DRA-backed extended resources from
    # ResourceSlices, which ksched does not model.
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "want", "args", "run_pre_score"),
    FIT_SCORE_CASES,
    ids=[c[0] for c in FIT_SCORE_CASES],
)
def test_fit_score(
    name: str,
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    want: list[int],
    args: NodeResourcesFitArgs,
    run_pre_score: bool,
) -> None:
    assert_scores(_fit(args), pod, nodes, existing, want, pre_score=run_pre_score)


# --- events and queueing hints -------------------------------------------------------------------

POD, NODE, DEVICE_CLASS = EventResource.POD, EventResource.NODE, EventResource.DEVICE_CLASS
ALL_NODE_UPDATES = (
    ActionType.ADD
    | ActionType.UPDATE_NODE_ALLOCATABLE
    | ActionType.UPDATE_NODE_TAINT
    | (ActionType.UPDATE_NODE_LABEL)
)

EVENTS_CASES = [
    (
        "Register events with InPlacePodVerticalScaling feature enabled",
        {
            "in_place_pod_vertical_scaling": True,
            "scheduling_queue_hints": False,
            "dra_extended_resource": False,
        },
        [(POD, ActionType.UPDATE_POD_SCALE_DOWN | ActionType.DELETE), (NODE, ALL_NODE_UPDATES)],
    ),
    (
        "Register events with SchedulingQueueHint feature enabled",
        {
            "in_place_pod_vertical_scaling": False,
            "scheduling_queue_hints": True,
            "dra_extended_resource": False,
        },
        [(POD, ActionType.DELETE), (NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)],
    ),
    (
        "Register events with InPlacePodVerticalScaling feature disabled",
        {
            "in_place_pod_vertical_scaling": False,
            "scheduling_queue_hints": False,
            "dra_extended_resource": False,
        },
        [(POD, ActionType.DELETE), (NODE, ALL_NODE_UPDATES)],
    ),
    (
        "Register events with DRAExtendedResource feature enabled",
        {
            "in_place_pod_vertical_scaling": False,
            "scheduling_queue_hints": False,
            "dra_extended_resource": True,
        },
        [
            (POD, ActionType.DELETE),
            (NODE, ALL_NODE_UPDATES),
            (DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        ],
    ),
    (
        "Register events with DRAExtendedResource feature disabled",
        {
            "in_place_pod_vertical_scaling": False,
            "scheduling_queue_hints": False,
            "dra_extended_resource": False,
        },
        [(POD, ActionType.DELETE), (NODE, ALL_NODE_UPDATES)],
    ),
    (
        "1.36 defaults",
        {},
        [
            (POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
            (NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
            (DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        ],
    ),
]


@pytest.mark.parametrize(("name", "features", "want"), EVENTS_CASES, ids=[c[0] for c in EVENTS_CASES])
def test_events_to_register(name: str, features: dict[str, bool], want: list[tuple[str, int]]) -> None:
    events = Fit(None, FitFeatures(**features)).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == want
    assert all(e.hint is not None for e in events)


def _cpu_pod(name: str, cpu: str, *, uid: str | None = None, node: str = "", pod_level: bool = False) -> Pod:
    if pod_level:
        return st_pod(name=name, uid=uid, node=node, pod_level={"cpu": cpu} if cpu else {})
    return st_pod({"cpu": cpu}, name=name, uid=uid, node=node)


def _pod_level(name: str, uid: str, requests: dict[str, str], node: str = "") -> Pod:
    return st_pod(name=name, uid=uid, node=node, pod_level=requests)


EMPTY_POD = make_pod("", containers=[], uid="")

POD_EVENT_CASES: list[tuple[str, Pod, object, object, bool, QueueingHint | None]] = [
    ("backoff-wrong-old-object", EMPTY_POD, "not-a-pod", None, True, None),
    ("backoff-wrong-new-object", EMPTY_POD, None, "not-a-pod", True, None),
    (
        "queue-on-other-pod-deleted",
        st_pod({"cpu": "1"}, name="pod1", uid=""),
        st_pod({"cpu": "1"}, name="pod2", uid="", node="fake"),
        None,
        True,
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-unscheduled-pod-deleted",
        EMPTY_POD,
        make_pod("", containers=[], uid=""),
        None,
        True,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-disable-inplace-pod-vertical-scaling",
        st_pod({"cpu": "1"}, name="pod1", uid=""),
        st_pod({"cpu": "2"}, name="pod2", uid="", node="fake"),
        st_pod({"cpu": "1"}, name="pod2", uid="", node="fake"),
        False,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-other-unscheduled-pod",
        st_pod({"cpu": "1"}, name="pod1", uid="uid0"),
        st_pod({"cpu": "2"}, name="pod2", uid="uid1"),
        st_pod({"cpu": "1"}, name="pod2", uid="uid1"),
        True,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        st_pod({"cpu": "1"}, name="pod1", uid="pod1"),
        st_pod({"memory": "2"}, name="pod2", uid="pod2", node="fake"),
        st_pod({"memory": "1"}, name="pod2", uid="pod2", node="fake"),
        True,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        _pod_level("pod1", "pod1", {"cpu": "1"}),
        _pod_level("pod2", "pod2", {"memory": "2"}, "fake"),
        _pod_level("pod2", "pod2", {"memory": "1"}, "fake"),
        True,
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-other-pod-some-resource-scale-down",
        st_pod({"cpu": "1"}, name="pod1", uid="pod1"),
        st_pod({"cpu": "2"}, name="pod2", uid="pod2", node="fake"),
        st_pod({"cpu": "1"}, name="pod2", uid="pod2", node="fake"),
        True,
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-other-pod-some-pod-level-resource-scale-down",
        _pod_level("pod1", "pod1", {"cpu": "1"}),
        _pod_level("pod2", "pod2", {"cpu": "2"}, "fake"),
        _pod_level("pod2", "pod2", {"cpu": "1"}, "fake"),
        True,
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-resource-scale-down",
        st_pod({"cpu": "1"}, name="pod1", uid="pod1"),
        st_pod({"cpu": "2"}, name="pod1", uid="pod1"),
        st_pod({"cpu": "1"}, name="pod1", uid="pod1"),
        True,
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-pod-level-resource-scale-down",
        _pod_level("pod1", "pod1", {"cpu": "1"}),
        _pod_level("pod1", "pod1", {"cpu": "2"}),
        _pod_level("pod1", "pod1", {"cpu": "1"}),
        True,
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "in_place", "want"), POD_EVENT_CASES, ids=[c[0] for c in POD_EVENT_CASES]
)
def test_is_schedulable_after_pod_change(
    name: str, pod: Pod, old: object, new: object, in_place: bool, want: QueueingHint | None
) -> None:
    plugin = _fit(in_place_pod_vertical_scaling=in_place)
    if want is None:
        with pytest.raises(TypeError):
            plugin.hint_pod_event(pod, old, new)
    else:
        assert plugin.hint_pod_event(pod, old, new) == want


def _mem_ext(memory: int, ext: int) -> Pod:
    return resource_pod(usage(memory=memory, scalars={EXTENDED_A: ext}))


NODE_EVENT_CASES: list[tuple[str, Pod, object, object, QueueingHint | None]] = [
    ("backoff-wrong-new-object", EMPTY_POD, None, "not-a-node", None),
    ("backoff-wrong-old-object", EMPTY_POD, "not-a-node", make_node("n"), None),
    (
        "skip-queue-on-node-add-without-sufficient-resources",
        resource_pod(usage(memory=2)),
        None,
        st_node("n", {"memory": "1"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-node-add-without-required-resource-type",
        resource_pod(usage(scalars={EXTENDED_A: 1})),
        None,
        st_node("n", {EXTENDED_B: "1"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-node-add-with-sufficient-resources",
        _mem_ext(2, 1),
        None,
        st_node("n", {"memory": "4", EXTENDED_A: "2"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-node-unrelated-changes",
        _mem_ext(2, 1),
        st_node("n", {"memory": "2", EXTENDED_A: "2"}),
        st_node("n", {"memory": "2", EXTENDED_A: "1", EXTENDED_B: "2"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-pod-requested-resources-increase",
        _mem_ext(2, 1),
        st_node("n", {"memory": "2", EXTENDED_A: "1"}),
        st_node("n", {"memory": "2", EXTENDED_A: "2"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-node-changes-from-suitable-to-unsuitable",
        _mem_ext(2, 1),
        st_node("n", {"memory": "4", EXTENDED_A: "2"}),
        st_node("n", {"memory": "1", EXTENDED_A: "2"}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-node-changes-from-unsuitable-to-suitable",
        _mem_ext(2, 1),
        st_node("n", {"memory": "1", EXTENDED_A: "2"}),
        st_node("n", {"memory": "4", EXTENDED_A: "2"}),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"), NODE_EVENT_CASES, ids=[c[0] for c in NODE_EVENT_CASES]
)
def test_is_schedulable_after_node_change(
    name: str, pod: Pod, old: object, new: object, want: QueueingHint | None
) -> None:
    plugin = _fit()
    if want is None:
        with pytest.raises(TypeError):
            plugin.hint_node_change(pod, old, new)
    else:
        assert plugin.hint_node_change(pod, old, new) == want


def _device_class(name: str = "", ern: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name), spec=SimpleNamespace(extended_resource_name=ern)
    )


def _ext_pod(name: str) -> Pod:
    return resource_pod(usage(scalars={name: 1}))


DEVICE_CLASS_CASES: list[tuple[str, Pod, object, object, QueueingHint | None]] = [
    ("backoff-wrong-new-object", EMPTY_POD, None, "not-a-class", None),
    ("backoff-wrong-old-object", EMPTY_POD, "not-a-class", _device_class(), None),
    (
        "skip-queue-on-class-nil-extended-resource-name-pointer",
        resource_pod(usage(memory=2)),
        _device_class(),
        _device_class(),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-class-same-extended-resource-name-pointer",
        resource_pod(usage(memory=2)),
        _device_class(ern="example.com/gpu"),
        _device_class(ern="example.com/gpu"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-class-same-extended-resource-name",
        resource_pod(usage(memory=2)),
        _device_class(ern="example.com/gpu"),
        _device_class(ern="example.com/gpu"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-class-add-with-implicit-extended-resource-name",
        _ext_pod("deviceclass.resource.kubernetes.io/gpuclass"),
        None,
        _device_class("gpuclass", "example.com/gpu"),
        QueueingHint.QUEUE,
    ),
    (
        "skip-on-class-add-with-implicit-extended-resource-name-not-matching",
        _ext_pod("deviceclass.resource.kubernetes.io/gpuclass"),
        None,
        _device_class("myclass", "example.com/gpu"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-on-class-add-with-explicit-extended-resource-name-not-matching",
        _ext_pod("example.com/othergpu"),
        None,
        _device_class("myclass", "example.com/gpu"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-on-class-update-with-implicit-extended-resource-name",
        _ext_pod("deviceclass.resource.kubernetes.io/gpuclass"),
        _device_class("gpuclass"),
        _device_class("gpuclass", "example.com/gpu"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-class-add-with-extended-resource-name",
        _ext_pod("example.com/gpu"),
        None,
        _device_class(ern="example.com/gpu"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-class-update-with-extended-resource-name",
        _ext_pod("example.com/gpu"),
        _device_class(ern="example.com/gpu1"),
        _device_class(ern="example.com/gpu"),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"), DEVICE_CLASS_CASES, ids=[c[0] for c in DEVICE_CLASS_CASES]
)
def test_is_schedulable_after_device_class_change(
    name: str, pod: Pod, old: object, new: object, want: QueueingHint | None
) -> None:
    plugin = _fit()
    if want is None:
        with pytest.raises(TypeError):
            plugin.hint_device_class_event(pod, old, new)
    else:
        assert plugin.hint_device_class_event(pod, old, new) == want


HUGE = HUGEPAGES_A
IS_FIT_CASES = [
    ("nil node", make_pod(containers=[]), None, False, False),
    ("insufficient resource", st_pod({"cpu": "2"}), st_node("n", {"cpu": "1"}), False, False),
    ("sufficient resource", st_pod({"cpu": "1"}), st_node("n", {"cpu": "2"}), False, True),
    (
        "insufficient pod-level resource",
        st_pod(pod_level={"cpu": "2"}),
        st_node("n", {"cpu": "1"}),
        True,
        False,
    ),
    ("sufficient pod-level resource", st_pod(pod_level={"cpu": "2"}), st_node("n", {"cpu": "2"}), True, True),
    (
        "sufficient pod-level resource hugepages",
        st_pod(pod_level={HUGE: "2Mi"}),
        st_node("n", {HUGE: "2Mi"}),
        True,
        True,
    ),
    (
        "insufficient pod-level resource hugepages",
        st_pod(pod_level={HUGE: "4Mi"}),
        st_node("n", {HUGE: "2Mi"}),
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "node", "pod_level", "want"), IS_FIT_CASES, ids=[c[0] for c in IS_FIT_CASES]
)
def test_is_fit(name: str, pod: Pod, node: Node | None, pod_level: bool, want: bool) -> None:
    assert is_fit(pod, node, pod_level_resources=pod_level) is want


def _cap(**amounts: str) -> Node:
    names = {"pods": "pods", "cpu": "cpu", "memory": "memory", "eph": "ephemeral-storage", "ext": EXTENDED_A}
    return st_node("n", {names[k]: v for k, v in amounts.items()})


FULL = resource_pod(usage(2, 2, ephemeral=2, scalars={EXTENDED_A: 2}))
INCREASED_CASES = [
    (
        "no-requested-resources",
        resource_pod(usage()),
        _cap(pods="1", cpu="1", memory="1", eph="1", ext="1"),
        _cap(pods="1", cpu="2", memory="2", eph="2", ext="2"),
        False,
    ),
    (
        "no-requested-resources-pods-increased",
        resource_pod(usage()),
        _cap(pods="1", cpu="1", memory="1", eph="1", ext="1"),
        _cap(pods="2", cpu="1", memory="1", eph="1", ext="1"),
        True,
    ),
    # The stored upstream file runs the three "requested-resources-dra-*" cases with a nil DRA
    # manager, which it delegates (a newer release); 1.36.2 never delegates then, so here a
    # DeviceClass backs EXTENDED_A for them (see test_dra_delegation_in_requested_resources_increased).
    (
        "scalar-resources-not-in-node",
        FULL,
        _cap(cpu="1", memory="2", eph="3"),
        _cap(cpu="1", memory="2", eph="1"),
        False,
    ),
    (
        "requested-resources-decreased",
        FULL,
        _cap(cpu="1", memory="2", eph="3", ext="4"),
        _cap(cpu="1", memory="2", eph="1", ext="1"),
        False,
    ),
    (
        "requested-resources-increased",
        FULL,
        _cap(cpu="1", memory="2", eph="3", ext="4"),
        _cap(cpu="3", memory="4", eph="3", ext="4"),
        True,
    ),
    (
        "non-requested-resources-decreased",
        resource_pod(usage(2, 2)),
        _cap(cpu="1", memory="2", eph="3", ext="4"),
        _cap(cpu="1", memory="2", eph="1", ext="1"),
        False,
    ),
    (
        "non-requested-resources-increased",
        resource_pod(usage(2, 2)),
        _cap(cpu="1", memory="2", eph="3", ext="4"),
        _cap(cpu="1", memory="2", eph="5", ext="6"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "original", "modified", "want"), INCREASED_CASES, ids=[c[0] for c in INCREASED_CASES]
)
def test_have_any_requested_resources_increased(
    name: str, pod: Pod, original: Node, modified: Node, want: bool
) -> None:
    assert requested_resources_increased(pod, original, modified) is want


BACKS_EXTENDED_A = DeviceClassResolver(
    [convert({"metadata": {"name": "a"}, "spec": {"extendedResourceName": EXTENDED_A}}, DeviceClass)]
)
DRA_INCREASED_CASES = [
    (
        "requested-resources-dra-in-node",
        FULL,
        _cap(cpu="1", memory="2", eph="3", ext="4"),
        _cap(cpu="1", memory="2", eph="1", ext="1"),
        True,
        False,
    ),
    (
        "requested-resources-dra-not-in-node",
        FULL,
        _cap(cpu="1", memory="2", eph="3"),
        _cap(cpu="1", memory="2", eph="1"),
        True,
        True,
    ),
    (
        "requested-resources-dra-zero-capacity",
        resource_pod(usage(scalars={EXTENDED_A: 1})),
        _cap(ext="0"),
        _cap(ext="0"),
        True,
        True,
    ),
    (
        "scalar-resources-not-in-node",
        FULL,
        _cap(cpu="1", memory="2", eph="3"),
        _cap(cpu="1", memory="2", eph="1"),
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "original", "modified", "dra", "want"),
    DRA_INCREASED_CASES,
    ids=[c[0] for c in DRA_INCREASED_CASES],
)
def test_dra_delegation_in_requested_resources_increased(
    name: str, pod: Pod, original: Node, modified: Node, dra: bool, want: bool
) -> None:
    resolver = BACKS_EXTENDED_A if dra else NO_CLASSES
    assert requested_resources_increased(pod, original, modified, resolver=resolver) is want


def test_a_node_without_a_dra_backed_resource_fits_for_the_node_hint() -> None:
    """isSchedulableAfterNodeChange with DRAExtendedResource: a node offering none of a resource a
    DeviceClass backs still fits the pod (DynamicResources decides)."""
    pod = resource_pod(usage(1, 1, scalars={EXTENDED_DRA: 1}))
    node = st_node("n", {"cpu": "1", "memory": "1"})
    assert _fit(handle=_with_dra_class()).hint_node_change(pod, None, node) == QueueingHint.QUEUE
    assert _fit().hint_node_change(pod, None, node) == QueueingHint.QUEUE_SKIP
    offered = st_node("n", {"cpu": "1", "memory": "1", EXTENDED_DRA: "0"})
    assert is_fit(pod, offered, resolver=BACKS_EXTENDED_A) is False


def test_invalid_args_are_rejected_with_upstream_wording() -> None:
    args = _strategy(LEAST_ALLOCATED)
    assert args.scoring_strategy is not None
    args.scoring_strategy.resources[0].weight = 0
    with pytest.raises(ValueError, match=r"scoringStrategy\.resources\[0\]\.weight: Invalid value: 0"):
        Fit(args)


def test_default_args_score_least_allocated_with_non_zero_defaults() -> None:
    # A pod without requests counts as 100m / 200Mi in LeastAllocated: (1000-100)*100/1000 = 90,
    # (2Gi-200Mi)*100/2Gi = 90 -> 90.
    snapshot = snapshot_of([st_node("n", {"cpu": "1", "memory": "2Gi"})])
    plugin, state, pi = Fit(), CycleState(), PodInfo(st_pod({}))
    plugin.pre_score(state, pi, snapshot.nodes)
    assert scores_both_ways(plugin, state, pi, snapshot)[0] == [90]
