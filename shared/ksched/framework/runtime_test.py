"""The PostFilter loop, upstream's ``RunPostFilterPlugins`` (the cases of upstream's
``TestPostFilterPlugins`` in framework_test.go, and the rule of the last nominating result), through
both entry points: the synchronous one and the one that awaits the async form of a plugin."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import PostFilterPlugin
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import NodeToStatus, NominatingMode, PostFilterResult
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_pod, make_snapshot


@dataclass
class _Plugin:
    name: str
    status: Status | None
    result: PostFilterResult | None
    calls: list[str] = field(default_factory=list)

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        self.calls.append(f"{self.name}:sync")
        return self.result, self.status


@dataclass
class _AsyncPlugin(_Plugin):
    async def post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        self.calls.append(f"{self.name}:async")
        return self.result, self.status


NOMINATED = PostFilterResult(nominated_node_name="node-a")
NOOP = PostFilterResult(mode=NominatingMode.NOOP)
Spec = tuple[Status | None, PostFilterResult | None]


def _unschedulable(reason: str) -> Status:
    return Status.unschedulable(reason)


CASES: list[tuple[str, Spec, Spec, Status, PostFilterResult | None, list[str]]] = [
    (
        "a plugin makes the pod schedulable",
        (None, NOMINATED),
        (_unschedulable("r2"), None),
        Status(Code.SUCCESS),
        NOMINATED,
        ["p1"],
    ),
    (
        "the first fails, the second makes the pod schedulable",
        (_unschedulable("r1"), None),
        (None, NOMINATED),
        Status(Code.SUCCESS),
        NOMINATED,
        ["p1", "p2"],
    ),
    (
        "both fail: the reasons of both, the first rejector",
        (_unschedulable("r1"), None),
        (_unschedulable("r2"), None),
        Status(Code.UNSCHEDULABLE, "r1", "r2", plugin="p1"),
        None,
        ["p1", "p2"],
    ),
    (
        "UnschedulableAndUnresolvable ends the run",
        (Status.unresolvable("r1"), None),
        (None, NOMINATED),
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "r1", plugin="p1"),
        None,
        ["p1"],
    ),
    (
        "an error ends the run, without a result",
        (Status.as_error("boom"), NOMINATED),
        (None, NOMINATED),
        Status(Code.ERROR, error=RuntimeError("boom"), plugin="p1"),
        None,
        ["p1"],
    ),
    (
        "failing, the last nominating result is kept; a noop one does not replace it",
        (_unschedulable("r1"), NOMINATED),
        (_unschedulable("r2"), NOOP),
        Status(Code.UNSCHEDULABLE, "r1", "r2", plugin="p1"),
        NOMINATED,
        ["p1", "p2"],
    ),
]

IDS = [c[0] for c in CASES]


def _framework(first: Spec, second: Spec) -> tuple[Framework, list[str]]:
    calls: list[str] = []
    fw = Framework("default-scheduler", make_snapshot([]))
    plugins: list[PostFilterPlugin] = [_Plugin("p1", *first, calls), _AsyncPlugin("p2", *second, calls)]
    fw.plugins.post_filter = plugins
    return fw, calls


@pytest.mark.parametrize(
    ("name", "first", "second", "status", "result", "ran"), CASES, ids=[c[0] for c in CASES]
)
async def test_post_filter_plugins(
    name: str, first: Spec, second: Spec, status: Status, result: PostFilterResult | None, ran: list[str]
) -> None:
    pod = PodInfo(make_pod("p"))
    fw, calls = _framework(first, second)
    assert fw.run_post_filter_plugins(CycleState(), pod, NodeToStatus()) == (result, status)
    assert calls == [f"{p}:sync" for p in ran]
    fw, calls = _framework(first, second)
    assert await fw.run_post_filter_plugins_async(CycleState(), pod, NodeToStatus()) == (result, status)
    assert calls == [f"{p}:{'async' if p == 'p2' else 'sync'}" for p in ran]
