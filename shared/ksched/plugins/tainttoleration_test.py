"""TaintToleration table tests ported from upstream ``taint_toleration_test.go``.

The stored upstream test file is newer than 1.36.2 in two places, and 1.36.2 is followed:
a Gt toleration against a non-numeric taint value is plainly untolerated (no parse error status),
and the pod-update hint is ``isSchedulableAfterPodTolerationChange``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.tainttoleration import ERR_REASON_UNTOLERATED, TaintToleration, new

MAX = 100


def pod_with_tolerations(tolerations: list[dict[str, str]], uid: str | None = None) -> Pod:
    return make_pod("pod1", uid=uid, spec={"tolerations": tolerations})


def node_with_taints(name: str, taints: list[dict[str, str]]) -> Node:
    return make_node(name, taints=taints)


def run_scores(pl: TaintToleration, pod: Pod, nodes: list[Node]) -> list[int]:
    snapshot = make_snapshot(nodes)
    pi = PodInfo(pod)
    state = CycleState()
    assert pl.pre_score(state, pi, snapshot.nodes) is None
    scores = np.array([pl.score(state, pi, ni) for ni in snapshot.nodes], dtype=np.int64)
    batch = pl.score_batch(state, pi, snapshot, np.arange(len(nodes), dtype=np.intp))
    assert batch.tolist() == scores.tolist()
    assert pl.normalize_score(state, pi, snapshot.nodes, scores) is None
    return [int(s) for s in scores]


PNS = "PreferNoSchedule"
SLA = "node.kubernetes.io/sla"

SCORE_CASES: list[
    tuple[str, list[dict[str, str]], list[tuple[str, list[dict[str, str]]]], list[int], bool]
] = [
    (
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": PNS}],
        [
            ("nodeA", [{"key": "foo", "value": "bar", "effect": PNS}]),
            ("nodeB", [{"key": "foo", "value": "blah", "effect": PNS}]),
        ],
        [MAX, 0],
        False,
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score, "
        "no matter how many tolerable taints a node has",
        [
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": PNS},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": PNS},
        ],
        [
            ("nodeA", []),
            ("nodeB", [{"key": "cpu-type", "value": "arm64", "effect": PNS}]),
            (
                "nodeC",
                [
                    {"key": "cpu-type", "value": "arm64", "effect": PNS},
                    {"key": "disk-type", "value": "ssd", "effect": PNS},
                ],
            ),
        ],
        [MAX, MAX, MAX],
        False,
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": PNS}],
        [
            ("nodeA", []),
            ("nodeB", [{"key": "cpu-type", "value": "arm64", "effect": PNS}]),
            (
                "nodeC",
                [
                    {"key": "cpu-type", "value": "arm64", "effect": PNS},
                    {"key": "disk-type", "value": "ssd", "effect": PNS},
                ],
            ),
        ],
        [MAX, 50, 0],
        False,
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations "
        "priority function",
        [
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
        ],
        [
            ("nodeA", []),
            ("nodeB", [{"key": "cpu-type", "value": "arm64", "effect": "NoSchedule"}]),
            (
                "nodeC",
                [
                    {"key": "cpu-type", "value": "arm64", "effect": PNS},
                    {"key": "disk-type", "value": "ssd", "effect": PNS},
                ],
            ),
        ],
        [MAX, MAX, 0],
        False,
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [("nodeA", []), ("nodeB", [{"key": "cpu-type", "value": "arm64", "effect": PNS}])],
        [MAX, 0],
        False,
    ),
    (
        "Numeric Gt operator: pod with Gt toleration prefers nodes with matching SLA taint",
        [{"key": SLA, "operator": "Gt", "value": "950", "effect": PNS}],
        [
            ("nodeA", [{"key": SLA, "value": "800", "effect": PNS}]),
            ("nodeB", [{"key": SLA, "value": "999", "effect": PNS}]),
        ],
        [0, MAX],
        True,
    ),
    (
        "Numeric Lt operator: pod with Lt toleration prefers nodes with matching SLA taint",
        [{"key": SLA, "operator": "Lt", "value": "800", "effect": PNS}],
        [
            ("nodeA", [{"key": SLA, "value": "950", "effect": PNS}]),
            ("nodeB", [{"key": SLA, "value": "700", "effect": PNS}]),
        ],
        [0, MAX],
        True,
    ),
    (
        "Score ignores parse errors from numeric PreferNoSchedule taint value",
        [{"key": SLA, "operator": "Gt", "value": "950", "effect": PNS}],
        [("nodeA", []), ("nodeB", [{"key": SLA, "value": "high", "effect": PNS}])],
        [MAX, 0],
        True,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "nodes", "expected", "comparison_ops"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_taint_toleration_score(
    tolerations: list[dict[str, str]],
    nodes: list[tuple[str, list[dict[str, str]]]],
    expected: list[int],
    comparison_ops: bool,
) -> None:
    pl = TaintToleration(comparison_operators=comparison_ops)
    got = run_scores(pl, pod_with_tolerations(tolerations), [node_with_taints(n, t) for n, t in nodes])
    assert got == expected


UNTOLERATED = Status.unresolvable(ERR_REASON_UNTOLERATED)
DEDICATED_USER1 = {"key": "dedicated", "value": "user1", "effect": "NoSchedule"}
FILTER_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], Status | None, bool]] = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [DEDICATED_USER1],
        UNTOLERATED,
        False,
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        [DEDICATED_USER1],
        None,
        False,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [DEDICATED_USER1],
        UNTOLERATED,
        False,
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the "
        "taints on the node",
        [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        None,
        False,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
        "pod can be scheduled onto the node",
        [
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ],
        [
            {"key": "dedicated", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "value": "bar", "effect": "NoSchedule"},
        ],
        None,
        False,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
        "doesn't match, "
        "can't be scheduled onto the node",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        UNTOLERATED,
        False,
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect of toleration "
        "is empty, "
        "and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
        [{"key": "foo", "operator": "Equal", "value": "bar"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        None,
        False,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, "
        "but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}],
        None,
        False,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be "
        "scheduled onto the node",
        [],
        [{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}],
        None,
        False,
    ),
    (
        "Pod with Gt toleration cannot be scheduled on node when taint value is lower than threshold",
        [
            {
                "key": "node.example.com/priority-level",
                "operator": "Gt",
                "value": "950",
                "effect": "NoSchedule",
            }
        ],
        [{"key": "node.example.com/priority-level", "value": "800", "effect": "NoSchedule"}],
        UNTOLERATED,
        True,
    ),
    (
        "Pod with Gt toleration can be scheduled on node when taint value is higher than threshold",
        [{"key": SLA, "operator": "Gt", "value": "750", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "950", "effect": "NoSchedule"}],
        None,
        True,
    ),
    (
        "Pod with Lt toleration cannot be scheduled on node when taint value is higher than threshold",
        [
            {
                "key": "node.example.com/priority-level",
                "operator": "Lt",
                "value": "800",
                "effect": "NoSchedule",
            }
        ],
        [{"key": "node.example.com/priority-level", "value": "950", "effect": "NoSchedule"}],
        UNTOLERATED,
        True,
    ),
    (
        "Pod with Lt toleration can be scheduled on node when taint value is lower than threshold",
        [{"key": SLA, "operator": "Lt", "value": "950", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "800", "effect": "NoSchedule"}],
        None,
        True,
    ),
    (
        # 1.36.2: non-numeric values simply do not match (later releases report the parse error).
        "Pod with Gt toleration cannot be scheduled on node with non-numeric taint value",
        [{"key": SLA, "operator": "Gt", "value": "950", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "high", "effect": "NoSchedule"}],
        UNTOLERATED,
        True,
    ),
    # TestTaintTolerationFilterWithFeatureGate
    (
        "Pod with Gt toleration can be scheduled when feature gate is enabled and taint value is higher",
        [{"key": SLA, "operator": "Gt", "value": "750", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "950", "effect": "NoSchedule"}],
        None,
        True,
    ),
    (
        "Pod with Gt toleration cannot be scheduled when feature gate is disabled",
        [{"key": SLA, "operator": "Gt", "value": "750", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "950", "effect": "NoSchedule"}],
        UNTOLERATED,
        False,
    ),
    (
        "Pod with Lt toleration can be scheduled when feature gate is enabled and taint value is lower",
        [{"key": SLA, "operator": "Lt", "value": "950", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "800", "effect": "NoSchedule"}],
        None,
        True,
    ),
    (
        "Pod with Lt toleration cannot be scheduled when feature gate is disabled",
        [{"key": SLA, "operator": "Lt", "value": "950", "effect": "NoSchedule"}],
        [{"key": SLA, "value": "800", "effect": "NoSchedule"}],
        UNTOLERATED,
        False,
    ),
    (
        "Pod with mixed tolerations (Equal and Gt) when feature gate is disabled - only Equal is honored",
        [
            {"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"},
            {"key": SLA, "operator": "Gt", "value": "750", "effect": "NoSchedule"},
        ],
        [DEDICATED_USER1],
        None,
        False,
    ),
    (
        "Pod with mixed tolerations, Gt toleration needed but filtered out when feature gate is disabled",
        [
            {"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"},
            {"key": SLA, "operator": "Gt", "value": "750", "effect": "NoSchedule"},
        ],
        [DEDICATED_USER1, {"key": SLA, "value": "950", "effect": "NoSchedule"}],
        UNTOLERATED,
        False,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "taints", "want", "comparison_ops"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_taint_toleration_filter(
    tolerations: list[dict[str, str]], taints: list[dict[str, str]], want: Status | None, comparison_ops: bool
) -> None:
    pl = TaintToleration(comparison_operators=comparison_ops)
    node = node_with_taints("nodeA", taints)
    pi = PodInfo(pod_with_tolerations(tolerations))
    got = pl.filter(CycleState(), pi, NodeInfo(node))
    assert got == want
    snapshot = make_snapshot([node])
    assert pl.filter_batch(CycleState(), pi, snapshot, np.array([0], dtype=np.intp)).tolist() == [
        want is None
    ]


def test_filter_reason_is_unresolvable_with_the_1_36_wording() -> None:
    got = TaintToleration().filter(
        CycleState(), PodInfo(pod_with_tolerations([])), NodeInfo(node_with_taints("n", [DEDICATED_USER1]))
    )
    assert got is not None
    assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert got.reasons == ("node(s) had untolerated taint(s)",)


NODE_HINT_CASES: list[tuple[str, Any, Any, Any, QueueingHint | None]] = [
    ("backoff-wrong-new-object", None, None, "not-a-node", None),
    ("backoff-wrong-old-object", None, "not-a-node", node_with_taints("nodeA", [DEDICATED_USER1]), None),
    (
        "skip-queue-on-untoleratedtaint-node-added",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        None,
        node_with_taints("nodeA", [DEDICATED_USER1]),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-toleratedtaint-node-added",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        None,
        node_with_taints("nodeA", [{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}]),
        QueueingHint.QUEUE,
    ),
    (
        "skip-unrelated-change",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        node_with_taints("nodeA", [DEDICATED_USER1]),
        node_with_taints(
            "nodeA", [DEDICATED_USER1, {"key": "dedicated", "value": "user3", "effect": "NoSchedule"}]
        ),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-taint-change",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        node_with_taints("nodeA", [DEDICATED_USER1]),
        node_with_taints("nodeA", [{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}]),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "old", "new_obj", "expected"),
    [c[1:] for c in NODE_HINT_CASES],
    ids=[c[0] for c in NODE_HINT_CASES],
)
def test_is_schedulable_after_node_change(
    tolerations: Any, old: Any, new_obj: Any, expected: QueueingHint | None
) -> None:
    pod = pod_with_tolerations(tolerations or [])
    pl = TaintToleration()
    if expected is None:  # upstream returns an error, which the queue treats as Queue
        with pytest.raises(TypeError):
            pl.hint_node_change(pod, old, new_obj)
        return
    assert pl.hint_node_change(pod, old, new_obj) == expected


def test_is_schedulable_after_pod_toleration_change() -> None:
    # "queue-on-toleration-added"
    pod = make_pod("pod-1", "ns-1", uid="u1")
    old = make_pod("pod-1", "ns-1", uid="u1")
    updated = make_pod(
        "pod-1", "ns-1", uid="u1", spec={"tolerations": [{"key": "foo", "effect": "NoSchedule"}]}
    )
    assert TaintToleration.hint_pod_toleration_change(pod, old, updated) == QueueingHint.QUEUE
    other = make_pod(
        "pod-2", "ns-1", uid="u2", spec={"tolerations": [{"key": "foo", "effect": "NoSchedule"}]}
    )
    assert TaintToleration.hint_pod_toleration_change(pod, None, other) == QueueingHint.QUEUE_SKIP


def test_events_to_register_with_queueing_hints() -> None:
    events = new(None, None).events_to_register()  # type: ignore[arg-type]
    got = {(e.event.resource, e.event.action) for e in events}
    assert got == {
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
    }
    assert all(e.hint is not None for e in events)


def test_score_without_pre_score_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="PreScoreTaintToleration"):
        TaintToleration().score(
            CycleState(), PodInfo(pod_with_tolerations([])), NodeInfo(node_with_taints("n", []))
        )


# --- batch agreement ---------------------------------------------------------------------------------
KEYS = ["a", "b", "node.kubernetes.io/unschedulable"]
VALUES = ["", "x", "y", "5", "10"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
taint_st = st.fixed_dictionaries(
    {"key": st.sampled_from(KEYS), "value": st.sampled_from(VALUES), "effect": st.sampled_from(EFFECTS)}
)
toleration_st = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["", *KEYS]),
        "operator": st.sampled_from(["", "Equal", "Exists", "Gt", "Lt"]),
        "value": st.sampled_from(VALUES),
        "effect": st.sampled_from(["", *EFFECTS]),
    }
)


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(st.lists(taint_st, max_size=3), min_size=1, max_size=12),
    tolerations=st.lists(toleration_st, max_size=3),
    comparison_ops=st.booleans(),
)
def test_batch_filter_and_score_agree_with_per_node(
    nodes: list[list[dict[str, str]]], tolerations: list[dict[str, str]], comparison_ops: bool
) -> None:
    pl = TaintToleration(comparison_operators=comparison_ops)
    snapshot = make_snapshot([node_with_taints(f"n{i}", t) for i, t in enumerate(nodes)])
    pi = PodInfo(pod_with_tolerations(tolerations))
    state = CycleState()
    rows = np.arange(len(nodes), dtype=np.intp)[::-1].copy()
    per_node = [pl.filter(state, pi, snapshot.nodes[r]) is None for r in rows]
    assert pl.filter_batch(state, pi, snapshot, rows).tolist() == per_node
    pl.pre_score(state, pi, snapshot.nodes)
    assert pl.score_batch(state, pi, snapshot, rows).tolist() == [
        pl.score(state, pi, snapshot.nodes[r]) for r in rows
    ]


def test_batch_sees_node_updates() -> None:
    pl = TaintToleration()
    snapshot = make_snapshot([node_with_taints("n0", []), node_with_taints("n1", [])])
    pi = PodInfo(pod_with_tolerations([]))
    rows = np.arange(2, dtype=np.intp)
    assert pl.filter_batch(CycleState(), pi, snapshot, rows).tolist() == [True, True]
    snapshot.upsert_node(node_with_taints("n1", [DEDICATED_USER1]))
    assert pl.filter_batch(CycleState(), pi, snapshot, rows).tolist() == [True, False]
    snapshot.remove_node("n0")  # n1 moves to row 0
    assert pl.filter_batch(CycleState(), pi, snapshot, np.arange(1, dtype=np.intp)).tolist() == [False]
