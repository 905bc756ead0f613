"""SchedulingGates tests ported from upstream ``scheduling_gates_test.go``."""

from __future__ import annotations

import pytest

from ksched.api.core import Pod
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_pod
from ksched.plugins.schedulinggates import SchedulingGates, new


def gated(*gates: str, uid: str = "uid-p") -> Pod:
    return make_pod("p", uid=uid, spec={"schedulingGates": [{"name": g} for g in gates]} if gates else None)


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (gated(), None),
        (gated("foo", "bar"), Status.unresolvable("waiting for scheduling gates: [foo bar]")),
    ],
    ids=["pod does not carry scheduling gates", "pod carries scheduling gates"],
)
def test_pre_enqueue(pod: Pod, want: Status | None) -> None:
    got = new(None, None).pre_enqueue(pod)  # type: ignore[arg-type]
    assert got == want
    if got is not None:
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_is_schedulable_after_update_pod_scheduling_gates_eliminated() -> None:
    pod = gated("foo")
    assert SchedulingGates.hint_gates_eliminated(pod, gated("foo"), gated()) == QueueingHint.QUEUE
    other = gated(uid="uid-other")
    assert (
        SchedulingGates.hint_gates_eliminated(pod, gated("foo", uid="uid-other"), other)
        == QueueingHint.QUEUE_SKIP
    )
    with pytest.raises(TypeError):
        SchedulingGates.hint_gates_eliminated(pod, None, "not-a-pod")


def test_events_to_register_with_queueing_hints() -> None:
    (event,) = SchedulingGates().events_to_register()
    assert (event.event.resource, event.event.action) == (
        EventResource.POD,
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    )
    assert event.hint is not None
