"""DynamicResources in the queue, which holds no ResourceClaims: PreEnqueue lets a pod with claims
in unless a template's claim is not generated yet, and a claim event wakes a pod the plugin rejected
when it is one of the pod's claims (decoded as a ResourceClaim) or a deallocation."""

from __future__ import annotations

from ksched_queue.core import QueueCore

from ksched.api.core import Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import ClusterEventMsg, LeasedPod, PopRequest
from ksched.framework.events import ActionType, EventResource
from ksched.plugins.dynamicresources.testing import allocation, claim, request
from tests.queue.testing import event_msg, new_core, pending_of, pod

DRA = "DynamicResources"
BY_NAME = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}
FROM_TEMPLATE = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}


def _unschedulable_by_dra(core: QueueCore, p: Pod) -> None:
    core.queue.add(pending_of(p))
    entry = core.queue.pop()
    assert entry is not None
    assert core.queue.failed(entry.uid, (DRA,), ()) == PodLifecycle.UNSCHEDULABLE


def test_a_pod_with_claims_is_not_gated_for_claims_the_queue_cannot_see() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("trainer", spec=BY_NAME)))
    assert core.state_of("uid-trainer") == PodLifecycle.ACTIVE


def test_a_template_claim_not_generated_yet_gates_the_pod() -> None:
    core, _ = new_core()
    core.queue.add(pending_of(pod("trainer", spec=FROM_TEMPLATE)))
    assert core.state_of("uid-trainer") == PodLifecycle.GATED


def test_the_pods_claim_created_wakes_it_another_claim_does_not() -> None:
    core, clock = new_core()
    _unschedulable_by_dra(core, pod("trainer", spec=BY_NAME))
    clock.advance(5)
    other = claim("other", request("gpu", "gpu"), namespace="default")
    assert core.apply_cluster_event(event_msg(EventResource.RESOURCE_CLAIM, ActionType.ADD, None, other)) == 0
    mine = claim("gpu-claim", request("gpu", "gpu"), namespace="default")
    assert core.apply_cluster_event(event_msg(EventResource.RESOURCE_CLAIM, ActionType.ADD, None, mine)) == 1
    assert core.state_of("uid-trainer") == PodLifecycle.ACTIVE


def test_a_deallocation_wakes_pods_waiting_for_devices() -> None:
    core, clock = new_core()
    _unschedulable_by_dra(core, pod("trainer", spec=BY_NAME))
    clock.advance(5)
    status = {"allocation": allocation("n1", ("gpu", "gpu.example.com", "n1", "gpu-0"))}
    allocated = claim("other", request("gpu", "gpu"), namespace="default", status=status)
    freed = claim("other", request("gpu", "gpu"), namespace="default")
    moved = core.apply_cluster_event(
        event_msg(EventResource.RESOURCE_CLAIM, ActionType.UPDATE, allocated, freed)
    )
    assert moved == 1


def _deallocation(generation: int) -> ClusterEventMsg:
    status = {"allocation": allocation("n1", ("gpu", "gpu.example.com", "n1", "gpu-0"))}
    allocated = claim("other", request("gpu", "gpu"), namespace="default", status=status)
    freed = claim("other", request("gpu", "gpu"), namespace="default")
    return event_msg(EventResource.RESOURCE_CLAIM, ActionType.UPDATE, allocated, freed, generation=generation)


def _pop(core: QueueCore) -> LeasedPod:
    (leased,) = core.pop(PopRequest(scheduler_id="r1", scheduler_names=["default-scheduler"]))
    return leased


def test_a_pod_woken_by_a_deallocation_is_scheduled_on_a_snapshot_that_has_it() -> None:
    """Upstream's cache holds a change before the queue moves pods for it; here the lease names the
    event's cache generation, so the replica waits for it. Otherwise a replica a little behind sees the
    device still allocated, refuses the pod again, and nothing wakes it any more (found on the real
    control plane: the resourceclaim controller deallocates the claim of a deleted pod)."""
    core, clock = new_core()
    _unschedulable_by_dra(core, pod("trainer", spec=BY_NAME))
    clock.advance(5)
    assert core.apply_cluster_event(_deallocation(generation=42)) == 1
    assert _pop(core).min_generation == 42


def test_a_deallocation_seen_while_the_pod_was_in_flight_is_on_its_next_snapshot() -> None:
    core, clock = new_core()
    core.queue.add(pending_of(pod("trainer", spec=BY_NAME)), generation=3)
    first = _pop(core)
    assert first.min_generation == 3
    assert core.apply_cluster_event(_deallocation(generation=42)) == 0  # in flight: recorded
    core.leases.release(first.lease_id)
    assert core.queue.failed("uid-trainer", (DRA,), ()) == PodLifecycle.BACKOFF
    clock.advance(5)
    core.queue.flush_backoff_completed()
    assert _pop(core).min_generation == 42
