"""Extender Bind (upstream ``TestSchedulerBinding``) and ProcessPreemption inside DefaultPreemption
(the extender cases of upstream's ``TestPreempt``), over a real extender HTTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from ksched.api.core import Pod
from ksched.config.types import Extender
from ksched.extenders import HTTPExtenders
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.testing import container, make_pod
from ksched.plugins.defaultpreemption.testing import (
    HIGH,
    LARGE,
    LOW,
    MID,
    SMALL,
    VERY_LARGE,
    fit_framework,
    node,
    plugin_for,
    pod,
    prefiltered,
)
from tests.extenders.server import (
    ExtenderServer,
    FakeExtender,
    Reply,
    error_predicate,
    false_predicate,
    only,
    true_predicate,
)


@asynccontextmanager
async def extenders_of(fw: Framework, configs: Sequence[Extender]) -> AsyncIterator[None]:
    owner = HTTPExtenders(configs)
    fw.extenders = owner.extenders
    try:
        yield
    finally:
        await owner.close()


# --- Bind -----------------------------------------------------------------------------------------
class RecordingBinder:
    """Stands for DefaultBinder: records the pods it binds."""

    name = "DefaultBinder"

    def __init__(self) -> None:
        self.bound: list[str] = []

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.bound.append(pod.name)
        return None


def gpu_pod(name: str, resource: str) -> Pod:
    return make_pod(name, containers=[container(requests={resource: "1"})])


BINDING_CASES = [
    # upstream's fakeExtender is interested in one pod by name; here by a managed resource it requests
    ("the extender is not a binder", "pod0", [FakeExtender(managed_resources=["example.com/pod0"])], -1),
    (
        "one of the extenders is a binder and interested in pod",
        "pod0",
        [
            FakeExtender(managed_resources=["example.com/pod0"]),
            FakeExtender(bind=True, managed_resources=["example.com/pod0"]),
        ],
        1,
    ),
    (
        "one of the extenders is a binder, but not interested in pod",
        "pod1",
        [
            FakeExtender(managed_resources=["example.com/pod1"]),
            FakeExtender(bind=True, managed_resources=["example.com/pod0"]),
        ],
        -1,
    ),
    (
        "ignore when extender bind failed",
        "pod1",
        [
            FakeExtender(
                bind=True, bind_error="bind error", ignorable=True, managed_resources=["example.com/pod1"]
            )
        ],
        -1,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod_name", "fakes", "want_binder"), BINDING_CASES, ids=[c[0] for c in BINDING_CASES]
)
async def test_scheduler_binding(
    server: ExtenderServer, name: str, pod_name: str, fakes: list[FakeExtender], want_binder: int
) -> None:
    binder = RecordingBinder()
    fw = Framework("default-scheduler", Snapshot())
    fw.set_plugins(PluginsByPoint(bind=[binder]))
    configs = [f.config(server.serve(f"ext{i}", f)) for i, f in enumerate(fakes)]
    async with extenders_of(fw, configs):
        status = await fw.run_binding(
            CycleState(), PodInfo(gpu_pod(pod_name, f"example.com/{pod_name}")), "node"
        )
    assert status is None
    assert binder.bound == ([pod_name] if want_binder == -1 else [])
    for i, fake in enumerate(fakes):
        assert bool(fake.bound) == (i == want_binder), i


async def test_failing_extender_binder_fails_the_binding(server: ExtenderServer) -> None:
    binder = RecordingBinder()
    fw = Framework("default-scheduler", Snapshot())
    fw.set_plugins(PluginsByPoint(bind=[binder]))
    fake = FakeExtender(bind=True, bind_status=503)
    async with extenders_of(fw, [fake.config(server.serve("ext", fake))]):
        status = await fw.run_binding(CycleState(), PodInfo(make_pod("p")), "node")
    assert status is not None and status.code == Code.ERROR
    assert status.message == f"failed bind with extender at URL {server.url}/ext/bind, code 503"
    assert binder.bound == []


# --- preemption (upstream TestPreempt, the extender cases) --------------------------------------------
def preemptor() -> Pod:
    return pod("p", priority=HIGH, requests=VERY_LARGE, preemption_policy="PreemptLowerPriority")


PREEMPT_CASES: list[tuple[str, list[Pod], list[str], list[FakeExtender], str | None, list[str]]] = [
    (
        "Scheduler extenders allow only node1, otherwise node3 would have been chosen",
        [
            pod("p1.1", node="node1", priority=MID, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node3", priority=MID, requests=LARGE),
        ],
        ["node1", "node2", "node3"],
        [
            FakeExtender(predicates=[true_predicate], preempt=True),
            FakeExtender(predicates=[only("node1")], preempt=True),
        ],
        "node1",
        ["p1.1", "p1.2"],
    ),
    (
        "Scheduler extenders do not allow any preemption",
        [
            pod("p1.1", node="node1", priority=MID, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node2", priority=MID, requests=LARGE),
        ],
        ["node1", "node2", "node3"],
        [FakeExtender(predicates=[false_predicate], preempt=True)],
        None,
        [],
    ),
    (
        "One scheduler extender allows only node1, the other returns error but ignorable. "
        "Only node1 would be chosen",
        [
            pod("p1.1", node="node1", priority=MID, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node2", priority=MID, requests=LARGE),
        ],
        ["node1", "node2", "node3"],
        [
            FakeExtender(predicates=[error_predicate], ignorable=True, preempt=True),
            FakeExtender(predicates=[only("node1")], preempt=True),
        ],
        "node1",
        ["p1.1", "p1.2"],
    ),
    (
        "One scheduler extender allows only node1, but it is not interested in given pod, "
        "otherwise node1 would have been chosen",
        [
            pod("p1.1", node="node1", priority=MID, requests=SMALL),
            pod("p1.2", node="node1", priority=LOW, requests=SMALL),
            pod("p2.1", node="node2", priority=MID, requests=LARGE),
        ],
        ["node1", "node2"],
        [
            FakeExtender(predicates=[only("node1")], preempt=True, managed_resources=["example.com/gpu"]),
            FakeExtender(predicates=[true_predicate], preempt=True),
        ],
        # sum of priorities of all victims on node1 is larger than node2, node2 is chosen
        "node2",
        ["p2.1"],
    ),
]


def unschedulable(*names: str) -> NodeToStatus:
    out = NodeToStatus()
    for n in names:
        out.set(n, Status.unschedulable())
    return out


@pytest.mark.parametrize(
    ("name", "pods", "node_names", "fakes", "want_node", "want_victims"),
    PREEMPT_CASES,
    ids=[c[0] for c in PREEMPT_CASES],
)
async def test_preempt_with_extenders(
    server: ExtenderServer,
    name: str,
    pods: list[Pod],
    node_names: list[str],
    fakes: list[FakeExtender],
    want_node: str | None,
    want_victims: list[str],
) -> None:
    fw = fit_framework([node(n, VERY_LARGE) for n in node_names], pods)
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, preemptor())
    configs = [f.config(server.serve(f"ext{i}", f)) for i, f in enumerate(fakes)]
    async with extenders_of(fw, configs):
        result, status = await pl.preempt_async(state, pi, unschedulable(*node_names))
    assert status is None or status.is_rejected(), status
    if want_node is None:
        assert result is None
        assert status is not None and status.message == "no candidate node for preemption"
        return
    assert result is not None and result.nominated_node_name == want_node
    assert sorted(v.name for v in result.victims) == want_victims


async def test_extender_may_change_the_victims(server: ExtenderServer) -> None:
    pods = [
        pod("p1.1", node="node1", priority=MID, requests=SMALL),
        pod("p1.2", node="node1", priority=LOW, requests=SMALL),
        pod("p1.3", node="node1", priority=LOW, requests=SMALL),
    ]
    fw = fit_framework([node("node1", VERY_LARGE)], pods)
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, preemptor())
    uid = {p.metadata.name: p.metadata.uid for p in pods}

    def answer(body: Any) -> Any:
        return {"NodeNameToMetaVictims": {"node1": {"Pods": [{"UID": uid["p1.3"]}], "NumPDBViolations": 4}}}

    fake = FakeExtender(preempt=True, node_cache_capable=True, preempt_answer=answer)
    async with extenders_of(fw, [fake.config(server.serve("ext", fake))]):
        result, status = await pl.preempt_async(state, pi, unschedulable("node1"))
    assert status is None
    assert result is not None and [v.name for v in result.victims] == ["p1.3"]
    assert getattr(result, "num_pdb_violations", None) == 4
    sent = server.requests[0].body["NodeNameToMetaVictims"]["node1"]["Pods"]
    assert sorted(p["UID"] for p in sent) == sorted([uid["p1.1"], uid["p1.2"], uid["p1.3"]])


async def test_failing_extender_fails_preemption_with_its_reason(server: ExtenderServer) -> None:
    fw = fit_framework([node("node1", VERY_LARGE)], [pod("v", node="node1", priority=LOW, requests=LARGE)])
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, preemptor())
    fake = FakeExtender(predicates=[error_predicate], preempt=True)
    async with extenders_of(fw, [fake.config(server.serve("ext", fake))]):
        result, status = await pl.post_filter_async(state, pi, unschedulable("node1"))
    assert result is None
    assert status is not None and status.code == Code.ERROR
    assert (
        status.message
        == f"preemption: failed preempt with extender at URL {server.url}/ext/preempt, code 500"
    )


@pytest.mark.parametrize(("ignorable", "want_error"), [(False, True), (True, False)])
async def test_candidate_without_victims(server: ExtenderServer, ignorable: bool, want_error: bool) -> None:
    fw = fit_framework([node("node1", VERY_LARGE)], [pod("v", node="node1", priority=LOW, requests=LARGE)])
    pl = plugin_for(fw)
    state, pi = prefiltered(fw, preemptor())
    server.routes["/ext/preempt"] = lambda body: Reply({"NodeNameToMetaVictims": {"node1": {"Pods": []}}})
    config = Extender(url_prefix=f"{server.url}/ext", preempt_verb="preempt", ignorable=ignorable)
    async with extenders_of(fw, [config]):
        result, status = await pl.preempt_async(state, pi, unschedulable("node1"))
    assert result is None
    assert status is not None
    if want_error:
        assert (status.code, status.message) == (
            Code.ERROR,
            'expected at least one victim pod on node "node1"',
        )
    else:
        assert status.message == "no candidate node for preemption"


async def test_framework_post_filter_async_consults_the_extenders(server: ExtenderServer) -> None:
    pods = [
        pod("p1.1", node="node1", priority=LOW, requests=LARGE),
        pod("p2.1", node="node2", priority=LOW, requests=SMALL),
    ]
    fw = fit_framework([node("node1", VERY_LARGE), node("node2", VERY_LARGE)], pods)
    plugin_for(fw)
    state, pi = prefiltered(fw, preemptor())
    fake = FakeExtender(predicates=[only("node1")], preempt=True)
    async with extenders_of(fw, [fake.config(server.serve("ext", fake))]):
        result, status = await fw.run_post_filter_plugins_async(state, pi, unschedulable("node1", "node2"))
        # the sync form cannot wait for the extender: it says so instead of ignoring it
        _, sync_status = fw.run_post_filter_plugins(state, pi, unschedulable("node1", "node2"))
    assert status.code == Code.SUCCESS
    assert result is not None and result.nominated_node_name == "node1"
    assert sync_status.code == Code.ERROR and "post_filter_async" in sync_status.message
