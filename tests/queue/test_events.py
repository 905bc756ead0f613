"""Event matching and labels as upstream's ``MatchClusterEvents`` and ``ClusterEvent.Label``."""

from __future__ import annotations

import pytest
from ksched_queue.events import event_label, event_matches, is_wildcard

from ksched.framework.events import (
    EVENT_UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
)

A = ActionType
R = EventResource


def ev(resource: str, action: ActionType) -> ClusterEvent:
    return ClusterEvent(resource, int(action))


@pytest.mark.parametrize(
    ("registered", "incoming", "expected"),
    [
        (ev(R.NODE, A.ADD | A.UPDATE_NODE_TAINT), ev(R.NODE, A.UPDATE_NODE_TAINT), True),
        (ev(R.NODE, A.ADD), ev(R.NODE, A.UPDATE_NODE_TAINT), False),
        (ev(R.NODE, A.UPDATE), ev(R.NODE, A.UPDATE_NODE_LABEL), True),
        (ev(R.NODE, A.UPDATE_NODE_LABEL), ev(R.NODE, A.UPDATE), False),  # incoming broader
        (ev(R.POD, A.DELETE), ev(R.ASSIGNED_POD, A.DELETE), True),
        (ev(R.POD, A.DELETE), ev(R.UNSCHEDULED_POD, A.DELETE), True),
        (ev(R.ASSIGNED_POD, A.DELETE), ev(R.POD, A.DELETE), False),
        (ev(R.NODE, A.ADD), ev(R.PERSISTENT_VOLUME, A.ADD), False),
        (ev(R.WILDCARD, A.ALL), ev(R.NODE, A.ADD), True),
        (ev(R.NODE, A.ALL), EVENT_UNSCHEDULABLE_TIMEOUT, False),  # an incoming wildcard needs "*"
        (ev(R.WILDCARD, A.ADD), ev(R.NODE, A.ADD), True),
    ],
)
def test_event_matches(registered: ClusterEvent, incoming: ClusterEvent, expected: bool) -> None:
    assert event_matches(registered, incoming) is expected


def test_wildcard() -> None:
    assert is_wildcard(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert not is_wildcard(ev(R.WILDCARD, A.ADD))


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ev(R.NODE, A.ADD), "NodeAdd"),
        (ev(R.NODE, A.UPDATE_NODE_ALLOCATABLE), "NodeUpdateNodeAllocatable"),
        (ev(R.UNSCHEDULED_POD, A.ADD), "UnschedulablePodAdd"),
        (
            ev(R.UNSCHEDULED_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
            "UnschedulablePodUpdatePodSchedulingGatesEliminated",
        ),
        (ev(R.ASSIGNED_POD, A.DELETE), "AssignedPodDelete"),
        (EVENT_UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
    ],
)
def test_labels_are_upstreams(event: ClusterEvent, label: str) -> None:
    assert event_label(event) == label
