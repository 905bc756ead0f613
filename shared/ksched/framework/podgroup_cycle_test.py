"""The pod group algorithm's outcomes (upstream ``podGroupSchedulingDefaultAlgorithm`` and the
per-pod statuses of ``submitPodGroupAlgorithmResult``), on scripted member attempts."""

from __future__ import annotations

import functools

from ksched.framework.podgroup_cycle import MemberAttempt, member_order, run_pod_group
from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_pod

WAIT = Status(
    Code.WAIT,
    "waiting for minCount pods from a gang to be scheduled",
    "one or more plugins asked to wait and no plugin rejected pod",
)
MISFIT = Status.unschedulable("0/2 nodes are available: 2 Insufficient cpu.")


def pods(n: int) -> list[PodInfo]:
    return [PodInfo(make_pod(f"p{i}", uid=f"p{i}")) for i in range(n)]


class Script:
    """Members fit or not, and Permit says Wait until ``quorum`` of them are assumed."""

    def __init__(self, fits: list[bool], quorum: int, nominated: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.fits, self.quorum, self.nominated = fits, quorum, nominated
        self.assumed: list[str] = []
        self.calls = 0

    def attempt(self, pod: PodInfo) -> MemberAttempt[int]:
        i = self.calls
        self.calls += 1
        preempting = i in self.nominated
        if not self.fits[i] and not preempting:
            return MemberAttempt(pod, MISFIT, i)
        self.assumed.append(pod.uid)
        permit = None if len(self.assumed) >= self.quorum else WAIT
        status = MISFIT if preempting else None
        return MemberAttempt(
            pod, status, i, permit, preempting, functools.partial(self.assumed.remove, pod.uid)
        )


def test_a_group_that_reaches_its_quorum_keeps_its_assumptions() -> None:
    script = Script([True, True, False, True], quorum=3)
    result = run_pod_group(pods(4), script.attempt)
    assert result.status is None and script.assumed == ["p0", "p1", "p3"]
    assert [result.member_status(m) for m in result.members] == [None, None, MISFIT, None]
    assert result.condition() == ("True", "Scheduled", "")


def test_a_group_short_of_its_quorum_reverts_everything() -> None:
    script = Script([True, False, True], quorum=3)
    result = run_pod_group(pods(3), script.attempt)
    assert script.assumed == []
    assert result.condition() == ("False", "Unschedulable", "pod group is unschedulable")
    fitting = result.member_status(result.members[0])
    assert fitting is not None and fitting.code == Code.UNSCHEDULABLE
    assert fitting.message == (
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
        "one or more plugins asked to wait and no plugin rejected pod"
    )
    assert result.member_status(result.members[1]) == MISFIT


def test_an_error_stops_the_cycle() -> None:
    calls: list[str] = []

    def attempt(pod: PodInfo) -> MemberAttempt[int]:
        calls.append(pod.uid)
        return MemberAttempt(
            pod, Status.as_error("boom") if pod.uid == "p1" else None, 0, WAIT, revert=lambda: None
        )

    result = run_pod_group(pods(3), attempt)
    assert calls == ["p0", "p1"]
    assert result.condition() == (
        "False",
        "SchedulerError",
        "failed to schedule other pod from a pod group: boom",
    )
    assert result.member_status(result.members[0]) == result.status


def test_a_member_needing_preemption_makes_the_group_wait_for_it() -> None:
    script = Script([True, False], quorum=2, nominated={1})
    result = run_pod_group(pods(2), script.attempt)
    assert result.waiting_on_preemption and script.assumed == []
    status = result.member_status(result.members[0])
    assert (
        status is not None
        and status.message == "pod group is unschedulable, pod group is waiting for preemption to complete"
    )


def test_member_order_is_priority_then_first_attempt() -> None:
    low, high, early = (PodInfo(make_pod(n, priority=p)) for n, p in (("low", 0), ("high", 10), ("early", 0)))
    assert member_order([(low, 5.0), (high, 9.0), (early, 1.0)]) == [1, 2, 0]
