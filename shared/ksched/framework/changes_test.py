"""Pod update events: a generated ResourceClaim (upstream ``extractPodGeneratedResourceClaimChange``)."""

from __future__ import annotations

import msgspec

from ksched.api.core import (
    ContainerExtendedResourceRequest,
    Pod,
    PodExtendedResourceClaimStatus,
    PodResourceClaimStatus,
    PodStatus,
)
from ksched.framework.changes import pod_changes
from ksched.framework.events import ActionType, ClusterEvent, EventResource


def test_a_generated_claim_name_in_the_status_is_its_own_event() -> None:
    old = Pod()
    new = msgspec.structs.replace(
        old,
        status=PodStatus(
            resource_claim_statuses=[PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu")]
        ),
    )
    assert pod_changes(new, old) == [
        ClusterEvent(EventResource.UNSCHEDULED_POD, int(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM))
    ]
    assert pod_changes(new, new) == [ClusterEvent(EventResource.UNSCHEDULED_POD, int(ActionType.UPDATE))]


def test_the_extended_resource_claim_in_the_status_is_that_event_too() -> None:
    """DRAExtendedResource: ``status.extendedResourceClaimStatus`` counts as a generated claim."""
    old = Pod()
    new = msgspec.structs.replace(
        old,
        status=PodStatus(
            extended_resource_claim_status=PodExtendedResourceClaimStatus(
                request_mappings=[
                    ContainerExtendedResourceRequest(
                        container_name="c", resource_name="example.com/gpu", request_name="r"
                    )
                ],
                resource_claim_name="p-extended-resources-abcde",
            )
        ),
    )
    assert pod_changes(new, old) == [
        ClusterEvent(EventResource.UNSCHEDULED_POD, int(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM))
    ]
