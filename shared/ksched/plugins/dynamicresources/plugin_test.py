"""DynamicResources for pods without ResourceClaims, as upstream 1.36.2 behaves for them."""

from __future__ import annotations

import numpy as np

from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.dynamicresources.plugin import (
    MSG_NO_CLAIMS_TO_DEALLOCATE,
    DynamicResources,
    new,
)

CLAIM_POD = make_pod(
    "with-claim", spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}
)


def test_pod_without_claims_skips_pre_filter_and_post_filter_says_no_claims() -> None:
    plugin, state, pod = DynamicResources(), CycleState(), PodInfo(make_pod())
    result, status = plugin.pre_filter(state, pod, [])
    assert result is None and status is not None and status.code == Code.SKIP
    assert plugin.post_filter(state, pod, NodeToStatus()) == (
        None,
        Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE),
    )
    assert MSG_NO_CLAIMS_TO_DEALLOCATE == "no new claims to deallocate"


def test_post_filter_without_pre_filter_state_is_an_error() -> None:
    _, status = DynamicResources().post_filter(CycleState(), PodInfo(make_pod()), NodeToStatus())
    assert status is not None and status.code == Code.ERROR and status.message == "not found"


def test_scores_are_zero_per_node_batch_and_after_normalize() -> None:
    snapshot = make_snapshot([make_node("a"), make_node("b")])
    plugin, state, pod = DynamicResources(), CycleState(), PodInfo(make_pod())
    plugin.pre_filter(state, pod, snapshot.nodes)
    assert [plugin.score(state, pod, ni) for ni in snapshot.nodes] == [0, 0]
    scores = plugin.score_batch(state, pod, snapshot, np.arange(2, dtype=np.intp))
    assert scores.tolist() == [0, 0]
    assert plugin.normalize_score(state, pod, snapshot.nodes, scores) is None
    assert scores.tolist() == [0, 0]


def test_normalize_scales_the_maximum_to_100() -> None:
    scores = np.array([0, 3, 6, 4], dtype=np.int64)
    DynamicResources().normalize_score(CycleState(), PodInfo(make_pod()), [], scores)
    assert scores.tolist() == [0, 50, 100, 66]


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


def test_factory() -> None:
    assert new(None, None).name == "DynamicResources"  # type: ignore[arg-type]
