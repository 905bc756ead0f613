"""DynamicResources with extended resources backed by DRA (DRAExtendedResource), after upstream
``dynamicresources_test.go`` TestPlugin's ``extended-resource-*`` cases: PreFilter, Filter, PostFilter,
Reserve/Unreserve, the claim PreBind leaves (``objects_after_pre_bind``) and the state handed to the
binder. The API half of PreBind (creating the claim, the pod status, Unreserve's deletion) runs
against kubesim in ``tests/volumes/test_dra_extended_prebind.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from ksched.api.core import Node, Pod
from ksched.api.kinds import convert
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.status import Code, Status
from ksched.framework.testing import FakeHandle, make_node, make_pod, make_snapshot
from ksched.plugins.dynamicresources import state as drastate
from ksched.plugins.dynamicresources.extended import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
)
from ksched.plugins.dynamicresources.plugin import (
    MSG_CANNOT_ALLOCATE,
    MSG_CANNOT_FIT_RESOURCE,
    MSG_DELETED,
    MSG_EXTENDED_CLAIM_LEFT,
    MSG_NO_CLAIMS_TO_DEALLOCATE,
    MSG_STILL_NOT_SCHEDULABLE,
    DynamicResources,
)
from ksched.plugins.dynamicresources.testing import allocation, device, resource_slice

NODE, NODE2 = "worker", "worker-2"
DRIVER = "some-driver"
CLASS = "my-resource-class"
POD_NAME, POD_UID, NS = "my-pod", "1234", "default"
GPU, GPU2 = "example.com/gpu", "example.com/gpu2"
IMPLICIT = "deviceclass.resource.kubernetes.io/my-resource-class"


def dclass(name: str, extended: str | None = None) -> DeviceClass:
    spec = {"extendedResourceName": extended} if extended else {}
    return convert({"metadata": {"name": name}, "spec": spec}, DeviceClass)


DEVICE_CLASS = dclass(CLASS)
CLASS_GPU = dclass(CLASS, GPU)
CLASS_GPU2 = dclass(CLASS + "2", GPU2)


def pod(*containers: dict[str, str]) -> Pod:
    """upstream ``st.MakePod().Req(...)``: one container ``con<N>`` per requests map."""
    return make_pod(
        POD_NAME,
        NS,
        uid=POD_UID,
        containers=[{"name": f"con{i}", "resources": {"requests": r}} for i, r in enumerate(containers)],
    )


POD_GPU = pod({GPU: "1"})
POD_GPU_GPU2 = pod({GPU: "1", GPU2: "1"})
POD_IMPLICIT = pod({IMPLICIT: "1", GPU: "2"})
POD_IMPLICIT_TWO_CONTAINERS = pod({IMPLICIT: "1"}, {GPU: "2"})

WORKER = make_node(NODE)
WORKER_WITH_GPU = make_node(NODE, allocatable={GPU: "1"})
WORKER_WITH_ZERO_GPU = make_node(NODE, allocatable={GPU: "0"})
WORKER_SLICE = resource_slice("worker-slice", NODE, NODE, DRIVER, device("instance-1"))
LARGE_WORKER_SLICE = resource_slice(
    "worker-slice", NODE, NODE, DRIVER, *(device(f"instance-{i}") for i in range(1, 5))
)


def left_over_claim(node: str) -> ResourceClaim:
    """upstream ``extendedResourceClaim`` / ``extendedResourceClaimNode2``: created by an earlier cycle."""
    return convert(
        {
            "metadata": {
                "name": "my-pod-extended-resources-0",
                "generateName": "my-pod-extended-resources-",
                "namespace": NS,
                "uid": "uid-left-over",
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": POD_NAME, "uid": POD_UID, "controller": True}
                ],
            },
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "container-0-request-0",
                            "exactly": {"deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1},
                        }
                    ]
                }
            },
            "status": {"allocation": allocation(node, ("container-0-request-0", DRIVER, NODE, "instance-1"))},
        },
        ResourceClaim,
    )


@dataclass
class Case:
    pod: Pod
    classes: list[DeviceClass] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=lambda: [WORKER])
    slices: list[ResourceSlice] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    prefilter: Status | None = None
    filter: Status | None = None
    postfilter: Status | None = None
    #: the requests and devices of the in-flight (and created) claim after Reserve; None: nothing
    allocated: list[tuple[str, str, int, list[str]]] | None = None
    removed: list[str] = field(default_factory=list)


CASES = {
    "empty-with-extended-resources-enabled": Case(
        pod=make_pod("foo", NS),
        classes=[CLASS_GPU],
        prefilter=Status.skip(),
        postfilter=Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE),
    ),
    "extended-resource-name-with-node-resource": Case(
        pod=POD_GPU, nodes=[WORKER_WITH_GPU], classes=[CLASS_GPU], allocated=None
    ),
    "extended-resource-one-device-plugin-one-dra": Case(
        pod=POD_GPU_GPU2,
        nodes=[WORKER_WITH_GPU],
        classes=[CLASS_GPU, CLASS_GPU2],
        slices=[WORKER_SLICE],
        allocated=[("container-0-request-1", CLASS + "2", 1, ["instance-1"])],
    ),
    "extended-resource-name-with-zero-allocatable": Case(
        pod=POD_GPU,
        nodes=[WORKER_WITH_ZERO_GPU],
        classes=[CLASS_GPU],
        slices=[WORKER_SLICE],
        allocated=[("container-0-request-0", CLASS, 1, ["instance-1"])],
    ),
    "non-DRA-extended-resource-name-with-zero-allocatable": Case(
        pod=POD_GPU,
        nodes=[WORKER_WITH_ZERO_GPU],
        classes=[DEVICE_CLASS],
        slices=[WORKER_SLICE],
        prefilter=Status.skip(),
        postfilter=Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE),
    ),
    "extended-resource-name-no-resource": Case(
        pod=POD_GPU,
        classes=[CLASS_GPU],
        filter=Status.unresolvable(MSG_CANNOT_ALLOCATE),
        postfilter=Status.unschedulable(MSG_STILL_NOT_SCHEDULABLE),
    ),
    "extended-resource-name-with-resources": Case(
        pod=POD_GPU,
        classes=[CLASS_GPU],
        slices=[WORKER_SLICE],
        allocated=[("container-0-request-0", CLASS, 1, ["instance-1"])],
    ),
    "implicit-extended-resource-name-with-resources": Case(
        pod=POD_IMPLICIT,
        classes=[CLASS_GPU],
        slices=[LARGE_WORKER_SLICE],
        allocated=[
            ("container-0-request-0", CLASS, 1, ["instance-1"]),
            ("container-0-request-1", CLASS, 2, ["instance-2", "instance-3"]),
        ],
    ),
    "implicit-extended-resource-name-two-containers-with-resources": Case(
        pod=POD_IMPLICIT_TWO_CONTAINERS,
        classes=[CLASS_GPU],
        slices=[LARGE_WORKER_SLICE],
        allocated=[
            ("container-0-request-0", CLASS, 1, ["instance-1"]),
            ("container-1-request-0", CLASS, 2, ["instance-2", "instance-3"]),
        ],
    ),
    "extended-resource-name-with-resources-has-claim": Case(
        pod=POD_GPU,
        classes=[CLASS_GPU],
        slices=[WORKER_SLICE],
        claims=[left_over_claim(NODE)],
        filter=Status.unresolvable(MSG_EXTENDED_CLAIM_LEFT),
        postfilter=Status.unschedulable(MSG_DELETED),
        removed=["default/my-pod-extended-resources-0"],
    ),
    "extended-resource-name-with-resources-delete-claim": Case(
        pod=POD_GPU,
        classes=[CLASS_GPU],
        slices=[WORKER_SLICE],
        claims=[left_over_claim(NODE2)],
        filter=Status.unresolvable(MSG_EXTENDED_CLAIM_LEFT),
        postfilter=Status.unschedulable(MSG_DELETED),
        removed=["default/my-pod-extended-resources-0"],
    ),
}


def setup(case: Case) -> tuple[DynamicResources, FakeHandle]:
    snapshot = make_snapshot(case.nodes)
    for obj in [*case.classes, *case.slices, *case.claims]:
        snapshot.objects.put(obj)
    handle = FakeHandle(snapshot)
    return DynamicResources(handle), handle


def requests_and_devices(claim: ResourceClaim) -> list[tuple[str, str, int, list[str]]]:
    assert claim.status.allocation is not None
    results = claim.status.allocation.devices.results
    out = []
    for request in claim.spec.devices.requests:
        assert request.exactly is not None
        devices = sorted(r.device for r in results if r.request == request.name and r.driver == DRIVER)
        out.append((request.name, request.exactly.device_class_name, request.exactly.count, devices))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_plugin(name: str) -> None:
    case = CASES[name]
    plugin, handle = setup(case)
    state, pi = CycleState(), PodInfo(case.pod)
    assert plugin.pre_enqueue(case.pod) is None
    _, status = plugin.pre_filter(state, pi, handle.snapshot.nodes)
    assert status == case.prefilter
    if status is None:
        statuses = {ni.name: plugin.filter(state, pi, ni) for ni in handle.snapshot.nodes}
        assert statuses == {NODE: case.filter}
    if case.prefilter is not None or case.filter is not None:
        assert plugin.post_filter(state, pi, NodeToStatus()) == (None, case.postfilter)
        assert sorted(set(c.key for c in case.claims) - set(handle.snapshot.objects.resource_claims)) == (
            case.removed
        )
        return
    assert plugin.reserve(state, pi, NODE) is None
    after = plugin.objects_after_pre_bind(state, pi)
    in_flight = list(plugin.tracker.in_flight.values())
    if case.allocated is None:
        assert in_flight == [] and after == []
        return
    (entry,) = in_flight
    assert entry.claim.metadata.name == SPECIAL_CLAIM_NAME
    assert requests_and_devices(entry.claim) == case.allocated
    (created,) = after
    assert created.metadata.name.startswith("my-pod-extended-resources-")
    assert len(created.metadata.name) == len("my-pod-extended-resources-") + 5
    assert created.metadata.annotations == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    assert [(r.name, r.uid, r.controller) for r in created.metadata.owner_references] == [
        (POD_NAME, POD_UID, True)
    ]
    assert [(r.resource, r.name, r.uid) for r in created.status.reserved_for] == [("pods", POD_NAME, POD_UID)]
    assert requests_and_devices(created) == case.allocated
    # the created claim coming back through the informer ends the in-flight allocation
    handle.snapshot.objects.put(created)
    assert plugin.tracker.allocated_state() is not None and plugin.tracker.in_flight == {}


def test_unreserve_drops_the_in_flight_extended_claim() -> None:
    """upstream ``extended-resource-name-skip-bind``: Unreserve before PreBind."""
    plugin, handle = setup(CASES["extended-resource-name-with-resources"])
    state, pi = CycleState(), PodInfo(POD_GPU)
    plugin.pre_filter(state, pi, handle.snapshot.nodes)
    assert plugin.filter(state, pi, handle.snapshot.get(NODE)) is None
    assert plugin.reserve(state, pi, NODE) is None
    assert len(plugin.tracker.in_flight) == 1
    # while in flight its device is taken for the next pod
    other = make_pod(
        "other", NS, uid="5678", containers=[{"name": "c", "resources": {"requests": {GPU: "1"}}}]
    )
    state2, pi2 = CycleState(), PodInfo(other)
    plugin.pre_filter(state2, pi2, handle.snapshot.nodes)
    assert plugin.filter(state2, pi2, handle.snapshot.get(NODE)) == Status.unresolvable(MSG_CANNOT_ALLOCATE)
    plugin.unreserve(state, pi, NODE)
    assert plugin.tracker.in_flight == {}


def test_the_state_for_the_binder_carries_the_node_claim_and_mappings() -> None:
    plugin, handle = setup(CASES["implicit-extended-resource-name-two-containers-with-resources"])
    state, pi = CycleState(), PodInfo(POD_IMPLICIT_TWO_CONTAINERS)
    plugin.pre_filter(state, pi, handle.snapshot.nodes)
    plugin.filter(state, pi, handle.snapshot.get(NODE))
    plugin.reserve(state, pi, NODE)
    data = plugin.export_state(state)
    binder_state = CycleState()
    DynamicResources(FakeHandle()).import_state(binder_state, data)
    imported = DynamicResources._state(binder_state)
    claim = imported.claims.extended()
    assert claim is not None and claim.metadata.name == SPECIAL_CLAIM_NAME
    assert [r.name for r in claim.spec.devices.requests] == ["container-0-request-0", "container-1-request-0"]
    assert imported.claims.num_user_owned == 0
    assert imported.claims.initial_extended_uid == DynamicResources._state(state).claims.initial_extended_uid
    assert [(m.container_name, m.resource_name, m.request_name) for m in imported.mappings] == [
        ("con0", IMPLICIT, "container-0-request-0"),
        ("con1", GPU, "container-1-request-0"),
    ]
    (allocated,) = drastate.allocated_claims(data)
    assert allocated.metadata.name == SPECIAL_CLAIM_NAME and allocated.status.allocation is not None


def test_a_resource_neither_offered_nor_backed_cannot_fit() -> None:
    """Filter: an extended resource the node does not list and no DeviceClass backs."""
    case = Case(pod=POD_GPU_GPU2, classes=[CLASS_GPU], slices=[WORKER_SLICE])
    plugin, handle = setup(case)
    state, pi = CycleState(), PodInfo(case.pod)
    assert plugin.pre_filter(state, pi, handle.snapshot.nodes) == (None, None)
    assert plugin.filter(state, pi, handle.snapshot.get(NODE)) == Status.unresolvable(MSG_CANNOT_FIT_RESOURCE)


def test_user_claims_and_extended_resources_a_device_plugin_serves() -> None:
    """A pod with a claim of its own whose extended resource the node's device plugin offers: the
    extended-resource claim is not allocated (nor created) on that node. Upstream would allocate and
    try to create it without requests, which fails in PreBind (docs/dra.md)."""
    user_claim = convert(
        {
            "metadata": {"name": "my-claim", "namespace": NS, "uid": "uid-claim"},
            "spec": {"devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": CLASS}}]}},
        },
        ResourceClaim,
    )
    raw: dict[str, Any] = msgspec.to_builtins(POD_GPU)
    raw["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": "my-claim"}]
    pod_ = convert(raw, Pod)
    case = Case(
        pod=pod_, nodes=[WORKER_WITH_GPU], classes=[CLASS_GPU], slices=[WORKER_SLICE], claims=[user_claim]
    )
    plugin, handle = setup(case)
    state, pi = CycleState(), PodInfo(pod_)
    assert plugin.pre_filter(state, pi, handle.snapshot.nodes) == (None, None)
    assert plugin.filter(state, pi, handle.snapshot.get(NODE)) is None
    assert plugin.reserve(state, pi, NODE) is None
    assert [e.claim.metadata.name for e in plugin.tracker.in_flight.values()] == ["my-claim"]
    assert [c.metadata.name for c in plugin.objects_after_pre_bind(state, pi)] == ["my-claim"]
    st = DynamicResources._state(state)
    assert st.infos[1].allocation is None and st.extended_claim is None
    assert plugin.score(state, pi, handle.snapshot.get(NODE)) == 0


def test_post_filter_deletion_goes_to_the_deleter() -> None:
    case = CASES["extended-resource-name-with-resources-has-claim"]
    plugin, handle = setup(case)
    deleted: list[str] = []
    plugin.claim_deleter = lambda claim: deleted.append(claim.key)
    state, pi = CycleState(), PodInfo(case.pod)
    plugin.pre_filter(state, pi, handle.snapshot.nodes)
    plugin.filter(state, pi, handle.snapshot.get(NODE))
    _, status = plugin.post_filter(state, pi, NodeToStatus())
    assert status is not None and status.code == Code.UNSCHEDULABLE and status.message == MSG_DELETED
    assert deleted == ["default/my-pod-extended-resources-0"]
