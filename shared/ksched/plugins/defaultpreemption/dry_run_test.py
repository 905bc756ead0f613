"""Dry runs, node picking and custom victim policies: upstream 1.36.2 ``default_preemption_test.go``
(TestDryRunPreemption, TestSelectBestCandidate, TestCustomSelection, TestCustomOrdering) and
``preemption_test.go`` (TestNodesWherePreemptionMightHelp, now ``NodesForStatusCode``).

Upstream draws offsets from ``rand.New(rand.NewSource(4))``; the offsets its comments give (4, 1, 3
for five nodes) are passed here directly. Upstream's expected filter-call counts are checked too:
the shortcuts ksched adds must not change how often the framework path runs a Filter plugin when
that path is taken (every case here registers a fake filter, which rules the resource-only
shortcut out; the vectorized no-victims shortcut skips nodes upstream also skips without a call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from ksched.api.core import Pod
from ksched.api.policy import PodDisruptionBudget
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.plugins.args.types import DefaultPreemptionArgs
from ksched.plugins.defaultpreemption import DefaultPreemption
from ksched.plugins.defaultpreemption.candidates import (
    Candidate,
    DryRun,
    calculate_num_candidates,
    nodes_for_status_code,
)
from ksched.plugins.defaultpreemption.ordering import start_time
from ksched.plugins.defaultpreemption.testing import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    FakeFilter,
    FalseFilter,
    MatchFilter,
    TrueFilter,
    epoch,
    framework,
    node,
    pdb,
    plugin_for,
    pod,
    prefiltered,
)
from ksched.plugins.interpodaffinity import new as new_inter_pod_affinity
from ksched.plugins.noderesources.fit import Fit
from ksched.plugins.podtopologyspread import new as new_pod_topology_spread


def spread_on(*keys: str) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
            }
            for key in keys
        ]
    }


ANTI_FOO_ON_HOSTNAME = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                    "topologyKey": "hostname",
                }
            ]
        }
    }
}


def build(
    node_names: Sequence[str],
    pods: Sequence[Pod],
    plugins: Sequence[str],
    fake: FakeFilter,
    pdbs: Sequence[PodDisruptionBudget] = (),
    capacity: dict[str, str] | None = None,
) -> Framework:
    """Nodes of ``capacity`` (VERY_LARGE) with the fake filter first, then the named plugins."""
    nodes = [node(n, capacity or VERY_LARGE) for n in node_names]
    fw = framework(nodes, pods, pdbs=pdbs)
    pre: list[object] = []
    filters: list[object] = [fake]
    for name in plugins:
        if name == "Fit":
            fit = Fit()
            pre.append(fit)
            filters.append(fit)
        elif name == "PodTopologySpread":
            pts = new_pod_topology_spread(None, fw)
            pre.append(pts)
            filters.append(pts)
        elif name == "InterPodAffinity":
            ipa = new_inter_pod_affinity(None, fw)
            pre.append(ipa)
            filters.append(ipa)
        else:
            filters.append(
                {"FalseFilter": FalseFilter, "TrueFilter": TrueFilter, "MatchFilter": MatchFilter}[name]()
            )
    fw.plugins.pre_filter = pre  # type: ignore[assignment]
    fw.plugins.filter = filters  # type: ignore[assignment]
    return fw


def dry_run(
    fw: Framework,
    preemptor: Pod,
    offset: int,
    args: DefaultPreemptionArgs | None = None,
    pl: DefaultPreemption | None = None,
) -> list[Candidate]:
    pl = pl if pl is not None else plugin_for(fw, args)
    state, pi = prefiltered(fw, preemptor)
    nodes = sorted(fw.snapshot.nodes, key=lambda n: n.name)
    num = calculate_num_candidates(
        len(nodes), pl.args.min_candidate_nodes_percentage, pl.args.min_candidate_nodes_absolute
    )
    pdbs = pl._pdbs.compile(fw.snapshot.objects.pod_disruption_budgets.values())
    run = DryRun(fw, state, pi, pdbs, pl.policy(), pl._index)
    run.prepare(nodes)
    return run.run(nodes, offset, num).candidates


def summary(candidates: Sequence[Candidate]) -> list[tuple[str, list[str], int]]:
    """(node, sorted victim names, PDB violations), sorted by node as upstream compares them."""
    return sorted((c.node_name, sorted(v.name for v in c.victims), c.num_pdb_violations) for c in candidates)


@dataclass
class DryRunCase:
    name: str
    node_names: list[str]
    preemptors: list[Pod]
    init_pods: list[Pod]
    plugins: list[str]
    expected: list[list[tuple[str, list[str], int]]]
    filter_calls: list[int]
    fake_code: Code = Code.SUCCESS
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    args: DefaultPreemptionArgs | None = None
    offsets: list[int] = field(default_factory=lambda: [0])


def mid_large(name: str, node_name: str, **kw: Any) -> Pod:
    return pod(name, node=node_name, priority=MID, requests=LARGE, **kw)


FOO = {"app": "foo"}
LIMIT_2 = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)
FIVE = ["node1", "node2", "node3", "node4", "node5"]

DRY_RUN_CASES = [
    DryRunCase(
        "a pod that does not fit on any node",
        ["node1", "node2"],
        [pod("p", priority=HIGH)],
        [pod("p1", node="node1", priority=MID), pod("p2", node="node2", priority=MID)],
        ["FalseFilter"],
        [[]],
        [2],
    ),
    DryRunCase(
        "a pod that fits with no preemption",
        ["node1", "node2"],
        [pod("p", priority=HIGH)],
        [pod("p1", node="node1", priority=MID), pod("p2", node="node2", priority=MID)],
        ["TrueFilter"],
        [[]],
        [2],
        fake_code=Code.UNSCHEDULABLE,
    ),
    DryRunCase(
        "a pod that fits on one node with no preemption",
        ["node1", "node2"],
        [pod("node1", priority=HIGH)],
        [pod("p1", node="node1", priority=MID), pod("p2", node="node2", priority=MID)],
        ["MatchFilter"],
        [[]],
        [2],
        fake_code=Code.UNSCHEDULABLE,
    ),
    DryRunCase(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        [pod("p", priority=HIGH, requests=LARGE)],
        [mid_large("p1", "node1"), mid_large("p2", "node2")],
        ["Fit"],
        [[("node1", ["p1"], 0), ("node2", ["p2"], 0)]],
        [4],
    ),
    DryRunCase(
        "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would "
        "happen",
        ["node1", "node2"],
        [pod("p", priority=LOW, requests=LARGE)],
        [mid_large("p1", "node1"), mid_large("p2", "node2")],
        ["Fit"],
        [[]],
        [0],
    ),
    DryRunCase(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ["node1", "node2"],
        [pod("p", priority=HIGH, requests=LARGE)],
        [
            pod("p1.1", node="node1", priority=LOW, requests=SMALL),
            mid_large("p1.2", "node1"),
            mid_large("p2", "node2"),
        ],
        ["Fit"],
        [[("node1", ["p1.2"], 0), ("node2", ["p2"], 0)]],
        [5],
    ),
    DryRunCase(
        "mixed priority pods are preempted",
        ["node1", "node2"],
        [pod("p", priority=HIGH, requests=LARGE)],
        [
            pod("p1.1", node="node1", priority=MID, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p1.3", node="node1", priority=MID, requests=MEDIUM),
            pod("p1.4", node="node1", priority=HIGH, requests=SMALL),
            pod("p2", node="node2", priority=HIGH, requests=LARGE),
        ],
        ["Fit"],
        [[("node1", ["p1.2", "p1.3"], 0)]],
        [4],
    ),
    DryRunCase(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ["node1", "node2"],
        [pod("p", priority=HIGH, requests=LARGE)],
        [
            pod("p1.1", node="node1", priority=LOW, requests=SMALL, start=epoch(5)),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL, start=epoch(4)),
            pod("p1.3", node="node1", priority=MID, requests=MEDIUM, start=epoch(3)),
            pod("p1.4", node="node1", priority=HIGH, requests=SMALL, start=epoch(2)),
            pod("p2", node="node2", priority=HIGH, requests=LARGE, start=epoch(1)),
        ],
        ["Fit"],
        [[("node1", ["p1.1", "p1.3"], 0)]],
        [4],
    ),
    DryRunCase(
        "pod with anti-affinity is preempted",
        ["node1", "node2"],
        [pod("p", priority=HIGH, requests=SMALL, labels={"foo": ""})],
        [
            pod(
                "p1.1",
                node="node1",
                priority=LOW,
                requests=SMALL,
                labels={"foo": ""},
                spec=ANTI_FOO_ON_HOSTNAME,
            ),
            pod("p1.2", node="node1", priority=MID, requests=SMALL),
            pod("p1.3", node="node1", priority=HIGH, requests=SMALL),
            pod("p2", node="node2", priority=HIGH, requests=SMALL),
        ],
        ["Fit", "InterPodAffinity"],
        [[("node1", ["p1.1"], 0)]],
        [3],
    ),
    DryRunCase(
        "preemption to resolve pod topology spread filter failure",
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [pod("p", priority=HIGH, labels={"foo": ""}, spec=spread_on("zone", "hostname"))],
        [
            pod("pod-a1", node="node-a", priority=MID, labels={"foo": ""}),
            pod("pod-a2", node="node-a", priority=LOW, labels={"foo": ""}),
            pod("pod-b1", node="node-b", priority=LOW, labels={"foo": ""}),
            pod("pod-x1", node="node-x", priority=HIGH, labels={"foo": ""}),
            pod("pod-x2", node="node-x", priority=HIGH, labels={"foo": ""}),
        ],
        ["PodTopologySpread"],
        [[("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)]],
        [5],
    ),
    DryRunCase(
        "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
        ["node1", "node2"],
        [pod("p", priority=HIGH, requests=LARGE)],
        [mid_large("p1", "node1"), mid_large("p2", "node2")],
        ["Fit"],
        [[]],
        [2],
        fake_code=Code.UNSCHEDULABLE,
    ),
    DryRunCase(
        "preemption with violation of same pdb",
        ["node1"],
        [pod("p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        ["Fit"],
        [[("node1", ["p1.1", "p1.2"], 1)]],
        [3],
        pdbs=[pdb(match_labels=FOO, allowed=1)],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim doesn't belong to DisruptedPods",
        ["node1"],
        [pod("p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        ["Fit"],
        [[("node1", ["p1.1", "p1.2"], 1)]],
        [3],
        pdbs=[pdb(match_labels=FOO, allowed=1, disrupted=["p2"])],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
        ["node1"],
        [pod("p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        ["Fit"],
        [[("node1", ["p1.1", "p1.2"], 0)]],
        [3],
        pdbs=[pdb(match_labels=FOO, allowed=1, disrupted=["p1.2"])],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim which belongs to DisruptedPods is treated as 'nonViolating'",
        ["node1"],
        [pod("p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.3", node="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        ["Fit"],
        [[("node1", ["p1.1", "p1.2", "p1.3"], 1)]],
        [4],
        pdbs=[pdb(match_labels=FOO, allowed=1, disrupted=["p1.3"])],
    ),
    DryRunCase(
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        FIVE,
        [pod("p", priority=HIGH, requests=LARGE)],
        [mid_large(f"p{i}", f"node{i}") for i in range(1, 6)],
        ["Fit"],
        # offset=4 => node5 (yes), node1 (yes)
        [[("node1", ["p1"], 0), ("node5", ["p5"], 0)]],
        [4],
        args=LIMIT_2,
        offsets=[4],
    ),
    DryRunCase(
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        FIVE,
        [pod("p", priority=HIGH, requests=LARGE)],
        [
            mid_large("p1", "node1"),
            pod("p2", node="node2", priority=VERY_HIGH, requests=LARGE),
            mid_large("p3", "node3"),
            mid_large("p4", "node4"),
            pod("p5", node="node5", priority=VERY_HIGH, requests=LARGE),
        ],
        ["Fit"],
        # offset=4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
        [[("node1", ["p1"], 0), ("node3", ["p3"], 0)]],
        [4],
        args=LIMIT_2,
        offsets=[4],
    ),
    DryRunCase(
        "preemption offset across multiple scheduling cycles and wrap around",
        FIVE,
        [pod(f"tp{i}", priority=HIGH, requests=LARGE) for i in range(1, 4)],
        [mid_large(f"p{i}", f"node{i}") for i in range(1, 6)],
        ["Fit"],
        [
            [("node1", ["p1"], 0), ("node5", ["p5"], 0)],  # offset=4
            [("node2", ["p2"], 0), ("node3", ["p3"], 0)],  # offset=1
            [("node4", ["p4"], 0), ("node5", ["p5"], 0)],  # offset=3
        ],
        [4, 4, 4],
        args=LIMIT_2,
        offsets=[4, 1, 3],
    ),
    DryRunCase(
        "preemption looks past numCandidates until a non-PDB violating node is found",
        FIVE,
        [pod("p", priority=HIGH, requests=LARGE)],
        [
            mid_large("p1", "node1", labels=FOO),
            mid_large("p2", "node2", labels=FOO),
            mid_large("p3", "node3"),
            mid_large("p4", "node4"),
            mid_large("p5", "node5", labels=FOO),
        ],
        ["Fit"],
        # offset=4 => node5 (yes, pdb), node1 (yes, pdb), node2 (no, pdb), node3 (yes)
        [[("node1", ["p1"], 1), ("node3", ["p3"], 0), ("node5", ["p5"], 1)]],
        [8],
        pdbs=[pdb(match_labels=FOO, allowed=0)],
        args=DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=2),
        offsets=[4],
    ),
]


@pytest.mark.parametrize("case", DRY_RUN_CASES, ids=lambda c: c.name)
def test_dry_run_preemption(case: DryRunCase) -> None:
    fake = FakeFilter()
    fw = build(case.node_names, case.init_pods, case.plugins, fake, case.pdbs)
    if case.fake_code != Code.SUCCESS:
        fake.codes = {n.name: case.fake_code for n in fw.snapshot.nodes}
    previous = 0
    for cycle, preemptor in enumerate(case.preemptors):
        got = dry_run(fw, preemptor, case.offsets[cycle], case.args)
        assert summary(got) == case.expected[cycle], f"cycle {cycle}"
        assert fake.calls - previous == case.filter_calls[cycle], f"cycle {cycle}: filter calls"
        previous = fake.calls


# --- SelectBestCandidate ------------------------------------------------------------------------
def at(name: str, node_name: str, priority: int, requests: dict[str, str], t: int = 0) -> Pod:
    return pod(name, node=node_name, priority=priority, requests=requests, start=epoch(t))


SELECT_CASES = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        pod("p", priority=HIGH, requests=LARGE),
        [at("p1", "node1", MID, LARGE), at("p2", "node2", MID, LARGE)],
        ["node1", "node2"],
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM),
            at("p1.2", "node1", MID, LARGE),
            at("p2.1", "node2", MID, MEDIUM),
            at("p2.2", "node2", LOW, MEDIUM),
            at("p3.1", "node3", LOW, MEDIUM),
            at("p3.2", "node3", LOW, MEDIUM),
        ],
        ["node3"],
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM),
            at("p1.2", "node1", MID, LARGE),
            at("p2.1", "node2", MID, LARGE),
            at("p2.2", "node2", LOW, MEDIUM),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", MID, MEDIUM),
        ],
        ["node2"],
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, SMALL),
            at("p1.2", "node1", NEG, SMALL),
            at("p1.3", "node1", MID, SMALL),
            at("p1.4", "node1", NEG, SMALL),
            at("p2.1", "node2", MID, LARGE),
            at("p2.2", "node2", NEG, MEDIUM),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", NEG, SMALL),
            at("p3.3", "node3", LOW, SMALL),
        ],
        ["node2"],
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, SMALL),
            at("p1.2", "node1", NEG, SMALL),
            at("p1.3", "node1", NEG, SMALL),
            at("p2.1", "node2", MID, LARGE),
            at("p2.2", "node2", NEG, MEDIUM),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", NEG, SMALL),
            at("p3.3", "node3", LOW, SMALL),
        ],
        ["node2"],
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        pod("p", priority=VERY_HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, SMALL),
            at("p1.2", "node1", LOW, SMALL),
            at("p1.3", "node1", LOW, SMALL),
            at("p2.1", "node2", HIGH, LARGE),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", LOW, SMALL),
            at("p3.3", "node3", LOW, SMALL),
            at("p3.4", "node3", LOW, MEDIUM),
            at("p4.1", "node4", MID, MEDIUM),
            at("p4.2", "node4", MID, SMALL),
            at("p4.3", "node4", MID, SMALL),
            at("p4.4", "node4", NEG, SMALL),
        ],
        ["node1"],
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM, 2),
            at("p1.2", "node1", MID, MEDIUM, 2),
            at("p2.1", "node2", MID, MEDIUM, 3),
            at("p2.2", "node2", MID, MEDIUM, 3),
            at("p3.1", "node3", MID, MEDIUM, 1),
            at("p3.2", "node3", MID, MEDIUM, 1),
        ],
        ["node2"],
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM, 4),
            at("p1.2", "node1", MID, MEDIUM, 2),
            at("p2.1", "node2", MID, MEDIUM, 5),
            at("p2.2", "node2", MID, MEDIUM, 1),
            at("p3.1", "node3", MID, MEDIUM, 3),
            at("p3.2", "node3", MID, MEDIUM, 6),
        ],
        ["node3"],
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            at("p1.1", "node1", LOW, MEDIUM, 4),
            at("p1.2", "node1", MID, MEDIUM, 2),
            at("p2.1", "node2", MID, MEDIUM, 6),
            at("p2.2", "node2", LOW, MEDIUM, 1),
            at("p3.1", "node3", LOW, MEDIUM, 3),
            at("p3.2", "node3", MID, MEDIUM, 5),
        ],
        ["node2"],
    ),
]


@pytest.mark.parametrize(("name", "node_names", "preemptor", "pods", "expected"), SELECT_CASES)
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_select_best_candidate(
    name: str, node_names: list[str], preemptor: Pod, pods: list[Pod], expected: list[str], offset: int
) -> None:
    fw = build(node_names, pods, ["Fit"], FakeFilter())
    pl = plugin_for(fw)
    candidates = dry_run(fw, preemptor, offset % len(node_names))
    best = pl.select_candidate(candidates)
    assert best is not None and best.node_name in expected


def test_select_candidate_breaks_the_last_tie_by_snapshot_order() -> None:
    # Pods without a start time tie on every criterion: the first node of the snapshot wins,
    # whatever the offset (upstream: effectively random).
    pods = [pod(f"v{i}", node=f"node{i}", priority=LOW, requests=LARGE) for i in (1, 2, 3)]
    for offset in range(3):
        fw = build(["node2", "node1", "node3"], pods, ["Fit"], FakeFilter())
        best = plugin_for(fw).select_candidate(dry_run(fw, pod("p", priority=HIGH, requests=LARGE), offset))
        assert best is not None and best.node_name == "node2"


# --- custom eligibility and ordering ------------------------------------------------------------
def label_is(key: str, value: str) -> Any:
    return lambda node, victim, preemptor: victim.labels.get(key) == value


def node_is(name: str) -> Any:
    return lambda node, victim, preemptor: node.name == name


def preemptor_at_least(minimum: int) -> Any:
    return lambda node, victim, preemptor: preemptor.priority >= minimum


def victim_at_most(maximum: int) -> Any:
    return lambda node, victim, preemptor: victim.priority <= maximum


def v(
    name: str, node_name: str, priority: int, requests: dict[str, str], labels: dict[str, str] | None = None
) -> Pod:
    return pod(name, node=node_name, priority=priority, requests=requests, labels=labels, start=epoch(0))


LABELLED = [
    v("v1", "node1", MID, LARGE, {"preemptible": "no"}),
    v("v2", "node2", MID, LARGE, {"preemptible": "yes"}),
    v("v3", "node3", LOW, LARGE, {"preemptible": "yes"}),
    v("v4", "node4", LOW, LARGE),
]
ON_NODE1 = [
    v("v1", "node1", HIGH, MEDIUM),
    v("v2", "node1", MID, SMALL),
    v("v3", "node1", LOW, SMALL),
    v("v4", "node2", MID, LARGE),
    v("v5", "node3", LOW, LARGE),
]
ONE_EACH = [v("v1", "node1", HIGH, LARGE), v("v2", "node2", MID, LARGE), v("v3", "node3", LOW, LARGE)]
FOUR = ["node1", "node2", "node3", "node4"]
THREE = ["node1", "node2", "node3"]

CUSTOM_SELECTION_CASES = [
    (
        "filter for matching pod label: high priority",
        label_is("preemptible", "yes"),
        FOUR,
        pod("p1", priority=HIGH, requests=LARGE),
        LABELLED,
        {"node2": ["v2"], "node3": ["v3"]},
    ),
    (
        "filter for matching pod label: mid priority",
        label_is("preemptible", "yes"),
        FOUR,
        pod("p2", priority=MID, requests=LARGE),
        LABELLED,
        {"node3": ["v3"]},
    ),
    (
        "filter for matching pod label: low priority",
        label_is("preemptible", "yes"),
        FOUR,
        pod("p3", priority=LOW, requests=LARGE),
        LABELLED,
        {},
    ),
    (
        "filter for matching victim node: high priority",
        node_is("node1"),
        THREE,
        pod("p3", priority=HIGH, requests=LARGE),
        ON_NODE1,
        {"node1": ["v2", "v3"]},
    ),
    (
        "filter for matching victim node: mid priority",
        node_is("node1"),
        THREE,
        pod("p3", priority=MID, requests=LARGE),
        [v("v1", "node1", HIGH, SMALL), *ON_NODE1[1:]],
        {"node1": ["v3"]},
    ),
    (
        "filter for matching victim node: low priority",
        node_is("node1"),
        THREE,
        pod("p3", priority=LOW, requests=LARGE),
        [v("v1", "node1", HIGH, SMALL), *ON_NODE1[1:]],
        {},
    ),
    (
        "only pods at or above specified priority can preempted: high priority",
        preemptor_at_least(HIGH),
        THREE,
        pod("p1", priority=HIGH, requests=LARGE),
        ONE_EACH,
        {"node2": ["v2"], "node3": ["v3"]},
    ),
    (
        "only pods at or above specified priority can preempted: mid priority",
        preemptor_at_least(HIGH),
        THREE,
        pod("p2", priority=MID, requests=LARGE),
        ONE_EACH,
        {},
    ),
    (
        "only pods at or below specified priority can be preempted: high priority",
        victim_at_most(MID),
        THREE,
        pod("p1", priority=HIGH, requests=LARGE),
        ONE_EACH,
        {"node2": ["v2"], "node3": ["v3"]},
    ),
]


@pytest.mark.parametrize(
    ("name", "eligible", "node_names", "preemptor", "pods", "expected"), CUSTOM_SELECTION_CASES
)
def test_custom_selection(
    name: str,
    eligible: Any,
    node_names: list[str],
    preemptor: Pod,
    pods: list[Pod],
    expected: dict[str, list[str]],
) -> None:
    fw = build(node_names, pods, ["Fit"], FakeFilter())
    pl = plugin_for(fw)
    pl.is_eligible_pod = eligible
    state, pi = prefiltered(fw, preemptor)
    nodes = list(fw.snapshot.nodes)
    pdbs = pl._pdbs.compile([])
    run = DryRun(fw, state, pi, pdbs, pl.policy(), pl._index)
    run.prepare(nodes)
    candidates = run.run(nodes, 0, len(nodes)).candidates
    assert len(candidates) == len(expected)
    while candidates:
        selected = pl.select_candidate(candidates)
        assert selected is not None and selected.node_name in expected
        assert [p.name for p in selected.victims] == expected[selected.node_name]
        candidates = [c for c in candidates if c.node_name != selected.node_name]


def by_oldest_start(a: PodInfo, b: PodInfo) -> bool:
    return start_time(a) < start_time(b)


def by_name(a: PodInfo, b: PodInfo) -> bool:
    return a.name < b.name


@pytest.mark.parametrize(
    ("name", "order", "pods", "expected"),
    [
        (
            "select newest pods",
            by_oldest_start,
            [
                at("v1", "node1", LOW, MEDIUM, 2),
                at("v2", "node1", LOW, MEDIUM, 0),
                at("v3", "node1", MID, MEDIUM, 1),
            ],
            ["v3", "v1"],
        ),
        (
            "select alphabetically-last pods",
            by_name,
            [
                pod("foo", node="node1", priority=LOW, requests=MEDIUM, start=epoch(0)),
                pod("bar", node="node1", priority=LOW, requests=MEDIUM, start=epoch(0)),
                pod("baz", node="node1", priority=MID, requests=MEDIUM, start=epoch(0)),
            ],
            ["baz", "foo"],
        ),
    ],
)
def test_custom_ordering(name: str, order: Any, pods: list[Pod], expected: list[str]) -> None:
    fw = build(["node1"], pods, ["Fit"], FakeFilter())
    pl = plugin_for(fw)
    pl.more_important_pod = order
    candidates = dry_run(fw, pod("p2", priority=HIGH, requests=LARGE), 0, pl=pl)
    assert len(candidates) == 1
    assert [p.name for p in candidates[0].victims] == expected


# --- NodesForStatusCode (upstream TestNodesWherePreemptionMightHelp) ----------------------------
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCH = Code.UNSCHEDULABLE

# The stored upstream table predates NodeToStatus: there, nodes without a status were tried. In 1.36
# they take the absent status, so these cases give the absent nodes Unschedulable (as after a
# PreFilter that returned Unschedulable); the last cases use the default absent status.
STATUS_CASES = [
    (
        "No node should be attempted",
        {"node1": UNRES, "node2": UNRES, "node3": UNRES, "node4": UNRES},
        UNSCH,
        [],
    ),
    (
        "ErrReasonAntiAffinityRulesNotMatch should be tried",
        {"node1": UNSCH, "node2": UNRES, "node3": UNRES},
        UNSCH,
        ["node1", "node4"],
    ),
    (
        "ErrReasonAffinityRulesNotMatch should not be tried, ErrReasonAntiAffinityRulesNotMatch should",
        {"node1": UNRES, "node2": UNSCH},
        UNSCH,
        ["node2", "node3", "node4"],
    ),
    (
        "Mix of failed predicates works fine",
        {"node1": UNRES, "node2": UNSCH},
        UNSCH,
        ["node2", "node3", "node4"],
    ),
    (
        "Node condition errors should be considered unresolvable",
        {"node1": UNRES},
        UNSCH,
        ["node2", "node3", "node4"],
    ),
    (
        "ErrVolume... errors should not be tried",
        {"node1": UNRES, "node2": UNRES, "node3": UNRES},
        UNSCH,
        ["node4"],
    ),
    (
        "ErrReasonConstraintsNotMatch should be tried",
        {"node1": UNSCH, "node2": UNRES, "node3": UNSCH},
        UNSCH,
        ["node1", "node3", "node4"],
    ),
    (
        "UnschedulableAndUnresolvable status should be skipped but Unschedulable should be tried",
        {"node2": UNRES, "node3": UNSCH, "node4": UNRES},
        UNSCH,
        ["node1", "node3"],
    ),
    ("absent nodes take the default UnschedulableAndUnresolvable status", {"node3": UNSCH}, UNRES, ["node3"]),
    (
        "explicit statuses only, in snapshot order",
        {"node4": UNSCH, "node2": UNSCH},
        UNRES,
        ["node2", "node4"],
    ),
]


@pytest.mark.parametrize(("name", "codes", "absent", "expected"), STATUS_CASES)
def test_nodes_for_status_code(name: str, codes: dict[str, Code], absent: Code, expected: list[str]) -> None:
    fw = framework([node(f"node{i}", {}) for i in range(1, 5)])
    statuses = NodeToStatus(absent=Status(absent))
    for n, code in codes.items():
        statuses.set(n, Status(code))
    got = nodes_for_status_code(fw.snapshot, statuses, Code.UNSCHEDULABLE)
    assert [n.name for n in got] == expected


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "want"),
    [
        (5, 40, 1, 2),
        (5, 40, 2, 2),
        (5, 10, 100, 5),
        (5000, 10, 100, 500),
        (500, 10, 100, 100),
        (0, 10, 100, 0),
    ],
)
def test_calculate_num_candidates(nodes: int, percentage: int, absolute: int, want: int) -> None:
    assert calculate_num_candidates(nodes, percentage, absolute) == want


def test_dry_run_reports_statuses_when_there_is_no_candidate() -> None:
    fake = FakeFilter()
    fw = build(
        ["node1", "node2"],
        [mid_large("p1", "node1")],
        ["Fit"],
        fake,
        capacity={"cpu": "200m", "memory": "1000"},
    )
    got = dry_run(fw, pod("p", priority=HIGH, requests=LARGE), 0)
    assert got == []
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, pod("p", priority=HIGH, requests=LARGE))
    statuses = NodeToStatus()
    statuses.set("node1", Status(Code.UNSCHEDULABLE))
    statuses.set("node2", Status(Code.UNSCHEDULABLE))
    _, node_statuses, errors = pl.find_candidates(state, pi, statuses)
    assert errors == []
    assert node_statuses.get("node1").reasons == ("Insufficient cpu",)
    assert node_statuses.get("node2").reasons == ("No preemption victims found for incoming pod",)
