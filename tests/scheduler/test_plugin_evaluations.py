"""scheduler_plugin_evaluation_total: every PreFilter, Filter, PreScore and Score call counted on every
cycle (Filter and Score once per node evaluated; Skip and skipped plugins not), and its collector."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.evaluations import PluginEvaluations
from ksched.framework.interfaces import BoolArray, Rows
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import FitError
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.metrics.framework_metrics import PluginEvaluationCollector
from tests.scheduler.test_plugin_metrics import cluster_nodes


def counts(fw: Framework, point: str) -> dict[str, int]:
    return {plugin: n for plugin, p, n in fw.evaluations.totals() if p == point}


def default_framework() -> Framework:
    busy = make_pod("busy", requests={"cpu": "2"}, node_name="small")  # 1 cpu left: NodeResourcesFit rejects
    return build_frameworks(default_config(), make_snapshot(cluster_nodes(), [busy]))["default-scheduler"]


def schedule(fw: Framework, name: str) -> CycleState:
    state = CycleState()  # not sampled: evaluations are counted on every cycle
    result = ScheduleAlgorithm(seed=1).schedule_pod(fw, state, PodInfo(make_pod(name, requests={"cpu": "2"})))
    assert result.suggested_host in ("big-1", "big-2")
    return state


def test_every_configured_plugin_starts_at_zero() -> None:
    fw = default_framework()
    assert counts(fw, "PreFilter")["NodeResourcesFit"] == 0
    assert counts(fw, "Filter")["TaintToleration"] == 0
    assert counts(fw, "PreScore")["TaintToleration"] == 0
    assert counts(fw, "Score")["ImageLocality"] == 0
    assert all(n == 0 for _, _, n in fw.evaluations.totals())


def test_one_cycle_counts_prefilter_once_and_filter_per_node() -> None:
    fw = default_framework()
    state = schedule(fw, "p")
    pre_filter = counts(fw, "PreFilter")
    assert pre_filter["NodeResourcesFit"] == 1
    # PreFilter plugins that returned Skip are not counted (upstream counts only non-Skip statuses)
    assert "InterPodAffinity" in state.skip_filter_plugins
    assert pre_filter["InterPodAffinity"] == 0
    filters = counts(fw, "Filter")
    # 4 nodes; TaintToleration rejects "tainted", so NodeResourcesFit sees 3 (and rejects "small")
    assert filters["NodeUnschedulable"] == 4
    assert filters["NodeName"] == 4
    assert filters["TaintToleration"] == 4
    assert filters["NodeResourcesFit"] == 3
    # Filter plugins skipped by their PreFilter are not called, so not counted
    for plugin in state.skip_filter_plugins:
        assert filters.get(plugin, 0) == 0, plugin
    pre_score = counts(fw, "PreScore")
    assert pre_score["TaintToleration"] == 1
    assert pre_score["NodeAffinity"] == 0  # returned Skip
    scores = counts(fw, "Score")
    # two feasible nodes scored by every Score plugin not skipped at PreScore
    assert scores["NodeResourcesFit"] == 2
    assert scores["TaintToleration"] == 2
    assert "NodeAffinity" in state.skip_score_plugins
    for plugin in state.skip_score_plugins:
        assert scores[plugin] == 0, plugin


def test_every_cycle_adds_up() -> None:
    fw = default_framework()
    schedule(fw, "a")
    once = fw.evaluations.totals()
    schedule(fw, "b")
    twice = fw.evaluations.totals()
    assert [(p, pt, 2 * n) for p, pt, n in once] == twice


def test_an_unschedulable_pod_counts_filters_but_no_scores() -> None:
    fw = default_framework()
    state = CycleState()
    pod = PodInfo(make_pod("huge", requests={"cpu": "64"}))
    with pytest.raises(FitError):  # no node has 64 cpus
        ScheduleAlgorithm(seed=1).schedule_pod(fw, state, pod)
    assert counts(fw, "PreFilter")["NodeResourcesFit"] == 1
    assert counts(fw, "Filter")["NodeResourcesFit"] == 3  # tried on every node TaintToleration let through
    assert sum(counts(fw, "Score").values()) == 0  # nothing feasible: no scoring


class NodePicker:
    """A per-node Filter plugin (no batch form) that rejects the nodes it is told to."""

    name = "NodePicker"

    def __init__(self, reject: set[str]) -> None:
        self.reject = reject
        self.calls = 0

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls += 1
        return Status(Code.UNSCHEDULABLE, "picked out") if node.name in self.reject else None


class BatchPicker(NodePicker):
    """The same with a batch form: one call judges many nodes."""

    name = "BatchPicker"

    def filter_batch(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, rows: Rows) -> BoolArray:
        return np.array([snapshot.nodes[r].name not in self.reject for r in rows.tolist()], dtype=np.bool_)


class Last:
    """A Filter plugin after the picker: it sees only the nodes the picker let through."""

    name = "Last"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


def picker_framework(picker: NodePicker, nominator: Nominator | None = None) -> Framework:
    fw = Framework("p1", make_snapshot(cluster_nodes()), nominator=nominator)
    fw.set_plugins(PluginsByPoint(filter=[picker, Last()]))
    return fw


def test_per_node_filter_rows_count_each_node_called() -> None:
    picker = NodePicker({"small", "tainted"})
    fw = picker_framework(picker)
    outcome = fw.filter_rows(CycleState(), PodInfo(make_pod("p")), np.arange(4, dtype=np.intp))
    assert len(outcome.feasible) == 2
    assert picker.calls == 4
    assert counts(fw, "Filter") == {"NodePicker": 4, "Last": 2}


def test_batch_filter_adds_the_rows_it_evaluated() -> None:
    picker = BatchPicker({"small", "tainted"})
    fw = picker_framework(picker)
    state, pod = CycleState(), PodInfo(make_pod("p"))
    outcome = fw.filter_rows(state, pod, np.arange(4, dtype=np.intp))
    assert len(outcome.feasible) == 2
    assert picker.calls == 0
    # asking a rejected node's status for the diagnosis calls ``filter`` again: not an evaluation
    assert fw.status_for(state, pod, outcome, 2).code == Code.UNSCHEDULABLE
    assert picker.calls == 1
    assert counts(fw, "Filter") == {"BatchPicker": 4, "Last": 2}
    fw.filter_rows(state, pod, np.array([0, 2], dtype=np.intp))
    assert counts(fw, "Filter") == {"BatchPicker": 6, "Last": 3}


def test_nominated_pods_filter_the_node_twice() -> None:
    nominator = Nominator()
    nominator.add(PodInfo(make_pod("nominated", priority=10)), "big-1")
    fw = picker_framework(NodePicker(set()), nominator)
    node = fw.snapshot.node_map["big-1"]
    assert fw.run_filter_plugins_with_nominated_pods(CycleState(), PodInfo(make_pod("p")), node) is None
    # once with the nominated pod on the node, once without it (upstream's two passes)
    assert counts(fw, "Filter") == {"NodePicker": 2, "Last": 2}


def test_collector_exports_the_tracked_counts_by_profile() -> None:
    a, b, other = PluginEvaluations(), PluginEvaluations(), PluginEvaluations()
    a.seed(["Fit"], ["Fit", "Taint"], [], ["Fit"])
    a.filter["Fit"] += 40
    a.score["Fit"] += 7
    b.filter["Fit"] += 2  # a second scheduler of the same profile in this process
    other.pre_filter["Fit"] += 1
    collector = PluginEvaluationCollector()
    collector.track("default-scheduler", a)
    collector.track("default-scheduler", a)  # tracked once
    collector.track("default-scheduler", b)
    collector.track("batch", other)
    assert collector.values()[("Fit", "Filter", "default-scheduler")] == 42
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    assert "# TYPE scheduler_plugin_evaluation_total counter" in text

    def series(point: str, plugin: str, profile: str) -> str:
        labels = f'extension_point="{point}",plugin="{plugin}",profile="{profile}"'
        return "scheduler_plugin_evaluation_total{" + labels + "}"

    assert f"{series('Filter', 'Fit', 'default-scheduler')} 42.0" in text
    assert f"{series('Filter', 'Taint', 'default-scheduler')} 0.0" in text
    assert f"{series('PreFilter', 'Fit', 'batch')} 1.0" in text
    assert f"{series('Score', 'Fit', 'default-scheduler')} 7.0" in text


def test_a_search_that_stops_early_counts_only_the_nodes_it_needed() -> None:
    # 300 nodes, every third tainted: the search wants 144 feasible nodes (48 %); ksched filters a chunk
    # of 288 rows at once, and takes back the evaluations of the rows past the 144th feasible node
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [
        make_node(f"n-{i:03d}", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"}, taints=taint)
        if i % 3 == 0
        else make_node(f"n-{i:03d}", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"})
        for i in range(300)
    ]
    fw = build_frameworks(default_config(), make_snapshot(nodes))["default-scheduler"]
    state = CycleState()
    result = ScheduleAlgorithm(seed=1).schedule_pod(fw, state, PodInfo(make_pod("p", requests={"cpu": "1"})))
    assert result.feasible_nodes == 144
    examined = result.evaluated_nodes  # feasible + rejected, as upstream's processed nodes
    assert examined == 144 + 72  # the 144th feasible node is n-215: 72 tainted nodes before it
    filters = counts(fw, "Filter")
    assert filters["NodeUnschedulable"] == examined
    assert filters["TaintToleration"] == examined
    assert filters["NodeResourcesFit"] == 144  # the tainted ones never reached it
    assert counts(fw, "Score")["NodeResourcesFit"] == 144


def test_a_node_with_nominated_pods_past_the_cut_stays_counted() -> None:
    nodes = [
        make_node(f"n-{i:03d}", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"}) for i in range(300)
    ]
    nominator = Nominator()
    nominator.add(PodInfo(make_pod("nominated", priority=10, requests={"cpu": "1"})), "n-200")
    fw = build_frameworks(default_config(), make_snapshot(nodes), nominator=nominator)["default-scheduler"]
    result = ScheduleAlgorithm(seed=1).schedule_pod(
        fw, CycleState(), PodInfo(make_pod("p", requests={"cpu": "1"}))
    )
    assert result.evaluated_nodes == 144  # n-000 .. n-143
    # the 144 nodes kept, plus n-200 (past the cut) filtered twice: with its nominated pod and without
    assert counts(fw, "Filter")["NodeResourcesFit"] == 144 + 2
