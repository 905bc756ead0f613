"""A replica that has not reached a leased pod's newest event within 2 s gives the pod back (RETRY,
no backoff) instead of deciding on an older snapshot; one whose deltas did not move at all bootstraps
again."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from ksched_scheduler.options import SchedulerOptions
from ksched_scheduler.service import SchedulerService

from ksched.bus.messages import DoneOutcome, LeasedPod, PendingPod
from ksched.config import default_config
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_pod
from ksched.service.options import CommonOptions
from tests.scheduler.harness import HandFollower

POD = b'{"metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":{"containers":[]}}'


class _Replica:
    def __init__(self, generation: int) -> None:
        self.epoch = "e1"
        self.generation = generation
        self.snapshot = Snapshot()  # no pod placed


def _service(generation: int) -> tuple[SchedulerService, HandFollower, list[tuple[DoneOutcome, str]]]:
    options = SchedulerOptions(
        common=CommonOptions(identity="s1", nats="nats://127.0.0.1:1", kubeconfig=None, subject_prefix="t")
    )
    service = SchedulerService(options, default_config())
    follower = HandFollower(_Replica(generation))
    service.follower = cast(Any, follower)
    ended: list[tuple[DoneOutcome, str]] = []

    async def done(leased: LeasedPod, outcome: DoneOutcome, **kw: Any) -> None:
        ended.append((outcome, kw.get("message", "")))

    service._done = done  # type: ignore[method-assign]
    return service, follower, ended


def _leased(min_generation: int) -> LeasedPod:
    pod = PendingPod(uid="u", namespace="ns", name="p", scheduler_name="default-scheduler", pod=POD)
    return LeasedPod(
        lease_id="l", deadline=0.0, lease_seconds=30.0, pod=pod, epoch="e1", min_generation=min_generation
    )


@pytest.fixture(autouse=True)
def fast_catch_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2 s wait for the replica, shortened."""
    original = SchedulerService._catch_up

    async def short(self: SchedulerService, epoch: str, generation: int, timeout: float = 2.0) -> None:
        await original(self, epoch, generation, timeout=0.05)

    monkeypatch.setattr(SchedulerService, "_catch_up", short)


async def test_a_stalled_replica_gives_the_pod_back_and_bootstraps_again() -> None:
    service, follower, ended = _service(generation=4)
    assert await service._prepared(_leased(min_generation=7)) is None
    assert [outcome for outcome, _ in ended] == [DoneOutcome.RETRY]
    assert "behind" in ended[0][1]
    assert follower.resyncs == 1


async def test_a_replica_still_catching_up_gives_the_pod_back_without_a_bootstrap() -> None:
    service, follower, ended = _service(generation=4)

    async def deltas() -> None:  # runs once the wait began: however loaded the machine, within the wait
        follower.replica.generation = 5  # moving, not yet at 7

    mover = asyncio.create_task(deltas())
    assert await service._prepared(_leased(min_generation=7)) is None
    await mover
    assert [outcome for outcome, _ in ended] == [DoneOutcome.RETRY]
    assert follower.resyncs == 0


async def test_a_replica_that_catches_up_in_time_schedules_the_pod() -> None:
    service, follower, ended = _service(generation=4)

    async def deltas() -> None:  # runs once the wait began
        follower.replica.generation = 7

    mover = asyncio.create_task(deltas())
    prepared = await service._prepared(_leased(min_generation=7))
    await mover
    assert prepared is not None and prepared.pod.metadata.name == "p"
    assert ended == [] and follower.resyncs == 0


async def test_pods_leased_together_are_given_back_together_with_one_bootstrap() -> None:
    service, follower, ended = _service(generation=4)
    first, second = _leased(min_generation=3), _leased(min_generation=9)
    assert await service._prepared_all([first, second]) == [None, None]
    assert [outcome for outcome, _ in ended] == [DoneOutcome.RETRY, DoneOutcome.RETRY]
    assert follower.resyncs == 1


async def test_pods_of_another_epoch_do_not_wait() -> None:
    service, follower, ended = _service(generation=4)
    other = _leased(min_generation=9)
    other.epoch = "e0"  # leased before the informer's failover: its generations are not comparable
    prepared = await service._prepared_all([other])
    assert prepared[0] is not None and ended == [] and follower.resyncs == 0


async def test_a_replica_decides_once_it_applied_the_nominations_the_lease_names() -> None:
    """gangs-s9517-223 of ``ksched differential``: the queue leased the pod after applying a batch
    that deleted another, nominated pod; the replica whose follower had not applied it yet counted
    that pod's nomination. It waits for the batch (``nominated_seq``) first."""
    service, _follower, ended = _service(generation=4)
    ghost = PodInfo(make_pod("ghost", uid="ghost", priority=9))
    service.nominations.advanced("e1", 10)
    service.nominations.nominate(ghost, "n1")
    leased = _leased(min_generation=4)
    leased.nominated_seq = 12

    async def follower() -> None:  # runs once the wait began
        service.nominations.gone("ghost")
        service.nominations.advanced("e1", 12)

    applied = asyncio.create_task(follower())
    prepared = await service._prepared(leased)
    await applied
    assert prepared is not None and ended == []
    assert service.nominator.node_of("ghost") is None


async def test_a_replica_whose_nominations_do_not_come_decides_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ksched_scheduler.service.NOMINATIONS_WAIT", 0.05)
    service, _follower, ended = _service(generation=4)
    service.nominations.advanced("e1", 10)
    leased = _leased(min_generation=4)
    leased.nominated_seq = 12
    prepared = await service._prepared(leased)
    assert prepared is not None and ended == []
