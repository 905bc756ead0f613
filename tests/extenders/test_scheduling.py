"""Scheduling cycles with HTTP extenders (``ScheduleAlgorithm.schedule_pod_async``): upstream's
``TestSchedulerWithExtenders``, ``TestFindNodesThatPassExtenders`` and the extender case of
``TestSchedulerSchedulePod``, plus scaling, concurrency, managed resources and ignorable extenders."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from ksched_scheduler.tracing import score_rows

from ksched.api.core import Node
from ksched.config import parse_config
from ksched.config.profile import build_frameworks
from ksched.config.types import Extender
from ksched.extenders import HTTPExtenders
from ksched.framework.algorithm import ScheduleAlgorithm, ScheduleResult, SchedulingError
from ksched.framework.cycle_state import CycleState
from ksched.framework.extender import EXTENDER_NAME
from ksched.framework.extender_calls import ExtenderEnqueueExtension, find_nodes_that_pass_extenders
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import Diagnosis, FitError
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.testing import container, make_node, make_pod, make_snapshot
from ksched.plugins.args.types import NodeResourcesFitArgs
from ksched.tracing.scores import score_table, scored_nodes
from tests.extenders.server import (
    OK,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    ExtenderServer,
    FakeExtender,
    Reply,
    error_predicate,
    error_prioritizer,
    false_predicate,
    favour,
    only,
    true_predicate,
)


# --- in-tree test plugins (upstream's tf.* fakes) ----------------------------------------------------
class TrueFilter:
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class FakeFilter:
    """Upstream ``tf.NewFakeFilterPlugin``: the listed nodes fail with the given code."""

    name = "FakeFilter"

    def __init__(self, codes: dict[str, Code]) -> None:
        self.codes = codes

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        code = self.codes.get(node.name)
        if code is None:
            return None
        return Status(code, f"injecting failure for pod {pod.pod.metadata.name}")


class EqualPrioritizer:
    name = "EqualPrioritizerPlugin"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 1


class Node2Prioritizer:
    name = "Node2Prioritizer"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 100 if node.name == "node2" else 10


class NumericMap:
    name = "NumericMap"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(node.name)


def framework(
    nodes: Sequence[Node], filters: Sequence[Any] = (), scores: Sequence[tuple[Any, int]] = ()
) -> Framework:
    fw = Framework("default-scheduler", make_snapshot(nodes))
    fw.set_plugins(PluginsByPoint(filter=list(filters), score=list(scores)))
    return fw


@asynccontextmanager
async def with_extenders(fw: Framework, configs: Sequence[Extender]) -> AsyncIterator[HTTPExtenders]:
    owner = HTTPExtenders(configs)
    fw.extenders = owner.extenders
    try:
        yield owner
    finally:
        await owner.close()


def serve_all(server: ExtenderServer, fakes: Sequence[FakeExtender]) -> list[Extender]:
    return [fake.config(server.serve(f"ext{i}", fake)) for i, fake in enumerate(fakes)]


async def schedule(fw: Framework, pod: Any = None, *, explain: bool = False, seed: int = 1) -> ScheduleResult:
    alg = ScheduleAlgorithm(seed=seed)
    return await alg.schedule_pod_async(fw, CycleState(), PodInfo(pod or make_pod("p")), explain=explain)


# --- upstream TestSchedulerWithExtenders ------------------------------------------------------------
W = tuple[str, int, int] | type[Exception]  # (suggested host, evaluated nodes, feasible nodes) or the error

WITH_EXTENDERS: list[tuple[str, list[Any], list[FakeExtender], list[str], W]] = [
    (
        "test 1",
        [],
        [FakeExtender(predicates=[true_predicate]), FakeExtender(predicates=[error_predicate])],
        ["node1", "node2"],
        SchedulingError,
    ),
    (
        "test 2",
        [],
        [FakeExtender(predicates=[true_predicate]), FakeExtender(predicates=[false_predicate])],
        ["node1", "node2"],
        FitError,
    ),
    (
        "test 3",
        [(EqualPrioritizer(), 1)],
        [FakeExtender(predicates=[true_predicate]), FakeExtender(predicates=[only("node1")])],
        ["node1", "node2"],
        ("node1", 2, 1),
    ),
    (
        "test 4",
        [],
        [FakeExtender(predicates=[only("node2")]), FakeExtender(predicates=[only("node1")])],
        ["node1", "node2"],
        FitError,
    ),
    (
        "test 5",
        [],
        [FakeExtender(predicates=[true_predicate], prioritizers=[(error_prioritizer, 10)], weight=1)],
        ["node1"],
        ("node1", 1, 1),
    ),
    (
        "test 6",
        [],
        [
            FakeExtender(predicates=[true_predicate], prioritizers=[(favour("node1"), 10)], weight=1),
            FakeExtender(predicates=[true_predicate], prioritizers=[(favour("node2"), 10)], weight=5),
        ],
        ["node1", "node2"],
        ("node2", 2, 2),
    ),
    (
        "test 7",
        [(Node2Prioritizer(), 20)],
        [FakeExtender(predicates=[true_predicate], prioritizers=[(favour("node1"), 10)], weight=1)],
        ["node1", "node2"],
        ("node2", 2, 2),
    ),
    (
        # not interested (the pod does not use its managed resource): never called, so its errors
        # cannot fail the cycle
        "test 8",
        [(Node2Prioritizer(), 1)],
        [
            FakeExtender(
                predicates=[error_predicate],
                prioritizers=[(error_prioritizer, 10)],
                managed_resources=["example.com/gpu"],
            )
        ],
        ["node1", "node2"],
        ("node2", 2, 2),
    ),
    (
        "test 9",
        [(EqualPrioritizer(), 1)],
        [
            FakeExtender(predicates=[error_predicate], ignorable=True),
            FakeExtender(predicates=[only("node1")]),
        ],
        ["node1", "node2"],
        ("node1", 2, 1),
    ),
    (
        "test 10 - no scoring, extender filters configured, multiple feasible nodes are evaluated",
        [],
        [FakeExtender(predicates=[true_predicate]), FakeExtender(predicates=[only("node1")])],
        ["node1", "node2"],
        ("node1", 2, 1),
    ),
    (
        "test 11 - no scoring, no prefilters or  extender filters configured, a single feasible node is "
        "evaluated",
        [],
        [FakeExtender(bind=True)],
        ["node1", "node2"],
        ("node1", 1, 1),
    ),
]


@pytest.mark.parametrize(
    ("name", "scores", "fakes", "nodes", "want"), WITH_EXTENDERS, ids=[c[0] for c in WITH_EXTENDERS]
)
async def test_scheduler_with_extenders(
    server: ExtenderServer,
    name: str,
    scores: list[Any],
    fakes: list[FakeExtender],
    nodes: list[str],
    want: W,
) -> None:
    fw = framework([make_node(n) for n in nodes], filters=[TrueFilter()], scores=scores)
    async with with_extenders(fw, serve_all(server, fakes)):
        if isinstance(want, type):
            with pytest.raises(want):
                await schedule(fw)
            return
        result = await schedule(fw)
    assert (result.suggested_host, result.evaluated_nodes, result.feasible_nodes) == want
    if name == "test 8":
        assert server.requests == []


async def test_erroring_extender_fails_the_attempt_with_its_reason(server: ExtenderServer) -> None:
    fw = framework([make_node("node1"), make_node("node2")], filters=[TrueFilter()])
    fakes = [FakeExtender(predicates=[true_predicate]), FakeExtender(predicates=[error_predicate])]
    async with with_extenders(fw, serve_all(server, fakes)):
        with pytest.raises(SchedulingError) as err:
            await schedule(fw)
    assert err.value.status.code == Code.ERROR
    assert err.value.status.message == "some error"  # the extender's text alone, as upstream's


async def test_unreachable_non_ignorable_extender_fails_the_attempt() -> None:
    fw = framework([make_node("node1"), make_node("node2")], filters=[TrueFilter()])
    config = Extender(url_prefix="http://127.0.0.1:9/ext", filter_verb="filter", http_timeout="2s")
    async with with_extenders(fw, [config]):
        with pytest.raises(SchedulingError, match=r'Post "http://127.0.0.1:9/ext/filter"'):
            await schedule(fw)


async def test_unreachable_ignorable_extender_is_skipped() -> None:
    fw = framework([make_node("node1"), make_node("node2")], filters=[TrueFilter()])
    config = Extender(url_prefix="http://127.0.0.1:9/ext", filter_verb="filter", ignorable=True)
    async with with_extenders(fw, [config]):
        result = await schedule(fw)
    assert result.feasible_nodes == 2


async def test_timing_out_ignorable_extender_is_skipped(server: ExtenderServer) -> None:
    slow = FakeExtender(predicates=[false_predicate], ignorable=True, delay=2.0)
    fw = framework([make_node("node1"), make_node("node2")], filters=[TrueFilter()])
    async with with_extenders(fw, [slow.config(server.serve("slow", slow), http_timeout="200ms")]):
        started = time.monotonic()
        result = await schedule(fw)
        assert time.monotonic() - started < 1.5
    assert result.feasible_nodes == 2


# --- upstream TestFindNodesThatPassExtenders ---------------------------------------------------------
def _by_name(verdicts: dict[str, str]) -> Any:
    return lambda pod, node: verdicts.get(node, UNRESOLVABLE)


ABSENT = Status.unresolvable("node(s) didn't satisfy plugin(s) [PreFilter]")
FIND_CASES: list[
    tuple[str, list[FakeExtender], list[str], dict[str, Status], list[str] | None, dict[str, Status]]
] = [
    ("error", [FakeExtender(predicates=[error_predicate])], ["a"], {}, None, {}),
    ("success", [FakeExtender(predicates=[true_predicate])], ["a"], {}, ["a"], {}),
    (
        "unschedulable",
        [FakeExtender(predicates=[_by_name({"a": OK, "b": UNSCHEDULABLE})])],
        ["a", "b"],
        {},
        ["a"],
        {"b": Status(Code.UNSCHEDULABLE, 'FakeExtender: node "b" failed')},
    ),
    (
        "unschedulable and unresolvable",
        [FakeExtender(predicates=[_by_name({"a": OK, "b": UNSCHEDULABLE})])],
        ["a", "b", "c"],
        {},
        ["a"],
        {
            "b": Status(Code.UNSCHEDULABLE, 'FakeExtender: node "b" failed'),
            "c": Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'FakeExtender: node "c" failed and unresolvable'
            ),
        },
    ),
    (
        "extender does not overwrite the previous statuses",
        [FakeExtender(predicates=[_by_name({"a": OK, "b": UNSCHEDULABLE})])],
        ["a", "b"],
        {"c": Status(Code.UNSCHEDULABLE, 'FakeFilterPlugin: node "c" failed')},
        ["a"],
        {
            "b": Status(Code.UNSCHEDULABLE, 'FakeExtender: node "b" failed'),
            "c": Status(Code.UNSCHEDULABLE, 'FakeFilterPlugin: node "c" failed'),
        },
    ),
    (
        "multiple extenders",
        [
            FakeExtender(predicates=[_by_name({"a": OK, "b": UNSCHEDULABLE})]),
            FakeExtender(predicates=[_by_name({"a": OK})]),
        ],
        ["a", "b", "c"],
        {},
        ["a"],
        {
            "b": Status(Code.UNSCHEDULABLE, 'FakeExtender: node "b" failed'),
            "c": Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'FakeExtender: node "c" failed and unresolvable'
            ),
        },
    ),
]


@pytest.mark.parametrize(
    ("name", "fakes", "nodes", "before", "want_nodes", "want_statuses"),
    FIND_CASES,
    ids=[c[0] for c in FIND_CASES],
)
async def test_find_nodes_that_pass_extenders(
    server: ExtenderServer,
    name: str,
    fakes: list[FakeExtender],
    nodes: list[str],
    before: dict[str, Status],
    want_nodes: list[str] | None,
    want_statuses: dict[str, Status],
) -> None:
    snap = make_snapshot([make_node(n) for n in nodes])
    diagnosis = Diagnosis()
    diagnosis.node_to_status.absent = ABSENT
    for n, st in before.items():
        diagnosis.node_to_status.set(n, st)
    owner = HTTPExtenders(serve_all(server, fakes))
    try:
        if want_nodes is None:
            with pytest.raises(Exception, match="some error"):
                await find_nodes_that_pass_extenders(
                    owner.extenders, make_pod("1"), list(snap.nodes), diagnosis
                )
            return
        got = await find_nodes_that_pass_extenders(
            owner.extenders, make_pod("1"), list(snap.nodes), diagnosis
        )
    finally:
        await owner.close()
    assert [ni.name for ni in got] == want_nodes
    assert diagnosis.node_to_status.statuses == want_statuses
    assert diagnosis.node_to_status.absent == ABSENT
    assert all(st.plugin == "" for n, st in diagnosis.node_to_status if n not in before)


# --- upstream TestSchedulerSchedulePod: "test with extender which filters out some Nodes" -----------
async def test_extender_which_filters_out_some_nodes(server: ExtenderServer) -> None:
    fw = framework(
        [make_node("1"), make_node("2"), make_node("3")],
        filters=[FakeFilter({"3": Code.UNSCHEDULABLE})],
        scores=[(NumericMap(), 1)],
    )
    fake = FakeExtender(predicates=[false_predicate])
    async with with_extenders(fw, serve_all(server, [fake])):
        with pytest.raises(FitError) as err:
            await schedule(fw, make_pod("test-filter", uid="test-filter"))
    diagnosis = err.value.diagnosis
    assert diagnosis.node_to_status.statuses == {
        "1": Status(Code.UNSCHEDULABLE, 'FakeExtender: node "1" failed'),
        "2": Status(Code.UNSCHEDULABLE, 'FakeExtender: node "2" failed'),
        "3": Status(Code.UNSCHEDULABLE, "injecting failure for pod test-filter", plugin="FakeFilter"),
    }
    assert diagnosis.unschedulable_plugins == {"FakeFilter", EXTENDER_NAME}
    assert diagnosis.extender_rejections == {"1": f"{server.url}/ext0", "2": f"{server.url}/ext0"}
    assert str(err.value) == (
        '0/3 nodes are available: 1 FakeExtender: node "1" failed, 1 FakeExtender: node "2" failed, '
        "1 injecting failure for pod test-filter."
    )


async def test_nodes_the_plugins_refused_keep_their_reasons_when_an_extender_refuses_the_rest(
    server: ExtenderServer,
) -> None:
    """The scheduler service's cycle (no ``explain``) with a vectorized in-tree filter: its search found
    a node, so it left the refused nodes a placeholder status; the extender refusing the node found
    must not leave the FitError's message and preemption without the in-tree reasons
    (``ksched differential --categories extenders --pipeline``, seed 101)."""
    small, big = {"cpu": "1", "memory": "1Gi", "pods": "10"}, {"cpu": "8", "memory": "8Gi", "pods": "10"}
    nodes = [make_node("node1", allocatable=small), make_node("node2", allocatable=big)]
    snapshot = make_snapshot(nodes)
    fw = build_frameworks(parse_config(CONFIG), snapshot)["default-scheduler"]
    fake = FakeExtender(predicates=[false_predicate])
    pod = make_pod("p", containers=[container(requests={"cpu": "2"})])
    async with with_extenders(fw, serve_all(server, [fake])):
        with pytest.raises(FitError) as err:
            await ScheduleAlgorithm(seed=1).schedule_pod_async(fw, CycleState(), PodInfo(pod))
    statuses = err.value.diagnosis.node_to_status.statuses
    assert statuses["node1"].reasons == ("Insufficient cpu",)
    assert (
        str(err.value) == '0/2 nodes are available: 1 FakeExtender: node "node2" failed, 1 Insufficient cpu.'
    )


# --- scores -------------------------------------------------------------------------------------------
async def test_extender_scores_are_scaled_and_weighted_and_reported_under_its_name(
    server: ExtenderServer,
) -> None:
    fw = framework(
        [make_node("node1"), make_node("node2")], filters=[TrueFilter()], scores=[(EqualPrioritizer(), 1)]
    )
    fake = FakeExtender(prioritizers=[(favour("node2"), 1)], weight=3)
    configs = serve_all(server, [fake])
    async with with_extenders(fw, configs):
        result = await schedule(fw, explain=True)
    name = configs[0].url_prefix
    # score * weight * (MaxNodeScore / MaxExtenderPriority) = s * 3 * 10
    assert result.scores == {
        "node1": {"EqualPrioritizerPlugin": 1, name: 30},
        "node2": {"EqualPrioritizerPlugin": 1, name: 300},
    }
    assert result.totals == {"node1": 31, "node2": 301}
    assert result.suggested_host == "node2"
    assert scored_nodes(score_table(*score_rows(result))) == [  # what the scheduler's trace reports
        {"node": "node2", "total": 301, "scores": {"EqualPrioritizerPlugin": 1, name: 300}},
        {"node": "node1", "total": 31, "scores": {"EqualPrioritizerPlugin": 1, name: 30}},
    ]


async def test_prioritize_calls_run_concurrently(server: ExtenderServer) -> None:
    fw = framework([make_node("node1"), make_node("node2")], filters=[TrueFilter()])
    fakes = [FakeExtender(prioritizers=[(favour("node1"), 1)], weight=1, delay=0.5) for _ in range(3)]
    async with with_extenders(fw, serve_all(server, fakes)):
        result = await schedule(fw)
    assert result.suggested_host == "node1"
    assert server.most_in_flight == 3  # each call's 0.5 s reply under way while the others were


async def test_prioritize_errors_are_ignored(server: ExtenderServer) -> None:
    fw = framework(
        [make_node("node1"), make_node("node2")], filters=[TrueFilter()], scores=[(Node2Prioritizer(), 1)]
    )
    server.routes["/bad/prioritize"] = lambda body: Reply("down", status=503)
    bad = Extender(url_prefix=f"{server.url}/bad", prioritize_verb="prioritize", weight=100)
    async with with_extenders(fw, [bad]):
        result = await schedule(fw, explain=True)
    assert result.suggested_host == "node2"
    assert result.totals == {"node1": 10, "node2": 100}
    assert server.paths() == ["/bad/prioritize"]


# --- managed resources and nominated nodes -------------------------------------------------------------
async def test_extender_only_sees_pods_using_its_managed_resources(server: ExtenderServer) -> None:
    fw = framework([make_node("node1"), make_node("node2")], filters=[TrueFilter()])
    fake = FakeExtender(predicates=[only("node2")], managed_resources=["example.com/gpu"])
    async with with_extenders(fw, serve_all(server, [fake])):
        plain = await schedule(fw, make_pod("plain"))
        gpu = make_pod("gpu", containers=[container(requests={"example.com/gpu": "1"})])
        with_gpu = await schedule(fw, gpu)
    assert plain.feasible_nodes == 2
    assert (with_gpu.suggested_host, with_gpu.feasible_nodes) == ("node2", 1)
    assert server.paths() == ["/ext0/filter"]
    assert server.requests[0].body["Pod"]["metadata"]["name"] == "gpu"


async def test_nominated_node_must_pass_the_extenders_too(server: ExtenderServer) -> None:
    fw = framework([make_node("node1"), make_node("node2"), make_node("node3")], filters=[TrueFilter()])
    fake = FakeExtender(predicates=[only("node3")], node_cache_capable=True)
    pod = make_pod("p", status={"nominatedNodeName": "node1"})
    async with with_extenders(fw, serve_all(server, [fake])):
        result = await schedule(fw, pod)
    assert result.suggested_host == "node3"
    names = [r.body["NodeNames"] for r in server.requests]
    assert names[0] == ["node1"]  # the nominated node first, then the search
    assert sorted(names[1]) == ["node1", "node2", "node3"]


async def test_nominated_node_passing_the_extenders_is_taken(server: ExtenderServer) -> None:
    fw = framework(
        [make_node("node1"), make_node("node2")], filters=[TrueFilter()], scores=[(Node2Prioritizer(), 1)]
    )
    fake = FakeExtender(predicates=[true_predicate], node_cache_capable=True)
    async with with_extenders(fw, serve_all(server, [fake])):
        result = await schedule(fw, make_pod("p", status={"nominatedNodeName": "node1"}))
    assert (result.suggested_host, result.feasible_nodes) == ("node1", 1)
    assert len(server.requests) == 1


async def test_without_extenders_the_async_path_is_the_sync_one() -> None:
    fw = framework(
        [make_node("1"), make_node("2"), make_node("3")], filters=[TrueFilter()], scores=[(NumericMap(), 1)]
    )
    sync = ScheduleAlgorithm(seed=3).schedule_pod(fw, CycleState(), PodInfo(make_pod("p")), explain=True)
    via_async = await schedule(fw, explain=True, seed=3)
    assert (via_async.suggested_host, via_async.totals, via_async.scores) == (
        sync.suggested_host,
        sync.totals,
        sync.scores,
    )


async def test_node_removed_while_the_extender_answers_is_dropped(server: ExtenderServer) -> None:
    fw = framework([make_node("node1"), make_node("node2"), make_node("node3")], filters=[TrueFilter()])
    snapshot: Snapshot = fw.snapshot

    def remove_node1_then_keep_all(body: Any) -> Reply:
        snapshot.remove_node("node1")  # the snapshot moves on while the extender thinks
        return Reply({"NodeNames": body["NodeNames"]})

    server.routes["/ext/filter"] = remove_node1_then_keep_all
    config = Extender(url_prefix=f"{server.url}/ext", filter_verb="filter", node_cache_capable=True)
    async with with_extenders(fw, [config]):
        result = await schedule(fw, explain=True)
    assert result.suggested_host in {"node2", "node3"}
    assert result.feasible_nodes == 2


# --- configuration wiring ------------------------------------------------------------------------------
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: http://127.0.0.1:1/gpu
  filterVerb: filter
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
  - name: example.com/fpga
"""


def test_extenders_make_every_event_requeue_and_ignored_resources_reach_node_resources_fit() -> None:
    config = parse_config(CONFIG)
    frameworks = build_frameworks(config, Snapshot())
    fw = frameworks["default-scheduler"]
    first = fw.plugins.enqueue_extensions[0]
    assert isinstance(first, ExtenderEnqueueExtension) and first.name == EXTENDER_NAME
    (registered,) = first.events_to_register()
    assert (registered.event.resource, registered.hint) == ("*", None)
    args = next(c.args for c in config.profiles[0].plugin_config if c.name == "NodeResourcesFit")
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.ignored_resources == ["example.com/gpu"]


def test_ignored_resources_need_node_resources_fit_args() -> None:
    text = CONFIG + (
        "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n      disabled:\n"
        "      - name: NodeResourcesFit\n"
    )
    config = parse_config(text)
    with pytest.raises(Exception, match="can't find NodeResourcesFitArgs in plugin config"):
        build_frameworks(config, Snapshot())


def test_no_extenders_no_enqueue_extension() -> None:
    fw = build_frameworks(
        parse_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"),
        Snapshot(),
    )["default-scheduler"]
    assert not any(isinstance(e, ExtenderEnqueueExtension) for e in fw.plugins.enqueue_extensions)
