"""DynamicResources in the queue, which holds no ResourceClaims: PreEnqueue lets a pod with claims
in unless a template's claim is not generated yet, and a claim event wakes a pod the plugin rejected
when it is one of the pod's claims (decoded as a ResourceClaim) or a deallocation."""

from __future__ import annotations

from ksched_queue.core import QueueCore

from ksched.api.core import Pod
from ksched.api.lifecycle import PodLifecycle
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
