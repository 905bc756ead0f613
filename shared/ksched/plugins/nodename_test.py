"""NodeName tests ported from upstream ``node_name_test.go``."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Status
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.nodename import ERR_REASON, NodeName, new


@pytest.mark.parametrize(
    ("pod", "node", "want"),
    [
        (make_pod("p"), make_node(""), None),
        (make_pod("p", node_name="foo"), make_node("foo"), None),
        (make_pod("p", node_name="bar"), make_node("foo"), Status.unresolvable(ERR_REASON)),
    ],
    ids=["no host specified", "host matches", "host doesn't match"],
)
def test_node_name(pod: Pod, node: Node, want: Status | None) -> None:
    pl = new(None, None)  # type: ignore[arg-type]
    assert pl.filter(CycleState(), PodInfo(pod), NodeInfo(node)) == want


@pytest.mark.parametrize("wanted", ["", "n1", "missing"])
def test_batch_agrees_with_per_node(wanted: str) -> None:
    snapshot = make_snapshot([make_node(f"n{i}") for i in range(4)])
    pi = PodInfo(make_pod("p", node_name=wanted))
    pl = NodeName()
    rows = np.array([3, 1, 0, 2], dtype=np.intp)
    expected = [pl.filter(CycleState(), pi, snapshot.nodes[r]) is None for r in rows]
    assert pl.filter_batch(CycleState(), pi, snapshot, rows).tolist() == expected


def test_events_to_register_with_queueing_hints() -> None:
    (event,) = NodeName().events_to_register()
    assert (event.event.resource, event.event.action, event.hint) == (
        EventResource.NODE,
        ActionType.ADD,
        None,
    )
