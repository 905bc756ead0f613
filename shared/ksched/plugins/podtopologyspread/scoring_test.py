"""PreScore / Score / NormalizeScore tables ported from upstream ``scoring_test.go``.

Upstream's Score table runs with ``defaultingType: System``; so does this port. The case
"matchLabelKeys ignored when feature gate disabled" is not ported (the gate is locked on in 1.36).
Upstream test pods live in the empty namespace; here they live in ``default`` (services too).
Each Score case also checks ``score_batch`` against ``score``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pytest

from ksched.api.core import Node, Pod, Service
from ksched.api.workloads import ReplicaSet
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.plugins.args.types import LIST_DEFAULTING, SYSTEM_DEFAULTING
from ksched.plugins.podtopologyspread.scoring import (
    PRE_SCORE_STATE_KEY,
    PreScoreState,
    topology_normalizing_weight,
)
from ksched.plugins.podtopologyspread.testing import (
    constraint,
    counts_by_value,
    exists,
    make_plugin,
    node,
    pod,
    sel_key,
    spread,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SA = "ScheduleAnyway"
DNS = "DoNotSchedule"
F = exists("foo")
B = exists("bar")
RS_OWNER = ("apps/v1", "ReplicaSet", "rs1")


def ep(name: str, on: str, ns: str = "default", terminating: bool = False, **labels: str) -> Pod:
    return pod(name, ns, labels=labels, node=on, terminating=terminating)


def hn(name: str, **labels: str) -> Node:
    """A node labelled with its hostname (plus ``labels``)."""
    return node(name, {HOST: name, **labels})


def w(size: int) -> float:
    return topology_normalizing_weight(size)


def _replica_set(name: str, selector: dict[str, Any]) -> ReplicaSet:
    raw = {"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}}
    return msgspec.convert(raw, ReplicaSet)


def _service(name: str, selector: dict[str, str]) -> Service:
    raw = {"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}}
    return msgspec.convert(raw, Service)


def _plugin(
    nodes: list[Node],
    existing: list[Pod],
    defaulting: str,
    defaults: list[dict[str, Any]] | None = None,
    replica_sets: dict[str, dict[str, Any]] | None = None,
    services: dict[str, dict[str, str]] | None = None,
) -> tuple[Any, Snapshot]:
    snap = Snapshot.build(nodes, existing)
    for name, sel in (replica_sets or {}).items():
        snap.objects.replica_sets[f"default/{name}"] = _replica_set(name, sel)
    for name, svc_sel in (services or {}).items():
        snap.objects.services[f"default/{name}"] = _service(name, svc_sel)
    args = [
        constraint(max_skew=d["maxSkew"], key=d["topologyKey"], when=d["whenUnsatisfiable"])
        for d in defaults or []
    ]
    return make_plugin(snap, args, defaulting), snap


# --- PreScore skip -----------------------------------------------------------------------------------


def test_pre_score_skip_the_pod_doesnt_have_soft_topology_spread_constraints() -> None:
    plugin, snap = _plugin([hn("node-a"), hn("node-b")], [], LIST_DEFAULTING)
    st = plugin.pre_score(CycleState(), PodInfo(pod()), snap.nodes)
    assert st is not None and st.code == Code.SKIP


def test_pre_score_skip_default_constraints_and_a_replicaset_that_doesnt_match() -> None:
    plugin, snap = _plugin(
        [node("node-a", {"planet": "mars"})],
        [],
        LIST_DEFAULTING,
        defaults=[spread(2, "planet", SA)],
        replica_sets={"rs1": exists("tar")},
    )
    p = pod(labels={"foo": "bar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs2"))
    st = plugin.pre_score(CycleState(), PodInfo(p), snap.nodes)
    assert st is not None and st.code == Code.SKIP


def test_pre_score_skip_when_the_snapshot_has_no_nodes() -> None:
    plugin, _ = _plugin([], [], LIST_DEFAULTING)
    p = pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, F)])
    st = plugin.pre_score(CycleState(), PodInfo(p), [])
    assert st is not None and st.code == Code.SKIP


# --- PreScore state ----------------------------------------------------------------------------------


@dataclass
class PreScoreCase:
    name: str
    pod: Pod
    nodes: list[Node]
    # (maxSkew, key, selector, honorAffinity, honorTaints) per constraint
    constraints: list[tuple[int, str, dict[str, Any] | None, bool, bool]]
    counts: list[dict[str, int]]
    weights: list[float]
    ignored: set[str] = field(default_factory=set)
    defaulting: str = LIST_DEFAULTING
    defaults: list[dict[str, Any]] = field(default_factory=list)
    replica_sets: dict[str, dict[str, Any]] = field(default_factory=dict)


ZONE_NODES = [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")]
FOO_ZONE_NODES = [
    hn("node-a", zone="zone1", foo=""),
    hn("node-b", zone="zone1", foo=""),
    hn("node-x", zone="zone2"),
]
TAINTED_X = [*FOO_ZONE_NODES[:2], node("node-x", {"zone": "zone2", HOST: "node-x"}, tainted=True)]
Z12 = {"zone1": 0, "zone2": 0}

PRE_SCORE_CASES = [
    PreScoreCase(
        "normal case",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, F), spread(1, HOST, SA, F)]),
        ZONE_NODES,
        [(1, "zone", F, True, False), (1, HOST, F, True, False)],
        [Z12, {}],
        [w(2), w(3)],
    ),
    PreScoreCase(
        "null selector",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, None)]),
        ZONE_NODES,
        [(1, "zone", None, True, False)],
        [Z12],
        [w(2)],
    ),
    PreScoreCase(
        "node-x doesn't have label zone",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, F), spread(1, HOST, SA, B)]),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x")],
        [(1, "zone", F, True, False), (1, HOST, B, True, False)],
        [{"zone1": 0}, {}],
        [w(1), w(2)],
        ignored={"node-x"},
    ),
    PreScoreCase(
        "system default constraints and a replicaset",
        pod(labels={"foo": "tar", "baz": "sup"}, owner=RS_OWNER),
        # Nodes with no zone are not excluded. They are considered a separate zone.
        [hn("node-a", **{ZONE: "mars"}), hn("node-b", **{ZONE: "mars"}), hn("node-c"), hn("node-d")],
        [(3, HOST, F, True, False), (5, ZONE, F, True, False)],
        [{}, {"mars": 0, "": 0}],
        [w(4), w(2)],
        defaulting=SYSTEM_DEFAULTING,
        replica_sets={"rs1": F},
    ),
    PreScoreCase(
        "default constraints and a replicaset",
        pod(labels={"foo": "tar", "baz": "sup"}, owner=RS_OWNER),
        [hn("node-a", rack="rack1", planet="mars")],
        [(1, HOST, F, True, False), (2, "planet", F, True, False)],
        [{}, {"mars": 0}],
        [w(1), w(1)],
        defaults=[spread(1, HOST, SA), spread(2, "rack", DNS), spread(2, "planet", SA)],
        replica_sets={"rs1": F},
    ),
    PreScoreCase(
        "default constraints and a replicaset, but pod has constraints",
        pod(
            labels={"foo": "bar", "baz": "sup"},
            owner=RS_OWNER,
            constraints=[spread(1, "zone", DNS, B), spread(2, "planet", SA, {"matchLabels": {"baz": "sup"}})],
        ),
        [node("node-a", {"planet": "mars", "galaxy": "andromeda"})],
        [(2, "planet", {"matchLabels": {"baz": "sup"}}, True, False)],
        [{"mars": 0}],
        [w(1)],
        defaults=[spread(2, "galaxy", SA)],
        replica_sets={"rs1": F},
    ),
    PreScoreCase(
        "NodeAffinityPolicy honored with labelSelectors",
        pod(labels={"foo": ""}, node_selector={"foo": ""}, constraints=[spread(1, "zone", SA, B)]),
        FOO_ZONE_NODES,
        [(1, "zone", B, True, False)],
        [Z12],
        [w(2)],
    ),
    PreScoreCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(
            labels={"foo": ""},
            node_selector={"foo": ""},
            constraints=[spread(1, "zone", SA, B, None, "Ignore")],
        ),
        FOO_ZONE_NODES,
        [(1, "zone", B, False, False)],
        [Z12],
        [w(2)],
    ),
    PreScoreCase(
        "NodeAffinityPolicy honored with nodeAffinity",
        pod(labels={"foo": ""}, affinity_in=("foo", [""]), constraints=[spread(1, "zone", SA, B)]),
        FOO_ZONE_NODES,
        [(1, "zone", B, True, False)],
        [Z12],
        [w(2)],
    ),
    PreScoreCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod(
            labels={"foo": ""},
            affinity_in=("foo", [""]),
            constraints=[spread(1, "zone", SA, B, None, "Ignore")],
        ),
        FOO_ZONE_NODES,
        [(1, "zone", B, False, False)],
        [Z12],
        [w(2)],
    ),
    PreScoreCase(
        "NodeTaintsPolicy honored",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, B, None, None, "Honor")]),
        TAINTED_X,
        [(1, "zone", B, True, True)],
        [Z12],
        [w(2)],
    ),
    PreScoreCase(
        "NodeTaintsPolicy ignored",
        pod(labels={"foo": ""}, constraints=[spread(1, "zone", SA, B)]),
        TAINTED_X,
        [(1, "zone", B, True, False)],
        [Z12],
        [w(2)],
    ),
]


@pytest.mark.parametrize("case", PRE_SCORE_CASES, ids=lambda c: c.name)
def test_pre_score_state_empty_nodes(case: PreScoreCase) -> None:
    plugin, snap = _plugin(case.nodes, [], case.defaulting, case.defaults, case.replica_sets)
    cs = CycleState()
    assert plugin.pre_score(cs, PodInfo(case.pod), snap.nodes) is None
    got = cs.read(PRE_SCORE_STATE_KEY)
    assert isinstance(got, PreScoreState)
    specs = [
        (c.max_skew, c.topology_key, c.key, c.honor_node_affinity, c.honor_node_taints)
        for c in got.constraints
    ]
    assert specs == [(m, k, sel_key(s), a, t) for m, k, s, a, t in case.constraints]
    assert [counts_by_value(got, i) for i in range(len(got.constraints))] == case.counts
    assert got.weights == case.weights
    assert set(got.ignored_names) == case.ignored


# --- Score -------------------------------------------------------------------------------------------


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    existing: list[Pod]
    nodes: list[Node]
    failed: list[Node]
    want: list[int]
    services: dict[str, dict[str, str]] = field(default_factory=dict)


def host_c(max_skew: int = 1, sel: dict[str, Any] | None = F, **kw: Any) -> dict[str, Any]:
    return spread(max_skew, HOST, SA, sel, **kw)


def pods_on(spec: str, **labels: str) -> list[Pod]:
    """``"a2 b1 d3"`` -> pods p-a1, p-a2 on node-a, p-b1 on node-b, p-d1..p-d3 on node-d, with ``labels``."""
    out: list[Pod] = []
    for part in spec.split():
        letter, count = part[0], int(part[1:])
        out.extend(
            pod(f"p-{letter}{i}", "default", labels=labels, node=f"node-{letter}")
            for i in range(1, count + 1)
        )
    return out


ABCD = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
FOO = {"foo": ""}
ZONED_ABXY = [
    hn("node-a", zone="zone1"),
    hn("node-b", zone="zone1"),
    hn("node-x", zone="zone2"),
    hn("node-y", zone="zone2"),
]
DIFF_SELECTOR_PODS = [
    ep("p-a1", "node-a", foo=""),
    ep("p-b1", "node-b", foo="", bar=""),
    ep("p-y1", "node-y", foo=""),
    ep("p-y2", "node-y", bar=""),
]
ABC_NODE = [
    node("node-a", {"node": "node-a", "foo": ""}),
    node("node-b", {"node": "node-b", "foo": ""}),
    node("node-c", {"node": "node-c"}),
]
ABC_TAINTED = [
    node("node-a", {"node": "node-a"}),
    node("node-b", {"node": "node-b"}),
    node("node-c", {"node": "node-c"}, tainted=True),
]
A2B1C1 = pods_on("a2 b1 c1", foo="")
ZONE_ABCD = [
    hn("node-a", zone="zone1"),
    hn("node-b", zone="zone1"),
    hn("node-c", zone="zone2"),
    hn("node-d", zone="zone2"),
]

SCORE_CASES = [
    ScoreCase(
        "one constraint on node, no existing pods",
        pod(labels=FOO, constraints=[host_c()]),
        [],
        [hn("node-a"), hn("node-b")],
        [],
        [100, 100],
    ),
    # if there is only one candidate node, it should be scored to 100
    ScoreCase(
        "one constraint on node, only one node is candidate",
        pod(labels=FOO, constraints=[host_c()]),
        pods_on("a2 b1", foo=""),
        [hn("node-a")],
        [hn("node-b")],
        [100],
    ),
    ScoreCase(
        "one constraint on node, all nodes have the same number of matching pods",
        pod(labels=FOO, constraints=[host_c()]),
        pods_on("a1 b1", foo=""),
        [hn("node-a"), hn("node-b")],
        [],
        [100, 100],
    ),
    # matching pods spread as 2/1/0/3.
    ScoreCase(
        "one constraint on node, all 4 nodes are candidates",
        pod(labels=FOO, constraints=[host_c()]),
        pods_on("a2 b1 d3", foo=""),
        ABCD,
        [],
        [20, 60, 100, 0],
    ),
    ScoreCase(
        "one constraint on node, null selector",
        pod(labels=FOO, constraints=[host_c(sel=None)]),
        pods_on("a2 b1 d3", foo=""),
        ABCD,
        [],
        [100, 100, 100, 100],
    ),
    ScoreCase(
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod(labels=FOO, constraints=[host_c(2)]),
        pods_on("a2 b1 d3", foo=""),
        ABCD,
        [],
        [33, 66, 100, 16],
    ),
    # matching pods spread as 4/3/2/1.
    ScoreCase(
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod(labels=FOO, constraints=[host_c(3)]),
        pods_on("a4 b3 c2 d1", foo=""),
        ABCD,
        [],
        [44, 66, 77, 100],
    ),
    ScoreCase(
        "system defaulting, nodes don't have zone, pods match service",
        pod(labels=FOO),
        pods_on("a4 b3 c2 d1", foo=""),
        ABCD,
        [],
        [44, 66, 77, 100],
        services={"svc": {"foo": ""}},
    ),
    # matching pods spread as 4/2/1/~3~ (node4 is not a candidate)
    ScoreCase(
        "one constraint on node, 3 out of 4 nodes are candidates",
        pod(labels=FOO, constraints=[host_c()]),
        pods_on("a4 b2 x1 y3", foo=""),
        [hn("node-a"), hn("node-b"), hn("node-x")],
        [hn("node-y")],
        [33, 83, 100],
    ),
    # matching pods spread as 4/?2?/1/~3~, total = 4+?+1 = 5 (as node2 is problematic)
    ScoreCase(
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        pod(labels=FOO, constraints=[host_c()]),
        pods_on("a4 b2 x1 y3", foo=""),
        [hn("node-a"), node("node-b", {"n": "node-b"}), hn("node-x")],
        [hn("node-y")],
        [16, 0, 100],
    ),
    # matching pods spread as 4/2/1/~3~
    ScoreCase(
        "one constraint on zone, 3 out of 4 nodes are candidates",
        pod(labels=FOO, constraints=[spread(1, "zone", SA, F)]),
        pods_on("a4 b2 x1 y3", foo=""),
        ZONED_ABXY[:3],
        ZONED_ABXY[3:],
        [75, 75, 100],
    ),
    # matching pods spread as 2/~1~/2/~4~.
    ScoreCase(
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        pod(labels=FOO, constraints=[spread(1, "zone", SA, F), host_c()]),
        pods_on("a2 b1 x2 y4", foo=""),
        [ZONED_ABXY[0], ZONED_ABXY[2]],
        [ZONED_ABXY[1], ZONED_ABXY[3]],
        [100, 63],
    ),
    ScoreCase(
        "two Constraints on zone, 2 out of 4 nodes are candidates",
        pod(labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", SA, F), spread(1, "zone", SA, B)]),
        [
            ep("p-a1", "node-a", foo="", bar=""),
            ep("p-a2", "node-a", foo=""),
            ep("p-b1", "node-b", foo="", bar=""),
            ep("p-y1", "node-y", foo=""),
            ep("p-y2", "node-y", foo="", bar=""),
            ep("p-y3", "node-y", foo=""),
        ],
        [node("node-a", {"zone": "zone1"}), node("node-x", {"zone": "zone2"})],
        [node("node-b", {"zone": "zone1"}), node("node-y", {"zone": "zone2"})],
        [85, 100],
    ),
    # For the first constraint (zone): the matching pods spread as 2/2/1/1
    # For the second constraint (node): the matching pods spread as 0/1/0/1
    ScoreCase(
        "two Constraints on zone and node, with different labelSelectors",
        pod(labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", SA, F), host_c(sel=B)]),
        DIFF_SELECTOR_PODS,
        ZONED_ABXY,
        [],
        [60, 20, 100, 60],
    ),
    # For the first constraint (zone): the matching pods spread as 0/0/2/2
    # For the second constraint (node): the matching pods spread as 0/1/0/1
    ScoreCase(
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        pod(labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", SA, F), host_c(sel=B)]),
        [ep("p-b1", "node-b", bar=""), ep("p-x1", "node-x", foo=""), ep("p-y1", "node-y", foo="", bar="")],
        ZONED_ABXY,
        [],
        [100, 60, 40, 0],
    ),
    # For the first constraint (zone): the matching pods spread as 2/2/1/~1~
    # For the second constraint (node): the matching pods spread as 0/1/0/~1~
    ScoreCase(
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        pod(labels={"foo": "", "bar": ""}, constraints=[spread(1, "zone", SA, F), host_c(sel=B)]),
        DIFF_SELECTOR_PODS,
        ZONED_ABXY[:3],
        ZONED_ABXY[3:],
        [50, 25, 100],
    ),
    ScoreCase(
        "existing pods in a different namespace do not count",
        pod(labels=FOO, constraints=[host_c()]),
        [ep("p-a1", "node-a", "ns1", foo=""), *pods_on("a1 b2", foo="")],
        [hn("node-a"), hn("node-b")],
        [],
        [100, 33],
    ),
    ScoreCase(
        "terminating Pods should be excluded",
        pod(labels=FOO, constraints=[host_c()]),
        [ep("p-a", "node-a", terminating=True, foo=""), ep("p-b", "node-b", foo="")],
        [hn("node-a"), hn("node-b")],
        [],
        [100, 0],
    ),
    # This test is artificial. In the real world, API Server would fail a pod's creation
    # when non-default minDomains is specified along with SchedulingAnyway.
    ScoreCase(
        "minDomains has no effect when ScheduleAnyway",
        pod(labels=FOO, constraints=[spread(2, "node", SA, F, 10)]),
        pods_on("a2 b2 c1", foo=""),
        [node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        [],
        [75, 75, 100],
    ),
    ScoreCase(
        "NodeAffinityPolicy honoed with labelSelectors",
        pod(labels=FOO, node_selector=FOO, constraints=[spread(1, "node", SA, F)]),
        A2B1C1,
        ABC_NODE,
        [],
        [0, 33, 100],
    ),
    ScoreCase(
        "NodeAffinityPolicy ignored with labelSelectors",
        pod(labels=FOO, node_selector=FOO, constraints=[spread(1, "node", SA, F, None, "Ignore")]),
        A2B1C1,
        ABC_NODE,
        [],
        [66, 100, 100],
    ),
    ScoreCase(
        "NodeAffinityPolicy honoed with nodeAffinity",
        pod(labels=FOO, affinity_in=("foo", [""]), constraints=[spread(1, "node", SA, F)]),
        A2B1C1,
        ABC_NODE,
        [],
        [0, 33, 100],
    ),
    ScoreCase(
        "NodeAffinityPolicy ignored with nodeAffinity",
        pod(labels=FOO, affinity_in=("foo", [""]), constraints=[spread(1, "node", SA, F, None, "Ignore")]),
        A2B1C1,
        ABC_NODE,
        [],
        [66, 100, 100],
    ),
    ScoreCase(
        "NodeTaintsPolicy honored",
        pod(labels=FOO, constraints=[spread(1, "node", SA, F, None, None, "Honor")]),
        A2B1C1,
        ABC_TAINTED,
        [],
        [0, 33, 100],
    ),
    ScoreCase(
        "NodeTaintsPolicy ignored",
        pod(labels=FOO, constraints=[spread(1, "node", SA, F)]),
        A2B1C1,
        ABC_TAINTED,
        [],
        [66, 100, 100],
    ),
    ScoreCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod(
            labels={"foo": "", "bar": ""},
            constraints=[
                spread(1, "zone", SA, {}, match_label_keys=["foo"]),
                host_c(sel={}, match_label_keys=["bar"]),
            ],
        ),
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-b1", "node-b", foo="", bar=""),
            ep("p-y1", "node-c", foo=""),
            ep("p-y2", "node-c", bar=""),
        ],
        ZONE_ABCD,
        [],
        [60, 20, 60, 100],
    ),
    ScoreCase(
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod(
            labels={"foo": "", "bar": "", "baz": ""},
            constraints=[spread(1, "zone", SA, F), host_c(sel=B, match_label_keys=["baz"])],
        ),
        [
            ep("p-a1", "node-a", foo=""),
            ep("p-b1", "node-b", foo="", bar="", baz=""),
            ep("p-c1", "node-c", foo=""),
            ep("p-c2", "node-c", bar=""),
            ep("p-d3", "node-c", bar="", baz=""),
        ],
        ZONE_ABCD,
        [],
        [60, 20, 60, 100],
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: c.name)
def test_pod_topology_spread_score(case: ScoreCase) -> None:
    plugin, snap = _plugin(case.nodes + case.failed, case.existing, SYSTEM_DEFAULTING, services=case.services)
    filtered = [snap.get(n.metadata.name) for n in case.nodes]
    cs = CycleState()
    pi = PodInfo(case.pod)
    assert plugin.pre_score(cs, pi, filtered) is None
    raw = np.array([plugin.score(cs, pi, ni) for ni in filtered], dtype=np.int64)
    rows = np.array([ni.index for ni in filtered], dtype=np.intp)
    assert plugin.score_batch(cs, pi, snap, rows).tolist() == raw.tolist()
    assert plugin.normalize_score(cs, pi, filtered, raw) is None
    assert raw.tolist() == case.want


def test_topology_normalizing_weight_is_ln_size_plus_two() -> None:
    assert topology_normalizing_weight(3) == math.log(5)
