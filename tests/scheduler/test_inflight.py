"""A replica keeps each accepted placement (for the binder's Unreserve) until the pod is seen bound,
when what its Reserve put in flight ends (the binder's PreBind wrote it)."""

from __future__ import annotations

from typing import Any, cast

from ksched_scheduler.cycle import CycleOutcome
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.service import SchedulerService

from ksched.bus.messages import LeasedPod, PendingPod, UnreserveRequest
from ksched.config import default_config
from ksched.service.options import CommonOptions


class _Cycle:
    def __init__(self) -> None:
        self.forgotten: list[object] = []
        self.bound: list[object] = []

    def forget_locally(self, outcome: object) -> None:
        self.forgotten.append(outcome)

    def bound_locally(self, outcome: object) -> None:
        self.bound.append(outcome)


def _service() -> tuple[SchedulerService, _Cycle]:
    options = SchedulerOptions(
        common=CommonOptions(identity="s1", nats="nats://127.0.0.1:1", kubeconfig=None, subject_prefix="t")
    )
    service = SchedulerService(options, default_config())
    cycle = _Cycle()
    service.cycle = cast(Any, cycle)
    return service, cycle


def _placement(service: SchedulerService, uid: str) -> tuple[str, object]:
    pod = PendingPod(uid=uid, namespace="ns", name=uid, scheduler_name="default-scheduler")
    leased = LeasedPod(lease_id=f"l-{uid}", deadline=0.0, lease_seconds=30.0, pod=pod)
    outcome = cast(CycleOutcome, object())
    service.core.remember(f"{uid}:1", leased, outcome, 0.0)
    return f"{uid}:1", outcome


def _unreserve(placement_id: str, uid: str) -> UnreserveRequest:
    return UnreserveRequest(
        placement_id=placement_id, pod_uid=uid, namespace="ns", name=uid, node_name="n", scheduler_id="s1"
    )


async def test_unreserve_before_the_binding_undoes_the_local_assumption() -> None:
    service, cycle = _service()
    placement_id, outcome = _placement(service, "a")
    ack = await service.on_unreserve(_unreserve(placement_id, "a"), cast(Any, None))
    assert ack.ok and cycle.forgotten == [outcome]
    service._bound("a")  # later news of another placement of the pod: nothing held, nothing to do


async def test_a_pod_seen_bound_is_no_longer_held() -> None:
    service, cycle = _service()
    placement_id, outcome = _placement(service, "a")
    _placement(service, "b")
    service._bound("a")
    assert cycle.bound == [outcome]
    ack = await service.on_unreserve(_unreserve(placement_id, "a"), cast(Any, None))
    assert not ack.ok and ack.code == "Unknown" and cycle.forgotten == []
    assert list(service.core.inflight) == ["b:1"]
