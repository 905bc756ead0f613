"""DynamicResources at every extension point, after upstream ``dynamicresources_test.go`` (TestPlugin's
cases for PreEnqueue, PreFilter, Filter, PostFilter, Reserve/Unreserve, Score, and the queueing hints)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from ksched.api.core import Pod
from ksched.api.resource import ResourceClaim
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.status import Code, Status
from ksched.framework.testing import FakeHandle, make_node, make_pod, make_snapshot
from ksched.plugins.dynamicresources import state as drastate
from ksched.plugins.dynamicresources.plugin import (
    MSG_CANNOT_ALLOCATE,
    MSG_DEALLOCATED,
    MSG_NO_CLAIMS_TO_DEALLOCATE,
    MSG_NOT_AVAILABLE,
    MSG_STILL_NOT_SCHEDULABLE,
    DynamicResources,
    compute_score,
    new,
)
from ksched.plugins.dynamicresources.testing import (
    allocation,
    claim,
    device,
    device_class,
    first_available,
    request,
    resource_slice,
    sub_request,
)

DRIVER = "some-driver"
CLASS = "my-resource-class"
NS = "default"
POD_UID = "pod-uid"


def pod_with(*claims: dict[str, Any], uid: str = POD_UID, name: str = "my-pod", statuses: Any = ()) -> Pod:
    pod = make_pod(name, NS, uid=uid, spec={"resourceClaims": list(claims)})
    if statuses:
        pod = msgspec.convert(
            {**msgspec.to_builtins(pod), "status": {"resourceClaimStatuses": list(statuses)}}, Pod
        )
    return pod


def by_name(name: str, claim_name: str = "my-claim") -> dict[str, Any]:
    return {"name": name, "resourceClaimName": claim_name}


def gpu_claim(name: str = "my-claim", count: int = 1, **kw: Any) -> ResourceClaim:
    return claim(name, request("req-1", CLASS, count), namespace=NS, **kw)


def world(
    claims: list[ResourceClaim],
    devices: int = 1,
    nodes: tuple[str, ...] = ("worker", "worker-2"),
    classes: bool = True,
) -> tuple[DynamicResources, FakeHandle]:
    snapshot = make_snapshot([make_node(n) for n in nodes])
    objects = snapshot.objects
    if classes:
        objects.put(device_class(CLASS, DRIVER))
    for n in nodes:
        devs = [device(f"instance-{i}") for i in range(devices)]
        objects.put(resource_slice(f"{n}-slice", n, n, DRIVER, *devs))
    for c in claims:
        objects.put(c)
    handle = FakeHandle(snapshot)
    return DynamicResources(handle), handle


def filter_all(
    plugin: DynamicResources, handle: FakeHandle, state: CycleState, pod: PodInfo
) -> dict[str, Status | None]:
    return {ni.name: plugin.filter(state, pod, ni) for ni in handle.snapshot.nodes}


def cycle(
    plugin: DynamicResources, handle: FakeHandle, pod: Pod
) -> tuple[CycleState, PodInfo, Status | None]:
    state, pi = CycleState(), PodInfo(pod)
    _, status = plugin.pre_filter(state, pi, handle.snapshot.nodes)
    return state, pi, status


# --- pods without claims ----------------------------------------------------------------------------


def test_pod_without_claims_skips_and_post_filter_says_no_claims() -> None:
    plugin, handle = world([])
    state, pi, status = cycle(plugin, handle, make_pod())
    assert status is not None and status.code == Code.SKIP
    assert plugin.pre_enqueue(make_pod()) is None
    assert plugin.post_filter(state, pi, NodeToStatus()) == (
        None,
        Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE),
    )
    assert plugin.score_batch(state, pi, handle.snapshot, np.arange(2, dtype=np.intp)).tolist() == [0, 0]


async def test_a_pod_without_claims_hands_nothing_to_the_binder() -> None:
    plugin, handle = world([])
    state, pi, _ = cycle(plugin, handle, make_pod())
    assert plugin.reserve(state, pi, "worker") is None
    assert plugin.export_state(state) == b""
    assert await DynamicResources(FakeHandle()).pre_bind(CycleState(), pi, "worker") is None


def test_post_filter_without_pre_filter_state_is_an_error() -> None:
    _, status = DynamicResources().post_filter(CycleState(), PodInfo(make_pod()), NodeToStatus())
    assert status is not None and status.code == Code.ERROR and status.message == "not found"


def test_normalize_scales_the_maximum_to_100() -> None:
    scores = np.array([0, 3, 6, 4], dtype=np.int64)
    DynamicResources().normalize_score(CycleState(), PodInfo(make_pod()), [], scores)
    assert scores.tolist() == [0, 50, 100, 66]


# --- PreEnqueue -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "claims", "message"),
    [
        (pod_with(by_name("c")), [], 'could not find ResourceClaim "default/my-claim"'),
        (
            pod_with({"name": "c", "resourceClaimTemplateName": "t"}),
            [],
            'pod "default/my-pod": ResourceClaim not created yet',
        ),
        (
            pod_with(by_name("c")),
            [
                msgspec.structs.replace(
                    gpu_claim(),
                    metadata=msgspec.structs.replace(
                        gpu_claim().metadata, deletion_timestamp="2026-01-01T00:00:00Z"
                    ),
                )
            ],
            'resourceclaim "my-claim" is being deleted',
        ),
        (
            pod_with(
                {"name": "c", "resourceClaimTemplateName": "t"},
                statuses=[{"name": "c", "resourceClaimName": "my-claim"}],
            ),
            [gpu_claim(owner_uid="someone-else")],
            "ResourceClaim default/my-claim was not created for Pod default/my-pod (Pod is not owner)",
        ),
        (
            pod_with({"name": "c"}),
            [],
            'pod "default/my-pod", spec.resourceClaim "c": none of the supported fields are set',
        ),
    ],
)
def test_pre_enqueue_and_pre_filter_reject_missing_claims(
    pod: Pod, claims: list[ResourceClaim], message: str
) -> None:
    plugin, handle = world(claims)
    assert plugin.pre_enqueue(pod) == Status.unresolvable(message)
    _, _, status = cycle(plugin, handle, pod)
    assert status == Status.unresolvable(message)


def test_a_generated_claim_the_pod_owns_is_used() -> None:
    pod = pod_with(
        {"name": "c", "resourceClaimTemplateName": "t"},
        statuses=[{"name": "c", "resourceClaimName": "my-claim"}],
    )
    plugin, handle = world([gpu_claim(owner_uid=POD_UID)])
    assert plugin.pre_enqueue(pod) is None
    _, _, status = cycle(plugin, handle, pod)
    assert status is None


def test_a_template_claim_not_created_on_purpose_is_skipped() -> None:
    pod = pod_with({"name": "c", "resourceClaimTemplateName": "t"}, statuses=[{"name": "c"}])
    plugin, handle = world([])
    _, _, status = cycle(plugin, handle, pod)
    assert status is not None and status.code == Code.SKIP


# --- PreFilter --------------------------------------------------------------------------------------


def test_missing_class_and_unknown_request_type() -> None:
    plugin, handle = world([gpu_claim()], classes=False)
    _, _, status = cycle(plugin, handle, pod_with(by_name("c")))
    assert status == Status.unresolvable(f"request req-1: device class {CLASS} does not exist")
    odd = claim("my-claim", {"name": "req-1"}, namespace=NS)
    plugin, handle = world([odd])
    _, _, status = cycle(plugin, handle, pod_with(by_name("c")))
    assert status == Status.unresolvable(
        "resource claim default/my-claim, request req-1: unknown request type"
    )


# --- Filter -----------------------------------------------------------------------------------------


def test_filter_allocates_per_node_and_rejects_nodes_without_devices() -> None:
    plugin, handle = world([gpu_claim(count=2)], devices=1)
    handle.snapshot.objects.put(
        resource_slice("worker-slice", "worker", "worker", DRIVER, device("a"), device("b"))
    )
    state, pi, status = cycle(plugin, handle, pod_with(by_name("c")))
    assert status is None
    assert filter_all(plugin, handle, state, pi) == {
        "worker": None,
        "worker-2": Status.unresolvable(MSG_CANNOT_ALLOCATE),
    }


def test_an_allocated_claim_is_only_available_on_its_node() -> None:
    allocated = gpu_claim(
        status={"allocation": allocation("worker", ("req-1", DRIVER, "worker", "instance-0"))}
    )
    plugin, handle = world([allocated])
    state, pi, status = cycle(plugin, handle, pod_with(by_name("c")))
    assert status is None
    assert filter_all(plugin, handle, state, pi) == {
        "worker": None,
        "worker-2": Status.unresolvable(MSG_NOT_AVAILABLE),
    }


def test_devices_of_allocated_claims_are_in_use() -> None:
    other = claim(
        "other",
        request("req-1", CLASS),
        namespace=NS,
        status={"allocation": allocation("worker", ("req-1", DRIVER, "worker", "instance-0"))},
    )
    plugin, handle = world([gpu_claim(), other])
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    assert filter_all(plugin, handle, state, pi) == {
        "worker": Status.unresolvable(MSG_CANNOT_ALLOCATE),
        "worker-2": None,
    }


# --- PostFilter -------------------------------------------------------------------------------------


def test_post_filter_deallocates_a_claim_reserved_for_nobody() -> None:
    allocated = gpu_claim(
        status={"allocation": allocation("worker", ("req-1", DRIVER, "worker", "instance-0"))}
    )
    plugin, handle = world([allocated], nodes=("worker", "worker-2"))
    pod = pod_with(by_name("c"))
    state, pi, _ = cycle(plugin, handle, pod)
    plugin.filter(state, pi, handle.snapshot.get("worker-2"))
    deallocated: list[ResourceClaim] = []
    plugin.deallocator = deallocated.append
    assert plugin.post_filter(state, pi, NodeToStatus()) == (None, Status.unschedulable(MSG_DEALLOCATED))
    assert [c.metadata.name for c in deallocated] == ["my-claim"]


def test_post_filter_keeps_a_claim_reserved_for_another_pod() -> None:
    status = {
        "allocation": allocation("worker", ("req-1", DRIVER, "worker", "instance-0")),
        "reservedFor": [{"resource": "pods", "name": "other", "uid": "other-uid"}],
    }
    plugin, handle = world([gpu_claim(status=status)])
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    plugin.filter(state, pi, handle.snapshot.get("worker-2"))
    assert plugin.post_filter(state, pi, NodeToStatus()) == (
        None,
        Status.unschedulable(MSG_STILL_NOT_SCHEDULABLE),
    )


def test_post_filter_picks_at_random_among_the_claims_reserved_for_nobody_else() -> None:
    """Upstream walks its map of unavailable claims in Go's random order: any claim that only this
    pod (or nobody) holds may be deallocated, one reserved for another pod never is."""
    on_worker = allocation("worker", ("req-1", DRIVER, "worker", "instance-0"))
    mine = {"allocation": on_worker, "reservedFor": [{"resource": "pods", "name": "my-pod", "uid": POD_UID}]}
    theirs = {"allocation": on_worker, "reservedFor": [{"resource": "pods", "name": "o", "uid": "other-uid"}]}
    claims = [gpu_claim("a", status={"allocation": on_worker}), gpu_claim("b", status=mine)]
    claims.append(gpu_claim("c", status=theirs))
    picked: set[str] = set()
    for seed in range(40):
        plugin, handle = world(claims, devices=3)
        plugin.rng.seed(seed)
        state, pi, _ = cycle(
            plugin, handle, pod_with(by_name("x", "a"), by_name("y", "b"), by_name("z", "c"))
        )
        plugin.filter(state, pi, handle.snapshot.get("worker-2"))
        deallocated: list[ResourceClaim] = []
        plugin.deallocator = deallocated.append
        assert plugin.post_filter(state, pi, NodeToStatus()) == (None, Status.unschedulable(MSG_DEALLOCATED))
        [one] = deallocated
        picked.add(one.metadata.name)
    assert picked == {"a", "b"}


def test_deallocation_in_a_simulation_clears_the_snapshot_claim() -> None:
    allocated = gpu_claim(
        status={"allocation": allocation("worker", ("req-1", DRIVER, "worker", "instance-0"))}
    )
    plugin, handle = world([allocated])
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    plugin.filter(state, pi, handle.snapshot.get("worker-2"))
    plugin.post_filter(state, pi, NodeToStatus())
    assert handle.snapshot.objects.resource_claims["default/my-claim"].status.allocation is None


# --- Reserve / Unreserve and in-flight allocations ----------------------------------------------------


def test_reserved_devices_are_in_flight_until_unreserve() -> None:
    plugin, handle = world([gpu_claim(), gpu_claim("second")], nodes=("worker",))
    first, second = pod_with(by_name("c")), pod_with(by_name("c", "second"), uid="uid-2", name="pod-2")
    state, pi, _ = cycle(plugin, handle, first)
    assert plugin.filter(state, pi, handle.snapshot.get("worker")) is None
    assert plugin.reserve(state, pi, "worker") is None
    state2, pi2, _ = cycle(plugin, handle, second)
    assert plugin.filter(state2, pi2, handle.snapshot.get("worker")) == Status.unresolvable(
        MSG_CANNOT_ALLOCATE
    )
    # a pod sharing the claim being allocated waits for it
    sharing = pod_with(by_name("c"), uid="uid-3", name="pod-3")
    _, _, status = cycle(plugin, handle, sharing)
    assert status == Status.unresolvable(
        "resource claim default/my-claim is in the process of being allocated"
    )
    plugin.unreserve(state, pi, "worker")
    state3, pi3, _ = cycle(plugin, handle, second)
    assert plugin.filter(state3, pi3, handle.snapshot.get("worker")) is None


def test_an_allocation_seen_in_the_snapshot_ends_the_in_flight_one() -> None:
    plugin, handle = world([gpu_claim()], nodes=("worker",))
    pod = pod_with(by_name("c"))
    state, pi, _ = cycle(plugin, handle, pod)
    plugin.filter(state, pi, handle.snapshot.get("worker"))
    plugin.reserve(state, pi, "worker")
    for bound in plugin.objects_after_pre_bind(state, pi):
        handle.snapshot.objects.put(bound)
    assert plugin.tracker.pending_allocation("uid-my-claim") is None
    written = handle.snapshot.objects.resource_claims["default/my-claim"]
    assert written.status.allocation is not None
    assert [r.uid for r in written.status.reserved_for] == [POD_UID]
    assert "resource.kubernetes.io/delete-protection" in written.metadata.finalizers


def test_the_pod_seen_bound_ends_the_in_flight_allocation() -> None:
    """The claim was allocated and deallocated again (its pod deleted) before the replica looked: the
    snapshot never showed the allocation, but the pod was bound, so PreBind wrote it; the device is
    free (found on the real control plane, whose resourceclaim controller deallocates the claim of a
    deleted pod)."""
    plugin, handle = world([gpu_claim()], nodes=("worker",))
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    plugin.filter(state, pi, handle.snapshot.get("worker"))
    plugin.reserve(state, pi, "worker")
    deallocated = gpu_claim()
    deallocated.metadata.resource_version = "99"
    handle.snapshot.objects.put(deallocated)
    assert plugin.tracker.pending_allocation("uid-my-claim") is not None  # the snapshot cannot tell
    plugin.bound_elsewhere(state, pi)
    assert plugin.tracker.pending_allocation("uid-my-claim") is None
    other = pod_with(by_name("c"), uid="uid-2", name="pod-2")
    state2, pi2, status = cycle(plugin, handle, other)
    assert status is None and plugin.filter(state2, pi2, handle.snapshot.get("worker")) is None


def test_reserve_without_a_filter_result_is_an_error() -> None:
    plugin, handle = world([gpu_claim()], nodes=("worker",))
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    status = plugin.reserve(state, pi, "worker")
    assert status is not None and status.code == Code.ERROR
    assert status.message == "claim allocation not found for node"


def test_state_travels_to_the_binder() -> None:
    plugin, handle = world([gpu_claim()], nodes=("worker",))
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    plugin.filter(state, pi, handle.snapshot.get("worker"))
    plugin.reserve(state, pi, "worker")
    data = plugin.export_state(state)
    binder_state = CycleState()
    DynamicResources(FakeHandle()).import_state(binder_state, data)
    imported = DynamicResources._state(binder_state)
    assert imported.node_name == "worker" and imported.claims.claims[0].metadata.name == "my-claim"
    assert imported.infos[0].allocation == DynamicResources._state(state).infos[0].allocation
    (allocated,) = drastate.allocated_claims(data)
    assert allocated.key == "default/my-claim" and allocated.metadata.uid == "uid-my-claim"
    assert allocated.status.allocation is not None
    assert [(r.driver, r.pool, r.device) for r in allocated.status.allocation.devices.results] == [
        (DRIVER, "worker", "instance-0")
    ]


# --- Score ------------------------------------------------------------------------------------------


def test_first_available_scores_the_chosen_subrequest() -> None:
    prioritized = claim(
        "my-claim",
        first_available("gpu", sub_request("big", CLASS, 2), sub_request("small", CLASS, 1)),
        namespace=NS,
    )
    plugin, handle = world([prioritized], devices=1)
    handle.snapshot.objects.put(
        resource_slice("worker-slice", "worker", "worker", DRIVER, device("a"), device("b"))
    )
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    assert filter_all(plugin, handle, state, pi) == {"worker": None, "worker-2": None}
    scores = [plugin.score(state, pi, ni) for ni in handle.snapshot.nodes]
    assert scores == [8, 7]
    arr = np.array(scores, dtype=np.int64)
    plugin.normalize_score(state, pi, handle.snapshot.nodes, arr)
    assert arr.tolist() == [100, 87]


def test_compute_score_counts_allocated_claims_too() -> None:
    prioritized = claim(
        "c", first_available("gpu", sub_request("big", CLASS), sub_request("small", CLASS)), namespace=NS
    )
    allocated = msgspec.convert(
        {
            **msgspec.to_builtins(prioritized),
            "status": {"allocation": allocation(None, ("gpu/small", DRIVER, "p", "d"))},
        },
        ResourceClaim,
    )
    assert compute_score([allocated], []) == 7


# --- events and hints -------------------------------------------------------------------------------


def test_events_to_register_match_upstream_with_queueing_hints() -> None:
    events = [(e.event.resource, e.event.action) for e in DynamicResources().events_to_register()]
    add_update = ActionType.ADD | ActionType.UPDATE
    assert events == [
        (
            EventResource.NODE,
            ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
        ),
        (EventResource.RESOURCE_CLAIM, add_update),
        (EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        (EventResource.DEVICE_CLASS, add_update),
        (EventResource.RESOURCE_SLICE, add_update),
    ]


def test_claim_change_hints() -> None:
    """Upstream ``TestIsSchedulableAfterClaimChange``."""
    mine = gpu_claim()
    plugin, _ = world([mine])
    pod = pod_with(by_name("c"))
    other = claim("other", request("req-1", CLASS), namespace=NS)
    allocated_other = msgspec.structs.replace(
        other,
        status=msgspec.convert(
            {"allocation": allocation("worker", ("req-1", DRIVER, "worker", "x"))}, type(other.status)
        ),
    )
    assert plugin.hint_claim_change(pod, None, mine) == QueueingHint.QUEUE  # the claim got created
    assert plugin.hint_claim_change(pod, None, other) == QueueingHint.QUEUE_SKIP  # unrelated
    assert plugin.hint_claim_change(pod, allocated_other, other) == QueueingHint.QUEUE  # deallocated
    assert plugin.hint_claim_change(pod, mine, mine) == QueueingHint.QUEUE_SKIP  # status unchanged
    changed = msgspec.structs.replace(mine, status=allocated_other.status)
    assert plugin.hint_claim_change(pod, mine, changed) == QueueingHint.QUEUE
    missing = pod_with(by_name("c", "nope"))
    assert plugin.hint_claim_change(missing, None, mine) == QueueingHint.QUEUE_SKIP
    with pytest.raises(TypeError):
        plugin.hint_claim_change(pod, None, "not-a-claim")


def test_pod_change_hints() -> None:
    plugin, _ = world([gpu_claim(owner_uid=POD_UID)])
    waiting = pod_with({"name": "c", "resourceClaimTemplateName": "t"})
    generated = pod_with(
        {"name": "c", "resourceClaimTemplateName": "t"},
        statuses=[{"name": "c", "resourceClaimName": "my-claim"}],
    )
    assert plugin.hint_pod_change(waiting, waiting, generated) == QueueingHint.QUEUE
    assert plugin.hint_pod_change(waiting, None, waiting) == QueueingHint.QUEUE_SKIP
    assert plugin.hint_pod_change(waiting, None, make_pod("other", uid="x")) == QueueingHint.QUEUE_SKIP
    with pytest.raises(TypeError):
        plugin.hint_pod_change(waiting, None, "not-a-pod")


def test_factory() -> None:
    assert new(None, FakeHandle()).name == "DynamicResources"


def test_allocation_results_are_built_for_the_node_reserve_takes_only() -> None:
    plugin, handle = world([gpu_claim()])
    state, pi, _ = cycle(plugin, handle, pod_with(by_name("c")))
    assert filter_all(plugin, handle, state, pi) == {"worker": None, "worker-2": None}
    assert plugin.reserve(state, pi, "worker-2") is None
    found = plugin._state(state).node_allocations
    assert found["worker"]._results is None
    assert found["worker-2"]._results is not None
    (written,) = plugin.objects_after_pre_bind(state, pi)
    assert written.status.allocation is not None
    assert [r.pool for r in written.status.allocation.devices.results] == ["worker-2"]


@pytest.mark.parametrize("kept", [True, False])
def test_pods_of_one_template_get_the_same_devices_with_kept_searches_or_without(kept: bool) -> None:
    claims = [gpu_claim(f"claim-{k}") for k in range(7)]
    plugin, handle = world(claims, devices=4)
    if not kept:
        plugin.search_cache = None
    taken = []
    for k in range(7):
        pod = pod_with(by_name("c", f"claim-{k}"), uid=f"uid-{k}", name=f"pod-{k}")
        state, pi, _ = cycle(plugin, handle, pod)
        feasible = [n for n, s in filter_all(plugin, handle, state, pi).items() if s is None]
        host = feasible[k % len(feasible)]
        assert plugin.reserve(state, pi, host) is None
        if k % 3 != 2:  # some stay in flight, the others' PreBind comes back
            for bound in plugin.objects_after_pre_bind(state, pi):
                handle.snapshot.objects.put(bound)
        allocation_ = plugin._state(state).infos[0].allocation
        assert allocation_ is not None
        taken.append([(r.pool, r.device) for r in allocation_.devices.results])
    assert taken == [[(("worker", "worker-2")[k % 2], f"instance-{k // 2}")] for k in range(7)]
