"""scheduler_plugin_execution_duration_seconds: recorded per plugin and extension point on sampled cycles
only, batch calls counted once per node, upstream's buckets; the histogram that takes multiplicities."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from ksched_scheduler.cycle import SchedulingCycle

from ksched.api.core import Node
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.metrics.plugin_metrics import (
    PLUGIN_DURATION_BUCKETS,
    SAMPLE_PERCENT_ENV,
    CycleSampler,
    sample_percent,
)

Runs = Counter[tuple[str, str, str]]


class Recorder:
    """A plugin observer that keeps run counts and the seconds reported."""

    def __init__(self) -> None:
        self.runs: Runs = Counter()
        self.seconds: list[float] = []

    def __call__(self, plugin: str, point: str, status: str, seconds: float, runs: int) -> None:
        self.runs[plugin, point, status] += runs
        self.seconds.append(seconds)


def cluster_nodes() -> list[Node]:
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return [
        make_node("big-1", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"}),
        make_node("big-2", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"}),
        make_node("small", allocatable={"cpu": "3", "memory": "16Gi", "pods": "110"}),
        make_node("tainted", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"}, taints=taint),
    ]


def default_framework() -> tuple[Framework, Recorder]:
    busy = make_pod("busy", requests={"cpu": "2"}, node_name="small")  # 1 cpu left: Unschedulable
    snapshot = make_snapshot(cluster_nodes(), [busy])
    fw = build_frameworks(default_config(), snapshot)["default-scheduler"]
    recorder = Recorder()
    fw.observe_plugin = recorder
    return fw, recorder


def schedule(fw: Framework, *, sampled: bool) -> str:
    state = CycleState()
    state.record_plugin_metrics = sampled
    pod = PodInfo(make_pod("p", requests={"cpu": "2"}))
    return ScheduleAlgorithm(seed=1).schedule_pod(fw, state, pod).suggested_host


def test_unsampled_cycles_record_nothing() -> None:
    fw, recorder = default_framework()
    assert schedule(fw, sampled=False).startswith("big-")
    assert recorder.runs == Counter()


def test_sampled_cycle_records_each_plugin_once_per_run_and_node() -> None:
    fw, recorder = default_framework()
    schedule(fw, sampled=True)
    runs = recorder.runs
    # PreFilter: one run per plugin; those with nothing to do say Skip
    assert runs["NodeResourcesFit", "PreFilter", "Success"] == 1
    assert runs["InterPodAffinity", "PreFilter", "Skip"] == 1
    # Filter: one run per node examined, by the code each node got
    assert runs["NodeUnschedulable", "Filter", "Success"] == 4
    assert runs["TaintToleration", "Filter", "Success"] == 3
    assert runs["TaintToleration", "Filter", "UnschedulableAndUnresolvable"] == 1
    assert runs["NodeResourcesFit", "Filter", "Success"] == 2  # after TaintToleration: 3 nodes left
    assert runs["NodeResourcesFit", "Filter", "Unschedulable"] == 1
    # Score: one run per feasible node; Normalize once per plugin that has it
    assert runs["NodeResourcesFit", "Score", "Success"] == 2
    assert runs["TaintToleration", "PreScore", "Success"] == 1
    assert runs["TaintToleration", "ScoreExtensionNormalize", "Success"] == 1
    assert {point for _, point, _ in runs} == {
        "PreFilter",
        "Filter",
        "PreScore",
        "Score",
        "ScoreExtensionNormalize",
    }
    assert all(0 <= s < 1 for s in recorder.seconds)


class NodePicker:
    """A per-node Filter plugin (no batch form) that rejects the nodes it is told to."""

    name = "NodePicker"

    def __init__(self, reject: dict[str, Code]) -> None:
        self.reject = reject

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        code = self.reject.get(node.name)
        return Status(code, "picked out") if code is not None else None


def test_per_node_filter_plugin_records_each_node_by_code() -> None:
    snapshot = make_snapshot(cluster_nodes())
    fw = Framework("default-scheduler", snapshot)
    fw.set_plugins(
        PluginsByPoint(
            filter=[NodePicker({"small": Code.UNSCHEDULABLE, "tainted": Code.UNSCHEDULABLE_AND_UNRESOLVABLE})]
        )
    )
    recorder = Recorder()
    fw.observe_plugin = recorder
    state = CycleState()
    state.record_plugin_metrics = True
    rows = fw.filter_rows(state, PodInfo(make_pod("p")), snapshot_rows(len(snapshot.nodes)))
    assert len(rows.feasible) == 2
    assert recorder.runs == Counter(
        {
            ("NodePicker", "Filter", "Success"): 2,
            ("NodePicker", "Filter", "Unschedulable"): 1,
            ("NodePicker", "Filter", "UnschedulableAndUnresolvable"): 1,
        }
    )
    # the per-node path (nominated pods, preemption) records one run per call
    state_2 = CycleState()
    state_2.record_plugin_metrics = True
    fw.run_filter_plugins(state_2, PodInfo(make_pod("p")), snapshot.nodes[2])
    assert recorder.runs["NodePicker", "Filter", "Unschedulable"] == 2


def snapshot_rows(n: int) -> Rows:
    return np.arange(n, dtype=np.intp)


class BindingCycle:
    """Reserve, Permit, PreBind, Bind and PostBind in one plugin."""

    name = "Everything"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT, "hold on"), 5.0

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.skip()

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None


@pytest.mark.parametrize("sampled", [True, False])
async def test_reserve_permit_and_binding_points(sampled: bool) -> None:
    plugin = BindingCycle()
    fw = Framework("default-scheduler", make_snapshot([]))
    fw.set_plugins(
        PluginsByPoint(
            reserve=[plugin],
            permit=[plugin],
            pre_bind=[plugin],
            bind=[plugin],
            post_bind=[plugin],
        )
    )
    recorder = Recorder()
    fw.observe_plugin = recorder
    state = CycleState()
    state.record_plugin_metrics = sampled
    pod = PodInfo(make_pod("p"))
    assert fw.run_reserve_plugins_reserve(state, pod, "n") is None
    assert fw.run_permit_plugins(state, pod, "n")[0] is not None
    fw.run_reserve_plugins_unreserve(state, pod, "n")
    assert await fw.run_pre_bind_plugins(state, pod, "n") is None
    assert await fw.run_bind_plugins(state, pod, "n") is None
    await fw.run_post_bind_plugins(state, pod, "n")
    expected = {
        ("Everything", "Reserve", "Success"): 1,
        ("Everything", "Permit", "Wait"): 1,
        ("Everything", "Unreserve", "Success"): 1,
        ("Everything", "PreBind", "Skip"): 1,
        ("Everything", "Bind", "Success"): 1,
        ("Everything", "PostBind", "Success"): 1,
    }
    assert recorder.runs == (Counter(expected) if sampled else Counter())


def test_scheduling_cycle_samples_with_its_sampler() -> None:
    snapshot = make_snapshot(cluster_nodes())
    frameworks = build_frameworks(default_config(), snapshot)
    recorder = Recorder()
    frameworks["default-scheduler"].observe_plugin = recorder
    draws = iter([False, True])
    cycle = SchedulingCycle(frameworks, snapshot, ScheduleAlgorithm(seed=1), Nominator(), lambda: next(draws))
    cycle.run(make_pod("a", requests={"cpu": "1"}))
    assert recorder.runs == Counter()
    cycle.run(make_pod("b", requests={"cpu": "1"}))
    assert recorder.runs["NodeResourcesFit", "Reserve", "Success"] == 0  # no Reserve plugin there
    assert recorder.runs["NodeResourcesFit", "PreFilter", "Success"] == 1


def test_upstream_buckets() -> None:
    assert len(PLUGIN_DURATION_BUCKETS) == 20
    assert PLUGIN_DURATION_BUCKETS[0] == pytest.approx(0.00001)
    assert PLUGIN_DURATION_BUCKETS[-1] == pytest.approx(0.00001 * 1.5**19)  # ~22 ms


def test_sample_percent_from_the_environment() -> None:
    assert sample_percent({}) == 10
    assert sample_percent({SAMPLE_PERCENT_ENV: "100"}) == 100
    with pytest.raises(ValueError, match=SAMPLE_PERCENT_ENV):
        sample_percent({SAMPLE_PERCENT_ENV: "101"})
    assert not any(CycleSampler(0)() for _ in range(200))
    assert all(CycleSampler(100)() for _ in range(200))
    draws = [CycleSampler(10, seed=3)() for _ in range(1)]
    sampler = CycleSampler(10, seed=3)
    hits = sum(sampler() for _ in range(20_000))
    assert 1_700 < hits < 2_300, hits
    assert draws == [CycleSampler(10, seed=3)()]
