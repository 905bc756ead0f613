# ruff: noqa: E501  (upstream case names are long; kept verbatim so they can be grepped)
"""Filter tables ported from upstream ``filtering_test.go`` (1.36), plus batch/per-node agreement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from ksched.api.core import Namespace, Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    PreFilterState,
)
from ksched.plugins.interpodaffinity.plugin import InterPodAffinity
from ksched.plugins.interpodaffinity.testing import (
    affinity,
    namespace,
    node,
    plugin_for,
    pod,
    snapshot_of,
    term,
    term_exists,
    term_in,
    term_not_in,
)

AFFINITY = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
SKIP = Status.skip()

NAMESPACES = [
    namespace("subteam1.team1", {"team": "team1"}),
    namespace("subteam2.team1", {"team": "team1"}),
    namespace("subteam1.team2", {"team": "team2"}),
    namespace("subteam2.team2", {"team": "team2"}),
]

BAD_VALUE_MESSAGE = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label '
    "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@dataclass
class Case:
    name: str
    pod: Pod
    nodes: list[Node]
    pods: list[Pod] = field(default_factory=list)
    want_pre_filter: Status | None = None
    want: list[Status | None] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)


def run(case: Case) -> tuple[InterPodAffinity, CycleState, PodInfo, Status | None, list[Status | None]]:
    snap = snapshot_of(case.nodes, case.pods, case.namespaces)
    plugin = plugin_for(snap)
    state = CycleState()
    pi = PodInfo(case.pod)
    _, pre = plugin.pre_filter(state, pi, snap.nodes)
    got: list[Status | None] = []
    if pre is None:
        got = [plugin.filter(state, pi, snap.get(n.metadata.name)) for n in case.nodes]
        rows = np.array([snap.get(n.metadata.name).index for n in case.nodes], dtype=np.intp)
        mask = plugin.filter_batch(state, pi, snap, rows)
        assert mask.tolist() == [s is None for s in got], "filter_batch disagrees with filter"
    return plugin, state, pi, pre, got


# --- TestRequiredAffinitySingleNode ---------------------------------------------------------------
POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})
EXISTING_POD = pod("existing", labels=POD_LABEL, node="node1")


def single(
    name: str, p: Pod, pods: Sequence[Pod] = (), want: Status | None = None, pre: Status | None = None
) -> Case:
    return Case(name, p, [NODE1], list(pods), pre, [want], NAMESPACES)


SINGLE_NODE_CASES = [
    single(
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        pod("incoming"),
        pre=SKIP,
    ),
    single(
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
        "matches the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(required=[term_in("service", "region", ["securityscan", "value2"])]),
        ),
        [EXISTING_POD],
    ),
    single(
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
        "operator in labelSelector that matches the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(required=[term_not_in("service", "region", ["securityscan3", "value3"])]),
        ),
        [EXISTING_POD],
    ),
    single(
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term_in("service", "", ["securityscan", "value2"], namespaces=["DiffNameSpace"])],
                anti=[],
            ),
        ),
        [pod("p", "ns", labels=POD_LABEL, node="node1")],
        AFFINITY,
    ),
    single(
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        pod(labels=POD_LABEL, aff=affinity(required=[term_in("service", "", ["antivirusscan", "value2"])])),
        [EXISTING_POD],
        AFFINITY,
    ),
    single(
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuring"
        "Execution ",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[
                    term("region", expressions=[("service", "Exists", ()), ("wrongkey", "DoesNotExist", ())]),
                    term(
                        "region",
                        expressions=[
                            ("service", "In", ["securityscan"]),
                            ("service", "NotIn", ["WrongValue"]),
                        ],
                    ),
                ],
                anti=[],
            ),
        ),
        [EXISTING_POD],
    ),
    single(
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
        "because one of the matchExpression item don't match.",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[
                    term("region", expressions=[("service", "Exists", ()), ("wrongkey", "DoesNotExist", ())]),
                    term(
                        "region",
                        expressions=[
                            ("service", "In", ["securityscan2"]),
                            ("service", "NotIn", ["WrongValue"]),
                        ],
                    ),
                ],
                anti=[],
            ),
        ),
        [EXISTING_POD],
        AFFINITY,
    ),
    single(
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term_in("service", "region", ["securityscan", "value2"])],
                anti=[term_in("service", "node", ["antivirusscan", "value2"])],
            ),
        ),
        [EXISTING_POD],
    ),
    single(
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term_in("service", "region", ["securityscan", "value2"])],
                anti=[term_in("service", "node", ["antivirusscan", "value2"])],
            ),
        ),
        [
            pod(
                "e",
                labels=POD_LABEL,
                node="node1",
                aff=affinity(anti=[term_in("service", "node", ["antivirusscan", "value2"])]),
            )
        ],
    ),
    single(
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term_in("service", "region", ["securityscan", "value2"])],
                anti=[term_in("service", "zone", ["securityscan", "value2"])],
            ),
        ),
        [EXISTING_POD],
        ANTI,
    ),
    single(
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
        "existing pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                required=[term_in("service", "region", ["securityscan", "value2"])],
                anti=[term_in("service", "node", ["antivirusscan", "value2"])],
            ),
        ),
        [
            pod(
                "e",
                labels=POD_LABEL,
                node="node1",
                aff=affinity(anti=[term_in("service", "zone", ["securityscan", "value2"])]),
            )
        ],
        EXISTING,
    ),
    single(
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        pod(
            labels=POD_LABEL,
            aff=affinity(required=[term_not_in("service", "region", ["securityscan", "value2"])]),
        ),
        [pod("e", labels={"service": "securityscan"}, node="node2")],
        AFFINITY,
    ),
    single(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod(labels=POD_LABEL),
        [
            pod(
                "e",
                labels=POD_LABEL,
                node="node1",
                aff=affinity(anti=[term_in("service", "zone", ["securityscan", "value2"])]),
            )
        ],
        EXISTING,
    ),
    single(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "satisfy PodAntiAffinity symmetry with the existing pod",
        pod(labels=POD_LABEL),
        [
            pod(
                "e",
                labels=POD_LABEL,
                node="node1",
                aff=affinity(anti=[term_not_in("service", "zone", ["securityscan", "value2"])]),
            )
        ],
        pre=SKIP,
    ),
    single(
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with "
        "incoming pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(anti=[term_exists("service", "region"), term_exists("security", "region")]),
        ),
        [pod("e", labels=POD_LABEL2, node="node1", aff=affinity(anti=[term_exists("security", "zone")]))],
        ANTI,
    ),
    single(
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(
            labels=POD_LABEL,
            aff=affinity(anti=[term_exists("service", "zone"), term_exists("security", "zone")]),
        ),
        [pod("e", labels=POD_LABEL2, node="node1", aff=affinity(anti=[term_exists("security", "zone")]))],
        ANTI,
    ),
    single(
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(labels=POD_LABEL2, aff=affinity(anti=[term_exists("security", "zone")])),
        [
            pod(
                "e",
                labels=POD_LABEL,
                node="node1",
                aff=affinity(anti=[term_exists("service", "zone"), term_exists("security", "zone")]),
            )
        ],
        EXISTING,
    ),
    single(
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(
            labels={"abc": "", "xyz": ""},
            aff=affinity(anti=[term_exists("abc", "zone"), term_exists("def", "zone")]),
        ),
        [
            pod(
                "e",
                labels={"def": "", "xyz": ""},
                node="node1",
                aff=affinity(anti=[term_exists("abc", "zone"), term_exists("def", "zone")]),
            )
        ],
        ANTI,
    ),
    single(
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        pod(
            labels={"def": "", "xyz": ""},
            aff=affinity(anti=[term_exists("abc", "zone"), term_exists("def", "zone")]),
        ),
        [
            pod(
                "e",
                labels={"abc": "", "xyz": ""},
                node="node1",
                aff=affinity(anti=[term_exists("abc", "zone"), term_exists("def", "zone")]),
            )
        ],
        ANTI,
    ),
    single(
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                required=[
                    term_in("service", "region", ["{{.bad-value.}}"]),
                    term_in("service", "node", ["antivirusscan", "value2"]),
                ]
            ),
        ),
        pre=Status.unresolvable(BAD_VALUE_MESSAGE),
    ),
    single(
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                required=[
                    term_in("service", "region", ["foo"]),
                    term_in("service", "node", ["{{.bad-value.}}"]),
                ]
            ),
        ),
        pre=Status.unresolvable(BAD_VALUE_MESSAGE),
    ),
    single(
        "affinity with NamespaceSelector",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[
                    term_in(
                        "service",
                        "region",
                        ["securityscan", "value2"],
                        namespace_selector={
                            "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                        },
                    )
                ],
                anti=[],
            ),
        ),
        [pod("e", "subteam1.team1", labels=POD_LABEL, node="node1")],
    ),
    single(
        "affinity with non-matching NamespaceSelector",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[
                    term_in(
                        "service",
                        "region",
                        ["securityscan", "value2"],
                        namespace_selector={
                            "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                        },
                    )
                ],
                anti=[],
            ),
        ),
        [pod("e", "subteam1.team2", labels=POD_LABEL, node="node1")],
        AFFINITY,
    ),
    single(
        "anti-affinity with matching NamespaceSelector",
        pod(
            "incoming",
            "subteam1.team1",
            labels=POD_LABEL2,
            aff=affinity(
                required=[],
                anti=[
                    term_in(
                        "service",
                        "zone",
                        ["securityscan", "value2"],
                        namespace_selector={
                            "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                        },
                    )
                ],
            ),
        ),
        [pod("e", "subteam2.team1", labels=POD_LABEL, node="node1")],
        ANTI,
    ),
    single(
        "anti-affinity with matching all NamespaceSelector",
        pod(
            "incoming",
            "subteam1.team1",
            labels=POD_LABEL2,
            aff=affinity(
                required=[],
                anti=[term_in("service", "zone", ["securityscan", "value2"], namespace_selector={})],
            ),
        ),
        [pod("e", "subteam2.team1", labels=POD_LABEL, node="node1")],
        ANTI,
    ),
    single(
        "anti-affinity with non-matching NamespaceSelector",
        pod(
            "incoming",
            "subteam1.team1",
            labels=POD_LABEL2,
            aff=affinity(
                required=[],
                anti=[
                    term_in(
                        "service",
                        "zone",
                        ["securityscan", "value2"],
                        namespace_selector={
                            "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                        },
                    )
                ],
            ),
        ),
        [pod("e", "subteam1.team2", labels=POD_LABEL, node="node1")],
    ),
]


@pytest.mark.parametrize("case", SINGLE_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_single_node(case: Case) -> None:
    _, _, _, pre, got = run(case)
    assert pre == case.want_pre_filter
    if pre is None:
        assert got == case.want


# --- TestRequiredAffinityMultipleNodes ------------------------------------------------------------
RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def nodes_abc(*label_sets: dict[str, str], names: str = "ABC") -> list[Node]:
    return [node(f"node{n}", labels) for n, labels in zip(names, label_sets, strict=False)]


def rzh(region: str, zone: str, host: str) -> dict[str, str]:
    return {"region": region, "zone": zone, "hostname": host}


MULTI_NODE_CASES = [
    Case(
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them "
        "has an existing pod that matches the affinity rules",
        pod(aff=affinity(required=[term_in("foo", "region", ["bar"])])),
        [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
        [pod("p1", labels={"foo": "bar"}, node="node1")],
        want=[None, None, AFFINITY],
    ),
    Case(
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the "
        "collection should not be blocked from being scheduled onto any node, even there's no existing pod that "
        "matches the rule anywhere.",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=affinity(
                required=[term_in("foo", "zone", ["bar"]), term_in("service", "zone", ["securityscan"])]
            ),
        ),
        [node("nodeA", {"zone": "az1", "hostname": "h1"}), node("nodeB", {"zone": "az2", "hostname": "h2"})],
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        want=[None, None],
    ),
    Case(
        "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=affinity(
                required=[term_in("foo", "zone", ["bar"]), term_in("service", "zone", ["securityscan"])]
            ),
        ),
        [
            node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        want=[AFFINITY, AFFINITY],
    ),
    Case(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
        "affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        pod(aff=affinity(anti=[term_in("foo", "region", ["abc"])])),
        [
            node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        [pod("p", labels={"foo": "abc"}, node="nodeA")],
        want=[ANTI, ANTI],
    ),
    Case(
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
        pod(
            aff=affinity(
                anti=[term_in("foo", "region", ["abc"]), term_in("service", "zone", ["securityscan"])]
            )
        ),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [pod("p", labels={"foo": "abc", "service": "securityscan"}, node="nodeA")],
        want=[ANTI, ANTI],
    ),
    Case(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
        "affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        pod(aff=affinity(anti=[term_in("foo", "region", ["abc"])])),
        nodes_abc(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
        [pod("p", labels={"foo": "abc"}, node="nodeA")],
        want=[ANTI, ANTI, None],
    ),
    Case(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
        "affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has "
        "an existing pod that match the inter pod affinity rule but in different namespace)",
        pod("incoming", "NS1", labels={"foo": "123"}, aff=affinity(anti=[term_in("foo", "region", ["bar"])])),
        nodes_abc(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
        [
            pod("p1", "NS1", labels={"foo": "bar"}, node="nodeA"),
            pod("p2", "NS2", node="nodeC", aff=affinity(anti=[term_in("foo", "region", ["123"])])),
        ],
        want=[ANTI, ANTI, None],
        namespaces=[namespace("NS1")],
    ),
    Case(
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of "
        "the term is firstly checked, and then topologyKey of the term is also checked",
        pod(labels={"foo": ""}),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z1", "nodeB"))],
        [pod("p", node="nodeA", aff=affinity(anti=[term_exists("foo", "invalid-node-label")]))],
        want_pre_filter=SKIP,
    ),
    Case(
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
        pod(node="nodeA", aff=affinity(anti=[term_exists("foo", "invalid-node-label")])),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z1", "nodeB"))],
        [pod("p", labels={"foo": ""}, node="nodeA")],
        want=[None, None],
    ),
    Case(
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
        "existingPod's terms on all nodes",
        pod(labels={"foo": "", "bar": ""}),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [
            pod("p1", node="nodeA", aff=affinity(anti=[term_exists("foo", "zone")])),
            pod("p2", node="nodeA", aff=affinity(anti=[term_exists("bar", "region")])),
        ],
        want=[EXISTING, EXISTING],
    ),
    Case(
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
        "anti-affinity rule of existingPod",
        pod(aff=affinity(anti=[term_exists("foo", "zone"), term_exists("bar", "region")])),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [pod("p1", labels={"foo": ""}, node="nodeA"), pod("p2", labels={"bar": ""}, node="nodeB")],
        want=[ANTI, ANTI],
    ),
    Case(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when one term has invalid topologyKey",
        pod(labels={"foo": "", "bar": ""}),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [
            pod(
                "p",
                node="nodeA",
                aff=affinity(anti=[term_exists("foo", "invalid-node-label"), term_exists("bar", "zone")]),
            )
        ],
        want=[EXISTING, None],
    ),
    Case(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when one term has invalid topologyKey",
        pod(aff=affinity(anti=[term_exists("foo", "invalid-node-label"), term_exists("bar", "zone")])),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [pod("podA", labels={"foo": "", "bar": ""}, node="nodeA")],
        want=[ANTI, None],
    ),
    Case(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when all terms have valid topologyKey",
        pod(labels={"foo": "", "bar": ""}),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [
            pod(
                "p",
                node="nodeA",
                aff=affinity(anti=[term_exists("foo", "region"), term_exists("bar", "zone")]),
            )
        ],
        want=[EXISTING, EXISTING],
    ),
    Case(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
        "single term match - case when all terms have valid topologyKey",
        pod(aff=affinity(anti=[term_exists("foo", "region"), term_exists("bar", "zone")])),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [pod("p", labels={"foo": "", "bar": ""}, node="nodeA")],
        want=[ANTI, ANTI],
    ),
    Case(
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term "
        "matches incoming pod, so incoming pod can only be scheduled to nodeC",
        pod(labels={"foo": "", "bar": ""}),
        [
            node("nodeA", rzh("r1", "z1", "nodeA")),
            node("nodeB", rzh("r1", "z2", "nodeB")),
            node("nodeC", rzh("r1", "z3", "nodeC")),
        ],
        [
            pod(
                "p1",
                node="nodeA",
                aff=affinity(anti=[term_exists("foo", "zone"), term_exists("labelA", "zone")]),
            ),
            pod(
                "p2",
                node="nodeB",
                aff=affinity(anti=[term_exists("bar", "zone"), term_exists("labelB", "zone")]),
            ),
        ],
        want=[EXISTING, EXISTING, None],
    ),
    Case(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
        "match",
        pod(aff=affinity(required=[term_exists("foo", "region"), term_exists("bar", "zone")])),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z1", "nodeB"))],
        [pod("pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
        want=[None, None],
    ),
    Case(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
        "match, and the match logic should be satisfied on the same pod",
        pod(aff=affinity(required=[term_exists("foo", "region"), term_exists("bar", "zone")])),
        [node("nodeA", rzh("r1", "z1", "nodeA")), node("nodeB", rzh("r1", "z2", "nodeB"))],
        [pod("pod1", labels={"foo": ""}, node="nodeA"), pod("pod2", labels={"bar": ""}, node="nodeB")],
        want=[AFFINITY, AFFINITY],
    ),
]


@pytest.mark.parametrize("case", MULTI_NODE_CASES, ids=lambda c: c.name)
def test_required_affinity_multiple_nodes(case: Case) -> None:
    case.namespaces = case.namespaces or [namespace("NS1")]
    _, _, _, pre, got = run(case)
    assert pre == case.want_pre_filter
    if pre is None:
        assert got == case.want


def test_pre_filter_disabled() -> None:
    snap = snapshot_of([node("n")])
    plugin = plugin_for(snap)
    got = plugin.filter(CycleState(), PodInfo(pod()), snap.get("n"))
    assert got is not None
    assert got.code == Code.ERROR
    assert got.message == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'


# --- TestPreFilterStateAddRemovePod ---------------------------------------------------------------
LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = [term_in("foo", "region", ["bar"])]
COMPLEX = [
    term_in("foo", "region", ["bar", "buzz"]),
    term_not_in("service", "zone", ["bar", "security", "test"]),
]
ABC_NODES = [node("nodeA", LABEL1), node("nodeB", LABEL2), node("nodeC", LABEL3)]

ADD_REMOVE_CASES = [
    (
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod",
        pod("pending", labels=SELECTOR1, aff=affinity(anti=ANTI_FOO_BAR)),
        [pod("p1", labels=SELECTOR1, node="nodeA"), pod("p2", node="nodeC", aff=affinity(anti=ANTI_FOO_BAR))],
        pod("addedPod", labels=SELECTOR1, node="nodeB", aff=affinity(anti=ANTI_FOO_BAR)),
        {"region": {"r1": 2}},
        {},
    ),
    (
        "preFilterState anti-affinity terms are updated correctly after adding and removing a pod (complex)",
        pod("pending", labels=SELECTOR1, aff=affinity(anti=COMPLEX)),
        [pod("p1", labels=SELECTOR1, node="nodeA"), pod("p2", node="nodeC", aff=affinity(anti=ANTI_FOO_BAR))],
        pod("addedPod", labels=SELECTOR1, node="nodeA", aff=affinity(anti=COMPLEX)),
        {"region": {"r1": 2}, "zone": {"z11": 2, "z21": 1}},
        {},
    ),
    (
        "preFilterState matching pod affinity and anti-affinity are updated correctly after adding and removing a pod",
        pod("pending", labels=SELECTOR1, aff=affinity(required=COMPLEX)),
        [
            pod("p1", labels=SELECTOR1, node="nodeA"),
            pod("p2", node="nodeC", aff=affinity(required=COMPLEX, anti=ANTI_FOO_BAR)),
        ],
        pod("addedPod", labels=SELECTOR1, node="nodeA", aff=affinity(anti=COMPLEX)),
        {},
        {"region": {"r1": 2}, "zone": {"z11": 2}},
    ),
]


def _state_for(pending: Pod, pods: list[Pod]) -> tuple[InterPodAffinity, CycleState, PodInfo]:
    snap = snapshot_of(ABC_NODES, pods)
    plugin = plugin_for(snap)
    state = CycleState()
    pi = PodInfo(pending)
    _, st = plugin.pre_filter(state, pi, snap.nodes)
    assert st is None
    return plugin, state, pi


def _counts(s: PreFilterState) -> tuple[object, object, object]:
    return (s.existing_anti, s.affinity, s.anti)


@pytest.mark.parametrize(
    ("name", "pending", "existing", "added", "want_anti", "want_affinity"), ADD_REMOVE_CASES
)
def test_pre_filter_state_add_remove_pod(
    name: str,
    pending: Pod,
    existing: list[Pod],
    added: Pod,
    want_anti: dict[str, dict[str, int]],
    want_affinity: dict[str, dict[str, int]],
) -> None:
    _, all_state, _ = _state_for(pending, [*existing, added])
    plugin, cycle, pi = _state_for(pending, existing)
    state = cycle.read(PRE_FILTER_STATE_KEY)
    assert isinstance(state, PreFilterState)
    original = state.clone()
    node_info = plugin.handle.snapshot.get(added.spec.node_name)
    assert plugin.add_pod(cycle, pi, PodInfo(added), node_info) is None
    assert state.anti == want_anti
    assert state.affinity == want_affinity
    full = all_state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(full, PreFilterState)
    assert _counts(state) == _counts(full)
    assert plugin.remove_pod(cycle, pi, PodInfo(added), node_info) is None
    assert _counts(state) == _counts(original)


def test_pre_filter_state_clone() -> None:
    snap = snapshot_of(ABC_NODES, [pod("p1", labels=SELECTOR1, node="nodeA")])
    plugin = plugin_for(snap)
    cycle = CycleState()
    pi = PodInfo(pod("pending", labels=SELECTOR1, aff=affinity(required=COMPLEX, anti=ANTI_FOO_BAR)))
    plugin.pre_filter(cycle, pi, snap.nodes)
    source = cycle.read(PRE_FILTER_STATE_KEY)
    assert isinstance(source, PreFilterState)
    clone = source.clone()
    assert clone is not source
    assert _counts(clone) == _counts(source)
    clone.update_with_pod(PodInfo(pod("x", labels=SELECTOR1, node="nodeB")), LABEL2, 1)
    assert _counts(clone) != _counts(source)
    assert source.anti == {"region": {"r1": 1}}


# --- TestGetTPMapMatchingIncomingAffinityAntiAffinity ---------------------------------------------
def _normal(*labels: str) -> Pod:
    return pod("normal", labels=dict.fromkeys(labels, ""), node="nodeA")


NODE_A = node("nodeA", {"hostname": "nodeA"})
INCOMING_COUNT_CASES = [
    ("nil test", [], pod("aaa-normal"), None, None),
    (
        "incoming pod without affinity/anti-affinity causes a no-op",
        [_normal("aaa")],
        pod("aaa-normal"),
        None,
        None,
    ),
    (
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        [_normal("bbb")],
        pod(
            "aaa-anti",
            aff=affinity(required=[term_exists("aaa", "hostname")], anti=[term_exists("aaa", "hostname")]),
        ),
        {},
        {},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        [_normal("aaa")],
        pod(
            "affi-antiaffi",
            aff=affinity(required=[term_exists("aaa", "hostname")], anti=[term_exists("aaa", "hostname")]),
        ),
        {"hostname": {"nodeA": 1}},
        {"hostname": {"nodeA": 1}},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
        [_normal("aaa", "bbb")],
        pod(
            "affi-antiaffi",
            aff=affinity(
                required=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")],
                anti=[term_exists("aaa", "hostname")],
            ),
        ),
        {"hostname": {"nodeA": 2}},
        {"hostname": {"nodeA": 1}},
    ),
    (
        "existing pod not match incoming pod's affinity but matches anti-affinity",
        [_normal("aaa")],
        pod(
            "affi-antiaffi",
            aff=affinity(
                required=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")],
                anti=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")],
            ),
        ),
        {},
        {"hostname": {"nodeA": 1}},
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
        [_normal("aaa", "bbb")],
        pod(
            "anaffi-antiaffiti",
            aff=affinity(
                required=[term_exists("aaa", "hostname"), term_exists("ccc", "hostname")],
                anti=[term_exists("aaa", "hostname"), term_exists("ccc", "hostname")],
            ),
        ),
        {},
        {"hostname": {"nodeA": 1}},
    ),
    (
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
        [_normal("bbb")],
        pod(
            "affi-antiaffi",
            aff=affinity(
                required=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")],
                anti=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")],
            ),
        ),
        {},
        {"hostname": {"nodeA": 1}},
    ),
]


@pytest.mark.parametrize(("name", "existing", "incoming", "want_affinity", "want_anti"), INCOMING_COUNT_CASES)
def test_incoming_affinity_anti_affinity_counts(
    name: str,
    existing: list[Pod],
    incoming: Pod,
    want_affinity: dict[str, dict[str, int]] | None,
    want_anti: dict[str, dict[str, int]] | None,
) -> None:
    # Upstream calls getIncomingAffinityAntiAffinityCounts directly; here through PreFilter's state.
    # With no terms at all (and no existing anti-affinity) PreFilter skips: both maps are empty.
    snap = snapshot_of([NODE_A], existing)
    plugin = plugin_for(snap)
    cycle = CycleState()
    _, st = plugin.pre_filter(cycle, PodInfo(incoming), snap.nodes)
    if want_affinity is None:
        assert st == SKIP
        return
    state = cycle.read(PRE_FILTER_STATE_KEY)
    assert isinstance(state, PreFilterState)
    assert state.affinity == want_affinity
    assert state.anti == want_anti


# --- ksched: matchLabelKeys / mismatchLabelKeys are the API server's business -------------------------
def test_match_label_keys_are_not_merged_again() -> None:
    # With MatchLabelKeysInPodAffinity (on in 1.36) the API server merges the keys into labelSelector
    # when the pod is created; the 1.36 scheduler reads only labelSelector. A term whose selector
    # lacks the merged requirement (a hand-made pod) therefore matches pods of any hash, as upstream.
    t = term_in("app", "zone", ["web"])
    t["matchLabelKeys"] = ["pod-template-hash"]
    t["mismatchLabelKeys"] = ["tenant"]
    incoming = pod(labels={"app": "web", "pod-template-hash": "new", "tenant": "x"}, aff=affinity(anti=[t]))
    other = pod("old", labels={"app": "web", "pod-template-hash": "old", "tenant": "x"}, node="n1")
    case = Case("matchLabelKeys", incoming, [node("n1", {"zone": "z1"}), node("n2", {"zone": "z2"})], [other])
    _, _, _, pre, got = run(case)
    assert pre is None
    assert got == [ANTI, None]


def test_namespace_selector_matching_empty_labels_covers_every_namespace() -> None:
    # 1.36.2 merges the selected namespaces into the term but keeps the selector (passed by value),
    # and matches incoming terms with no namespace labels: a NotIn selector then accepts any
    # namespace, including the "prod" one it excludes. ksched reproduces upstream here.
    not_prod = {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}
    only_dev = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]}
    namespaces = [namespace("prod", {"env": "prod"}), namespace("dev", {"env": "dev"})]
    other = pod("db", "prod", labels={"app": "db"}, node="n1")
    nodes = [node("n1", {"zone": "z1"}), node("n2", {"zone": "z2"})]
    for selector, want in ((not_prod, [ANTI, None]), (only_dev, [None, None])):
        incoming = pod(
            "x", "dev", aff=affinity(anti=[term_in("app", "zone", ["db"], namespace_selector=selector)])
        )
        _, _, _, pre, got = run(Case("ns", incoming, nodes, [other], namespaces=namespaces))
        assert pre is None
        assert got == want
