"""A placement delivered again after an earlier delivery bound the pod (its binder died, or its ack
was lost while nats-server was down): the API answers 409 "already assigned" to the same node, the
binder counts it bound and acks it, and reports nothing a second time — upstream reports a binding
once (no second PostBind run or attempts sample; the Scheduled event is sent again under the same
name, which the API refuses if the first one arrived, and never read first: kube-scheduler's role
may not list events)."""

from __future__ import annotations

from typing import Any, cast

import msgspec
from ksched_binder.service import BinderService
from prometheus_client import REGISTRY

from ksched.bus.messages import Placement
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.reporting.reporter import PodRef
from tests.binder.test_metrics import binder, placement


class AlreadyBound:
    """Bind as the API server answers a second binding of a pod bound to ``node``; PostBind counts."""

    name = "AlreadyBound"

    def __init__(self, node: str) -> None:
        self.node = node
        self.post_binds = 0

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status(
            Code.ERROR,
            f'Operation cannot be fulfilled on pods/binding "{pod.pod.metadata.name}": pod '
            f'{pod.pod.metadata.name} is already assigned to node "{self.node}"',
            plugin=self.name,
        )

    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.post_binds += 1


def attempts_observed() -> float:
    return REGISTRY.get_sample_value("scheduler_pod_scheduling_attempts_count") or 0.0


def already_bound_binder(reporter: Reporter) -> tuple[BinderService, AlreadyBound]:
    """A binder whose Bind answers as the API does for a pod bound to n1, reporting to ``reporter``."""
    service = binder()
    plugin = AlreadyBound("n1")
    fw = Framework("default-scheduler", Snapshot())
    fw.set_plugins(PluginsByPoint(bind=[plugin], post_bind=[plugin]))
    service.frameworks = {"default-scheduler": fw}
    service.reporter = cast(Any, reporter)
    return service, plugin


async def test_a_redelivered_placement_is_bound_and_reported_once() -> None:
    reporter = Reporter()
    service, plugin = already_bound_binder(reporter)
    before = attempts_observed()
    assert await service.bind(placement("again", flushed=True)) == "bound"
    assert reporter.scheduled_events == [] and plugin.post_binds == 0
    assert attempts_observed() == before


class Reporter:
    """Records Scheduled events (it has no way to read them: kube-scheduler may not list events)."""

    def __init__(self) -> None:
        self.scheduled_events: list[tuple[str, str]] = []
        self.names_ns: list[int | None] = []

    def scheduled(self, ref: PodRef, node: str, name_ns: int | None = None, controller: str = "") -> None:
        self.scheduled_events.append((ref.name, node))
        self.names_ns.append(name_ns)


async def test_a_repeat_without_the_time_that_names_its_event_sends_none() -> None:
    """A placement of an older scheduler (no ``assumed_at``): its event would get a new name, and could
    be a second one, so none."""
    reporter = Reporter()
    service, plugin = already_bound_binder(reporter)
    assert await service.bind(placement("older", flushed=False)) == "bound"
    assert reporter.scheduled_events == [] and plugin.post_binds == 0


ASSUMED_AT = 1_764_403_200.123456


async def test_a_repeat_names_its_event_by_the_placement() -> None:
    """The binder that bound the pod died before its Scheduled event went out (a batch half bound), or
    its event is still on its way (that binder was paused): the repeat sends one with the same name,
    so the API keeps exactly one either way."""
    reporter = Reporter()
    service, _ = already_bound_binder(reporter)
    p = msgspec.structs.replace(placement("paused-binder", flushed=False), assumed_at=ASSUMED_AT)
    assert await service.bind(p) == "bound"
    assert reporter.scheduled_events == [("paused-binder", "n1")]
    assert reporter.names_ns == [int(ASSUMED_AT * 1e9)]


async def test_the_first_binding_names_its_event_by_the_placement_too() -> None:
    service = binder()
    reporter = Reporter()
    service.reporter = cast(Any, reporter)
    p = msgspec.structs.replace(placement("first", flushed=False), assumed_at=ASSUMED_AT)
    assert await service.bind(p) == "bound"
    assert reporter.names_ns == [int(ASSUMED_AT * 1e9)]


async def test_already_assigned_to_another_node_fails_the_binding() -> None:
    service = binder()
    plugin = AlreadyBound("n2")  # the placement says n1
    fw = Framework("default-scheduler", Snapshot())
    fw.set_plugins(PluginsByPoint(bind=[plugin]))
    service.frameworks = {"default-scheduler": fw}
    failed: list[str] = []

    async def record_failure(
        p: Placement, reason: str, plugins: list[str] | None = None, *, rejected: bool = False
    ) -> None:
        failed.append(reason)

    service._fail = record_failure  # type: ignore[method-assign]
    assert await service.bind(placement("elsewhere", flushed=False)) == "failed"
    assert failed and 'already assigned to node "n2"' in failed[0]
