"""The scheduler's trace events from real cycles: rejections per plugin and the FailedScheduling
message for an unschedulable pod, the top scores of a scheduled one."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from ksched_scheduler.cycle import SCHEDULED, UNSCHEDULABLE, SchedulingCycle
from ksched_scheduler.tracing import (
    MAX_NAMES_PER_GROUP,
    rejection_groups,
    rejections_by_plugin,
    score_rows,
    trace_assume,
    trace_cycle,
)

from ksched.bus.messages import AssumeReply, LeasedPod, PendingPod
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm, ScheduleResult, top_score_rows
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.tracing import Details, Tracer
from ksched.tracing.scores import scored_nodes

TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


class RecordingTracer(Tracer):
    def __init__(self) -> None:
        super().__init__("scheduler", "s-0", enabled=True)
        self.events: list[tuple[str, float | None, dict[str, Any]]] = []

    def emit(self, phase: str, trace_id: str, uid: str, namespace: str, name: str, **kw: Any) -> None:
        details: Details | None = kw.get("details")
        values = details() if callable(details) else details
        self.events.append((phase, kw.get("duration"), dict(values or {})))


def cycle_on(snapshot: Snapshot) -> SchedulingCycle:
    frameworks = build_frameworks(default_config(), snapshot)
    return SchedulingCycle(frameworks, snapshot, ScheduleAlgorithm(seed=7), Nominator())


def leased(pod_name: str) -> LeasedPod:
    pending = PendingPod(
        uid=f"uid-{pod_name}", namespace="default", name=pod_name, scheduler_name="default-scheduler"
    )
    return LeasedPod(
        lease_id="l1", deadline=0.0, lease_seconds=30.0, pod=pending, trace_id="t1", min_generation=3
    )


def small(name: str, **kw: Any) -> Any:
    return make_node(name, allocatable={"cpu": "2", "memory": "4Gi", "pods": "110"}, **kw)


def run_traced(snapshot: Snapshot, cpu: str) -> tuple[str, RecordingTracer]:
    cycle = cycle_on(snapshot)
    outcome = cycle.run(make_pod("web", uid="uid-web", requests={"cpu": cpu}))
    tracer = RecordingTracer()
    trace_cycle(
        tracer,
        leased("web"),
        outcome,
        epoch="e1",
        generation=5,
        arrived=10.0,
        waited=0.001,
        started=10.001,
        elapsed=0.002,
    )
    assert outcome.diagnosis is None and outcome.result is None  # released once traced
    return outcome.kind, tracer


def test_unschedulable_pod_gets_rejections_per_plugin_and_the_failed_scheduling_message() -> None:
    snapshot = make_snapshot([small("a"), small("b"), small("c", taints=[TAINT])])
    kind, tracer = run_traced(snapshot, cpu="3")
    assert kind == UNSCHEDULABLE
    assert [phase for phase, _, _ in tracer.events] == ["snapshot", "filter", "unschedulable"]
    snap, filt, failed = (details for _, _, details in tracer.events)
    assert snap == {"epoch": "e1", "generation": 5, "min_generation": 3}
    assert filt["rejected"] == {"NodeResourcesFit": 2, "TaintToleration": 1}
    assert filt["nodes"] == 3 and filt["feasible"] == 0
    assert filt["message"].startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
    )  # the FailedScheduling message, PostFilter's part included
    assert failed["plugins"] == ["NodeResourcesFit", "TaintToleration"]
    assert tracer.events[1][1] == 0.002  # the filter phase is measured
    # every node with the plugin and reason that rejected it (what `ksched ui` shows)
    assert filt["rejections"] == [
        {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 2, "nodes": ["a", "b"]},
        {
            "plugin": "TaintToleration",
            "reason": "node(s) had untolerated taint(s)",
            "count": 1,
            "nodes": ["c"],
        },
    ]
    assert msgspec.json.encode(filt)  # plain values only


def test_scheduled_pod_gets_its_top_three_scores_and_no_rejection_counts() -> None:
    nodes = [
        make_node(f"n{i}", allocatable={"cpu": str(2 + 2 * i), "memory": "8Gi", "pods": "110"})
        for i in range(5)
    ]
    kind, tracer = run_traced(make_snapshot(nodes), cpu="1")
    assert kind == SCHEDULED
    assert [phase for phase, _, _ in tracer.events] == ["snapshot", "filter", "score"]
    filt, score = tracer.events[1][2], tracer.events[2][2]
    assert "rejected" not in filt and "message" not in filt and filt["feasible"] == 5
    top = score["top"]
    assert len(top) == 3 and top[0][0] == score["node"]
    assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)
    assert top[0][0] == "n4"  # the emptiest node wins under LeastAllocated
    # one table: the plugins named once, a row of scores per node
    assert set(score) == {"node", "top", "score_plugins", "score_rows"}
    assert all(len(row[2]) == len(score["score_plugins"]) for row in score["score_rows"])
    scored = scored_nodes(score)
    assert [[row["node"], row["total"]] for row in scored[:3]] == top and len(scored) == 5
    for row in scored:  # the weighted per-plugin scores add up to the total
        assert sum(row["scores"].values()) == row["total"]
        assert {"NodeResourcesFit", "TaintToleration", "NodeResourcesBalancedAllocation"} <= set(
            row["scores"]
        )


def test_prefilter_rejection_counts_every_node_for_the_prefilter_plugin() -> None:
    snapshot = make_snapshot([small("a"), small("b")])
    cycle = cycle_on(snapshot)
    pod = make_pod("pinned", uid="uid-pinned", spec={"nodeName": "elsewhere"})
    outcome = cycle.run(pod)
    assert outcome.kind == UNSCHEDULABLE and outcome.diagnosis is not None
    counts = rejections_by_plugin(outcome.diagnosis, outcome.num_nodes)
    assert sum(counts.values()) == 2 and len(counts) == 1


def test_score_rows_are_the_per_plugin_scores_of_the_best_nodes() -> None:
    """The table gathered from the scores' matrix holds each plugin's weighted score as
    ``plugin_score_arrays`` has it, for the 10 best nodes, best first."""
    nodes = [
        make_node(f"n{i}", allocatable={"cpu": str(2 + i % 7), "memory": f"{4 + i % 5}Gi", "pods": "110"})
        for i in range(60)
    ]
    snapshot = make_snapshot(nodes)
    fw = build_frameworks(default_config(), snapshot)["default-scheduler"]
    pod = PodInfo(make_pod("p", requests={"cpu": "1"}))
    result = ScheduleAlgorithm(seed=1).schedule_pod(fw, CycleState(), pod)
    assert result.plugin_score_arrays is not None and result.scored_nodes is not None
    plugins, rows = score_rows(result)
    assert plugins == list(result.plugin_score_arrays) and len(rows) == 10
    position = {ni.name: i for i, ni in enumerate(result.scored_nodes)}
    for name, total, scores in rows:
        at = position[name]
        assert scores == [int(result.plugin_score_arrays[pl][at]) for pl in plugins]
        assert sum(scores) == total
    assert [total for _, total, _ in rows] == sorted((t for _, t, _ in rows), reverse=True)


def test_top_scores_of_a_single_feasible_node_is_empty() -> None:
    cycle = cycle_on(make_snapshot([small("only")]))
    outcome = cycle.run(make_pod("web", uid="uid-web", requests={"cpu": "1"}))
    assert outcome.kind == SCHEDULED and outcome.result is not None
    assert top_score_rows(outcome.result) == [] and score_rows(outcome.result) == ([], [])


def test_assume_outcomes() -> None:
    tracer = RecordingTracer()
    trace_assume(
        tracer, leased("web"), "n1", "uid-web:1:1", 9, AssumeReply(accepted=True), sent=1.0, rtt=0.003
    )
    rejected = AssumeReply(accepted=False, code="DoesNotFit", reason="node n1 is full")
    trace_assume(tracer, leased("web"), "n1", "uid-web:1:2", 9, rejected, sent=2.0, rtt=0.001)
    assert [(p, d) for p, d, _ in tracer.events] == [("assumed", 0.003), ("assume_conflict", 0.001)]
    assert tracer.events[1][2] == {
        "node": "n1",
        "placement": "uid-web:1:2",
        "generation": 9,
        "code": "DoesNotFit",
        "reason": "node n1 is full",
    }
    assert msgspec.json.encode(tracer.events[0][2])  # plain values only


def test_rejection_groups_are_bounded() -> None:
    nodes = [small(f"n{i:03}", labels={"zone": f"z{i % 20}"}) for i in range(60)]
    snapshot = make_snapshot(nodes)
    cycle = cycle_on(snapshot)
    selector = {"nodeSelector": {"zone": "elsewhere"}}
    outcome = cycle.run(make_pod("lost", uid="uid-lost", spec=selector))
    assert outcome.kind == UNSCHEDULABLE and outcome.diagnosis is not None
    (group,) = rejection_groups(outcome.diagnosis, outcome.num_nodes)
    assert group["plugin"] == "NodeAffinity" and group["count"] == 60
    assert group["reason"] == "node(s) didn't match Pod's node affinity/selector"
    assert group["nodes"] == [f"n{i:03}" for i in range(MAX_NAMES_PER_GROUP)]


def test_prefilter_rejection_is_one_group_without_names() -> None:
    snapshot = make_snapshot([small("a"), small("b")])
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    outcome = cycle_on(snapshot).run(make_pod("pinned", uid="uid-pinned", spec={"affinity": affinity}))
    assert outcome.diagnosis is not None
    assert len(outcome.diagnosis.node_to_status) == 0  # PreFilter ruled every node out
    (group,) = rejection_groups(outcome.diagnosis, outcome.num_nodes)
    assert group["count"] == 2 and group["nodes"] == [] and group["plugin"] == "PreFilter"


def test_top_score_rows_are_best_first_with_ties_in_scan_order() -> None:
    result = ScheduleResult("b", 5, 5)
    result.scored_nodes = [NodeInfo(make_node(n)) for n in "abcde"]
    result.score_totals = np.array([3, 7, 3, 7, 1], dtype=np.int64)
    assert top_score_rows(result, 4) == [1, 3, 0, 2]
    assert top_score_rows(result, 10) == [1, 3, 0, 2, 4]
    assert top_score_rows(result, 0) == []


@given(st.lists(st.integers(0, 6) | st.integers(0, 10_000), max_size=120), st.integers(0, 45))
def test_top_score_rows_are_the_head_of_a_stable_sort(totals: list[int], k: int) -> None:
    """Whatever the ties, the k best rows are the first k of a stable sort of the negated totals."""
    result = ScheduleResult("a", len(totals), len(totals))
    result.scored_nodes = [NodeInfo(make_node(f"n{i}")) for i in range(len(totals))]
    result.score_totals = np.array(totals, dtype=np.int64)
    assert top_score_rows(result, k) == sorted(range(len(totals)), key=lambda i: -totals[i])[:k]
