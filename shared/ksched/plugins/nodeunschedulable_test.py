"""NodeUnschedulable tests ported from upstream ``node_unschedulable_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.framework.testing import make_node, make_pod
from ksched.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable, new

UNSCHED_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}


def node(unschedulable: bool, taints: tuple[dict[str, str], ...] = ()) -> Node:
    return make_node("n", unschedulable=unschedulable, taints=taints)


def pod(uid: str = "uid", *tolerations: dict[str, str]) -> Pod:
    return make_pod("p", uid=uid, spec={"tolerations": list(tolerations)} if tolerations else None)


@pytest.mark.parametrize(
    ("p", "n", "want"),
    [
        (pod(), node(True), Status.unresolvable(ERR_REASON_UNSCHEDULABLE)),
        (pod(), node(False), None),
        (pod("uid", UNSCHED_TOLERATION), node(True), None),
    ],
    ids=[
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        "Schedule pod to normal node",
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
    ],
)
def test_node_unschedulable(p: Pod, n: Node, want: Status | None) -> None:
    pl = new(None, None)  # type: ignore[arg-type]
    assert pl.filter(CycleState(), PodInfo(p), NodeInfo(n)) == want


NODE_CASES: list[tuple[str, Any, Any, QueueingHint | None]] = [
    ("error-wrong-new-object", None, "not-a-node", None),
    ("error-wrong-old-object", "not-a-node", node(True), None),
    ("skip-queue-on-unschedulable-node-added", None, node(True), QueueingHint.QUEUE_SKIP),
    ("queue-on-schedulable-node-added", None, node(False), QueueingHint.QUEUE),
    (
        "skip-unrelated-change-unschedulable-true",
        node(True),
        node(True, (NOT_READY_TAINT,)),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-unrelated-change-unschedulable-false",
        node(False),
        node(False, (NOT_READY_TAINT,)),
        QueueingHint.QUEUE_SKIP,
    ),
    ("queue-on-unschedulable-field-change", node(True), node(False), QueueingHint.QUEUE),
]


@pytest.mark.parametrize(
    ("old", "new_obj", "expected"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES]
)
def test_is_schedulable_after_node_change(old: Any, new_obj: Any, expected: QueueingHint | None) -> None:
    if expected is None:  # upstream returns an error, which the queue treats as Queue
        with pytest.raises(TypeError):
            NodeUnschedulable.hint_node_change(pod(), old, new_obj)
        return
    assert NodeUnschedulable.hint_node_change(pod(), old, new_obj) == expected


POD_CASES: list[tuple[str, Any, Any, QueueingHint | None]] = [
    ("error-wrong-new-object", None, "not-a-pod", None),
    ("error-wrong-old-object", "not-a-pod", pod(), None),
    (
        "skip-different-pod-update",
        pod("different-uid"),
        pod("different-uid", UNSCHED_TOLERATION),
        QueueingHint.QUEUE_SKIP,
    ),
    ("queue-when-the-unsched-pod-gets-toleration", pod(), pod("uid", UNSCHED_TOLERATION), QueueingHint.QUEUE),
    (
        "skip-when-the-unsched-pod-gets-unrelated-toleration",
        pod(),
        pod("uid", {"key": "unrelated-key", "operator": "Exists"}),
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(
    ("old", "new_obj", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_is_schedulable_after_pod_toleration_change(
    old: Any, new_obj: Any, expected: QueueingHint | None
) -> None:
    if expected is None:
        with pytest.raises(TypeError):
            NodeUnschedulable.hint_pod_toleration_change(pod(), old, new_obj)
        return
    assert NodeUnschedulable.hint_pod_toleration_change(pod(), old, new_obj) == expected


def test_events_to_register_with_queueing_hints() -> None:
    got = {(e.event.resource, e.event.action) for e in NodeUnschedulable().events_to_register()}
    assert got == {
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
    }
