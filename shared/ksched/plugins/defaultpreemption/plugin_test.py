"""DefaultPreemption PostFilter, eligibility, Preempt and PreEnqueue: upstream 1.36.2
``default_preemption_test.go`` (TestPostFilter, TestPodEligibleToPreemptOthers, TestPreempt,
TestPreEnqueue), case by case.

Not ported: the extender cases (ksched has no scheduler extenders), the SchedulingGroup / pod group
cases (alpha gates, not modelled) and the API-call halves of TestPreempt (ksched's plugin only
decides; the effects are tested in ``effects_test.py`` against kubesim).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ksched.api.core import Node, Pod
from ksched.api.policy import PodDisruptionBudget
from ksched.framework.cycle_state import CycleState
from ksched.framework.events import ActionType, EventResource, QueueingHint
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus, PostFilterResult
from ksched.framework.status import Code, Status
from ksched.plugins.args.types import DefaultPreemptionArgs
from ksched.plugins.defaultpreemption import DefaultPreemption, PreemptionResult, new
from ksched.plugins.defaultpreemption.effects import PreemptionExecutor
from ksched.plugins.defaultpreemption.testing import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    ErrorOnLabelPlugin,
    fit_framework,
    framework,
    node,
    pdb,
    plugin_for,
    pod,
    prefiltered,
)
from ksched.plugins.podtopologyspread import new as new_pod_topology_spread

NODE_RES = {"cpu": "200m", "memory": "400"}
VIOLATING_KEY = "test.kubernetes.io/is-violating-pdb"
DISRUPTED_BY_PREEMPTION = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def unschedulable(*names: str, **overrides: Status) -> NodeToStatus:
    """Statuses: each name Unschedulable (or the override), absent nodes UnschedulableAndUnresolvable."""
    statuses = NodeToStatus()
    for name in names:
        statuses.set(name, overrides.get(name, Status(Code.UNSCHEDULABLE)))
    return statuses


@dataclass
class PostFilterCase:
    name: str
    preemptor: Pod
    pods: list[Pod]
    nodes: list[Node]
    statuses: NodeToStatus
    want_node: str | None  # None: no result; "": a result clearing the nomination
    want_code: Code
    want_message: str = ""
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)


POST_FILTER_CASES = [
    PostFilterCase(
        "pod with higher priority can be made schedulable",
        pod("p", priority=HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        unschedulable("node1"),
        "node1",
        Code.SUCCESS,
    ),
    PostFilterCase(
        "pod with tied priority is still unschedulable",
        pod("p"),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        unschedulable("node1"),
        "",
        Code.UNSCHEDULABLE,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    PostFilterCase(
        "preemption should respect filteredNodesStatuses",
        pod("p", priority=HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        unschedulable("node1", node1=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)),
        "",
        Code.UNSCHEDULABLE,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
        pod("p", priority=HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        NodeToStatus(),
        "",
        Code.UNSCHEDULABLE,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "pod can be made schedulable on one node",
        pod("p", priority=MID),
        [pod("p1", node="node1", priority=HIGH), pod("p2", node="node2", priority=LOW)],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        unschedulable("node1", "node2"),
        "node2",
        Code.SUCCESS,
    ),
    PostFilterCase(
        "pod can be made schedulable on minHighestPriority node",
        pod("p", priority=VERY_HIGH),
        [
            pod("p1", node="node1", priority=HIGH, labels={VIOLATING_KEY: "non-violating"}),
            pod("p2", node="node1", priority=LOW, labels={VIOLATING_KEY: "violating"}),
            pod("p3", node="node2", priority=MID, labels={VIOLATING_KEY: "violating"}),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        unschedulable("node1", "node2"),
        "node2",
        Code.SUCCESS,
        pdbs=[
            pdb("violating-pdb", match_labels={VIOLATING_KEY: "violating"}),
            pdb("non-violating-pdb", match_labels={VIOLATING_KEY: "non-violating"}, allowed=2**31 - 1),
        ],
    ),
    PostFilterCase(
        "no candidate nodes found, no enough resource after removing low priority pods",
        pod("p", priority=HIGH, requests=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        unschedulable("node1", "node2"),
        "",
        Code.UNSCHEDULABLE,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    PostFilterCase(
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
        pod("p", priority=HIGH, requests=LARGE),
        [
            pod("p1", node="node1", priority=HIGH),
            pod("p2", node="node2"),
            pod("p3", node="node3", priority=HIGH),
        ],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        unschedulable("node1", "node2", "node3"),
        "",
        Code.UNSCHEDULABLE,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    PostFilterCase(
        "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't "
        "have enough CPU resource",
        pod("p", priority=HIGH, requests=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node(f"node{i}", NODE_RES) for i in range(1, 5)],
        unschedulable("node1", "node2", "node4", node4=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)),
        "",
        Code.UNSCHEDULABLE,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "only one node but failed with TestPlugin",
        pod("p", priority=HIGH, requests=LARGE),
        [pod("p1", node="node1")],
        [node("node1", LARGE, labels={"error": "true"})],
        unschedulable("node1"),
        None,
        Code.ERROR,
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
    ),
    PostFilterCase(
        "two nodes failing with the same error report it once (utilerrors.Aggregate deduplicates)",
        pod("p", priority=HIGH, requests=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE, labels={"error": "true"})],
        unschedulable("node1", "node2"),
        None,
        Code.ERROR,
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
    ),
    PostFilterCase(
        "one failed with TestPlugin and the other pass",
        pod("p", priority=HIGH, requests=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2", requests=MEDIUM)],
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE)],
        unschedulable("node1", "node2"),
        "node2",
        Code.SUCCESS,
    ),
]


@pytest.mark.parametrize("case", POST_FILTER_CASES, ids=lambda c: c.name)
def test_post_filter(case: PostFilterCase) -> None:
    fw = fit_framework(case.nodes, case.pods, extra_pre_filter=[ErrorOnLabelPlugin()], pdbs=case.pdbs)
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, case.preemptor)
    result, status = pl.post_filter(state, pi, case.statuses)
    code = Code.SUCCESS if status is None else status.code
    assert code == case.want_code
    if case.want_message:
        assert status is not None and status.message == case.want_message
    if case.want_node is None:
        assert result is None
    else:
        assert result is not None and result.nominated_node_name == case.want_node


def test_post_filter_result_carries_victims_and_lower_priority_nominations() -> None:
    nominator = Nominator()
    low_nominated = PodInfo(pod("waiting", priority=LOW, nominated="node1"))
    high_nominated = PodInfo(pod("waiting-high", priority=VERY_HIGH, nominated="node1"))
    nominator.add(low_nominated, "node1")
    nominator.add(high_nominated, "node2")
    fw = fit_framework(
        [node("node1", VERY_LARGE), node("node2", {"cpu": "100m", "memory": "100"})],
        [
            pod("v1", node="node1", priority=LOW, requests=MEDIUM),
            pod("v2", node="node1", priority=MID, requests=LARGE),
        ],
        nominator=nominator,
    )
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, pod("p", priority=HIGH, requests=LARGE))
    result, status = pl.post_filter(state, pi, unschedulable("node1", "node2"))
    assert status is None
    assert isinstance(result, PreemptionResult)
    assert result.nominated_node_name == "node1"
    assert [v.name for v in result.victims] == ["v2"]
    assert [p.name for p in result.lower_priority_nominated] == ["waiting"]
    assert result.num_pdb_violations == 0


# --- PodEligibleToPreemptOthers -----------------------------------------------------------------
ELIGIBLE_CASES = [
    (
        "Pod with nominated node",
        pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [pod("p1", priority=LOW, node="node1", terminating=True)],
        ["node1"],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"),
        (True, ""),
    ),
    ("Pod without nominated node", pod("p_without_nominated_node", priority=HIGH), [], [], None, (True, "")),
    (
        "Pod with 'PreemptNever' preemption policy",
        pod("p_with_preempt_never_policy", priority=HIGH, preemption_policy="Never"),
        [],
        [],
        None,
        (False, "not eligible due to preemptionPolicy=Never."),
    ),
    (
        "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
        pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [
            pod(
                "p1",
                priority=LOW,
                node="node1",
                terminating=True,
                conditions=[
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                ],
            )
        ],
        ["node1"],
        None,
        (False, "not eligible due to a terminating pod on the nominated node."),
    ),
    (
        "non-victim Pods terminating",
        pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [pod("p1", priority=LOW, node="node1", terminating=True)],
        ["node1"],
        None,
        (True, ""),
    ),
]


@pytest.mark.parametrize(("name", "preemptor", "pods", "nodes", "status", "want"), ELIGIBLE_CASES)
def test_pod_eligible_to_preempt_others(
    name: str,
    preemptor: Pod,
    pods: list[Pod],
    nodes: list[str],
    status: Status | None,
    want: tuple[bool, str],
) -> None:
    fw = framework([node(n, {}) for n in nodes], pods)
    pl = plugin_for(fw)
    assert pl.pod_eligible_to_preempt_others(PodInfo(preemptor), status) == want


def test_post_filter_not_eligible_message() -> None:
    fw = fit_framework([node("node1", ONE_POD)], [pod("p1", node="node1")])
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, pod("p", priority=HIGH, preemption_policy="Never"))
    result, status = pl.post_filter(state, pi, unschedulable("node1"))
    assert result is None
    assert status == Status.unschedulable("preemption: not eligible due to preemptionPolicy=Never.")


# --- Preempt ------------------------------------------------------------------------------------
PREEMPT_CASES = [
    (
        "basic preemption logic",
        pod("p", priority=HIGH, requests=VERY_LARGE, preemption_policy="PreemptLowerPriority"),
        [
            pod("p1.1", node="node1", priority=LOW, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node2", priority=HIGH, requests=LARGE),
            pod("p3.1", node="node3", priority=MID, requests=MEDIUM),
        ],
        ["node1", "node2", "node3"],
        False,
        "node1",
        ["p1.1", "p1.2"],
    ),
    (
        "preemption for topology spread constraints",
        pod(
            "p",
            priority=HIGH,
            labels={"foo": ""},
            spec={
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": key,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                    }
                    for key in ("zone", "hostname")
                ]
            },
        ),
        [
            pod("p-a1", node="node-a", priority=HIGH, labels={"foo": ""}),
            pod("p-a2", node="node-a", priority=HIGH, labels={"foo": ""}),
            pod("p-b1", node="node-b", priority=LOW, labels={"foo": ""}),
            pod("p-x1", node="node-x", priority=HIGH, labels={"foo": ""}),
            pod("p-x2", node="node-x", priority=HIGH, labels={"foo": ""}),
        ],
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        True,
        "node-b",
        ["p-b1"],
    ),
    (
        "no preempting in pod",
        pod("p", priority=HIGH, requests=VERY_LARGE, preemption_policy="Never"),
        [
            pod("p1.1", node="node1", priority=LOW, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node2", priority=HIGH, requests=LARGE),
            pod("p3.1", node="node3", priority=MID, requests=MEDIUM),
        ],
        ["node1", "node2", "node3"],
        False,
        None,
        [],
    ),
    (
        "PreemptionPolicy is nil",
        pod("p", priority=HIGH, requests=VERY_LARGE),
        [
            pod("p1.1", node="node1", priority=LOW, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node2", priority=HIGH, requests=LARGE),
            pod("p3.1", node="node3", priority=MID, requests=MEDIUM),
        ],
        ["node1", "node2", "node3"],
        False,
        "node1",
        ["p1.1", "p1.2"],
    ),
]


@pytest.mark.parametrize(
    ("name", "preemptor", "pods", "node_names", "spread", "want_node", "want_victims"), PREEMPT_CASES
)
def test_preempt(
    name: str,
    preemptor: Pod,
    pods: list[Pod],
    node_names: list[str],
    spread: bool,
    want_node: str | None,
    want_victims: list[str],
) -> None:
    nodes = [node(n, VERY_LARGE) for n in node_names]
    if spread:
        fw = framework(nodes, pods)
        pts = new_pod_topology_spread(None, fw)
        fw.plugins.pre_filter = [pts]
        fw.plugins.filter = [pts]
    else:
        fw = fit_framework(nodes, pods)
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, preemptor)
    statuses = unschedulable(*(n.metadata.name for n in nodes))
    result, status = pl.preempt(state, pi, statuses)
    assert status is None or status.is_rejected()
    if want_node is None:
        assert result is None
        return
    assert result is not None and result.nominated_node_name == want_node
    assert sorted(v.name for v in result.victims) == want_victims


# --- PreEnqueue, events, construction ------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "running", "checked", "want"),
    [
        ("AsyncPreemption enabled, same pod, returns UnschedulableAndUnresolvable", "p", "p", True),
        ("AsyncPreemption enabled, different pod, returns nil", "p", "p_other", False),
    ],
)
def test_pre_enqueue(name: str, running: str, checked: str, want: bool) -> None:
    fw = fit_framework([node("node1", ONE_POD)], [pod("p1", node="node1")])
    pl = plugin_for(fw)
    pl.executor.begin(running)
    status = pl.pre_enqueue(pod(checked, priority=HIGH))
    if want:
        assert status == Status.unresolvable("waiting for the preemption for this pod to be finished")
    else:
        assert status is None


def test_pre_enqueue_stops_blocking_once_the_last_victim_is_deleting() -> None:
    victim = pod("v", node="node1", priority=LOW)
    fw = fit_framework([node("node1", ONE_POD)], [victim])
    executor = PreemptionExecutor()
    pl = DefaultPreemption(DefaultPreemptionArgs(), fw, executor=executor)
    executor.begin("p")
    executor._running["p"] = "v"  # the executor is deleting its last victim
    assert pl.pre_enqueue(pod("p")) is not None
    fw.snapshot.remove_pod("v")
    assert pl.pre_enqueue(pod("p")) is None
    executor.end("p")
    assert not executor.is_running("p")


def test_events_to_register_pod_delete_skips() -> None:
    pl = plugin_for(fit_framework([node("node1", ONE_POD)]))
    (event,) = pl.events_to_register()
    assert event.event.resource == EventResource.POD
    assert event.event.action == ActionType.DELETE
    assert event.hint is not None and event.hint(pod("p"), pod("q"), None) == QueueingHint.QUEUE_SKIP


def test_new_validates_args() -> None:
    fw = fit_framework([node("node1", ONE_POD)])
    assert new(None, fw).args == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100
    )
    with pytest.raises(ValueError, match="minCandidateNodesPercentage"):
        new(DefaultPreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=0), fw)


def test_handle_rng_takes_precedence() -> None:
    import random

    fw = fit_framework([node("node1", ONE_POD)])
    pl = plugin_for(fw, seed=5)
    assert pl.rng is pl._rng
    fw.rng = random.Random(1)
    assert pl.rng is fw.rng


def test_state_is_not_modified_by_post_filter() -> None:
    fw = fit_framework([node("node1", VERY_LARGE)], [pod("v", node="node1", priority=LOW, requests=LARGE)])
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, pod("p", priority=HIGH, requests=LARGE))
    before = [p.name for p in fw.snapshot.get("node1").pods]
    result, _ = pl.post_filter(state, pi, unschedulable("node1"))
    assert isinstance(result, PostFilterResult) and result.nominated_node_name == "node1"
    assert [p.name for p in fw.snapshot.get("node1").pods] == before
    assert isinstance(state, CycleState)


def test_preemption_plan_from_result() -> None:
    from ksched.plugins.defaultpreemption.effects import PreemptionPlan

    nominator = Nominator()
    nominator.add(PodInfo(pod("waiting", priority=LOW, nominated="node1")), "node1")
    fw = fit_framework(
        [node("node1", VERY_LARGE)],
        [
            pod("v1", node="node1", priority=LOW, requests=LARGE),
            pod("v2", node="node1", priority=LOW, requests=SMALL),
        ],
        nominator=nominator,
    )
    preemptor = pod("p", priority=HIGH, requests=LARGE)
    state, pi = prefiltered(fw, preemptor)
    result, status = plugin_for(fw).post_filter(state, pi, unschedulable("node1"))
    assert status is None and isinstance(result, PreemptionResult)
    plan = PreemptionPlan.from_result(preemptor, result)
    assert plan.node_name == "node1"
    assert [v.metadata.name for v in plan.victims] == ["v1"]
    assert [p.metadata.name for p in plan.lower_priority_nominated] == ["waiting"]
    assert plan.preemptor is preemptor
