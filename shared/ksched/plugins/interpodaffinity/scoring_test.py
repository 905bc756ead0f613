# ruff: noqa: E501  (upstream case names are long; kept verbatim so they can be grepped)
"""Score tables ported from upstream ``scoring_test.go`` (1.36), plus batch/per-node agreement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import MAX_NODE_SCORE
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.plugins.args.types import InterPodAffinityArgs
from ksched.plugins.interpodaffinity.testing import (
    affinity,
    namespace,
    node,
    plugin_for,
    pod,
    snapshot_of,
    term,
)

NAMESPACES = [
    namespace("subteam1.team1", {"team": "team1"}),
    namespace("subteam2.team1", {"team": "team1"}),
    namespace("subteam1.team2", {"team": "team2"}),
    namespace("subteam2.team2", {"team": "team2"}),
]
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}

RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def sec(op: str, *values: str) -> tuple[str, str, list[str]]:
    return ("security", op, list(values))


STAY_WITH_S1_IN_REGION = affinity(preferred=[(5, term("region", expressions=[sec("In", "S1")]))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[(6, term("region", expressions=[sec("In", "S2")]))])
AFFINITY3 = affinity(
    preferred=[
        (8, term("region", expressions=[sec("NotIn", "S1"), sec("In", "S2")])),
        (2, term("region", expressions=[sec("Exists"), ("wrongkey", "DoesNotExist", [])])),
    ]
)
HARD_AFFINITY = affinity(
    required=[
        term("region", expressions=[sec("In", "S1", "value2")]),
        term("region", expressions=[sec("Exists"), ("wrongkey", "DoesNotExist", [])]),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(preferred_anti=[(5, term("az", expressions=[sec("In", "S1")]))])
AWAY_FROM_S2_IN_AZ = affinity(preferred_anti=[(5, term("az", expressions=[sec("In", "S2")]))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[(8, term("region", expressions=[sec("In", "S1")]))],
    preferred_anti=[(5, term("az", expressions=[sec("In", "S2")]))],
)
AFFINITY_NAMESPACE_SELECTOR = affinity(
    preferred=[
        (
            5,
            term(
                "region",
                expressions=[sec("In", "S1")],
                namespaces=["subteam2.team2"],
                namespace_selector=TEAM1,
            ),
        )
    ]
)
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(
    preferred_anti=[
        (
            5,
            term(
                "region",
                expressions=[sec("In", "S1")],
                namespaces=["subteam2.team2"],
                namespace_selector=TEAM1,
            ),
        )
    ]
)
INVALID_AFFINITY_LABELS = affinity(
    preferred=[(8, term("region", expressions=[sec("In", "{{.bad-value.}}")]))]
)
INVALID_ANTI_AFFINITY_LABELS = affinity(
    preferred_anti=[(5, term("az", expressions=[sec("In", "{{.bad-value.}}")]))]
)

_counter = iter(range(1_000_000))


def p(
    node_name: str = "", labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None, ns: str = ""
) -> Pod:
    return pod(f"p{next(_counter)}", ns, labels=labels, node=node_name, aff=aff)


def nodes(*label_sets: dict[str, str]) -> list[Node]:
    return [node(f"node{i + 1}", labels) for i, labels in enumerate(label_sets)]


@dataclass
class Case:
    name: str
    pod: Pod
    nodes: list[Node]
    pods: list[Pod] = field(default_factory=list)
    want: list[int] | None = None
    want_status: Status | None = None
    ignore_preferred_terms_of_existing_pods: bool = False
    hard_pod_affinity_weight: int = 1


def run(case: Case) -> tuple[Status | None, list[int] | None]:
    snap = snapshot_of(case.nodes, case.pods, NAMESPACES)
    args = InterPodAffinityArgs(
        hard_pod_affinity_weight=case.hard_pod_affinity_weight,
        ignore_preferred_terms_of_existing_pods=case.ignore_preferred_terms_of_existing_pods,
    )
    plugin = plugin_for(snap, args)
    state = CycleState()
    pi = PodInfo(case.pod)
    # Score reads fresh NodeInfos built from the nodes alone, as upstream's tf.BuildNodeInfos.
    node_infos = [NodeInfo(n) for n in case.nodes]
    status = plugin.pre_score(state, pi, node_infos)
    if status is not None:
        return status, None
    scores = np.array([plugin.score(state, pi, ni) for ni in node_infos], dtype=np.int64)
    rows = np.array([snap.get(n.metadata.name).index for n in case.nodes], dtype=np.intp)
    batch = plugin.score_batch(state, pi, snap, rows)
    assert batch.tolist() == scores.tolist(), "score_batch disagrees with score"
    assert plugin.normalize_score(state, pi, node_infos, scores) is None
    return None, scores.tolist()


M = MAX_NODE_SCORE
SKIP = Status.skip()

PREFERRED_CASES = [
    Case(
        "all nodes are same priority as Affinity is nil",
        p(labels=S1),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        want_status=SKIP,
    ),
    Case(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
        "which doesn't match either pods in nodes or in topology key",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [M, 0, 0],
    ),
    Case(
        "All the nodes that have the same topology key & label value with one of them has an existing pod that "
        "match the affinity rules, have the same score",
        p(aff=STAY_WITH_S1_IN_REGION),
        nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
        [p("node1", S1)],
        [M, M, 0],
    ),
    Case(
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
        "more matches will get high score",
        p(labels=S1, aff=STAY_WITH_S2_IN_REGION),
        nodes(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [p("node1", S2), p("node1", S2), p("node2", S2), p("node3", S2), p("node4", S2), p("node5", S2)],
        [M, 0, M, M, 0],
    ),
    Case(
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some "
        "match failures ",
        p(labels=S1, aff=AFFINITY3),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        [20, M, 0],
    ),
    Case(
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
        "symmetry",
        p(labels=S2),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        [p("node1", S1, STAY_WITH_S1_IN_REGION), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [0, M, 0],
    ),
    Case(
        "Affinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        [p("node1", S1, AFFINITY_NAMESPACE_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [M, 0, 0],
    ),
    Case(
        "AntiAffinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        [p("node1", S1, ANTI_AFFINITY_NAMESPACE_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [0, M, M],
    ),
    Case(
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        p(labels=S1),
        nodes(RG_CHINA, RG_INDIA, AZ1),
        [p("node1", S1, HARD_AFFINITY), p("node2", S2, HARD_AFFINITY)],
        [M, M, 0],
    ),
    Case(
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        nodes(AZ1, RG_CHINA),
        [p("node1", S1), p("node2", S2)],
        [0, M],
    ),
    Case(
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
        "comparing to others ",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        nodes(AZ1, RG_CHINA),
        [p("node1", S1), p("node2", S1)],
        [0, M],
    ),
    Case(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
        "unmatches will get high score",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        nodes(AZ1, RG_INDIA),
        [p("node1", S1), p("node1", S1), p("node2", S2)],
        [0, M],
    ),
    Case(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        p(labels=S2),
        nodes(AZ1, AZ2),
        [p("node1", S1, AWAY_FROM_S2_IN_AZ), p("node2", S2, AWAY_FROM_S1_IN_AZ)],
        [0, M],
    ),
    Case(
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
        "affinity & anti affinity",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        nodes(RG_CHINA, AZ1),
        [p("node1", S1), p("node2", S1)],
        [M, 0],
    ),
    Case(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing "
        "pods have the same labels",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        nodes(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [
            p("node1", S1),
            p("node1", S1),
            p("node2", S1),
            p("node3", S1),
            p("node3", S1),
            p("node4", S1),
            p("node5", S1),
        ],
        [M, 0, M, M, 0],
    ),
    Case(
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in "
        "both pod affinity & anti affinity & symmetry",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        nodes(RG_CHINA, AZ1, RG_INDIA, AZ2),
        [
            p("node1", S1),
            p("node2", S2),
            p("node3", aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            p("node4", aff=AWAY_FROM_S1_IN_AZ),
        ],
        [M, 0, M, 0],
    ),
    Case(
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        p(labels=S1),
        nodes(RG_CHINA, RG_CHINA),
        [p("node1", S1), p("node2", aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        [0, 0],
    ),
    Case(
        "invalid Affinity fails PreScore",
        p(aff=INVALID_AFFINITY_LABELS),
        nodes(RG_CHINA, RG_CHINA),
        want_status=Status.as_error('Invalid value: "{{.bad-value.}}"'),
    ),
    Case(
        "invalid AntiAffinity fails PreScore",
        p(aff=INVALID_ANTI_AFFINITY_LABELS),
        nodes(RG_CHINA, RG_CHINA),
        want_status=Status.as_error('Invalid value: "{{.bad-value.}}"'),
    ),
    Case(
        "Affinity with pods matching NamespaceSelector",
        p(labels=S1, aff=AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        nodes(RG_CHINA, RG_INDIA),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [M, 0],
    ),
    Case(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        p(labels=S1, aff=AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        nodes(RG_CHINA, RG_INDIA),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [M, 0],
    ),
    Case(
        "Affinity with pods matching NamespaceSelector (anti-affinity)",
        p(labels=S1, aff=ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        nodes(RG_CHINA, RG_INDIA),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [0, M],
    ),
    Case(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields (anti-affinity)",
        p(labels=S1, aff=ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        nodes(RG_CHINA, RG_INDIA),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        [0, M],
    ),
    Case(
        "Ignore preferred terms of existing pods",
        p(labels=S2),
        nodes(RG_CHINA, RG_INDIA),
        [p("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        want_status=SKIP,
        ignore_preferred_terms_of_existing_pods=True,
    ),
    Case(
        "Do not ignore preferred terms of existing pods",
        p(labels=S2),
        nodes(RG_CHINA, RG_INDIA),
        [p("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        [0, M],
    ),
    Case("No nodes to score", p(labels=S2), [], want_status=SKIP),
]


@pytest.mark.parametrize("case", PREFERRED_CASES, ids=lambda c: c.name)
def test_preferred_affinity(case: Case) -> None:
    status, scores = run(case)
    if case.want_status is not None:
        # upstream compares the code and that the message contains the wanted text
        assert status is not None
        assert status.code == case.want_status.code
        assert case.want_status.message in status.message
        return
    assert status is None
    assert scores == case.want


HARD_POD_AFFINITY = affinity(
    required=[
        term(
            "region",
            expressions=[("service", "In", ["S1"])],
            namespaces=["", "subteam2.team2"],
            namespace_selector=TEAM1,
        )
    ]
)
SERVICE_S1 = {"service": "S1"}
HARD_NODES = (RG_CHINA, RG_INDIA, AZ1)

HARD_WEIGHT_CASES = [
    Case(
        "with default weight",
        p(labels=SERVICE_S1),
        nodes(*HARD_NODES),
        [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)],
        [M, M, 0],
        hard_pod_affinity_weight=1,
    ),
    Case(
        "with zero weight",
        p(labels=SERVICE_S1),
        nodes(*HARD_NODES),
        [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)],
        want_status=SKIP,
        hard_pod_affinity_weight=0,
    ),
    Case(
        "with no matching namespace",
        p(labels=SERVICE_S1, ns="subteam1.team2"),
        nodes(*HARD_NODES),
        [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)],
        want_status=SKIP,
    ),
    Case(
        "with matching NamespaceSelector",
        p(labels=SERVICE_S1, ns="subteam1.team1"),
        nodes(*HARD_NODES),
        [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)],
        [M, M, 0],
    ),
    Case(
        "with matching Namespaces",
        p(labels=SERVICE_S1, ns="subteam2.team2"),
        nodes(*HARD_NODES),
        [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)],
        [M, M, 0],
    ),
]


@pytest.mark.parametrize("case", HARD_WEIGHT_CASES, ids=lambda c: c.name)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(case: Case) -> None:
    status, scores = run(case)
    assert status == case.want_status
    assert scores == case.want


def test_pre_score_error_names_the_term_list() -> None:
    status, _ = run(Case("", p(aff=INVALID_AFFINITY_LABELS), nodes(RG_CHINA)))
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message.startswith(
        "failed to parse pod: preferredAffinityTerms: values[0][security]: Invalid value:"
    )


def test_normalize_truncates_like_upstream() -> None:
    # 100 * (1 / 3) = 33.33 -> 33; 100 * (2 / 3) = 66.66 -> 66
    snap = snapshot_of(nodes(RG_CHINA, RG_INDIA, AZ1), [p("node1", S1), p("node2", S1), p("node2", S1)])
    snap.upsert_node(node("node3", {"region": "Mars"}))
    snap.add_pod(p("node3", S1))
    snap.add_pod(p("node3", S1))
    snap.add_pod(p("node3", S1))
    plugin = plugin_for(snap)
    state = CycleState()
    pi = PodInfo(p(labels=S1, aff=STAY_WITH_S1_IN_REGION))
    assert plugin.pre_score(state, pi, snap.nodes) is None
    scores = np.array([plugin.score(state, pi, ni) for ni in snap.nodes], dtype=np.int64)
    assert scores.tolist() == [5, 10, 15]
    scores = np.array([0, 1, 2, 3], dtype=np.int64)
    plugin.normalize_score(state, pi, snap.nodes, scores)
    assert scores.tolist() == [0, 33, 66, 100]
